"""File localisation on real issues (../shared/data/swe_loc_dev): does an issue's text find the file its fix edits?

For each instance the repository tree at the issue's commit is extracted, indexed whole (as a user would:
source, docs, tests, config), and the issue text is asked: ``locate`` (files ranked by ``search/locate.py``)
and ``search`` in the given modes (the answer's first distinct files). Scored: hit@k when a gold file is among
the first k files. Without a semantic mode nothing is embedded (a minute for all 31); hybrid and semantic embed
every chunk with the bundled model (minutes per repository on two cores).

    .venv/bin/python benchmarks/swe_locate.py [--modes locate,keyword,hybrid] [--instances N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from retrievo.config import Config
from retrievo.engine import Engine

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "swe_loc_dev"
CUTOFFS = (1, 5, 10)


def files_of(engine: Engine, query: str, mode: str, root: Path, group: bool) -> list[str]:
    """The answer's distinct files, in order, relative to the repository root."""
    result = engine.search(query, mode=mode, limit=50)
    ranked: list[str] = []
    for hit in result.hits:
        path = (
            str(Path(hit.chunk.path).relative_to(root))
            if hit.chunk.path.startswith(str(root))
            else hit.chunk.path
        )
        if path not in ranked:
            ranked.append(path)
    return ranked


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--modes", default="locate,keyword")
    parser.add_argument("--instances", type=int, default=0, help="only the first N (0: all)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    modes = args.modes.split(",")
    instances = [
        json.loads(line) for line in (DATA / "instances.jsonl").read_text().splitlines() if line.strip()
    ]
    if args.instances:
        instances = instances[: args.instances]
    hits = {mode: dict.fromkeys(CUTOFFS, 0) for mode in modes}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        for instance in instances:
            name = instance["instance_id"]
            with tarfile.open(DATA / "trees" / f"{name}.tar.gz") as tar:
                tar.extractall(scratch, filter="data")
            root = Path(scratch) / name
            embed = any(m not in ("keyword", "locate") for m in modes)
            started = time.perf_counter()
            with Engine(
                Config(db=Path(scratch) / f"{name}.db", embedder="local" if embed else "none")
            ) as engine:
                engine.index([root], embed=embed)
                indexed = time.perf_counter() - started
                row: dict[str, Any] = {
                    "instance": name,
                    "gold": instance["gold_files"],
                    "index_s": round(indexed, 1),
                }
                for mode in modes:
                    if mode == "locate":
                        located = engine.locate(instance["problem_statement"], limit=10)
                        ranked = [str(Path(f.path).relative_to(root)) for f in located]
                    else:
                        ranked = files_of(engine, instance["problem_statement"], mode, root, False)
                    row[mode] = ranked[:10]
                    for k in CUTOFFS:
                        hits[mode][k] += any(g in ranked[:k] for g in instance["gold_files"])
            rows.append(row)
            print(f"{name}: " + "  ".join(f"{m} {next((i + 1 for i, f in enumerate(row[m]) if f in instance['gold_files']), '-')}"
                                           for m in modes), flush=True)  # fmt: skip
    count = len(instances)
    table = {mode: {f"hit@{k}": round(hits[mode][k] / count, 3) for k in CUTOFFS} for mode in modes}
    print(json.dumps(table, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"instances": count, "table": table, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
