"""Code questions in ``search``: the answer ranked by file evidence, implementation first (issue 35).

A re-scorer (``search/rescore.py``). It reads a query as a code question when it holds a traceback, code, an
error's name, a call, or asks "where is / how does / which function …" (``reads_as_code_question``), and
the collection holds code. The files are then ranked by ``search/code_files.py`` — the keyword arm's
chunks at depth, modules named, identifiers defined, traceback frames, the kind of file — with the fused
answer's own evidence added: a file's best relevance × ``MEANING`` (what the dense arm found that the words
did not). The answer keeps the search's hits, reordered: each file's best hit in the files' order first
(distinct files up top: the unit an agent opens), then their other hits; a ranked file the fused answer
missed brings its best keyword chunk. ``explain`` shows each hit's file evidence (``why``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from retrievo.models import ArmHit, Chunk, Filters, Hit, Kind, SearchResult
from retrievo.search.code_files import (
    CodeQuestion,
    FileHit,
    keyword_chunks,
    rank_files,
    read_question,
    reads_as_code_question,
)
from retrievo.store.base import Store

MEANING = 0.5  # weight of a file's best fused relevance beside its words (0–1 each)
SEARCH_DEPTH = 300  # keyword chunks read for the files' evidence (locate reads 1000)


@dataclass(frozen=True)
class CodeReading:
    question: CodeQuestion
    filters: Filters
    deepen: bool = True


class CodeQuestions:
    """The re-scorer: ``wants`` a code question over a search that may return code."""

    def wants(self, query: str, filters: Filters) -> CodeReading | None:
        if filters.kinds and Kind.CODE not in filters.kinds:
            return None
        if not reads_as_code_question(query):
            return None
        return CodeReading(read_question(query), filters)

    def rescore(
        self, store: Store, collection: str, reading: CodeReading, result: SearchResult, point: str | None
    ) -> SearchResult:
        if not result.hits or "code" not in store.content_kinds().get(collection, frozenset()):
            return result
        if any(h.matched_via for h in result.hits[:3]):  # a relationship question answered already
            return result
        filters = replace(reading.filters, as_of=point)
        found = keyword_chunks(store, collection, reading.question, filters, SEARCH_DEPTH)
        meaning: dict[str, float] = defaultdict(float)
        for hit in result.hits:
            meaning[hit.chunk.path] = max(meaning[hit.chunk.path], MEANING * hit.relevance)
        files = rank_files(store, collection, reading.question, found, meaning)
        return replace(result, hits=tuple(_ordered(result.hits, files, found)))


def _explained(hit: Hit, file: FileHit, rank: int) -> dict[str, ArmHit] | None:
    """With ``explain``: the file's rank and score beside the arms'."""
    if hit.explain is None:
        return None
    return {**hit.explain, "file": ArmHit(hit.chunk.chunk_id, rank + 1, file.score)}


def _ordered(hits: tuple[Hit, ...], files: list[FileHit], found: Sequence[tuple[Chunk, float]]) -> list[Hit]:
    by_file: dict[str, list[Hit]] = defaultdict(list)
    for hit in hits:
        by_file[hit.chunk.path].append(hit)
    chunks = {chunk.chunk_id: (chunk, score) for chunk, score in found}
    floor = min(h.relevance for h in hits)
    first: list[Hit] = []
    rest: list[Hit] = []
    for rank, file in enumerate(files[: len(hits)]):
        own = by_file.get(file.path)
        if not own:  # a file the fused answer missed: its best keyword chunk, at the answer's least relevance
            best = next((chunks[e.chunk_id] for e in file.evidence if e.chunk_id in chunks), None)
            if best is None:
                continue
            own = [Hit(best[0], score=best[1], relevance=floor)]
        tagged = [
            replace(
                h, score=file.score, why=(f"file {rank + 1}", *file.why), explain=_explained(h, file, rank)
            )
            for h in own
        ]
        first.append(tagged[0])
        rest.extend(tagged[1:])
    return [*first, *rest][: len(hits)]
