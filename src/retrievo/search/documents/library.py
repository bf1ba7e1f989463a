"""Seed 003's library search: documents, not passages, above a similarity the seed's default means.

A document is found through its passages, by both arms of the hybrid search (seed 003's "Stage 1"):
the vector arm ranks chunks by cosine similarity to the query, the keyword arm by BM25. Each passage
gets one similarity on [0, 1] from two readings anyone can check:

- by meaning, ``m``: the cosine put on [0, 1] the usual way, ``(1 + cosine) / 2``, with no fitted constant
  (0.7 is a cosine of 0.4). On SciFact the bundled model gives judged-relevant abstracts a median
  cosine of 0.61 (10th percentile 0.42). A passage with no cosine (no vectors, or beyond the vector
  arm's nearest 500: ``engine.library.DEPTH``) reads 0.5, a cosine of 0: nothing known by meaning;
- by words, ``w``: the share of the query's words (common ones left out, stemmed as the keyword arm
  stems them: "antibodies" holds "antibody") the passage, its title or its section holds.

``similarity = m + (1 − m) × w² / 2``: the words close part of the distance from the meaning reading to
1 — half of it when the passage holds every word, an eighth when it holds half of them. A passage
holding none keeps its cosine reading; a one-word query found in a document is strong evidence (a
cosine of 0.2 and the word: 0.8), never a certain match, and the cosine still separates the documents
that hold it. A document's similarity is its best passage's; no other document changes it.

Why these forms (no constant fitted; simple forms measured, ``benchmarks/quality/library_similarity.py``,
SciFact test, 2026-11-27), nDCG@10 at the default 0.7 / queries left empty / CoSQA questions asked of
SciFact answered at 0.7: the larger of ``m`` and ``w``, each document lifted to the best below it (before):
0.713 / 4.3 % / 2 %; ``m + (1 − m) × w / 2``: 0.711 / 0.3 % / 12.5 % (a question sharing one common
word with an abstract passes); ``× w²``: 0.705 / 2.3 % / 1 %; ``max(m, (m + w) / 2)``: 0.665 / 4.3 % / 0 %.

Documents come in the hybrid search's fused order — exact evidence included: the document holding a
rare word, a quoted phrase or a copied one first (``search/exact.py``) — and the list is cut, not
raised: a document's similarity is its own, capped at the one above it, so scores never rise down the
list, no document takes another's, and ``min_similarity`` keeps a prefix. (Sorting by the similarity
instead measured 0.705 nDCG@10 at 0.7 on SciFact against 0.709 for the fused order cut, and it would
undo a quoted phrase's order: the similarity reads words, not their order.)
docs/benchmarks.md ("search_library") has what the default keeps on each judged set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from retrievo.models import Hit
from retrievo.search.answer.highlight import words_in
from retrievo.search.hybrid import SEMANTIC
from retrievo.search.query import Query


def similarity(cosine: float) -> float:
    """The seed's similarity score of a cosine: ``(1 + cosine) / 2``, in [0, 1]."""
    return round(min(1.0, max(0.0, (1.0 + cosine) / 2.0)), 4)


@dataclass(frozen=True)
class DocumentHit:
    """One document: its best passage, that passage's similarity, how many of its passages matched."""

    best: Hit
    similarity: float
    passages: int


def first_per_document(hits: Sequence[Hit], limit: int) -> list[Hit]:
    """Ranked hits cut to one per document (its best-ranked passage), at most ``limit`` documents."""
    seen: set[str] = set()
    kept: list[Hit] = []
    for hit in hits:
        if hit.chunk.document_id not in seen and len(kept) < limit:
            seen.add(hit.chunk.document_id)
            kept.append(hit)
    return kept


def passage_similarity(cosine: float | None, share: float) -> float:
    """A passage's similarity from its cosine (None: no reading by meaning) and the share of the query's
    words it holds: ``m + (1 − m) × share² / 2``, ``m`` the cosine on [0, 1] (module docstring)."""
    meaning = similarity(cosine if cosine is not None else 0.0)
    return round(meaning + (1.0 - meaning) * max(0.0, min(1.0, share)) ** 2 / 2.0, 4)


def by_document(hits: Sequence[Hit], query: Query) -> list[DocumentHit]:
    """Hybrid hits (fused order, with ``explain``: the vector arm's raw score is the cosine) as one
    entry per document in that order, each with its best-ranked passage and its own similarity (its
    passages' best) capped at the similarity of the document above it."""
    first: dict[str, Hit] = {}
    own: dict[str, float] = {}
    counts: dict[str, int] = {}
    stems = query.marked
    for hit in hits:
        document, chunk = hit.chunk.document_id, hit.chunk
        counts[document] = counts.get(document, 0) + 1
        first.setdefault(document, hit)
        vector = (hit.explain or {}).get(SEMANTIC)
        held = words_in(f"{chunk.title}\n{chunk.context}\n{chunk.text}", stems)
        value = passage_similarity(vector.score if vector else None, len(held) / len(stems) if stems else 0.0)
        own[document] = max(own.get(document, 0.0), value)
    entries: list[DocumentHit] = []
    ceiling = 1.0
    for document, best in first.items():  # the fused order (dicts keep insertion order)
        ceiling = min(ceiling, own[document])
        entries.append(DocumentHit(best, ceiling, counts[document]))
    return entries
