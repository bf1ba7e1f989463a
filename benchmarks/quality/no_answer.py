""" "No answer" per tool: with each tool's default threshold, how often an unanswerable question gets
nothing, and how often an answerable one keeps its first relevant hit (issue 46; docs/benchmarks.md).

Tools and their defaults, asked as the tool asks the engine:
- ``search`` with the documented ``--min-score 0.4`` (the "no answer" cut, docs/search.md);
- ``semanticSearch`` (records) with ``min_score`` 0.5: the relationship questions of
  ``benchmarks/records_registry/relation_questions.py`` over their own ArchiMate model, against the other model's questions,
  SciFact claims and random strings over it;
- ``search_library`` with ``min_similarity`` 0.7 over SciFact: its claims against CoSQA queries and random
  strings;
- ``search`` over click (code): SciFact claims and random strings (unanswerable) against the click
  questions of ``benchmarks/code_search/tokens_to_answer.py``.

Answerable questions (the tool found a gold item): ``answered``, the answer keeps something at the default
threshold (not refused); ``kept``, the gold item's first hit itself is kept (since relevance is each hit's own
probability, a relevant hit further down may read below it).

The judged search sets (SciFact, the Anthropic code set, CoSQA) are reported by ``benchmarks/quality/answerability.py``.

    .venv/bin/python -m benchmarks.quality.no_answer --scifact /tmp/ev/scifact.db --click /tmp/click.db [--json F]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.code_search.tokens_to_answer import CLICK_QUESTIONS
from benchmarks.quality.answerability import DATA, gibberish, judged
from benchmarks.records_registry.relation_questions import MODELS, QUESTIONS, _normal
from retrievo import Config, Engine
from retrievo.evaluation.beir import load_beir
from retrievo.models import Filters, Kind
from retrievo.search.answer.answerability import NO_ANSWER
from retrievo.search.records.elements import element_scores, similarity_scores

ARCHIMATE = DATA / "archimate"
# Each tool's answer: (label, score) in order — a label is what "relevant" is judged on — and the answer's
# answerability where the tool's threshold reads it (None: the threshold reads each score).
Answer = Callable[[str], tuple[list[tuple[str, float]], float | None]]


def kept_by(
    found: Sequence[tuple[str, float]], answerable: float | None, at: float, whole: bool
) -> list[str]:
    """What a tool keeps at threshold ``at``: ``whole`` (semanticSearch) the list whole when the answer's
    answerability reaches it; else each hit at or above it, and the first while the answerability reaches
    it (``rescore.cut``)."""
    if whole and answerable is not None:
        return [label for label, _ in found] if answerable >= at else []
    kept = [label for label, score in found if score >= at]
    if not kept and found and answerable is not None and answerable >= at:
        kept = [found[0][0]]
    return kept


def rates(
    answer: Answer,
    at: float,
    answerable: Sequence[tuple[str, set[str]]],
    unanswerable: Sequence[str],
    whole: bool = False,
) -> dict[str, Any]:
    kept, answered, returned = [], [], []
    for question, gold in answerable:
        found, a = answer(question)
        if any(
            label in gold for label, _ in found
        ):  # the tool found it: does its default keep it and an answer?
            shown = kept_by(found, a, at, whole)
            kept.append(any(label in gold for label in shown))
            answered.append(bool(shown))
            returned.append(len(shown))
    refused = [not kept_by(*answer(q), at, whole) for q in unanswerable]
    return {"threshold": at, "answerable": len(kept), "answered": round(sum(answered) / max(1, len(answered)), 3),
            "kept": round(sum(kept) / max(1, len(kept)), 3),
            "returned_mean": round(sum(returned) / max(1, len(returned)), 2),
            "unanswerable": len(refused), "refused": round(sum(refused) / max(1, len(refused)), 3)}  # fmt: skip


def records(engine: Engine, collection: str, scores: Callable[..., list[float]] = element_scores) -> Answer:
    def answer(question: str) -> tuple[list[tuple[str, float]], float | None]:
        result = engine.search(question, collection, 10, filters=Filters(kinds=(Kind.RECORD,)), explain=True)
        gate = result.answerability if scores is element_scores else None  # before: each score was cut
        return [(_normal(str(h.chunk.metadata.get("element_name") or h.chunk.title)), s)
                for h, s in zip(result.hits, scores(result.hits), strict=True)], gate  # fmt: skip

    return answer


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--scifact", type=Path, required=True, help="index made by retrievo eval scifact --db"
    )
    parser.add_argument("--click", type=Path, required=True, help="index of ../shared/data/code/click")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    noise = gibberish(100, seed=11)
    claims = [text for _, text in judged("scifact")[0][:100]]
    cosqa = [text for _, text in judged("cosqa")[0][:100]]
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        models = {"archisurance": MODELS["archisurance"], "aoeff": MODELS["aoeff"]}
        with Engine(Config(db=Path(tmp) / "models.db")) as engine:
            for name, relative in models.items():
                engine.index([ARCHIMATE / relative], collection=name)
            for name in models:
                other = next(m for m in models if m != name)
                own = [(q, {_normal(g) for g in gold}) for m, _, q, gold in QUESTIONS if m == name]
                theirs = [q for m, _, q, _ in QUESTIONS if m == other]
                sets = f"{len(own)} own questions; {len(theirs)} of {other}, 100 SciFact claims, 100 random"
                for label, scores in (("", element_scores), (" (before: (1 + cos) / 2)", similarity_scores)):
                    report[f"semanticSearch / {name}{label}"] = rates(
                        records(engine, name, scores), 0.5, own, [*theirs, *claims, *noise], whole=True
                    ) | {"sets": sets}
    scifact = load_beir(DATA / "scifact", "test")
    gold = [(text, {f"beir://scifact/{d}" for d, s in scifact.qrels[q].items() if s > 0})
            for q, text in judged("scifact")[0][:200]]  # fmt: skip
    with Engine(Config(db=args.scifact, collection="eval-scifact")) as engine:

        def library(question: str) -> tuple[list[tuple[str, float]], float | None]:
            found = engine.library(question, limit=10, min_similarity=0.0)
            return [(e.document.best.chunk.path, e.document.similarity) for e in found.entries], None

        def search(question: str) -> tuple[list[tuple[str, float]], float | None]:
            result = engine.search(question, limit=10)
            return [(h.chunk.path, h.relevance) for h in result.hits], result.answerability

        report["search_library / scifact"] = rates(library, 0.7, gold, [*cosqa, *noise]) | {
            "sets": "200 SciFact claims; 100 CoSQA queries, 100 random"}  # fmt: skip
        report["search / scifact"] = rates(search, NO_ANSWER, gold, [*cosqa, *noise]) | {
            "sets": "200 SciFact claims; 100 CoSQA queries, 100 random"}  # fmt: skip
    with Engine(Config(db=args.click, collection="click")) as engine:

        def code(question: str) -> tuple[list[tuple[str, float]], float | None]:
            result = engine.search(question, limit=10)
            return [
                (h.chunk.path.split("/code/click/", 1)[-1], h.relevance) for h in result.hits
            ], result.answerability

        own = [(q, set(files)) for q, files in CLICK_QUESTIONS]
        report["search / click"] = rates(code, NO_ANSWER, own, [*claims, *noise]) | {
            "sets": f"{len(own)} click questions; 100 SciFact claims, 100 random"}  # fmt: skip
    for tool, row in report.items():
        print(f"{tool:32} {row}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
