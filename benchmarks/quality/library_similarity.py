"""The similarity scale of seed 003's ``search_library`` (hybrid: the cosine, lifted by the share of the
query's words a document holds; ``retrievo.search.documents.library``) on judged sets: the similarity of judged-relevant documents and what ``min_similarity`` keeps at its
default (0.7) and at other values; ``--mode semantic`` ranks by meaning only (the tool before it was
hybrid) for the comparison.

Runs on indexes kept by ``retrievo eval DATASET --db DB`` (one document per corpus entry):

    .venv/bin/python -m benchmarks.quality.library_similarity ../shared/data/scifact --db /tmp/ev/scifact.db \
        --off-topic ../shared/data/cosqa_dev
    .venv/bin/python -m benchmarks.quality.library_similarity ../shared/data/cosqa_dev --split dev --db /tmp/ev/cosqa.db

Per dataset: percentiles of the similarity of judged-relevant documents (in the first 500 passages), of
the top result and of the first unjudged document; then, for ``min_similarity`` on ``retrievo.search.documents.library``'s scale (the
default 0.7 and others), the share of queries left empty, recall@10 with the threshold and without,
and nDCG@10 of the document ranking. ``--probe QUERY`` (repeatable) adds, for each such query, how many
documents reach 0.95 and 1.0 at ``min_similarity`` 0 and the first five scores ("cell" over SciFact: 165
of 206 documents at 1.0 before issue 55, when a document took the best score of any below it).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import string
from pathlib import Path
from typing import Any

from retrievo import Config, Engine
from retrievo.evaluation.beir import load_beir
from retrievo.evaluation.metrics import ndcg_at_k, recall_at_k
from retrievo.evaluation.runner import SOURCE_PREFIX
from retrievo.models import Filters, Kind
from retrievo.search.documents import library


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}
    return {
        f"p{p}": round(ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))], 3)
        for p in (10, 25, 50, 75, 90)
    }


def run(dataset_dir: Path, db: Path, split: str, mode: str) -> dict[str, Any]:
    dataset = load_beir(dataset_dir, split)
    prefix = f"{SOURCE_PREFIX}{dataset.name}/"
    ranked: list[tuple[dict[str, int], list[tuple[str, float]]]] = []  # per query: judged, (doc, cosine)
    with Engine(Config(db=db, collection=f"eval-{dataset.name}")) as engine:
        for query_id, text in dataset.queries.items():
            if mode == "semantic":
                hits = engine.search(
                    text, limit=500, mode="semantic", filters=Filters(kinds=(Kind.DOCUMENT,))
                ).hits
                documents = [(h.chunk.path.removeprefix(prefix), library.similarity(h.score))
                             for h in library.first_per_document(hits, 50)]  # fmt: skip
            else:
                found = engine.library(text, limit=50, min_similarity=0.0)
                documents = [
                    (e.document.best.chunk.path.removeprefix(prefix), e.document.similarity)
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
            kept = [doc for doc, cos in docs if cos >= threshold]
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
        "mode": mode, "similarity_relevant": percentiles(relevant), "similarity_top_result": percentiles(top),
        "similarity_first_unjudged": percentiles(first_other),
        "mean_documents_returned": round(statistics.mean(len(d) for _, d in ranked), 1),
        "thresholds": [scored(t / 100) for t in (0, 50, 60, 65, 70, 75, 80)],
    }  # fmt: skip
    return out


def off_topic(db: Path, collection: str, questions: list[str], seed: int = 7) -> dict[str, float]:
    """Share of questions the collection cannot answer (another set's, random strings) that get any
    document at the default ``min_similarity``."""
    rng = random.Random(seed)
    gibberish = [
        " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9)))
                 for _ in range(rng.randint(1, 5)))
        for _ in range(100)
    ]  # fmt: skip
    answered: dict[str, float] = {}
    with Engine(Config(db=db, collection=collection)) as engine:
        for name, asked in (("other_set", questions), ("random_strings", gibberish)):
            hits = sum(engine.library(q, limit=10).total_results > 0 for q in asked)
            answered[f"{name}_answered_at_0.7"] = round(hits / max(1, len(asked)), 3)
            answered[f"{name}_questions"] = len(asked)
    return answered


def probes(db: Path, collection: str, queries: list[str]) -> dict[str, dict[str, Any]]:
    """For each query: documents returned at ``min_similarity`` 0, how many reach 0.95 and 1.0, the top 5."""
    out: dict[str, dict[str, Any]] = {}
    with Engine(Config(db=db, collection=collection)) as engine:
        for query in queries:
            scores = [
                e.document.similarity for e in engine.library(query, limit=50, min_similarity=0.0).entries
            ]
            out[query] = {"returned": len(scores), "at_0.95": sum(s >= 0.95 for s in scores),
                          "at_1.0": sum(s >= 1.0 for s in scores), "top5": scores[:5],
                          "non_increasing": scores == sorted(scores, reverse=True)}  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--mode", choices=("hybrid", "semantic"), default="hybrid")
    parser.add_argument("--off-topic", type=Path, help="another BEIR set: 200 of its questions asked here")
    parser.add_argument("--off-topic-split", default="dev")
    parser.add_argument("--probe", action="append", default=[], help="a query to report scores for")
    args = parser.parse_args()
    out = run(args.dataset, args.db, args.split, args.mode)
    if args.off_topic:
        questions = list(load_beir(args.off_topic, args.off_topic_split).queries.values())[:200]
        out["off_topic"] = off_topic(args.db, f"eval-{out['dataset']}", questions)
    if args.probe:
        out["probes"] = probes(args.db, f"eval-{out['dataset']}", args.probe)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
