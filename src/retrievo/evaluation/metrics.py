"""IR metrics, as trec_eval computes them (checked against pytrec_eval in the tests).

``run``: ranked document ids, best first. ``qrels``: document id → graded relevance (> 0 relevant).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at_k(run: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """nDCG@k with gain = relevance grade and discount log2(rank + 1) (trec_eval ``ndcg_cut``)."""
    dcg = sum(qrels.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(run[:k], start=1))
    ideal = sorted((grade for grade in qrels.values() if grade > 0), reverse=True)[:k]
    idcg = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(run: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    relevant = {doc for doc, grade in qrels.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(run[:k])) / len(relevant)


def mrr_at_k(run: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    for rank, doc in enumerate(run[:k], start=1):
        if qrels.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (p50 = median of an odd-length list)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = max(0, math.ceil(fraction * len(ordered)) - 1)
    return ordered[index]


def expected_calibration_error(pairs: Sequence[tuple[float, bool]], bins: int = 10) -> float:
    """ECE: over equal-width bins of predicted relevance, |mean prediction − share relevant|, weighted by size."""
    if not pairs:
        return 0.0
    total = 0.0
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        inside = [(p, y) for p, y in pairs if low <= p < high or (b == bins - 1 and p == high)]
        if inside:
            predicted = sum(p for p, _ in inside) / len(inside)
            observed = sum(1 for _, y in inside if y) / len(inside)
            total += len(inside) / len(pairs) * abs(predicted - observed)
    return total
