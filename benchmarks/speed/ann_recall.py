"""Recall@10 of the ANN (HNSW) arm against exact search, on an index built by query.py.

Exact top-10 is computed by streaming every current vector from the index in blocks, so memory stays
small even at 1M chunks.

    .venv/bin/python -m benchmarks.speed.ann_recall /tmp/bench2/bench-1000000.db --queries 50
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

import numpy as np

from benchmarks.common import low_rank
from benchmarks.speed.query import DIMS, MODEL_ID
from retrievo.models import Filters
from retrievo.store.sqlite import SQLiteStore
from retrievo.store.sqlite.vectors import decode_vectors

BLOCK = 100_000


def exact_top10(db_path: Path, queries: np.ndarray) -> list[set[int]]:
    db = sqlite3.connect(db_path)
    best_ids = np.full((len(queries), 10), -1, dtype=np.int64)
    best_scores = np.full((len(queries), 10), -np.inf, dtype=np.float32)
    cursor = db.execute(
        """SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
           WHERE c.superseded_at IS NULL""",
        (MODEL_ID,),
    )
    while rows := cursor.fetchmany(BLOCK):
        ids = np.array([row[0] for row in rows], dtype=np.int64)
        scores = queries @ decode_vectors([row[1] for row in rows], DIMS).T
        all_ids = np.concatenate([best_ids, np.broadcast_to(ids, scores.shape)], axis=1)
        all_scores = np.concatenate([best_scores, scores], axis=1)
        keep = np.argsort(-all_scores, axis=1)[:, :10]
        best_ids = np.take_along_axis(all_ids, keep, axis=1)
        best_scores = np.take_along_axis(all_scores, keep, axis=1)
    db.close()
    return [set(row.tolist()) for row in best_ids]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("db", type=Path)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    queries = low_rank(args.queries, DIMS, seed=9)  # the queries query.py uses
    exact = exact_top10(args.db, queries)
    store = SQLiteStore(args.db)
    recalls = []
    for query, truth in zip(queries, exact, strict=True):
        found = {hit.chunk_id for hit in store.vector_search("bench", MODEL_ID, query, Filters(), 10)}
        recalls.append(len(found & truth) / 10)
    store.close()
    print(f"{args.db.name}: ANN recall@10 vs exact = {np.mean(recalls):.3f} over {len(recalls)} queries")


if __name__ == "__main__":
    main()
