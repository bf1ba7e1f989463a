"""Seed 003's library search: documents, not passages, above a similarity the seed's default means.

A document is found through its passages: the semantic arm ranks chunks by cosine similarity to the
query, and each document keeps its best passage (the excerpt) and that passage's similarity. The
seed's ``similarity_score`` (and its ``min_similarity`` threshold, default 0.7) is the cosine put on
[0, 1] the usual way, ``(1 + cosine) / 2``, with no fitted constant: 0.7 is a cosine of 0.4. On
SciFact the bundled model gives judged-relevant abstracts a median cosine of 0.61 (10th percentile
0.42), so the default keeps a result for 95 % of the claims; docs/benchmarks.md ("search_library")
has the distribution and what the default keeps on each judged set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from retrievo.models import Hit


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


def by_document(hits: Sequence[Hit]) -> list[DocumentHit]:
    """Semantic hits (best first, ``score`` the cosine) as one entry per document, most similar first."""
    best: dict[str, Hit] = {}
    counts: dict[str, int] = {}
    for hit in hits:
        document = hit.chunk.document_id
        counts[document] = counts.get(document, 0) + 1
        if document not in best or hit.score > best[document].score:
            best[document] = hit
    found = [DocumentHit(hit, similarity(hit.score), counts[doc]) for doc, hit in best.items()]
    return sorted(found, key=lambda d: (-d.best.score, d.best.chunk.path))
