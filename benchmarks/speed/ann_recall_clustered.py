"""HNSW recall@10 on clustered vectors, with the settings retrievo uses (usearch, cosine, float16, ef 128).

Real embeddings cluster by topic; uniform random vectors in 384 dimensions do not (every point is about
equally far from every other), which makes any graph index look far worse than it is on real data.
Here: C cluster centres, points = normalise(centre + noise); recall against exact search.

    .venv/bin/python -m benchmarks.speed.ann_recall_clustered --sizes 100000 1000000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from usearch.index import Index

from benchmarks.common import low_rank
from retrievo.store.ann import EXPANSION_SEARCH


def clustered(count: int, dims: int, clusters: int, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dims)).astype(np.float32)
    points = centres[rng.integers(0, clusters, count)] + noise * rng.standard_normal((count, dims)).astype(
        np.float32
    )
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--shape", choices=["clustered", "low-rank"], default="low-rank")
    args = parser.parse_args()
    for size in args.sizes:
        if args.shape == "clustered":
            vectors = clustered(size, 384, clusters=max(100, size // 100), noise=0.6, seed=1)
            queries = clustered(args.queries, 384, clusters=max(100, size // 100), noise=0.6, seed=1 + size)
        else:
            vectors, queries = low_rank(size, 384, 24, seed=1), low_rank(args.queries, 384, 24, seed=2)
        index = Index(ndim=384, metric="cos", dtype="f16", expansion_search=EXPANSION_SEARCH)
        started = time.perf_counter()
        index.add(np.arange(size), vectors)
        build_s = time.perf_counter() - started
        exact_ids = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
        found = index.search(queries, 10)
        recall = np.mean([len(set(found[i].keys) & set(exact_ids[i])) / 10 for i in range(len(queries))])
        started = time.perf_counter()
        for query in queries:
            index.search(query, 10)
        per_query_ms = (time.perf_counter() - started) * 1000 / len(queries)
        print(
            f"{size} {args.shape} vectors | build {build_s:.0f} s | recall@10 {recall:.3f} | {per_query_ms:.2f} ms/query"
        )


if __name__ == "__main__":
    main()
