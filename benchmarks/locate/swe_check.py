"""``retrievo locate`` on ../shared/data/swe_loc_dev: the shipped ranking, its issue-text signals taken out,
and the learned file ranker on (issue 59).

Asks each of the 31 issues through ``Engine.locate`` (the public road: keyword arm, dense arm when the index
has vectors, ``code_files.rank_files``) over the indexes ``benchmarks/code_search/swe_locate.py --keep DIR``
made: the keyword-only ones (``--modes locate``: ``{repo}-keyword.db``) or, with ``--dense``, the embedded
ones (``--modes locate,hybrid``: ``{repo}.db``, the bundled model). Systems, each issue asked once each:

- ``shipped``: the defaults;
- ``no title, no message``: ``code_files.TITLE`` and ``MESSAGE`` at 0 (an issue's title words and the
  messages it quotes, added 2026-11-27);
- ``learned``: the learned ranker (``ranker.json``) on every text (by default it re-orders one-line texts
  of at most ``code_files.LEARNED_WORDS`` words: no issue here).

Prints hit@1/5/10 (a gold file among the first k files), acc@5/10 (every gold file among them: SweRank's
measure) and each system's median and slowest answer time. With ``--loro``, ``TITLE`` × ``MESSAGE`` over
``GRID`` is chosen leave-one-repository-out (on three repositories by hit@1, then @5, @10; the fewest weight
on a tie; scored on the fourth), pooled over the four.

    .venv/bin/python -m benchmarks.locate.swe_check [--keep /tmp/swe/new] [--dense] [--loro] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.code_search.swe_locate import collection_of, load_instances
from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.search.code import files as code_files

CUTOFFS = (1, 5, 10)
short = code_files._short  # which texts the learned ranker re-orders by default
GRID = [(title, message) for title in (0.0, 0.25, 0.5, 1.0) for message in (0.0, 0.3, 0.6)]
ALWAYS = 10**9
SYSTEMS = {  # name: (TITLE, MESSAGE, LEARNED_WORDS)
    "shipped": (code_files.TITLE, code_files.MESSAGE, code_files.LEARNED_WORDS),
    "no title, no message": (0.0, 0.0, code_files.LEARNED_WORDS),
    "learned": (code_files.TITLE, code_files.MESSAGE, ALWAYS),
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", type=Path, default=Path("/tmp/swe/new"))
    parser.add_argument("--dense", action="store_true", help="the embedded indexes, the bundled model")
    parser.add_argument("--loro", action="store_true", help="choose TITLE × MESSAGE leaving a repository out")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    grid: dict[tuple[float, float], dict[str, list[int]]] = {setting: {} for setting in GRID}
    places: dict[str, list[list[int]]] = {system: [] for system in SYSTEMS}
    took: dict[str, list[float]] = {system: [] for system in SYSTEMS}
    rows = []
    for instance in load_instances():
        name, repo = instance["instance_id"], instance["repo"].split("/")[1]
        root = str((args.keep / "trees" / name).resolve()) + "/"
        db = args.keep / (f"{repo}.db" if args.dense else f"{repo}-keyword.db")
        config = Config(db=db, collection=collection_of(name), embedder="local" if args.dense else "none")
        row: dict[str, object] = {"instance": name}
        with Engine(config) as engine:
            engine.locate(instance["problem_statement"], limit=10)  # warm: the index opens, the query embeds
            for system, (title, message, learned) in SYSTEMS.items():
                code_files.TITLE, code_files.MESSAGE, code_files.LEARNED_WORDS = title, message, learned
                code_files._short = short if learned != ALWAYS else lambda question: True
                started = time.perf_counter()
                files = engine.locate(instance["problem_statement"], limit=10)
                took[system].append((time.perf_counter() - started) * 1000)
                found = [f.path.removeprefix(root) for f in files]
                gold = [found.index(g) + 1 if g in found else 0 for g in instance["gold_files"]]
                places[system].append(gold)
                row[system] = gold
            code_files.LEARNED_WORDS, code_files._short = SYSTEMS["shipped"][2], short
            for setting in GRID if args.loro else ():
                code_files.TITLE, code_files.MESSAGE = setting
                found = [
                    f.path.removeprefix(root) for f in engine.locate(instance["problem_statement"], limit=10)
                ]
                grid[setting][name] = [
                    found.index(g) + 1 if g in found else 0 for g in instance["gold_files"]
                ]
        code_files.TITLE, code_files.MESSAGE, code_files.LEARNED_WORDS = SYSTEMS["shipped"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    table = {system: scores(found) | {"p50_ms": round(statistics.median(took[system]), 1),
                                      "max_ms": round(max(took[system]), 1)}
             for system, found in places.items()}  # fmt: skip
    print(json.dumps(table, indent=1))
    chosen = loro(grid, load_instances()) if args.loro else None
    if chosen:
        print(json.dumps(chosen, indent=1))
    if args.json:
        args.json.write_text(
            json.dumps({"dense": args.dense, "table": table, "loro": chosen, "rows": rows}, indent=1)
        )


def loro(
    grid: dict[tuple[float, float], dict[str, list[int]]], instances: list[dict[str, Any]]
) -> dict[str, Any]:
    """Each repository scored by the setting best on the other three (hit@1, @5, @10; then the least weight)."""
    repos = sorted({i["repo"] for i in instances})
    held: list[list[int]] = []
    chosen = {}
    for repo in repos:
        train = [i["instance_id"] for i in instances if i["repo"] != repo]
        test = [i["instance_id"] for i in instances if i["repo"] == repo]

        def key(setting: tuple[float, float], names: list[str] = train) -> tuple[float, ...]:
            found = scores([grid[setting][n] for n in names])
            return (*(found[f"hit@{k}"] for k in CUTOFFS), -sum(setting))

        best = max(GRID, key=key)
        chosen[repo] = {"title": best[0], "message": best[1]}
        held += [grid[best][n] for n in test]
    every = {f"title {t}, message {m}": scores(list(grid[t, m].values())) for t, m in GRID}
    return {"chosen": chosen, "held_out": scores(held), "in_sample": every}


def scores(places: list[list[int]]) -> dict[str, float]:
    """hit@k: any gold file among the first k; acc@k: all of them."""
    n = len(places)
    hit = {f"hit@{k}": sum(any(0 < p <= k for p in gold) for gold in places) / n for k in CUTOFFS}
    acc = {f"acc@{k}": sum(all(0 < p <= k for p in gold) for gold in places) / n for k in (5, 10)}
    return {key: round(value, 3) for key, value in (hit | acc).items()}


if __name__ == "__main__":
    main()
