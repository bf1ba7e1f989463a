"""Reciprocal Rank Fusion, checked by hand."""

from __future__ import annotations

import pytest

from retrievo.models import ArmHit
from retrievo.search.fusion import max_rrf_score, rrf


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
