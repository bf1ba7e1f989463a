"""Can a search say "no answer"? Answerability fitted leave-one-dataset-out, and both rates per surface.

Sets, from ../shared/data (indexed as ``retrievo eval DATASET --db DIR/NAME.db`` makes them):
- answerable: each judged set's own questions (the first 200 judged: SciFact claims, the Anthropic code
  set's questions, CoSQA dev queries);
- unanswerable: 100 questions of another set (CoSQA over SciFact, SciFact over the two code sets) and 100
  strings of random letters, over each collection.

For every search (hybrid, keyword, semantic) the script records the answerability readings
(``search/answer/answerability.py``) and each hit's own calibrated relevance before the final order is settled, then:
- fits the answerability profiles holding each dataset out, and prints, on the held-out set, the share of
  unanswerable questions with nothing at or above ``--min-score`` (goal ≥ 90 %) and the share of answerable
  questions (a relevant hit in the first 10) whose first hit keeps a relevance at or above it (goal ≥ 95 %:
  the first hit's relevance is the answerability, ``answer.relevances``);
- with ``--write``, fits on all three and writes ``src/retrievo/search/answer/answerability.json``.

    .venv/bin/python -m benchmarks.quality.answerability --dbs /tmp/ev [--write] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import string
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrievo import Config, Engine
from retrievo.engine import core
from retrievo.evaluation.beir import load_beir
from retrievo.search.answer import answerability as answer
from retrievo.search.answer.answerability import NO_ANSWER, readings
from retrievo.search.query import read_query

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
SETS = {
    "scifact": ("scifact", "test"),
    "anthropic": ("anthropic_codebase", "test"),
    "cosqa": ("cosqa_dev", "dev"),
}
OTHER = {"scifact": "cosqa", "anthropic": "scifact", "cosqa": "scifact"}
PROFILE_FEATURES = {
    "hybrid": ("top_cosine", "keyword_share", "no_words"),
    "keyword": ("word_share", "keyword_share"),
    "semantic": ("top_cosine", "no_words"),
}
ANSWERABLE_WEIGHT = 3.0  # a wrongly refused answer costs three wrongly kept non-answers (goals 95 % / 90 %)
MODES = {"hybrid": "hybrid", "keyword": "keyword", "semantic": "semantic"}
ANSWERABLE, UNANSWERABLE = 200, 100


def gibberish(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9)))
                 for _ in range(rng.randint(1, 5)))
        for _ in range(n)
    ]  # fmt: skip


def judged(name: str) -> tuple[list[tuple[str, str]], dict[str, dict[str, int]]]:
    folder, split = SETS[name]
    data = load_beir(DATA / folder, split)
    return [(q, data.queries[q]) for q in data.qrels if q in data.queries], data.qrels


def searched(
    dbs: Path, modes: Sequence[str], limit: int = 10, answerable: int | None = ANSWERABLE
) -> Iterator[tuple[str, str, str, Any, set[str]]]:
    """(set, kind, mode, the answer as searched before its relevance is settled, its judged file names) for
    each set's own questions (the first ``answerable``; kind "answer"), another set's and random strings."""
    seen: list[Any] = []
    real = core.settle

    def watching(result: Any) -> Any:
        seen.append(result)
        return real(result)

    core.settle = watching  # type: ignore[assignment]
    noise = gibberish(UNANSWERABLE)
    try:
        for name, (folder, _) in SETS.items():
            questions, qrels = judged(name)
            others = [text for _, text in judged(OTHER[name])[0][:UNANSWERABLE]]
            asked = [("answer", q, t) for q, t in questions[:answerable]]
            asked += [("other", None, t) for t in others] + [("gibberish", None, t) for t in noise]
            with Engine(Config(db=str(dbs / f"{name}.db"), collection=f"eval-{folder}")) as engine:
                for mode in modes:
                    for kind, qid, text in asked:
                        seen.clear()
                        engine.search(text, limit=limit, mode=mode)
                        gold = {d for d, s in qrels.get(qid or "", {}).items() if s > 0}
                        yield name, kind, mode, seen[-1], gold
            print(f"{name}: {len(asked)} questions x {len(modes)} modes", flush=True)
    finally:
        core.settle = real  # type: ignore[assignment]


def arguments(write: str) -> argparse.ArgumentParser:
    """The options both fits share: the indexes, rows collected before, whether to write the fit."""
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--dbs", type=Path, required=True, help="folder of scifact.db, anthropic.db, cosqa.db"
    )
    parser.add_argument("--rows", type=Path, help="reuse rows collected before (JSON)")
    parser.add_argument("--write", action="store_true", help=write)
    return parser


def cached(path: Path | None, collect: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The rows saved at ``path``, else collected now (and saved there)."""
    if path and path.exists():
        rows: list[dict[str, Any]] = json.loads(path.read_text())
        return rows
    rows = collect()
    if path:
        path.write_text(json.dumps(rows))
    return rows


def collect(dbs: Path) -> list[dict[str, Any]]:
    """One row per (set, question, mode): the readings, each hit's own relevance and whether it is judged."""
    rows: list[dict[str, Any]] = []
    for name, kind, mode, result, gold in searched(dbs, list(MODES)):
        hits = result.hits
        rows.append({
            "set": name, "kind": kind, "mode": mode,
            "readings": readings(hits, read_query(result.query), result.signals) if result.signals else None,
            # what settles an answer besides the model: the query held as typed, words the collection lacks
            "held": {True: 1, False: 0, None: -1}[answer.held(hits, read_query(result.query))] if hits else 0,
            "missing": result.signals.missing if result.signals else 0.0,
            "own": [h.relevance for h in hits],
            "relevant": [h.chunk.path.rsplit("/", 1)[-1] in gold for h in hits],
        })  # fmt: skip
    return rows


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-2) -> np.ndarray:
    """Weighted logistic regression by Newton's method (answerable rows weigh ``ANSWERABLE_WEIGHT``; a small
    ridge keeps separable sets finite)."""
    x = np.c_[np.ones(len(x)), x]
    w = np.zeros(x.shape[1])
    weight = np.where(y > 0, ANSWERABLE_WEIGHT, 1.0)
    for _ in range(60):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -40, 40)))
        grad = x.T @ ((p - y) * weight) + l2 * w
        hess = (x * (weight * p * (1 - p))[:, None]).T @ x + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w


def matrix(rows: Sequence[dict[str, Any]], features: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    usable = [r for r in rows if r["readings"] is not None]
    x = np.array([[r["readings"][f] for f in features] for r in usable])
    return x, np.array([1.0 if r["kind"] == "answer" else 0.0 for r in usable])


def relevances(row: dict[str, Any], w: np.ndarray, features: Sequence[str]) -> list[float]:
    if row["readings"] is None:
        return []
    z = w[0] + sum(c * row["readings"][f] for c, f in zip(w[1:], features, strict=True))
    a = 1 / (1 + math.exp(-max(-40.0, min(40.0, z))))
    held = row.get("held", 0)  # as ``answer.settle`` reads it (rows collected before it: the model alone)
    a = max(a, answer.HELD) if held == 1 else min(a, answer.UNQUOTED) if held == -1 else a
    a = min(a, answer.UNQUOTED) if row.get("missing", 0.0) >= answer.MISSING else a
    return answer.capped(answer.relevances(a, [a, *row["own"][1:]]))


def rates(
    rows: Sequence[dict[str, Any]], w: np.ndarray, features: Sequence[str], at: float
) -> dict[str, Any]:
    kept, refused = [], []
    for row in rows:
        values = relevances(row, w, features)
        if row["kind"] == "answer":
            if any(row["relevant"]):
                kept.append(bool(values) and values[0] >= at)
        else:
            refused.append(all(v < at for v in values))
    return {"kept": round(float(np.mean(kept)), 3), "refused": round(float(np.mean(refused)), 3),
            "answerable": len(kept), "unanswerable": len(refused)}  # fmt: skip


def main() -> None:
    parser = arguments("write src/retrievo/search/answer/answerability.json")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = cached(args.rows, lambda: collect(args.dbs))
    report: dict[str, Any] = {"min_score": NO_ANSWER, "held_out": {}, "fitted": {}}
    profiles = {}
    for profile, features in PROFILE_FEATURES.items():
        mine = [r for r in rows if r["mode"] == MODES[profile]]
        for held in SETS:
            w = fit(*matrix([r for r in mine if r["set"] != held], features))
            result = rates([r for r in mine if r["set"] == held], w, features, NO_ANSWER)
            report["held_out"][f"{profile}/{held}"] = result
            print(f"{profile:8} held out {held:9} {result}")
        w = fit(*matrix(mine, features))
        profiles[profile] = {"features": list(features), "coef": [round(float(c), 4) for c in w[1:]],
                             "intercept": round(float(w[0]), 4), "samples": len(mine)}  # fmt: skip
        for name in SETS:
            report["fitted"][f"{profile}/{name}"] = rates(
                [r for r in mine if r["set"] == name], w, features, NO_ANSWER
            )
    if args.write:  # the answerability profiles; the file's other entries (the hit model) are kept
        data = json.loads(answer.COEFFICIENTS.read_text(encoding="utf-8"))
        data.update({
            "fitted_on": "benchmarks/quality/answerability.py: scifact, anthropic_codebase, cosqa_dev — their own questions "
                         "against 100 of another set's and 100 random strings each; answerable rows weigh 3",
            "profiles": profiles})  # fmt: skip
        answer.COEFFICIENTS.write_text(json.dumps(data, indent=2) + "\n")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
