"""How many postings the PostgreSQL keyword arm reads per bench query: the sum of the df of the
query's terms after common-term pruning — the work its latency grows with.

    .venv/bin/python -m benchmarks.scale.postings_per_query postgresql://…/b1000000
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
import psycopg

from benchmarks.common import synthetic_texts
from retrievo.store.postgres.search import prune, query_stems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    # The same queries as speed/query.py's measure().
    rng = np.random.default_rng(5)
    words = list(synthetic_texts(args.queries, seed=3, words=6))
    totals = []
    with psycopg.connect(args.url) as conn:
        collection_id = conn.execute("SELECT id FROM collections WHERE name = 'bench'").fetchone()[0]  # type: ignore[index]
        for i in range(args.queries):
            text = " ".join(words[i].split()[: int(rng.integers(2, 6))])
            stems = prune(conn, collection_id, query_stems(text))
            row = conn.execute(
                "SELECT COALESCE(sum(df), 0) FROM term_stats WHERE collection_id = %s AND term = ANY(%s)",
                (collection_id, stems),
            ).fetchone()
            totals.append(int(row[0]) if row else 0)
    ordered = sorted(totals)
    print(f"postings read per query: median {statistics.median(ordered):,.0f}, "
          f"p95 {ordered[round(0.95 * len(ordered)) - 1]:,}, max {ordered[-1]:,}")  # fmt: skip


if __name__ == "__main__":
    main()
