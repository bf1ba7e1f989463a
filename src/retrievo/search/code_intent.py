"""Code questions in ``search``: the answer ranked with its files' evidence, implementation first (issue 35).

A re-scorer (``search/rescore.py``). It reads a query as a code question when it holds a traceback, code, an
error's name, a call, asks "where is / how does / which function …", or is an issue's text
(``reads_as_code_question``), and the collection holds code. Files are ranked by ``search/code_files.py``
(the keyword and dense arms' chunks at depth, modules named, identifiers defined, traceback frames, file
names of a short question). Each hit then scores

    ROLE[its file's kind] × (its fused score, min-max over the answer + FILE × its evidence / the best file's)

with the file's evidence × ``REPEAT`` for each further hit of the same file (more distinct files in the
answer). ROLE puts source before tests, docs and changelogs unless the text asks for them. An issue's text
is about files (FILE 4, and the best files the fused answer missed join it with their best keyword chunk);
a short question is about a passage (FILE 0.25, nothing joins): on the Anthropic code set's questions a
strong file term costs more passages than it places (docs/benchmarks.md). ``explain`` adds the file's rank
and score as the arm ``file``; every hit says ``why``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from retrievo.models import ArmHit, Chunk, Filters, Hit, Kind, SearchResult
from retrievo.search.code_files import (
    DEPTH,
    ROLE,
    CodeQuestion,
    FileHit,
    dense_chunks,
    keyword_chunks,
    rank_files,
    read_question,
    reads_as_code_question,
    role_of,
)
from retrievo.search.rescore import Scope

# An issue's text (more than SHORT_WORDS words) is about files: its file evidence weighs four times a hit's own
# score, and the best files the fused answer missed join it. A short question is about a passage: the
# passage's own score leads, its file's evidence a quarter as much, nothing joins.
# A "where is / which file" question asks for a place: its file evidence weighs as much as the passage's own
# score and the best files the answer missed join it (click: parser.py for "where are command line options
# parsed", docs/benchmarks.md "Tokens to the answer").
FILE = {"issue": 4.0, "question": 0.25, "where": 1.0}
# of the best files, those the answer missed bring their best chunk
INJECT = {"issue": 10, "question": 0, "where": 3}
REPEAT = 0.7  # the file's evidence for its second, third … hit (seed 002's repeated-file factor)
# keyword chunks read for the files' evidence: an issue's text as deep as ``locate``; a short question less
SEARCH_DEPTH = {"issue": DEPTH, "question": 300, "where": 300}
_WHERE = re.compile(
    r"^\W*(where\b|which (file|module|class|function)\b|in (which|what) (file|module)\b)", re.IGNORECASE
)


@dataclass(frozen=True)
class CodeReading:
    question: CodeQuestion
    filters: Filters
    deepen: bool = True


class CodeQuestions:
    """The re-scorer: ``wants`` a code question over a search that may return code."""

    def wants(self, query: str, filters: Filters, held: frozenset[str]) -> CodeReading | None:
        if "code" not in held or (filters.kinds and Kind.CODE not in filters.kinds):
            return None  # not asked of code (a long text over documents is not deepened for nothing)
        if not reads_as_code_question(query):
            return None
        return CodeReading(read_question(query), filters)

    def rescore(self, scope: Scope, reading: CodeReading, result: SearchResult) -> SearchResult:
        store, collection = scope.store, scope.collection
        if not result.hits:
            return result
        if any(h.matched_via for h in result.hits[:3]):  # a relationship question answered already
            return result
        filters = replace(reading.filters, as_of=scope.point)
        question = reading.question
        regime = ("where" if _WHERE.search(question.text) else "question") if question.words else "issue"
        found = keyword_chunks(store, collection, reading.question, filters, SEARCH_DEPTH[regime])
        # the dense arm's evidence for files: an issue's (a short question's passages have it in the fused
        # score already; as a file term too, the Anthropic code set loses Pass@10 90.1 -> 89.5 %)
        embed = scope.embed_query if regime == "issue" else None
        near = dense_chunks(store, collection, reading.question, filters, embed)
        files = rank_files(store, collection, reading.question, found, near)
        read = [*found, *(pair for dense in near for pair in dense)]
        ordered = _ordered(result.hits, files, read, FILE[regime], INJECT[regime], question.asked)
        return replace(result, hits=tuple(ordered))


def _explained(hit: Hit, file: FileHit | None, rank: int) -> dict[str, ArmHit] | None:
    """With ``explain``: the file's rank and score beside the arms'."""
    if hit.explain is None or file is None:
        return hit.explain
    return {**hit.explain, "file": ArmHit(hit.chunk.chunk_id, rank + 1, file.score)}


def _ordered(
    hits: tuple[Hit, ...],
    files: list[FileHit],
    read: Sequence[tuple[Chunk, float]],
    weight: float,
    inject: int,
    asked: frozenset[str] = frozenset(),
) -> list[Hit]:
    """Each hit scored ``ROLE × (own + FILE × its file's evidence × REPEAT^(k−1))`` (``own``: its fused score
    min-max scaled over the answer; the evidence relative to the best file's; k: the hit's place in its file),
    best first; a ranked file the answer missed brings its best chunk (keyword, else dense), on its file
    evidence alone."""
    rank_of = {f.path: (i, f) for i, f in enumerate(files)}
    top_file = max((f.score for f in files), default=0.0) or 1.0
    high, low = max(h.score for h in hits), min(h.score for h in hits)
    span = (high - low) or 1.0
    chunks = {chunk.chunk_id: chunk for chunk, _ in read}
    seen: dict[str, int] = defaultdict(int)
    candidates: list[tuple[Hit, float]] = []
    present = {h.chunk.path for h in hits}
    extra = [f for f in files[:inject] if f.path not in present]
    floor = min(h.relevance for h in hits)
    for hit in (
        *hits,
        *(
            Hit(chunks[f.evidence[0].chunk_id], 0.0, floor)
            for f in extra
            if f.evidence and f.evidence[0].chunk_id in chunks
        ),
    ):
        path = hit.chunk.path
        place, file = rank_of.get(path, (len(files), None))
        evidence = (file.raw if file is not None else 0.0) / top_file
        own = (hit.score - low) / span if path in present and hit.score > low else 0.0
        # a file the ranking left out still weighs as its kind (docs, tests) unless the question asks for it
        role = role_of(path)
        kind = file.weight if file is not None else 1.0 if role in asked else ROLE[role]
        score = (own + weight * evidence * REPEAT ** seen[path]) * kind
        seen[path] += 1
        why = (f"file {place + 1}", *file.why) if file is not None else ()
        candidates.append(
            (replace(hit, score=round(score, 4), why=why, explain=_explained(hit, file, place)), score)
        )
    candidates.sort(key=lambda c: -c[1])
    return [hit for hit, _ in candidates[: len(hits)]]
