"""Reciprocal Rank Fusion — pure functions, no I/O.

Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and individual rank
learning methods", SIGIR 2009. A document's fused score is ``Σᵢ wᵢ / (k + rankᵢ)`` over the arms
that ranked it (ranks are 1-based). The constant k = 60 is the paper's: it damps the weight of
the very top ranks so that one arm's first place cannot drown agreement between arms, and it
was found robust across collections, which is why it is the default rather than a tuned value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retrievo.models import ArmHit

DEFAULT_K = 60


def rrf(
    ranked_lists: Mapping[str, Sequence[ArmHit]],
    k: int = DEFAULT_K,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[int, float]]:
    """Fuse ranked lists of chunk ids; returns (chunk_id, score), best first.

    Ties are broken by the best single rank any arm gave, then by chunk id, so the order is
    deterministic.
    """
    if k < 1:
        raise ValueError(f"RRF constant k must be at least 1, got {k}")
    scores: dict[int, float] = {}
    best_rank: dict[int, int] = {}
    for arm, hits in ranked_lists.items():
        weight = 1.0 if weights is None else weights.get(arm, 1.0)
        for hit in hits:
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight / (k + hit.rank)
            best_rank[hit.chunk_id] = min(best_rank.get(hit.chunk_id, hit.rank), hit.rank)
    return sorted(scores.items(), key=lambda item: (-item[1], best_rank[item[0]], item[0]))


def max_rrf_score(
    arms: Sequence[str], k: int = DEFAULT_K, weights: Mapping[str, float] | None = None
) -> float:
    """The score of a chunk ranked first by every arm: the ceiling that relevance is measured against."""
    return sum((1.0 if weights is None else weights.get(arm, 1.0)) / (k + 1) for arm in arms)
