"""Query-adaptive fusion and calibrated relevance, chosen on tune halves, checked on held-out halves.

Each arm's top-``depth`` is fetched once per judged query from an index built by `retrievo eval`, cached
as JSON, and every fusion is then scored with retrievo's own fusion functions (``retrievo.search``),
so a row here is what the engine returns. Tune = even query positions, held-out = odd positions.

    .venv/bin/retrievo eval ../shared/data/scifact --db /tmp/ev/scifact.db
    .venv/bin/retrievo eval ../shared/data/anthropic_codebase --db /tmp/ev/anthropic.db
    .venv/bin/retrievo eval ../shared/data/cosqa_dev --split dev --db /tmp/ev/cosqa.db
    .venv/bin/python -m benchmarks.quality.fusion_adaptive --cache /tmp/ev \
        scifact=../shared/data/scifact:/tmp/ev/scifact.db anthropic_codebase=…:… cosqa_dev=…:…[:dev]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.evaluation.beir import load_beir
from retrievo.evaluation.metrics import ndcg_at_k
from retrievo.evaluation.runner import SOURCE_PREFIX
from retrievo.models import ArmHit, Filters

Run = dict[str, Any]


def fetch(dataset_dir: Path, db: Path, split: str, depth: int) -> list[Run]:
    dataset = load_beir(dataset_dir, split)
    collection = f"eval-{dataset.name}"
    engine = Engine(Config(db=db, collection=collection))
    store = engine._open_store(create=False)
    embedder = engine.embedder
    assert embedder is not None
    prefix = f"{SOURCE_PREFIX}{dataset.name}/"
    runs = []
    for query_id, text in dataset.queries.items():
        if query_id not in dataset.qrels:
            continue
        vector = embedder.embed_query(text)
        keyword = store.keyword_search(collection, text, Filters(), depth)
        semantic = store.vector_search(collection, embedder.model_id, vector, Filters(), depth)
        chunks = store.get_chunks(sorted({h.chunk_id for h in [*keyword, *semantic]}))
        runs.append({
            "qid": query_id, "text": text, "judged": dataset.qrels[query_id],
            "keyword": [[h.chunk_id, h.score] for h in keyword],
            "semantic": [[h.chunk_id, h.score] for h in semantic],
            "doc": {str(i): c.path.removeprefix(prefix) for i, c in chunks.items()},
        })  # fmt: skip
    engine.close()
    return runs


def arms_of(run: Run, depth: int) -> dict[str, list[ArmHit]]:
    return {
        arm: [ArmHit(int(c), rank, float(s)) for rank, (c, s) in enumerate(run[arm][:depth], start=1)]
        for arm in ("keyword", "semantic")
    }


def ranked_docs(run: Run, fused: list[tuple[int, float]]) -> list[str]:
    seen: list[str] = []
    for chunk_id, _ in fused:
        doc = run["doc"][str(chunk_id)]
        if doc not in seen:
            seen.append(doc)
    return seen


Fusion = Callable[[dict[str, list[ArmHit]], str], list[tuple[int, float]]]


def ndcg(runs: list[Run], fusion: Fusion, part: str, depth: int) -> float:
    picked = [r for i, r in enumerate(runs) if part == "all" or (i % 2 == 0) == (part == "tune")]
    return float(np.mean([ndcg_at_k(ranked_docs(r, fusion(arms_of(r, depth), r["text"])), r["judged"], 10)
                          for r in picked]))  # fmt: skip


def load(specs: list[str], cache: Path, depth: int) -> dict[str, list[Run]]:
    data = {}
    for spec in specs:
        name, rest = spec.split("=", 1)
        parts = rest.split(":")
        directory, db, split = Path(parts[0]), Path(parts[1]), parts[2] if len(parts) > 2 else "test"
        path = cache / f"arms-{name}-{depth}.json"
        if not path.exists():
            path.write_text(json.dumps(fetch(directory, db, split, depth)), encoding="utf-8")
        data[name] = json.loads(path.read_text(encoding="utf-8"))
    return data


PROFILE_ARMS = {"hybrid": ("keyword", "semantic"), "keyword": ("keyword",), "semantic": ("semantic",)}


def samples(
    runs: list[Run], fusion: Fusion, profile: str, part: str, depth: int, top: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels (relevant or not) of the top ``top`` hits each query would show."""
    from retrievo.search.answer.calibration import PROFILE_FEATURES, feature_maker

    names = PROFILE_FEATURES[profile]
    rows, labels = [], []
    for i, run in enumerate(runs):
        if part != "all" and (i % 2 == 0) != (part == "tune"):
            continue
        arms = {arm: hits for arm, hits in arms_of(run, depth).items() if arm in PROFILE_ARMS[profile]}
        fused = (
            fusion(arms, run["text"])
            if profile == "hybrid"
            else [(h.chunk_id, h.score) for h in next(iter(arms.values()))]
        )
        features = feature_maker(arms)
        for chunk_id, _ in fused[:top]:
            values = features(chunk_id)
            rows.append([values[name] for name in names])
            labels.append(1.0 if run["judged"].get(run["doc"][str(chunk_id)], 0) > 0 else 0.0)
    return np.array(rows), np.array(labels)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-2, steps: int = 50) -> tuple[np.ndarray, float]:
    """Newton's method on the L2-regularised log loss (features standardised inside, returned raw)."""
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / std])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) / len(y) + penalty * w
        hessian = (z.T * (p * (1 - p))) @ z / len(y) + np.diag(penalty)
        w -= np.linalg.solve(hessian, gradient)
    coef = w[1:] / std
    return coef, float(w[0] - (coef * mean).sum())


def reliability(p: np.ndarray, y: np.ndarray, bins: int = 10) -> tuple[list[dict[str, float]], float]:
    """Per bin of predicted relevance: count, mean prediction, observed precision; and the ECE."""
    table, ece = [], 0.0
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        inside = (p >= low) & ((p < high) if b < bins - 1 else (p <= high))
        if inside.any():
            predicted, observed = float(p[inside].mean()), float(y[inside].mean())
            table.append({"bin": f"{low:.1f}-{high:.1f}", "count": int(inside.sum()),
                          "predicted": round(predicted, 3), "observed": round(observed, 3)})  # fmt: skip
            ece += float(inside.sum() / len(p) * abs(predicted - observed))
    return table, round(ece, 4)


def fit_calibration(data: dict[str, list[Run]], fusion: Fusion, depth: int) -> dict[str, Any]:
    """Logistic models per profile on the pooled tune halves (top 20 hits a query shows)."""
    from retrievo.search.answer.calibration import PROFILE_FEATURES

    profiles = {}
    for profile in ("hybrid", "keyword", "semantic"):
        xs, ys = zip(
            *(samples(runs, fusion, profile, "tune", depth, top=20) for runs in data.values()), strict=True
        )
        coef, intercept = fit_logistic(np.vstack(xs), np.concatenate(ys))
        profiles[profile] = {
            "features": list(PROFILE_FEATURES[profile]), "coef": [round(float(c), 6) for c in coef],
            "intercept": round(intercept, 6), "samples": int(sum(len(y) for y in ys)),
        }  # fmt: skip
    return {
        "fitted_on": "tune halves (even query positions) of "
        + ", ".join(data)
        + f"; top 20 hits; depth {depth}",
        "profiles": profiles,
    }


def check_calibration(data: dict[str, list[Run]], fusion: Fusion, depth: int, path: Path) -> dict[str, Any]:
    """Reliability on the held-out halves (top 10 hits), through retrievo's own calibration code."""
    from retrievo.search.answer.calibration import PROFILE_FEATURES, models

    models.cache_clear()
    fitted = models(path)
    report: dict[str, Any] = {}
    for profile in ("hybrid", "keyword", "semantic"):
        report[profile] = {}
        pooled_p, pooled_y = [], []
        for name, runs in data.items():
            x, y = samples(runs, fusion, profile, "held", depth, top=10)
            model = fitted[profile]
            p = np.array(
                [model.probability(dict(zip(PROFILE_FEATURES[profile], row, strict=True))) for row in x]
            )
            table, ece = reliability(p, y)
            kept = p >= 0.7
            report[profile][name] = {
                "ece": ece, "table": table, "hits": len(y),
                "precision_at_0.7": round(float(y[kept].mean()), 3) if kept.any() else None,
                "kept_at_0.7": int(kept.sum()),
            }  # fmt: skip
            pooled_p.append(p)
            pooled_y.append(y)
        table, ece = reliability(np.concatenate(pooled_p), np.concatenate(pooled_y))
        report[profile]["all held-out"] = {"ece": ece, "table": table}
    return report


def main() -> None:
    from retrievo.search import fusion as fuse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sets", nargs="+", help="name=DATASET_DIR:DB[:split]")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ev"))
    parser.add_argument("--depth", type=int, default=300, help="per-arm depth (retrievo eval asks for 300)")
    parser.add_argument("--fit", type=Path, help="write fitted calibration coefficients here")
    parser.add_argument("--report", type=Path, help="write the held-out reliability report (JSON) here")
    args = parser.parse_args()
    data = load(args.sets, args.cache, 300)

    def adaptive(arms: dict[str, list[ArmHit]], query: str) -> list[tuple[int, float]]:
        return fuse.zscore_fusion(arms, weights=fuse.adaptive_weights(arms))

    variants: dict[str, Fusion] = {
        "keyword": lambda arms, q: [(h.chunk_id, h.score) for h in arms["keyword"]],
        "semantic": lambda arms, q: [(h.chunk_id, h.score) for h in arms["semantic"]],
        "zscore": lambda arms, q: fuse.zscore_fusion(arms),
        "rrf k=60": lambda arms, q: fuse.rrf(arms),
        "adaptive": adaptive,
    }
    print(f"nDCG@10 at depth {args.depth}: tune | held-out | all, per set: {', '.join(data)}")
    for name, fusion in variants.items():
        cells = [
            f"{ndcg(runs, fusion, part, args.depth):.4f}"
            for runs in data.values()
            for part in ("tune", "held", "all")
        ]
        print(
            f"{name:10s} " + "   ".join(" | ".join(cells[i : i + 3]) for i in range(0, len(cells), 3)),
            flush=True,
        )
    if args.fit:
        args.fit.write_text(
            json.dumps(fit_calibration(data, adaptive, args.depth), indent=2) + "\n", encoding="utf-8"
        )
    if args.report:
        from retrievo.search.answer.calibration import COEFFICIENTS

        report = check_calibration(data, adaptive, args.depth, args.fit or COEFFICIENTS)
        args.report.write_text(json.dumps({"reliability": report}, indent=2) + "\n", encoding="utf-8")
        for profile, sets in report.items():
            print(
                profile, {name: (entry["ece"], entry.get("precision_at_0.7")) for name, entry in sets.items()}
            )


if __name__ == "__main__":
    main()
