"""The engine's re-read (``search/migrating.py``: ``reread_arm``) measured where it matters most: a collection
served by the static model whose move to the bundled one has not begun, as just after ``retrievo index``.

For each judged set, the bundled model's own index (``retrievo eval``'s, built under ``--work`` when missing)
is copied as ``migration.py`` copies it at a share of 0 % (served by the static model, moving to the bundled
one, which holds no vector yet), then scored by ``retrievo eval`` (hybrid nDCG@10) at each re-read depth
(0: no re-read, the static model alone; the engine's default is ``REREAD_DEPTH``), beside the bundled
model's own hybrid on the original; for the judged sets, ECE@10 too (relevance that means what it says
whichever model ranked a hit). The time each depth's whole run took is reported too (opening the
engine included; semble's also runs its semantic pass; this machine, whatever else runs on it).

    .venv/bin/python -m benchmarks.static_model.reread_engine --work /tmp/rr [--sets scifact cosqa_dev] \\
        [--depths 0 20 30 50] [--json benchmarks/results/static-reread-engine-DATE.json]

``--semble DIR``: semble's repositories instead (``DIR``: the bundled indexes ``code_search/semble.py --work
DIR`` built), scored by its protocol; the mean over repositories.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.static_model import migration
from retrievo import Config
from retrievo.config import cache_folder
from retrievo.embed.local import MiniLMEmbedder
from retrievo.embed.static import StaticEmbedder
from retrievo.evaluation.runner import evaluate
from retrievo.search import migrating


def hybrid_only(name: str, db: Path) -> dict[str, float]:
    """``retrievo eval``'s hybrid nDCG@10 of the set ``name`` over the index ``db``, and its ECE@10 (how far
    the hits' relevance is from the share of them that are relevant)."""
    report = evaluate(migration.DATA / name, db=db, modes=["hybrid"], split=migration.SPLITS[name])
    return {"hybrid": round(report.modes[0].ndcg_10, 4), "ece_10": report.modes[0].ece_10}


def run(
    name: str, base: Path, work: Path, depths: list[int], semble: bool, static: StaticEmbedder
) -> dict[str, Any]:
    moving = work / f"{name}-moving.db"
    migration.moving_copy(base, moving, 0.0, static)
    score = migration.semble_scores if semble else hybrid_only
    bundled = score(name, base)
    row: dict[str, Any] = {"bundled": bundled["hybrid"]}
    if "ece_10" in bundled:
        row["bundled_ece_10"] = bundled["ece_10"]
    for depth in depths:
        os.environ["RETRIEVO_REREAD_DEPTH"] = str(depth)  # read by each engine the scoring opens
        migrating._MADE.clear()  # each depth pays for its own vectors
        started = time.perf_counter()
        scored = score(name, moving)
        row[str(depth)] = scored["hybrid"]
        row[f"{depth}_s"] = round(time.perf_counter() - started, 1)
        if "ece_10" in scored:
            row[f"{depth}_ece_10"] = scored["ece_10"]
        print(f"{name:20} re-read {depth:3}: {row[str(depth)]}  ({row[f'{depth}_s']} s)", flush=True)
    print(f"{name:20} bundled: {row['bundled']}", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--sets", nargs="+")
    parser.add_argument("--depths", type=int, nargs="+", default=[0, migrating.REREAD_DEPTH])
    parser.add_argument("--semble", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    names = (
        migration.semble_repositories(args.semble, args.sets)
        if args.semble
        else args.sets or list(migration.SPLITS)
    )
    static = StaticEmbedder()
    # Loaded before the first search, as the resident process loads it: a search never waits for a load
    # (the re-read starts once the model is ready), so without this the first queries would not re-read.
    MiniLMEmbedder(prepared_dir=cache_folder(Config.from_env()) / "models").share()
    table = {}
    for name in names:
        base = args.semble / f"{name}.db" if args.semble else args.work / f"{name}.db"
        table[name] = run(name, base, args.work, args.depths, bool(args.semble), static)
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.processor() or platform.machine()}, Python {platform.python_version()}",
        "command": "python -m benchmarks.static_model.reread_engine --work DIR --depths "
        + " ".join(map(str, args.depths))
        + (f" --semble {args.semble}" if args.semble else " --sets " + " ".join(names)),
        "ndcg_10": table,
    }
    if args.semble:
        result["mean"] = {
            key: round(float(np.mean([table[n][key] for n in table])), 4)
            for key in ["bundled", *map(str, args.depths)]
        }
        print(json.dumps(result["mean"]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
