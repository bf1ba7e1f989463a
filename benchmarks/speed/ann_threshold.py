"""Where exact dense search stops paying: the dense arm's two paths side by side, per collection size.

Exact is what the store does below ``ANN_MIN_VECTORS`` (``search.vector_search`` over the cached
float32 matrix: one matrix-vector product, a partial sort); above it, the usearch HNSW index with the
store's settings (``store.ann._new_index``: cosine, float16, ef 128), whose build the exact path never pays.
Low-rank vectors (``common.low_rank``, how real embeddings spread), 100 queries of their own, depth 100
(what a default search asks each arm for).

    .venv/bin/python -m benchmarks.speed.ann_threshold --sizes 10000 20000 50000 100000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import time

import numpy as np

from benchmarks.common import low_rank, p50_p95
from benchmarks.speed.query import DIMS
from retrievo.models import Filters
from retrievo.store.ann import ANN_MIN_VECTORS, _new_index
from retrievo.store.sqlite.search import vector_search
from retrievo.store.sqlite.vectors import VectorMatrix

DEPTH = 100


def measure(size: int, queries: np.ndarray) -> dict[str, object]:
    vectors = low_rank(size, DIMS, seed=1)
    ids = np.arange(1, size + 1, dtype=np.int64)
    # as the store caches them: float16 in the table, float32 in memory
    matrix = VectorMatrix(ids=ids, matrix=vectors.astype(np.float16).astype(np.float32))
    db = sqlite3.connect(":memory:")  # unused without filters
    exact_ms, truth = [], []
    for query in queries:
        started = time.perf_counter()
        hits = vector_search(db, matrix, 1, query, Filters(), DEPTH)
        exact_ms.append((time.perf_counter() - started) * 1000)
        truth.append({hit.chunk_id for hit in hits[:10]})
    index = _new_index(DIMS)
    started = time.perf_counter()
    index.add(ids, vectors)
    build_s = time.perf_counter() - started
    ann_ms, recall = [], []
    for query, exact in zip(queries, truth, strict=True):
        started = time.perf_counter()
        found = index.search(query, DEPTH)
        ann_ms.append((time.perf_counter() - started) * 1000)
        recall.append(len({int(key) for key in found.keys[:10]} & exact) / 10)
    exact_p50, exact_p95 = p50_p95(exact_ms)
    ann_p50, ann_p95 = p50_p95(ann_ms)
    return {
        "vectors": size,
        "exact_p50_ms": round(exact_p50, 2),
        "exact_p95_ms": round(exact_p95, 2),
        "hnsw_p50_ms": round(ann_p50, 2),
        "hnsw_p95_ms": round(ann_p95, 2),
        "hnsw_recall_at_10": round(float(np.mean(recall)), 3),
        "hnsw_build_s": round(build_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 20_000, 50_000, 100_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", help="write the results here as well")
    args = parser.parse_args()
    queries = low_rank(args.queries, DIMS, seed=9)
    rows = [measure(size, queries) for size in args.sizes]
    print(f"ANN_MIN_VECTORS = {ANN_MIN_VECTORS}")
    print("| vectors | exact p50 / p95 ms | HNSW p50 / p95 ms | HNSW recall@10 | HNSW build s |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['vectors']:,} | {row['exact_p50_ms']} / {row['exact_p95_ms']} | "
            f"{row['hnsw_p50_ms']} / {row['hnsw_p95_ms']} | {row['hnsw_recall_at_10']} | {row['hnsw_build_s']} |"
        )
    if args.json:
        result = {
            "command": "benchmarks/speed/ann_threshold.py --sizes " + " ".join(str(s) for s in args.sizes),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "date": time.strftime("%Y-%m-%d"),
            "rows": rows,
        }
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)


if __name__ == "__main__":
    main()
