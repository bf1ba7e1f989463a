"""Reciprocal Rank Fusion, checked by hand."""

from __future__ import annotations

import pytest

from retrievo.models import ArmHit
from retrievo.search.fusion import (
    CONSENSUS,
    adaptive_fusion,
    max_rrf_score,
    rrf,
    zscore_fusion,
    zscore_relevance,
)


def _hits(*ids: int) -> list[ArmHit]:
    return [ArmHit(chunk_id, rank, 0.0) for rank, chunk_id in enumerate(ids, start=1)]


def test_rrf_sums_reciprocal_ranks_with_k() -> None:
    fused = dict(rrf({"keyword": _hits(1, 2, 3), "semantic": _hits(3, 1)}, k=60))
    assert fused[1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[3] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2] == pytest.approx(1 / 62)


def test_rrf_orders_best_first_and_breaks_ties_deterministically() -> None:
    order = [chunk_id for chunk_id, _ in rrf({"a": _hits(10, 20), "b": _hits(20, 10)})]
    assert order == [10, 20]  # equal scores: same best rank, lower id first
    assert [c for c, _ in rrf({"a": _hits(5, 6, 7), "b": _hits(7)})] == [7, 5, 6]


def test_rrf_weights_scale_each_arm() -> None:
    fused = dict(rrf({"a": _hits(1), "b": _hits(2)}, k=1, weights={"a": 2.0, "b": 0.5}))
    assert fused == {1: pytest.approx(1.0), 2: pytest.approx(0.25)}


def test_max_score_is_rank_one_in_every_arm() -> None:
    assert max_rrf_score(["a", "b"], k=60) == pytest.approx(2 / 61)


def test_k_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        rrf({"a": _hits(1)}, k=0)


def test_zscore_fusion_standardises_each_arm_and_floors_missing_chunks() -> None:
    keyword = [ArmHit(1, 1, 9.0), ArmHit(2, 2, 5.0), ArmHit(3, 3, 1.0)]  # mean 5, std √(32/3)
    semantic = [ArmHit(3, 1, 0.9), ArmHit(4, 2, 0.5)]  # mean 0.7, std 0.2
    fused = dict(zscore_fusion({"keyword": keyword, "semantic": semantic}))
    std = (32 / 3) ** 0.5
    assert fused[1] == pytest.approx((4 / std + -1.0) / 2), "missing from semantic: that arm's floor (-1)"
    assert fused[3] == pytest.approx((-4 / std + 1.0) / 2)
    assert fused[4] == pytest.approx((-4 / std + -1.0) / 2)
    assert zscore_fusion({"keyword": keyword, "semantic": semantic})[0][0] == 1


def test_zscore_fusion_weights_and_degenerate_arms() -> None:
    single = zscore_fusion({"keyword": [ArmHit(7, 1, 3.0)], "semantic": []})
    assert single == [(7, 0.0)], "one candidate has z = 0; an empty arm is ignored"
    weighted = dict(zscore_fusion({"a": _scored(1, 2), "b": _scored(2, 1)}, weights={"a": 3.0, "b": 1.0}))
    assert weighted[1] > weighted[2]


def test_zscore_fusion_sees_no_spread_in_scores_equal_but_for_rounding() -> None:
    """BM25 sums taken in another order differ in the last bit (1.375e-06 against 1.3750000000000002e-06
    for the same passages, as of a point and in a fresh index): that is no spread, not one standard
    deviation; three equal scores whose mean is not exactly them likewise."""
    for scores in ([1.3750000000000002e-06, 1.375e-06], [0.1, 0.1, 0.1], [2.0, 2.0 + 4e-16, 2.0]):
        fused = zscore_fusion({"keyword": [ArmHit(i, i, score) for i, score in enumerate(scores, 1)]})
        assert fused == [(i, 0.0) for i in range(1, len(scores) + 1)], scores
    mixed = dict(zscore_fusion({"keyword": [ArmHit(1, 1, 1.0), ArmHit(2, 2, 1.0 + 1e-15)],
                                "semantic": [ArmHit(1, 1, 0.9), ArmHit(2, 2, 0.5)]}))  # fmt: skip
    assert mixed[1] == pytest.approx(0.5) and mixed[2] == pytest.approx(-0.5), "only the semantic arm ranks"
    spread = dict(zscore_fusion({"keyword": [ArmHit(1, 1, 1.0), ArmHit(2, 2, 1.0 + 1e-9)]}))
    assert spread[2] > spread[1], "a real, if small, difference still counts"


def test_zscore_relevance_is_a_probability() -> None:
    assert zscore_relevance(0.0, 2) == pytest.approx(0.5)
    assert 0.99 < zscore_relevance(3.0, 2) <= 1.0 and 0.0 <= zscore_relevance(-3.0, 2) < 0.01


def _scored(*ids: int) -> list[ArmHit]:
    return [ArmHit(chunk_id, rank, float(10 - rank)) for rank, chunk_id in enumerate(ids, start=1)]


def test_terms_in_more_than_half_the_rows_are_pruned_only_from_large_indexes() -> None:
    from retrievo.store.fts_query import prune_common_terms

    frequencies = {"the": 900, "cell": 600, "regeneration": 12, "bone": 40}
    terms = ["the", "cell", "regeneration", "bone"]
    assert prune_common_terms(terms, frequencies, 1000) == ["regeneration", "bone"]
    assert prune_common_terms(["the", "cell"], frequencies, 1000) == ["cell"], "the rarest term is kept"
    assert prune_common_terms(terms, frequencies, 999) == terms, "small indexes stay exact"


def test_consensus_adds_for_each_arm_beyond_the_first_that_returned_a_chunk() -> None:
    arms = {"keyword": _scored(1, 2, 3), "semantic": _scored(3, 4, 5)}
    plain, bonus = dict(zscore_fusion(arms)), dict(zscore_fusion(arms, consensus=0.75))
    assert bonus[3] == pytest.approx(plain[3] + 0.75), "both arms returned 3"
    assert all(bonus[c] == pytest.approx(plain[c]) for c in (1, 2, 4, 5))


def test_adaptive_fusion_rewards_agreement_as_far_as_the_weights_are_even() -> None:
    def arms(cosine: float) -> dict[str, list[ArmHit]]:
        return {"keyword": [ArmHit(1, 1, 20.0), ArmHit(2, 2, 10.0), ArmHit(3, 3, 5.0)],
                "semantic": [ArmHit(2, 1, cosine), ArmHit(4, 2, cosine - 0.2), ArmHit(5, 3, cosine - 0.3)]}  # fmt: skip

    for cosine in (0.55, 0.95):
        fused, weights = adaptive_fusion(arms(cosine))
        balance = 2 * min(weights.values()) / sum(weights.values())
        plain = dict(zscore_fusion(arms(cosine), weights=weights))
        assert dict(fused)[2] == pytest.approx(plain[2] + CONSENSUS * balance)
        assert dict(fused)[1] == pytest.approx(plain[1])
    even = adaptive_fusion(arms(0.55))[1]
    lopsided = adaptive_fusion(arms(0.95))[1]
    assert lopsided["semantic"] / lopsided["keyword"] > even["semantic"] / even["keyword"]
