"""Exact-match evidence in the fusion (``search/exact.py``), chosen leave-one-set-out and leave-one-style-out.

Reads the query-style battery's cache (``benchmarks/query_styles.py build --work DIR``). For every query
the arms' cached top 100 are fused by the engine's adaptive fusion with exact-match evidence
(``fusion.adaptive_fusion``: COVERAGE and SHORT for queries of at most two content words, PHRASE for a
candidate holding the whole query); a grid of the three constants is scored by hit@1 / hit@10 per (set,
style). The keyword arm's first 30 and the dense arm's first 10 are read, as the engine reads them.
The rule, applied to the cells in the training fold only: maximise the worst margin hit@1 / hit@10
(candidate) − max(keyword, semantic) over the cells, to 0.001; ties: the larger share of phrases (copied
or quoted) found first, then the larger mean margin. Two folds:
each set left out in turn, and each style left out in turn; the table printed is out of sample.

    .venv/bin/python -m benchmarks.quality.exact_lodo --work /tmp/qs [--json benchmarks/results/exact-lodo-DATE.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.quality.fusion_adaptive import arms_of
from benchmarks.query_styles import files_in_order, hits, load
from retrievo.search import exact
from retrievo.search import fusion as f
from retrievo.search.query import read_query

Cell = tuple[str, str]  # (set, style)


def prepared(work: Path) -> list[dict[str, Any]]:
    """Per query: its cell, gold, arms, paths and each candidate's evidence."""
    out = []
    for name, data in load(work).items():
        tokens = {
            cid: exact.passage_tokens(data["contexts"].get(cid, ""), text)
            for cid, text in data["texts"].items()
        }
        for query in data["queries"]:
            words = read_query(query["text"])
            arms = arms_of(query, 100)
            ids = {h.chunk_id for h in arms["keyword"][:30]} | {h.chunk_id for h in arms["semantic"][:10]}
            out.append({
                "cell": (name, query["style"]), "gold": query["gold"], "arms": arms, "paths": data["paths"],
                "words": len(words.content),
                "evidence": {c: exact.evidence(words, tokens[str(c)]) for c in ids if str(c) in tokens},
                "engine": [p.removeprefix(data["engine_prefix"]) for p in query["engine"]],
            })  # fmt: skip
    return out


Fuse = Callable[[dict[str, Any]], list[int]]


def boosted(coverage: float, phrase: float, short: float) -> Fuse:
    """The engine's adaptive fusion (``fusion.adaptive_fusion``) with these three constants."""

    def fuse(q: dict[str, Any]) -> list[int]:
        saved = f.COVERAGE, f.PHRASE, f.SHORT
        f.COVERAGE, f.PHRASE, f.SHORT = coverage, phrase, short
        try:
            evidence = {c: (e.coverage, e.phrase, e.quoted) for c, e in q["evidence"].items()}
            fused, _ = f.adaptive_fusion(q["arms"], q["words"], evidence)
        finally:
            f.COVERAGE, f.PHRASE, f.SHORT = saved
        return [c for c, _ in fused]

    return fuse


def arm(name: str) -> Fuse:
    return lambda q: [h.chunk_id for h in q["arms"][name]]


def scores(queries: list[dict[str, Any]], fuse: Fuse) -> dict[Cell, tuple[float, float]]:
    sums: dict[Cell, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for q in queries:
        h1, h10 = hits(files_in_order(fuse(q), q["paths"]), q["gold"])
        row = sums[q["cell"]]
        row[0] += h1
        row[1] += h10
        row[2] += 1
    return {cell: (a / n, b / n) for cell, (a, b, n) in sums.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/qs"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    queries = prepared(args.work)
    base = {"keyword": scores(queries, arm("keyword")), "semantic": scores(queries, arm("semantic"))}
    base["adaptive"] = scores(queries, boosted(0.0, 0.0, 0.0))
    base["engine"] = scores(queries, lambda q: q["engine"])  # type: ignore[arg-type,return-value]
    grid = {
        (c, p, w): scores(queries, boosted(c, p, w))
        for c, p, w in itertools.product(
            [0.0, 1.0, 2.0, 3.0, 4.0, 6.0], [0.0, 1.0, 2.0, 3.0, 4.0, 6.0], [0.0, 1.0, 2.0, 3.0, 4.0, 6.0]
        )
    }
    cells = sorted(base["keyword"])

    def margin(params: tuple[float, float, float], within: list[Cell]) -> tuple[float, float, float]:
        """The worst margin over the best arm (to 0.001), then the share of copied or quoted phrases put
        first (the issue's second goal), then the mean margin."""
        got = grid[params]
        gaps = [
            got[c][i] - max(base["keyword"][c][i], base["semantic"][c][i]) for c in within for i in (0, 1)
        ]
        phrases = [got[c][0] for c in within if c[1] in ("phrase", "quoted")] or [0.0]
        return round(min(gaps), 3), sum(phrases) / len(phrases), sum(gaps) / len(gaps)

    folds: dict[str, list[tuple[str, list[Cell], list[Cell]]]] = {
        "set": [(s, [c for c in cells if c[0] != s], [c for c in cells if c[0] == s]) for s in {c[0] for c in cells}],
        "style": [(s, [c for c in cells if c[1] != s], [c for c in cells if c[1] == s]) for s in {c[1] for c in cells}],
    }  # fmt: skip
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "folds": {}}
    for kind, parts in folds.items():
        rows = {}
        for left_out, train, test in sorted(parts):
            chosen = max(grid, key=lambda p: margin(p, train))
            for cell in test:
                rows["/".join(cell)] = {
                    "chosen": chosen,
                    **{m: [round(v, 3) for v in base[m][cell]] for m in base},
                    "out_of_sample": [round(v, 3) for v in grid[chosen][cell]],
                }
            print(f"{kind} fold without {left_out}: chosen coverage, phrase, short = {chosen}")
        result["folds"][kind] = rows
        print(f"{'cell':24} {'keyword':>11} {'semantic':>11} {'adaptive':>11} {'out-of-sample':>13}")
        for cell, row in sorted(rows.items()):
            print(
                f"{cell:24} "
                + " ".join(
                    f"{row[m][0]:.2f}/{row[m][1]:.2f}".rjust(11) for m in ("keyword", "semantic", "adaptive")
                )
                + f"{row['out_of_sample'][0]:.2f}/{row['out_of_sample'][1]:.2f}".rjust(14)
            )
    best_all = max(grid, key=lambda p: margin(p, cells))
    result["all_cells_choice"] = {"params": best_all, "margin": margin(best_all, cells)}
    print("chosen on every cell:", best_all, margin(best_all, cells))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
