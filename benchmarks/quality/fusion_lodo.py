"""Fusion chosen leave-one-dataset-out: every parameter picked on all sets but one, scored on the one left out.

Each arm's top-``depth`` (100, the engine's default arm depth) is fetched once per judged query from an
index built by `retrievo eval` and cached (``fusion_adaptive.load``); every candidate fusion is then scored
offline. A candidate is a family and its parameters; the selection rule, applied to the training sets only,
is the issue's gate turned into an objective: maximise the worst margin over the training sets of

    nDCG@10(candidate) − max(keyword, semantic, z-score, RRF k=60)

(ties: the larger mean nDCG). The table printed is out of sample: each row's "chosen" column was picked
without that row's set.

    .venv/bin/retrievo eval ../shared/data/scifact --db /tmp/ev/scifact.db
    .venv/bin/retrievo eval ../shared/data/anthropic_codebase --db /tmp/ev/anthropic.db
    .venv/bin/retrievo eval ../shared/data/cosqa_dev --split dev --db /tmp/ev/cosqa.db
    .venv/bin/python -m benchmarks.quality.fusion_lodo --cache /tmp/ev \
        scifact=../shared/data/scifact:/tmp/ev/scifact.db \
        anthropic_codebase=../shared/data/anthropic_codebase:/tmp/ev/anthropic.db \
        cosqa_dev=../shared/data/cosqa_dev:/tmp/ev/cosqa.db:dev --report benchmarks/results/fusion-lodo.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from benchmarks.quality.fusion_adaptive import Run, arms_of, load, ranked_docs
from retrievo.evaluation.metrics import ndcg_at_k
from retrievo.models import ArmHit
from retrievo.search import fusion as f

Arms = Mapping[str, Sequence[ArmHit]]
Fused = list[tuple[int, float]]


def _shrunk(arms: Arms, shrink: float) -> dict[str, float]:
    weights = f.adaptive_weights(arms)
    return {arm: w**shrink for arm, w in weights.items()}


def _convex(arms: Arms, alpha: float, theoretical: bool) -> Fused:
    """Min-max normalised scores, semantic weight ``alpha`` (Bruch et al.'s MM / TM2C2); absent = 0."""
    fused: dict[int, float] = {}
    for arm, weight in (("semantic", alpha), ("keyword", 1.0 - alpha)):
        hits = arms.get(arm) or []
        if not hits:
            continue
        high = max(h.score for h in hits)
        low = (-1.0 if arm == "semantic" else 0.0) if theoretical else min(h.score for h in hits)
        span = (high - low) or 1.0
        for hit in hits:
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + weight * (hit.score - low) / span
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def _consensus(arms: Arms, bonus: float, shrink: float, balanced: bool = False, top: int = 0) -> Fused:
    """(Adaptive) z-score fusion plus ``bonus`` for each arm beyond the first that returned the chunk.

    ``balanced``: the bonus scaled by how even the arm weights are (2·min/sum: 1 when equal); ``top``: only
    the arms' first ``top`` count (0: all).
    """
    weights = _shrunk(arms, shrink) if shrink else None
    fused = f.zscore_fusion(arms, weights=weights)
    if balanced and weights:
        bonus *= 2 * min(weights.values()) / sum(weights.values())
    count: dict[int, int] = {}
    for hits in arms.values():
        for hit in hits[: top or None]:
            count[hit.chunk_id] = count.get(hit.chunk_id, 0) + 1
    return sorted(
        ((c, s + bonus * max(0, count.get(c, 0) - 1)) for c, s in fused), key=lambda item: (-item[1], item[0])
    )


Candidate = tuple[str, dict[str, float], Callable[[Arms], Fused]]


def candidates() -> list[Candidate]:
    found: list[Candidate] = [
        ("keyword", {}, lambda a: [(h.chunk_id, h.score) for h in a["keyword"]]),
        ("semantic", {}, lambda a: [(h.chunk_id, h.score) for h in a["semantic"]]),
    ]
    found.append(("adaptive, shipped", {}, lambda a: f.adaptive_fusion(a)[0]))
    for k in (5, 10, 20, 40, 60, 100):
        found.append(("rrf", {"k": k}, lambda a, k=k: f.rrf(a, k=k)))
    for s in (0.0, 0.25, 0.5, 0.75, 1.0):
        found.append(("adaptive z-score", {"shrink": s},
                      lambda a, s=s: f.zscore_fusion(a, weights=_shrunk(a, s) if s else None)))  # fmt: skip
        found.append(("adaptive RRF k=60", {"shrink": s}, lambda a, s=s: f.rrf(a, weights=_shrunk(a, s))))
    for alpha in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        found.append(("convex min-max", {"alpha": alpha}, lambda a, x=alpha: _convex(a, x, False)))
        found.append(("convex TM2C2", {"alpha": alpha}, lambda a, x=alpha: _convex(a, x, True)))
    for bonus in (0.25, 0.5, 1.0, 2.0):
        for s in (0.0, 0.5, 1.0):
            found.append(("z-score + consensus", {"bonus": bonus, "shrink": s},
                          lambda a, b=bonus, s=s: _consensus(a, b, s)))  # fmt: skip
        for s in (0.5, 1.0):
            found.append(("z-score + balanced consensus", {"bonus": bonus, "shrink": s},
                          lambda a, b=bonus, s=s: _consensus(a, b, s, balanced=True)))  # fmt: skip
            for top in (10, 30):
                found.append(("z-score + consensus in top", {"bonus": bonus, "shrink": s, "top": top},
                              lambda a, b=bonus, s=s, t=top: _consensus(a, b, s, top=t)))  # fmt: skip
    return found


def label(candidate: Candidate) -> str:
    name, params, _ = candidate
    return name + ("" if not params else " (" + ", ".join(f"{k}={v:g}" for k, v in params.items()) + ")")


def score(runs: list[Run], fuse: Callable[[Arms], Fused], depth: int) -> float:
    return float(np.mean([ndcg_at_k(ranked_docs(r, fuse(arms_of(r, depth))), r["judged"], 10) for r in runs]))


REFERENCES = ("keyword", "semantic", "adaptive z-score (shrink=0)", "rrf (k=60)")  # shrink=0: plain z-score


def choose(table: dict[str, dict[str, float]], sets: Sequence[str]) -> str:
    def merit(name: str) -> tuple[float, float]:
        margins = [table[name][s] - max(table[r][s] for r in REFERENCES) for s in sets]
        return (round(min(margins), 4), float(np.mean([table[name][s] for s in sets])))

    return max(table, key=merit)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("specs", nargs="+", help="name=dataset_dir:db[:split]")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--report", type=Path)
    args = parser.parse_args()
    data = load(args.specs, args.cache, args.depth)
    table = {
        label(c): {name: round(score(runs, c[2], args.depth), 4) for name, runs in data.items()}
        for c in candidates()
    }
    names = list(data)
    out_of_sample = {}
    for left_out in names:
        chosen = choose(table, [n for n in names if n != left_out])
        out_of_sample[left_out] = {"chosen": chosen, "ndcg": table[chosen][left_out]}
    on_all = choose(table, names)
    # The shipped rule (fusion.CONSENSUS): the largest balanced-consensus bonus over the adaptive weights
    # that costs no more than 0.001 of mean nDCG on the training sets against no bonus.
    bonuses = {0.0: "adaptive z-score (shrink=1)"} | {
        b: f"z-score + balanced consensus (bonus={b:g}, shrink=1)" for b in (0.25, 0.5, 1.0, 2.0)
    }
    rule = {}
    for left_out in names:
        train = [n for n in names if n != left_out]
        base = np.mean([table[bonuses[0.0]][n] for n in train])
        bonus = max(
            b for b, row in bonuses.items() if np.mean([table[row][n] for n in train]) >= base - 0.001
        )
        rule[left_out] = {"bonus": bonus, "ndcg": table[bonuses[bonus]][left_out]}
    width = max(map(len, table))
    print(f"{'candidate':<{width}}  " + "  ".join(f"{n:>18}" for n in names))
    for name, row in table.items():
        print(f"{name:<{width}}  " + "  ".join(f"{row[n]:>18.4f}" for n in names))
    print("\nleave one dataset out (chosen on the others, scored on the one left out):")
    for left_out, got in out_of_sample.items():
        refs = {r: table[r][left_out] for r in REFERENCES}
        shortfall = max(refs.values()) - got["ndcg"]
        print(
            f"  {left_out}: {got['chosen']} -> {got['ndcg']:.4f}  (best reference {max(refs.values()):.4f}, "
            f"shortfall {shortfall:+.4f})"
        )
    print(f"\nchosen on every set: {on_all}")
    print("\nthe shipped rule, leave one dataset out:")
    for left_out, got in rule.items():
        print(
            f"  {left_out}: bonus {got['bonus']:g} -> {got['ndcg']:.4f}  (rrf k=60 {table['rrf (k=60)'][left_out]:.4f},"
            f" z-score {table[REFERENCES[2]][left_out]:.4f})"
        )
    if args.report:
        args.report.write_text(json.dumps({"depth": args.depth, "sets": names, "table": table,
                                           "leave_one_out": out_of_sample, "chosen_on_all": on_all,
                                           "shipped_rule_leave_one_out": rule},
                                          indent=1), encoding="utf-8")  # fmt: skip


if __name__ == "__main__":
    main()
