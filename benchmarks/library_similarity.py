"""The similarity scale of seed 003's ``search_library``: the bundled model's cosines on judged sets,
what ``min_similarity`` keeps at its default (0.7), and what a (FLOOR, CEILING) rescaling gives.

Runs on indexes kept by ``retrievo eval DATASET --db DB`` (one document per corpus entry):

    .venv/bin/python benchmarks/library_similarity.py ../shared/data/scifact --db /tmp/ev/scifact.db
    .venv/bin/python benchmarks/library_similarity.py ../shared/data/cosqa_dev --split dev --db /tmp/ev/cosqa.db

Per dataset: percentiles of the cosine of judged-relevant documents (in the first 500 passages) and of
the first unjudged document; then, for ``min_similarity`` on ``retrievo.search.library``'s scale (the
default 0.7 and others), the share of queries left empty, recall@10 with the threshold and without,
and nDCG@10 of the document ranking.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from retrievo import Config, Engine
from retrievo.evaluation.beir import load_beir
from retrievo.evaluation.metrics import ndcg_at_k, recall_at_k
from retrievo.evaluation.runner import SOURCE_PREFIX
from retrievo.search import library


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}
    return {
        f"p{p}": round(ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))], 3)
        for p in (10, 25, 50, 75, 90)
    }


def run(dataset_dir: Path, db: Path, split: str) -> dict[str, Any]:
    dataset = load_beir(dataset_dir, split)
    prefix = f"{SOURCE_PREFIX}{dataset.name}/"
    ranked: list[tuple[dict[str, int], list[tuple[str, float]]]] = []  # per query: judged, (doc, cosine)
    with Engine(Config(db=db, collection=f"eval-{dataset.name}")) as engine:
        for query_id, text in dataset.queries.items():
            found = engine.library(text, limit=50, min_similarity=0.0)
            documents = [
                (e.document.best.chunk.path.removeprefix(prefix), e.document.best.score)
                for e in found.entries
            ]
            ranked.append((dataset.qrels[query_id], documents))
    relevant = [cos for judged, docs in ranked for doc, cos in docs if judged.get(doc, 0) > 0]
    first_other = [
        next((cos for doc, cos in docs if judged.get(doc, 0) <= 0), 0.0) for judged, docs in ranked
    ]
    top = [docs[0][1] for _, docs in ranked if docs]

    def scored(threshold: float) -> dict[str, float]:
        empty = recall_kept = recall_all = ndcg = 0.0
        for judged, docs in ranked:
            kept = [doc for doc, cos in docs if library.similarity(cos) >= threshold]
            empty += not kept
            recall_kept += recall_at_k(kept, judged, 10)
            recall_all += recall_at_k([doc for doc, _ in docs], judged, 10)
            ndcg += ndcg_at_k(kept, judged, 10)
        n = max(1, len(ranked))
        return {"min_similarity": threshold, "empty_share": round(empty / n, 4),
                "recall10": round(recall_kept / n, 4), "recall10_no_threshold": round(recall_all / n, 4),
                "ndcg10": round(ndcg / n, 4)}  # fmt: skip

    out: dict[str, Any] = {
        "dataset": dataset.name, "queries": len(ranked),
        "cosine_relevant": percentiles(relevant), "cosine_top_result": percentiles(top),
        "cosine_first_unjudged": percentiles(first_other),
        "mean_documents_returned": round(statistics.mean(len(d) for _, d in ranked), 1),
        "thresholds": [scored(t / 100) for t in (0, 50, 60, 65, 70, 75, 80)],
    }  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--split", default="test")
    args = parser.parse_args()
    print(json.dumps(run(args.dataset, args.db, args.split), indent=2))


if __name__ == "__main__":
    main()
