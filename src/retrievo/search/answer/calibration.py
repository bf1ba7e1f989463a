"""Calibrated relevance: the estimated probability that a hit is relevant, from absolute signals.

For each hit, features that mean the same on every query — the raw cosine similarity, the BM25 score
relative to the query's best, reciprocal ranks, whether both arms found it, how strong each arm's best
match was — go through a logistic model fitted once on judged data (tune halves only; see
``benchmarks/quality/fusion_adaptive.py`` and docs/benchmarks.md) and shipped as ``calibration.json``. One
profile per set of arms: ``hybrid``, ``keyword`` (also lexical-only) and ``semantic``. The formula is
pure: both stores give the same relevance for the same arm lists.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from retrievo.models import ArmHit

COEFFICIENTS = Path(__file__).with_name("calibration.json")
KEYWORD, SEMANTIC = "keyword", "semantic"
AGREE_TOP = 10
PROFILE_FEATURES: dict[str, tuple[str, ...]] = {
    "hybrid": ("kw_in", "kw_rel", "kw_rr", "kw_top", "sem_cos", "sem_rr", "sem_top", "agree"),
    "keyword": ("kw_rel", "kw_rr", "kw_top"),
    "semantic": ("sem_cos", "sem_rr", "sem_top"),
}


@dataclass(frozen=True)
class Model:
    features: tuple[str, ...]
    coef: tuple[float, ...]
    intercept: float

    def probability(self, values: Mapping[str, float]) -> float:
        z = self.intercept + sum(w * values[name] for name, w in zip(self.features, self.coef, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


@cache
def models(path: Path = COEFFICIENTS) -> dict[str, Model]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {
        name: Model(tuple(entry["features"]), tuple(entry["coef"]), float(entry["intercept"]))
        for name, entry in data["profiles"].items()
    }


def profile_of(arms: Mapping[str, Sequence[ArmHit]]) -> str | None:
    ran = {arm for arm in (KEYWORD, SEMANTIC) if arms.get(arm)}
    if ran == {KEYWORD, SEMANTIC}:
        return "hybrid"
    return ran.pop() if ran else None


def feature_maker(arms: Mapping[str, Sequence[ArmHit]]) -> Callable[[int], dict[str, float]]:
    """Features of one candidate chunk, given every arm's list for the query."""
    keyword, semantic = arms.get(KEYWORD) or [], arms.get(SEMANTIC) or []
    kw = {hit.chunk_id: hit for hit in keyword}
    sem = {hit.chunk_id: hit for hit in semantic}
    kw_best = max((hit.score for hit in keyword), default=0.0) or 1.0
    sem_best = max((hit.score for hit in semantic), default=0.0)
    sem_floor = min((hit.score for hit in semantic), default=0.0)
    kw_top = {hit.chunk_id for hit in keyword if hit.rank <= AGREE_TOP}
    sem_top = {hit.chunk_id for hit in semantic if hit.rank <= AGREE_TOP}

    def of(chunk_id: int) -> dict[str, float]:
        k, s = kw.get(chunk_id), sem.get(chunk_id)
        return {
            "kw_in": 1.0 if k else 0.0,
            "kw_rel": k.score / kw_best if k else 0.0,
            "kw_rr": 1.0 / k.rank if k else 0.0,
            "kw_top": math.log1p(max(kw_best, 0.0)),
            # Not among the semantic candidates: its cosine is at most the last candidate's.
            "sem_cos": s.score if s else sem_floor,
            "sem_rr": 1.0 / s.rank if s else 0.0,
            "sem_top": sem_best,
            "agree": 1.0 if chunk_id in kw_top and chunk_id in sem_top else 0.0,
        }

    return of


def calibrated(arms: Mapping[str, Sequence[ArmHit]]) -> Callable[[int], float] | None:
    """The relevance of a candidate chunk for this query, or None when no arm ran."""
    profile = profile_of(arms)
    if profile is None:
        return None
    model = models()[profile]
    features = feature_maker(arms)
    return lambda chunk_id: round(model.probability(features(chunk_id)), 4)
