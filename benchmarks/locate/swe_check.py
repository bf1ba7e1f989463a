"""``retrievo locate`` on ../shared/data/swe_loc_dev with and without the learned file ranker (issue 59).

Asks each of the 31 issues through ``Engine.locate`` (the public road: keyword arm, ``code_files.rank_files``)
over the keyword-only indexes ``benchmarks/code_search/swe_locate.py --keep DIR --modes locate`` made, once
with ``code_files.LEARNED`` off (today's hand-weighted ranking) and once on (``file_ranker.json``), and
prints hit@1/5/10 and each one's median and slowest answer time.

    .venv/bin/python -m benchmarks.locate.swe_check [--keep /tmp/swe/new] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from benchmarks.code_search.swe_locate import collection_of, load_instances
from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.search import code_files

CUTOFFS = (1, 5, 10)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", type=Path, default=Path("/tmp/swe/new"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    ranks: dict[str, list[int]] = {"today": [], "learned": []}
    took: dict[str, list[float]] = {"today": [], "learned": []}
    rows = []
    for instance in load_instances():
        name, repo = instance["instance_id"], instance["repo"].split("/")[1]
        root = str((args.keep / "trees" / name).resolve()) + "/"
        config = Config(db=args.keep / f"{repo}-keyword.db", collection=collection_of(name), embedder="none")
        row = {"instance": name}
        with Engine(config) as engine:
            engine.locate(instance["problem_statement"], limit=10)  # warm: the first query opens the index
            for system, learned in (("today", False), ("learned", True)):
                code_files.LEARNED = learned
                started = time.perf_counter()
                files = engine.locate(instance["problem_statement"], limit=10)
                took[system].append((time.perf_counter() - started) * 1000)
                found = [f.path.removeprefix(root) for f in files]
                rank = next((i + 1 for i, f in enumerate(found) if f in instance["gold_files"]), 0)
                ranks[system].append(rank)
                row[system] = rank
        code_files.LEARNED = False
        rows.append(row)
        print(json.dumps(row), flush=True)
    table = {
        system: {f"hit@{k}": round(sum(0 < r <= k for r in found) / len(found), 3) for k in CUTOFFS}
        | {"p50_ms": round(statistics.median(took[system]), 1), "max_ms": round(max(took[system]), 1)}
        for system, found in ranks.items()
    }
    print(json.dumps(table, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"table": table, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
