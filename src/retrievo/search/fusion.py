"""Fusion of the arms' ranked lists — pure functions, no I/O: RRF, z-score, query-adaptive z-score.

Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and individual rank
learning methods", SIGIR 2009. A document's fused score is ``Σᵢ wᵢ / (k + rankᵢ)`` over the arms
that ranked it (ranks are 1-based). The constant k = 60 is the paper's: it damps the weight of
the very top ranks so that one arm's first place cannot drown agreement between arms, and it
was found robust across collections, which is why it is the default rather than a tuned value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from retrievo.models import ArmHit
from retrievo.search.query import SHORT_WORDS

DEFAULT_K = 60
FUSIONS = ("adaptive", "zscore", "rrf")
DEFAULT_FUSION = "adaptive"
# Query-adaptive weights (``adaptive_weights``): ln(w_semantic / w_keyword) =
#   COSINE_SLOPE·(best cosine − COSINE_CENTRE) − BM25_SLOPE·(ln(1 + best BM25) − BM25_CENTRE) + BIAS.
# Chosen on the tune halves of SciFact, the Anthropic code set and CoSQA dev (docs/benchmarks.md).
COSINE_SLOPE, COSINE_CENTRE = 6.0, 0.6
BM25_SLOPE, BM25_CENTRE = 2.5, 3.0
BIAS = 0.25
# A dense model's own BIAS, where its cosines say less than MiniLM's at the same value. The static model
# distilled from MiniLM and trained on whole texts (``embed/static.py``): −1 was chosen over 0.25 / 0 / −1 /
# −2 / −3 leaving out each of SciFact, the Anthropic set, CoSQA dev and semble's 12 repositories in turn
# (all four folds chose it; benchmarks/static_model/fusion_bias.py, docs/configuration.md "Static model").
# A model not named here takes BIAS.
MODEL_BIAS = {"retrievo-static-minilm-v2": -1.0}
MAX_LOG_RATIO = 6.0
# Adaptive fusion's consensus: a chunk both arms returned gains this many standard deviations, times how
# even the arms' weights are (2·min/sum: 1 at equal weights, → 0 when one arm carries the query). Rank
# fusion (RRF) wins where two arms of equal strength meet many relevant documents (a medical set kept
# aside: RRF 0.356, z-score 0.346); the bonus brings that agreement in where the evidence is balanced and
# stays out of the way where one arm dominates. 1.0 is the largest value that cost nothing measurable on
# any set left out (benchmarks/quality/fusion_lodo.py, docs/benchmarks.md "Fusion, chosen leave-one-dataset-out").
CONSENSUS = 1.0
# Exact-match evidence (``search/exact.py``) for what agents send besides questions. A query of at most
# SHORT_WORDS content words (a name, a rare word, two words) moves the weights towards the keyword arm —
# the dense arm reads little into one word — by exp(−SHORT·(3 − n)/2), and its candidates gain COVERAGE ×
# the share of its words they hold; a candidate holding the whole query word for word (a phrase copied
# from a document) gains PHRASE (z units). Longer questions are left as they were: their words' coverage
# is noise there (CoSQA dev −0.004 nDCG@10). Chosen on the query-style battery leave-one-set-out and
# leave-one-style-out (benchmarks/quality/exact_lodo.py; docs/benchmarks.md "Query styles"): 17 of 18
# folds chose (1, 6, 6), the other (6, 6, 1).
COVERAGE, PHRASE, SHORT = 1.0, 6.0, 6.0
QUOTED = 10.0  # a passage holding the query's quoted phrase(s) whole: above every one that does not


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


ROUNDING = 1e-12  # a spread of scores below this fraction of their size is floating-point noise


def zscore_fusion(
    ranked_lists: Mapping[str, Sequence[ArmHit]],
    weights: Mapping[str, float] | None = None,
    consensus: float = 0.0,
) -> list[tuple[int, float]]:
    """Distribution-based score fusion: the weighted mean of each arm's z-scored raw scores.

    Each arm's scores are standardised over its own candidate list (mean 0, std 1), so BM25 and
    cosine become comparable; a chunk an arm did not return gets that arm's lowest z-score (it
    was at best as good as the worst candidate). Weights default to equal. Measured on SciFact and
    the Anthropic code set it beats RRF(k=60) with no tuned parameter (docs/benchmarks.md); cf.
    Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", TOIS 2023.
    ``consensus``: added (in standard deviations) for each arm beyond the first that returned a chunk.
    """
    standardised: dict[str, dict[int, float]] = {}
    floors: dict[str, float] = {}
    for arm, hits in ranked_lists.items():
        if not hits:
            continue
        values = [hit.score for hit in hits]
        mean = math.fsum(values) / len(values)
        std = math.sqrt(math.fsum((v - mean) * (v - mean) for v in values) / len(values))
        if std <= ROUNDING * max(map(abs, values)):
            # Equal scores but for rounding (a sum taken in another order): no spread to standardise,
            # rather than one ulp blown up to a whole standard deviation.
            standardised[arm], floors[arm] = dict.fromkeys((hit.chunk_id for hit in hits), 0.0), 0.0
            continue
        standardised[arm] = {hit.chunk_id: (hit.score - mean) / std for hit in hits}
        floors[arm] = (min(values) - mean) / std
    arm_weight = {arm: 1.0 if weights is None else weights.get(arm, 1.0) for arm in standardised}
    total_weight = sum(arm_weight.values()) or 1.0
    # Every arm at its floor, then each arm's excess for the chunks it returned.
    base = sum(arm_weight[arm] * floors[arm] for arm in standardised)
    fused: dict[int, float] = {}
    agreeing: dict[int, int] = {}
    for arm, by_id in standardised.items():
        weight, floor = arm_weight[arm], floors[arm]
        for chunk_id, z in by_id.items():
            fused[chunk_id] = fused.get(chunk_id, base) + weight * (z - floor)
            agreeing[chunk_id] = agreeing.get(chunk_id, -1) + 1
    return sorted(
        (
            (chunk_id, score / total_weight + consensus * agreeing[chunk_id])
            for chunk_id, score in fused.items()
        ),
        key=lambda item: (-item[1], item[0]),
    )


def adaptive_fusion(
    ranked_lists: Mapping[str, Sequence[ArmHit]],
    words: int = 0,
    evidence: Mapping[int, tuple[float, float, float]] | None = None,
    bias: float = BIAS,
) -> tuple[list[tuple[int, float]], dict[str, float]]:
    """Z-score fusion under ``adaptive_weights``, with agreement between the arms rewarded as far as the
    weights are even (``CONSENSUS``); the fused list and the weights used.

    ``words``: how many content words the query has (0: not read); ``evidence``: (coverage, phrase, quoted)
    of the candidates read (``search/exact.py``; the others hold nothing of the query word for word);
    ``bias``: the dense model's (``model_bias``).
    """
    weights = adaptive_weights(ranked_lists, bias)
    short = 0 < words <= SHORT_WORDS
    if short and "semantic" in weights:
        weights["semantic"] *= math.exp(-SHORT * (SHORT_WORDS + 1 - words) / 2)
    balance = 2 * min(weights.values()) / sum(weights.values())
    fused = zscore_fusion(ranked_lists, weights=weights, consensus=CONSENSUS * balance)
    if evidence:
        # A candidate neither arm returned (a holder of a quoted phrase or of the whole query, found by its
        # words' positions) starts at the floor.
        floor = min((score for _, score in fused), default=0.0)
        scores = dict(fused)
        for chunk_id, found in evidence.items():
            if chunk_id in scores or found[1] > 0.0 or found[2] > 0.0:
                scores[chunk_id] = scores.get(chunk_id, floor) + _exact_bonus(found, short)
        fused = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return fused, weights


def _exact_bonus(evidence: tuple[float, float, float], short: bool) -> float:
    coverage, phrase, quoted = evidence
    return (COVERAGE * coverage if short else 0.0) + PHRASE * phrase + QUOTED * quoted


def zscore_relevance(score: float, arms: int) -> float:
    """Φ(√arms · z): 0.5 for a typical candidate, → 1 for one far above the rest (in [0, 1])."""
    return 0.5 * (1.0 + math.erf(score * math.sqrt(max(arms, 1)) / math.sqrt(2.0)))


def model_bias(model_id: str | None) -> float:
    """Adaptive fusion's bias for the dense arm of ``model_id`` (``MODEL_BIAS``, else ``BIAS``)."""
    return MODEL_BIAS.get(model_id or "", BIAS)


def adaptive_weights(ranked_lists: Mapping[str, Sequence[ArmHit]], bias: float = BIAS) -> dict[str, float]:
    """Per-query arm weights from the evidence each arm's best match gives (keyword weight fixed at 1).

    A dense arm whose best match is close (cosine well above 0.6) gains weight; a keyword arm whose best
    BM25 score is high (the query's rarer words matched together) keeps the dense arm in check. When
    one arm returned nothing, the other stands alone. The log-ratio is clipped to ±6. ``bias``: the dense
    model's (``model_bias``).
    """
    keyword, semantic = ranked_lists.get("keyword") or [], ranked_lists.get("semantic") or []
    if not keyword or not semantic:
        return {"keyword": 1.0, "semantic": 1.0}
    best_cosine = max(hit.score for hit in semantic)
    best_bm25 = max(0.0, *(hit.score for hit in keyword))
    log_ratio = (
        COSINE_SLOPE * (best_cosine - COSINE_CENTRE)
        - BM25_SLOPE * (math.log1p(best_bm25) - BM25_CENTRE)
        + bias
    )
    return {"keyword": 1.0, "semantic": math.exp(max(-MAX_LOG_RATIO, min(MAX_LOG_RATIO, log_ratio)))}
