"""`retrievo eval` with the tantivy keyword side index off (FTS5 alone): what the side index changes.

    .venv/bin/python -m benchmarks.quality.eval_fts5_only ../shared/data/scifact --db /tmp/ev/scifact.db
    .venv/bin/python -m benchmarks.quality.eval_fts5_only ../shared/data/cosqa_dev --split dev --db /tmp/ev/cosqa.db

Prints the same JSON as `retrievo eval --json`; compare it with that command's on the same index.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from retrievo.evaluation.runner import evaluate
from retrievo.store.sqlite import searching


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--split", default="test")
    args = parser.parse_args()
    searching.KEYWORD_INDEX_MIN_ROWS = 10**12  # never reached: every keyword search goes to FTS5
    print(json.dumps(asdict(evaluate(args.dataset, db=args.db, split=args.split))))


if __name__ == "__main__":
    main()
