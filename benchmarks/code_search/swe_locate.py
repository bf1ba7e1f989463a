"""File localisation on real issues (../shared/data/swe_loc_dev): does an issue's text find the file its fix edits?

For each instance the repository tree at the issue's commit is extracted and indexed whole, as a user would
(source, docs, tests, config), and the issue text is asked as it was written. Scored: hit@k when a gold file
is among the answer's first k distinct files. Systems, side by side in one run:

- ``locate``: ``retrievo locate`` (files ranked by search/code/files.py from the keyword arm; no vectors);
- ``keyword`` / ``semantic`` / ``hybrid``: ``search`` with default settings (limit 10), the answer's distinct
  files — each twice: ``before`` with RETRIEVO_CODE_RANKING=off (the fused order) and ``after`` (default);
- ``bm25s .py``: bm25s over the repository's ``.py`` files, one document per file (the peers' venv).

``p50_ms``: each system's median answer time. The first system of an engine to embed the issue pays for it
(about 0.3 s on two cores); the others find its vectors cached, so their times are the ranking's own.

Every instance of one repository is a collection of one index (``--keep DIR``: kept between runs), so a
chunk whose text another version already embedded reuses its vector; the first version of a repository
embeds everything (minutes on two cores). Without semantic or hybrid nothing is embedded.

    .venv/bin/python -m benchmarks.code_search.swe_locate [--modes locate,keyword,semantic,hybrid] [--keep DIR]
        [--instances N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tarfile
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

from retrievo.config import Config
from retrievo.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "swe_loc_dev"
PEERS = ROOT / ".peers" / "bin" / "python"
CUTOFFS = (1, 5, 10)


def distinct_files(paths: list[str], root: Path) -> list[str]:
    ranked: list[str] = []
    for path in paths:
        relative = str(Path(path).relative_to(root)) if path.startswith(str(root)) else path
        if relative not in ranked:
            ranked.append(relative)
    return ranked


def collection_of(instance: str) -> str:
    return instance.replace("__", "-").replace(".", "-")


def load_instances() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / "instances.jsonl").read_text().splitlines() if line.strip()]


def kept(doc: str | None) -> tuple[argparse.Namespace, list[dict[str, Any]], dict[str, Engine]]:
    """For scripts over the indexes this one kept (``--keep DIR``): their arguments, the instances and an
    engine per instance (its repository's index, its collection)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--keep", type=Path, required=True, help="swe_locate.py's --keep folder (indexes made)"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    instances = load_instances()
    engines = {
        i["instance_id"]: Engine(
            Config(db=args.keep / f"{i['repo'].split('/')[1]}.db", collection=collection_of(i["instance_id"]))
        )
        for i in instances
    }
    return args, instances, engines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--modes", default="locate,keyword,semantic,hybrid")
    parser.add_argument("--keep", type=Path, help="keep trees and indexes here (reused when present)")
    parser.add_argument("--instances", type=int, default=0, help="only the first N (0: all)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    modes = args.modes.split(",")
    instances = load_instances()
    if args.instances:
        instances = instances[: args.instances]
    embed = any(m in ("semantic", "hybrid") for m in modes)
    systems = [m for m in modes if m == "locate"]
    systems += [f"{m} {when}" for m in modes if m != "locate" for when in ("before", "after")]
    peers = subprocess.Popen(
        [str(PEERS), str(ROOT / "benchmarks" / "peers" / "bm25s_files.py")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) if PEERS.exists() else None  # fmt: skip
    if peers is not None:
        systems.append("bm25s .py")
    hits = {s: dict.fromkeys(CUTOFFS, 0) for s in systems}
    by_repo: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    took: dict[str, list[float]] = defaultdict(list)  # each answer's milliseconds
    rows: list[dict[str, Any]] = []
    scratch = args.keep or Path(tempfile.mkdtemp())
    scratch.mkdir(parents=True, exist_ok=True)
    for instance in instances:
        name, repo = instance["instance_id"], instance["repo"].split("/")[1]
        root = scratch / "trees" / name
        if not root.exists():
            with tarfile.open(DATA / "trees" / f"{name}.tar.gz") as tar:
                tar.extractall(scratch / "trees", filter="data")
        root = root.resolve()
        config = Config(
            db=scratch / f"{repo}{'' if embed else '-keyword'}.db",
            collection=collection_of(name),
            embedder="local" if embed else "none",
        )
        done = scratch / f"{config.db.name}.{config.collection}.done"
        started = time.perf_counter()
        row: dict[str, Any] = {"instance": name, "gold": instance["gold_files"]}
        if not done.exists():
            with Engine(config) as engine:
                engine.index([root], embed=embed)
            done.touch()
            row["index_s"] = round(time.perf_counter() - started, 1)
        text = instance["problem_statement"]
        with Engine(config) as after, Engine(replace(config, code_ranking="off")) as before:
            for system in systems:
                asked = time.perf_counter()
                if system == "locate":
                    ranked = [str(Path(f.path).relative_to(root)) for f in after.locate(text, limit=10)]
                elif system == "bm25s .py":
                    assert peers is not None and peers.stdin is not None and peers.stdout is not None
                    peers.stdin.write(json.dumps({"root": str(root), "query": text}) + "\n")
                    peers.stdin.flush()
                    ranked = json.loads(peers.stdout.readline())
                else:
                    mode, when = system.split()
                    engine = after if when == "after" else before
                    result = engine.search(text, mode=mode, limit=10)
                    ranked = distinct_files([h.chunk.path for h in result.hits], root)
                took[system].append((time.perf_counter() - asked) * 1000)
                row[system] = ranked[:10]
                rank = next((i + 1 for i, f in enumerate(ranked) if f in instance["gold_files"]), 0)
                by_repo[repo][system].append(rank)
                for k in CUTOFFS:
                    hits[system][k] += 0 < rank <= k
        rows.append(row)
        print(f"{name}: " + "  ".join(f"{s} {next((i + 1 for i, f in enumerate(row[s]) if f in instance['gold_files']), '-')}"
                                       for s in systems), flush=True)  # fmt: skip
    if peers is not None:
        peers.terminate()
    count = len(instances)
    table = {
        s: {f"hit@{k}": round(hits[s][k] / count, 3) for k in CUTOFFS}
        | {"p50_ms": round(statistics.median(took[s]), 1)}
        for s in systems
    }
    repos = {
        repo: {s: {f"hit@{k}": round(sum(0 < r <= k for r in ranks) / len(ranks), 3) for k in CUTOFFS}
               for s, ranks in found.items()} | {"instances": len(next(iter(found.values())))}
        for repo, found in by_repo.items()
    }  # fmt: skip
    print(json.dumps({"table": table, "by_repository": repos}, indent=1))
    if args.json:
        args.json.write_text(
            json.dumps({"instances": count, "table": table, "by_repository": repos, "rows": rows}, indent=1)
        )


if __name__ == "__main__":
    main()
