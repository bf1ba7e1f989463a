"""Fusion levers on a BEIR dataset, measured offline from each arm's candidate lists.

Each arm's top-N (score, rank) is fetched once per query from an index built by
`retrievo eval DATASET --db FILE`; every fusion variant is then scored without re-querying.
SciFact ships no train qrels here, so variants are chosen on one half of the test queries
(even positions) and reported on the other half (odd positions) and on all.

    .venv/bin/retrievo eval ../shared/data/scifact --db /tmp/scifact.db
    .venv/bin/python -m benchmarks.quality.fusion_experiments ../shared/data/scifact --db /tmp/scifact.db
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np

from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.evaluation.beir import load_beir
from retrievo.evaluation.metrics import ndcg_at_k
from retrievo.evaluation.runner import SOURCE_PREFIX
from retrievo.models import Filters

Arms = dict[str, dict[str, float]]  # arm -> doc id -> raw score
Fusion = Callable[[Arms], list[str]]


def fetch(dataset_dir: Path, db: Path, depth: int) -> tuple[list[Arms], list[dict[str, int]]]:
    dataset = load_beir(dataset_dir)
    engine = Engine(Config(db=db, collection=f"eval-{dataset.name}"))
    store = engine._open_store(create=False)
    embedder = engine.embedder
    assert embedder is not None
    prefix = f"{SOURCE_PREFIX}{dataset.name}/"
    runs, judged = [], []
    for query_id, text in dataset.queries.items():
        arms: Arms = {}
        vector = embedder.embed_query(text)
        for arm, hits in (
            ("keyword", store.keyword_search(f"eval-{dataset.name}", text, Filters(), depth)),
            (
                "semantic",
                store.vector_search(f"eval-{dataset.name}", embedder.model_id, vector, Filters(), depth),
            ),
        ):
            chunks = store.get_chunks([h.chunk_id for h in hits])
            arms[arm] = {}
            for hit in hits:
                doc = chunks[hit.chunk_id].path.removeprefix(prefix)
                arms[arm].setdefault(doc, hit.score)
        runs.append(arms)
        judged.append(dataset.qrels[query_id])
    engine.close()
    return runs, judged


def rrf(k: float, weights: dict[str, float]) -> Fusion:
    def fuse(arms: Arms) -> list[str]:
        scores: dict[str, float] = {}
        for arm, docs in arms.items():
            for rank, doc in enumerate(sorted(docs, key=lambda d: -docs[d]), start=1):
                scores[doc] = scores.get(doc, 0.0) + weights.get(arm, 1.0) / (k + rank)
        return sorted(scores, key=lambda d: -scores[d])

    return fuse


def convex(alpha: float, normalise: str) -> Fusion:
    """alpha·norm(keyword) + (1-alpha)·norm(semantic); a missing arm score counts as the arm's minimum."""

    def fuse(arms: Arms) -> list[str]:
        scores: dict[str, float] = {}
        for arm, weight in (("keyword", alpha), ("semantic", 1 - alpha)):
            docs = arms[arm]
            if not docs:
                continue
            values = np.array(list(docs.values()))
            if normalise == "minmax":
                low, span = values.min(), (values.max() - values.min()) or 1.0
            else:  # z-score (distribution-based)
                low, span = values.mean(), values.std() or 1.0
            floor = (values.min() - low) / span
            for doc in set(arms["keyword"]) | set(arms["semantic"]):
                value = (docs[doc] - low) / span if doc in docs else floor
                scores[doc] = scores.get(doc, 0.0) + weight * value
        return sorted(scores, key=lambda d: -scores[d])

    return fuse


def score(fusion: Fusion, runs: list[Arms], judged: list[dict[str, int]], part: str) -> float:
    picked = [i for i in range(len(runs)) if part == "all" or (i % 2 == 0) == (part == "tune")]
    return float(np.mean([ndcg_at_k(fusion(runs[i]), judged[i], 10) for i in picked]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()
    runs, judged = fetch(args.dataset, args.db, args.depth)
    variants: dict[str, Fusion] = {
        "keyword only": lambda arms: sorted(arms["keyword"], key=lambda d: -arms["keyword"][d]),
        "semantic only": lambda arms: sorted(arms["semantic"], key=lambda d: -arms["semantic"][d]),
    }
    for k in (10, 20, 40, 60, 100):
        variants[f"RRF k={k}"] = rrf(k, {})
    for w in (0.7, 1.3, 1.6):
        variants[f"RRF k=60 keyword weight {w}"] = rrf(60, {"keyword": w})
    for alpha in (0.3, 0.4, 0.5, 0.6, 0.7):
        variants[f"convex min-max alpha={alpha}"] = convex(alpha, "minmax")
        variants[f"convex z-score alpha={alpha}"] = convex(alpha, "zscore")
    print(f"{len(runs)} queries, top-{args.depth} per arm; nDCG@10 on tune half | held-out half | all")
    for name, fusion in variants.items():
        print(f"{name:32s} | {score(fusion, runs, judged, 'tune'):.4f} | {score(fusion, runs, judged, 'held'):.4f} | "
              f"{score(fusion, runs, judged, 'all'):.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
