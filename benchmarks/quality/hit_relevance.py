"""Per-hit relevance a threshold can use (issue 55 item 5): fitted leave-one-dataset-out, before and after.

A hit's relevance is its own calibrated probability of being relevant (``search/answer/answerability.py``): a logistic
model over the answer's answerability and the hit's own evidence, capped down the list. This script:

- collects, through the engine, every judged question of SciFact (test), the Anthropic code set (test) and
  CoSQA dev (hybrid search, ten hits), plus 100 of another set's questions and 100 random strings over
  each collection (unanswerable), recording what ``settle`` reads: the answerability readings, each hit's
  calibrated arm evidence (``calibration.py``), its fused score, and whether it is judged relevant;
- fits the hit model on two sets and scores the third (leave-one-dataset-out), and prints per set, for the
  old relevance (answerability × place) and the new: AUC (relevant vs not, top-10 hits), ECE over ten
  bins, the share relevant among hits ≥ 0.7 and the share of hits ≥ 0.7; and the "no answer" rates at
  ``NO_ANSWER`` (unanswerable questions with nothing at or above it; answerable ones with a hit at or above it);
- prints what each threshold (0, ``NO_ANSWER``, 0.5, ``STRONG``) keeps, held out: unanswerable questions
  refused, answerable ones answered, hits kept, the share of them relevant (docs/search.md "Relevance");
- with ``--write``, fits on all three and writes the model into ``src/retrievo/search/answer/answerability.json`` ("hit").

Features compared leave-one-dataset-out (capped at ``A``; AUC / ECE alike within 0.01 for all): ``own`` +
``score_share`` alone put no SciFact or Anthropic hit at ≥ 0.7; ``lead`` lets a clear first hit read strong
(83–95 % of those relevant); the hit's place added nothing (the cap carries it); the raw fused score helped a
little but means different things per fusion and mode (BM25 in keyword mode); the answerability as a
feature instead of a cap let unanswerable questions through (refused 33–45 % at ``NO_ANSWER``).

    .venv/bin/python -m benchmarks.quality.hit_relevance --dbs /tmp/ev [--rows rows.json] [--write]

``--dbs`` holds scifact.db, anthropic.db and cosqa.db as ``retrievo eval`` builds them (collections
``eval-scifact``, ``eval-anthropic_codebase``, ``eval-cosqa_dev``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.quality.answerability import SETS, arguments, cached, searched
from retrievo.evaluation.metrics import expected_calibration_error
from retrievo.search.answer import answerability as answer
from retrievo.search.answer.answerability import NO_ANSWER, STRONG, answerability, hit_features
from retrievo.search.query import read_query

TOP = 10
FLOOR, STEP = (
    0.7,
    0.01,
)  # the relevance before (issue 46): answerability × place, place = FLOOR + …, −1 % a place


def before(a: float, own: Sequence[float]) -> list[float]:
    """The old relevance: ``A × (FLOOR + (1 − FLOOR) × best-at-or-below / first's) × (1 − STEP)^place``."""
    best, below = [], 0.0
    for value in reversed(own):
        below = max(below, value)
        best.append(below)
    best.reverse()
    top = best[0] if best and best[0] > 0 else 1.0
    return answer.capped([a * (FLOOR + (1 - FLOOR) * b / top) * (1 - STEP) ** i for i, b in enumerate(best)])


def collect(dbs: Path) -> list[dict[str, Any]]:
    """One row per (set, question): answerability, each hit's features and old relevance, its judgment."""
    rows: list[dict[str, Any]] = []
    for name, kind, _, result, gold in searched(dbs, ("hybrid",), TOP, answerable=None):
        hits = result.hits
        a = answerability(hits, read_query(result.query), result.signals) if hits and result.signals else 0.0
        rows.append({
            "set": name, "kind": kind, "a": a,
            "features": hit_features(hits)[:TOP],
            "old": before(a, [h.relevance for h in hits])[:TOP],
            "relevant": [h.chunk.path.rsplit("/", 1)[-1] in gold for h in hits[:TOP]],
        })  # fmt: skip
    return rows


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-2) -> np.ndarray:
    """Logistic regression by Newton's method (a small ridge keeps separable sets finite)."""
    x = np.c_[np.ones(len(x)), x]
    w = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -40, 40)))
        grad = x.T @ (p - y) + l2 * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w


def matrix(rows: Sequence[dict[str, Any]], features: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    x = [[f[name] for name in features] for r in rows if r["kind"] == "answer" for f in r["features"]]
    y = [float(v) for r in rows if r["kind"] == "answer" for v in r["relevant"]]
    return np.array(x), np.array(y)


def predict(row: dict[str, Any], w: np.ndarray, features: Sequence[str]) -> list[float]:
    model = answer.Model(tuple(features), tuple(float(c) for c in w[1:]), float(w[0]))
    return answer.capped(answer.relevances(row["a"], [model.probability(f) for f in row["features"]]))


def auc(pairs: Sequence[tuple[float, bool]]) -> float:
    pos = [p for p, y in pairs if y]
    neg = [p for p, y in pairs if not y]
    if not pos or not neg:
        return float("nan")
    order = sorted(pos + neg)
    ranks: dict[float, float] = {}
    i = 0
    while i < len(order):  # mid-ranks for ties
        j = i
        while j < len(order) and order[j] == order[i]:
            j += 1
        ranks[order[i]] = (i + j + 1) / 2
        i = j
    return (sum(ranks[p] for p in pos) - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def table(rows: Sequence[dict[str, Any]], values: Sequence[list[float]]) -> dict[str, float]:
    pairs = [
        (v, rel)
        for r, vs in zip(rows, values, strict=True)
        if r["kind"] == "answer"
        for v, rel in zip(vs, r["relevant"], strict=False)
    ]
    strong = [rel for v, rel in pairs if v >= STRONG]
    refused = [
        all(v < NO_ANSWER for v in vs) for r, vs in zip(rows, values, strict=True) if r["kind"] != "answer"
    ]
    kept = [
        any(v >= NO_ANSWER for v in vs)
        for r, vs in zip(rows, values, strict=True)
        if r["kind"] == "answer" and any(r["relevant"])
    ]
    first = [
        next(v for v, rel in zip(vs, r["relevant"], strict=False) if rel) >= NO_ANSWER
        for r, vs in zip(rows, values, strict=True)
        if r["kind"] == "answer" and any(r["relevant"])
    ]
    return {
        "auc": round(auc(pairs), 3),
        "ece": round(expected_calibration_error(pairs), 3),
        "relevant_at_0.7": round(float(np.mean(strong)), 3) if strong else float("nan"),
        "share_at_0.7": round(len(strong) / len(pairs), 3),
        "refused": round(float(np.mean(refused)), 3),
        "answered": round(float(np.mean(kept)), 3),
        "first_relevant_kept": round(float(np.mean(first)), 3),
    }


def kept_at(a: float, values: Sequence[float], threshold: float) -> list[bool]:
    """Which hits a threshold keeps (``rescore.cut``): those at or above it, and the first hit while the
    answerability ``a`` reaches it."""
    kept = [v >= threshold for v in values]
    if kept and not kept[0] and a >= threshold:
        kept[0] = True
    return kept


def thresholds(rows: Sequence[dict[str, Any]], values: Sequence[list[float]]) -> dict[str, dict[str, float]]:
    """What each threshold keeps, held out: unanswerable questions refused (nothing kept), answerable ones
    answered (something kept), hits kept per answered question, the share of kept hits judged relevant,
    and answerable questions whose first relevant hit is kept."""
    out: dict[str, dict[str, float]] = {}
    for threshold in (0.0, NO_ANSWER, 0.5, STRONG):
        refused, answered, count, relevant, first = [], [], [], [], []
        for row, vs in zip(rows, values, strict=True):
            kept = kept_at(row["a"], vs, threshold)
            if row["kind"] != "answer":
                refused.append(not any(kept))
                continue
            if not any(row["relevant"]):
                continue
            answered.append(any(kept))
            count.append(sum(kept))
            relevant += [rel for k, rel in zip(kept, row["relevant"], strict=False) if k]
            first.append(next(k for k, rel in zip(kept, row["relevant"], strict=False) if rel))
        out[str(threshold)] = {
            "refused": round(float(np.mean(refused)), 3), "answered": round(float(np.mean(answered)), 3),
            "hits_kept": round(float(np.mean(count)), 2),
            "kept_relevant": round(float(np.mean(relevant)), 3) if relevant else float("nan"),
            "first_relevant_kept": round(float(np.mean(first)), 3),
        }  # fmt: skip
    return out


def main() -> None:
    args = arguments("write the fitted model into answerability.json").parse_args()
    rows = cached(args.rows, lambda: collect(args.dbs))
    features = answer.HIT_FEATURES
    print(f"features: {features}; relevance >= {STRONG} 'strong', < {NO_ANSWER} 'no answer'")
    head = f"{'set':10} {'':6} {'AUC':>6} {'ECE':>6} {'rel@.7':>7} {'hits@.7':>8} {'refused':>8} {'answered':>9} {'1st kept':>9}"
    print(head)
    kept_by: dict[str, dict[str, dict[str, float]]] = {}
    for held in SETS:
        mine = [r for r in rows if r["set"] == held]
        w = fit(*matrix([r for r in rows if r["set"] != held], features))
        for label, values in (
            ("before", [r["old"] for r in mine]),
            ("after", [predict(r, w, features) for r in mine]),
        ):
            t = table(mine, values)
            if label == "after":
                kept_by[held] = thresholds(mine, values)
            print(f"{held:10} {label:6} {t['auc']:6.3f} {t['ece']:6.3f} {t['relevant_at_0.7']:7.3f} "
                  f"{t['share_at_0.7']:8.3f} {t['refused']:8.3f} {t['answered']:9.3f} {t['first_relevant_kept']:9.3f}")  # fmt: skip
    print("what each threshold keeps (held out; the first hit kept while the answerability reaches it):")
    print(f"{'set':10} {'min':>5} {'refused':>8} {'answered':>9} {'hits':>5} {'relevant':>9} {'1st kept':>9}")
    for held, table_of in kept_by.items():
        for threshold, t in table_of.items():
            print(f"{held:10} {threshold:>5} {t['refused']:8.3f} {t['answered']:9.3f} {t['hits_kept']:5.2f} "
                  f"{t['kept_relevant']:9.3f} {t['first_relevant_kept']:9.3f}")  # fmt: skip
    w = fit(*matrix(rows, features))
    print(
        "fitted on all:",
        {
            "intercept": round(float(w[0]), 4),
            **{f: round(float(c), 4) for f, c in zip(features, w[1:], strict=True)},
        },
    )
    if args.write:
        data = json.loads(answer.COEFFICIENTS.read_text(encoding="utf-8"))
        data["hit"] = {
            "fitted_on": "benchmarks/quality/hit_relevance.py: every judged question of scifact (test), "
            "anthropic_codebase (test), cosqa_dev (dev), hybrid, top 10 hits",
            "features": list(features),
            "coef": [round(float(c), 4) for c in w[1:]],
            "intercept": round(float(w[0]), 4),
            "samples": len(matrix(rows, features)[1]),
        }
        answer.COEFFICIENTS.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
