"""HNSW recall@10 of the PostgreSQL store against exact search, on a query.py database.

Exact = the same query with index scans turned off (a sequential scan computing every distance).

    .venv/bin/python -m benchmarks.speed.pg_ann_recall postgresql://…/b1000000 --queries 20
"""

from __future__ import annotations

import argparse

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from benchmarks.common import low_rank
from retrievo.models import Filters
from retrievo.store.postgres.store import DEFAULT_EF_SEARCH, PostgresStore

DIMS = 384


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--ef-search", type=int, default=DEFAULT_EF_SEARCH)
    args = parser.parse_args()
    store = PostgresStore(args.url, ef_search=args.ef_search)
    model = store.get_collection("bench")
    assert model is not None and model.model_id is not None, "not a query.py database"
    recalls = []
    for query in low_rank(args.queries, DIMS, seed=9):  # the queries query.py uses
        approximate = {
            hit.chunk_id for hit in store.vector_search("bench", model.model_id, query, Filters(), 10)
        }
        with psycopg.connect(args.url) as conn:  # exact ground truth: index scans off in this session
            register_vector(conn)
            conn.execute("SET enable_indexscan = off")
            exact = {
                int(row[0])
                for row in conn.execute(
                    """SELECT id FROM chunks WHERE superseded_at IS NULL AND vector IS NOT NULL
                       ORDER BY vector::vector(384) <=> %s LIMIT 10""",
                    (query,),
                )
            }
        recalls.append(len(approximate & exact) / 10)
    store.close()
    print(f"PostgreSQL HNSW recall@10 vs exact = {np.mean(recalls):.3f} over {len(recalls)} queries "
          f"(ef_search {args.ef_search})")  # fmt: skip


if __name__ == "__main__":
    main()
