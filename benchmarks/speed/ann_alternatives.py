"""Cheaper vector indexes than the HNSW graph we keep, measured on real MiniLM vectors: worth it?

The index: one built by `serve.py --realistic` (100,000 chunks of realistic text labelled with
the bundled model), its vectors read from the table; queries: SciFact's claims embedded with the same
model (out of the corpus's distribution, as a user's questions are). Truth: exact top 10. Compared:

- usearch HNSW as the store builds it (cosine, float16, ef 128) and with bfloat16 storage;
- an IVF index in numpy (k-means over 4·sqrt(N) lists, float16 lists, ``nprobe`` lists scanned).

    .venv/bin/python -m benchmarks.speed.ann_alternatives /tmp/bench-serve/serve-100000.db
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import time
from pathlib import Path

import numpy as np

from retrievo.embed.local import MiniLMEmbedder
from retrievo.evaluation.beir import load_beir
from retrievo.store.ann import EXPANSION_ADD, EXPANSION_SEARCH
from retrievo.store.sqlite.vectors import decode_vectors

SCIFACT = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact"


def hnsw(vectors: np.ndarray, queries: np.ndarray, exact: np.ndarray, dtype: str) -> dict[str, float]:
    import onnxruntime  # noqa: F401  (before usearch: see store/ann.py)
    from usearch.index import Index

    index = Index(
        ndim=vectors.shape[1],
        metric="cos",
        dtype=dtype,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )
    started = time.perf_counter()
    index.add(np.arange(len(vectors)), vectors)
    build_s = time.perf_counter() - started
    recalls, times = [], []
    for query, truth in zip(queries, exact, strict=True):
        started = time.perf_counter()
        found = index.search(query, 10)
        times.append(time.perf_counter() - started)
        recalls.append(len(set(found.keys.tolist()) & set(truth.tolist())) / 10)
    return {"build_s": build_s, "recall": float(np.mean(recalls)), "p50_ms": float(np.median(times)) * 1000}


def ivf(
    vectors: np.ndarray, queries: np.ndarray, exact: np.ndarray, probes: list[int]
) -> list[dict[str, float]]:
    rng = np.random.default_rng(0)
    count = len(vectors)
    lists = int(4 * np.sqrt(count))
    sample = vectors[rng.choice(count, min(count, lists * 40), replace=False)]
    started = time.perf_counter()
    centres = sample[rng.choice(len(sample), lists, replace=False)].copy()
    for _ in range(10):  # spherical k-means
        nearest = np.argmax(sample @ centres.T, axis=1)
        sums = np.zeros_like(centres)
        np.add.at(sums, nearest, sample)
        sizes = np.bincount(nearest, minlength=lists)
        filled = sizes > 0
        centres[filled] = sums[filled] / sizes[filled, None]
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    assign = np.concatenate(
        [np.argmax(vectors[b : b + 20_000] @ centres.T, axis=1) for b in range(0, count, 20_000)]
    )
    order = np.argsort(assign, kind="stable")
    stored = vectors[order].astype(np.float16)
    offsets = np.searchsorted(assign[order], np.arange(lists + 1))
    build_s = time.perf_counter() - started
    rows = []
    for nprobe in probes:
        recalls, times = [], []
        for query, truth in zip(queries, exact, strict=True):
            started = time.perf_counter()
            probe = np.argpartition(-(centres @ query), nprobe)[:nprobe]
            members = np.concatenate([np.arange(offsets[p], offsets[p + 1]) for p in probe])
            scores = stored[members].astype(np.float32) @ query
            top = members[np.argpartition(-scores, 10)[:10]] if len(scores) > 10 else members
            times.append(time.perf_counter() - started)
            recalls.append(len(set(order[top].tolist()) & set(truth.tolist())) / 10)
        rows.append(
            {
                "lists": lists,
                "nprobe": nprobe,
                "build_s": build_s,
                "recall": float(np.mean(recalls)),
                "p50_ms": float(np.median(times)) * 1000,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("db", type=Path)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    db = sqlite3.connect(args.db)
    rows = db.execute(
        """SELECT e.vector FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key
           WHERE c.superseded_at IS NULL"""
    ).fetchall()
    db.close()
    vectors = decode_vectors([row[0] for row in rows], 384)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    claims = list(load_beir(SCIFACT).queries.values())[: args.queries]
    queries = np.asarray(
        MiniLMEmbedder().embed_batch([getattr(q, "text", q) for q in claims]), dtype=np.float32
    )
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
    results = {
        "vectors": len(vectors),
        "queries": len(queries),
        "hnsw": {dtype: hnsw(vectors, queries, exact, dtype) for dtype in ("f16", "bf16")},
        "ivf": ivf(vectors, queries, exact, [8, 16, 32, 64]),
    }
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
