"""`retrievo eval`: index a BEIR corpus, run the judged queries in each mode, report metrics and timings."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from retrievo.config import Config
from retrievo.embed.base import Embedder
from retrievo.engine import Engine
from retrievo.evaluation.beir import Dataset, load_beir
from retrievo.evaluation.metrics import (
    expected_calibration_error,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    recall_at_k,
)
from retrievo.models import LoadedDocument, SearchMode, SearchResult

SOURCE_PREFIX = "beir://"
RECALL_CUTOFFS = (5, 10, 20, 100)
USER_LIMIT = 10  # nDCG@10, MRR@10, R@5, R@10, ECE@10 and latency: exactly `search(query)` with defaults
DEEP_LIMIT = 100  # R@20 and R@100: a search asking for 100 results


@dataclass
class ModeScores:
    mode: str
    search_mode: str
    ndcg_10: float
    mrr_10: float
    recall: dict[int, float]
    ece_10: (
        float  # expected calibration error of the top 10 hits' relevance (see search/answer/calibration.py)
    )
    latency_p50_ms: float
    latency_p95_ms: float
    queries: int


@dataclass
class EvalReport:
    dataset: str
    documents: int
    chunks: int
    queries: int
    index_seconds: float
    chunks_per_second: float
    chunker: str
    fusion: str
    rrf_k: int
    modes: list[ModeScores] = field(default_factory=list)


def corpus_documents(dataset: Dataset) -> list[LoadedDocument]:
    """Each corpus entry becomes a document; its title becomes the chunks' context (both arms see it)."""
    return [
        LoadedDocument(
            source=f"{SOURCE_PREFIX}{dataset.name}/{doc.doc_id}", text=doc.text or doc.title, title=doc.title
        )
        for doc in dataset.corpus
    ]


def evaluate(
    directory: Path,
    db: Path | None = None,
    store: str | None = None,
    modes: Sequence[str] = ("keyword", "semantic", "hybrid"),
    limit_queries: int | None = None,
    chunker: str = "whole",
    split: str = "test",
    embedder: Embedder | None = None,
    rrf_k: int = 60,
    fusion: str = "adaptive",
) -> EvalReport:
    dataset = load_beir(directory, split)
    dense = any(mode != SearchMode.KEYWORD for mode in modes)
    with tempfile.TemporaryDirectory(prefix="retrievo-eval-") as scratch:
        config = Config.from_env(
            db=db or Path(scratch) / "eval.db",
            store=store,
            collection=f"eval-{dataset.name}",
            rrf_k=rrf_k,
            fusion=fusion,
            embedder=None if dense else "none",
        )
        with Engine(config, embedder=embedder if dense else None) as engine:
            started = time.perf_counter()
            report = engine.add_documents(corpus_documents(dataset), chunker=chunker, embed=dense)
            index_seconds = time.perf_counter() - started
            chunks = sum(c.chunks for c in engine.status().collections if c.name == config.collection)
            result = EvalReport(
                dataset=dataset.name, documents=len(dataset.corpus), chunks=chunks, queries=0,
                index_seconds=round(index_seconds, 2),
                chunks_per_second=round(report.chunks_written / index_seconds, 1) if report.chunks_written else 0.0,
                chunker=chunker, fusion=fusion, rrf_k=rrf_k,
            )  # fmt: skip
            queries = list(dataset.queries.items())[:limit_queries]
            result.queries = len(queries)
            for mode in modes:
                engine.forget_query_vectors()  # each mode's latency includes embedding its queries
                result.modes.append(_run_mode(engine, dataset, queries, mode))
    return result


def _run_mode(engine: Engine, dataset: Dataset, queries: list[tuple[str, str]], mode: str) -> ModeScores:
    latencies: list[float] = []
    ndcg, mrr = 0.0, 0.0
    recall = dict.fromkeys(RECALL_CUTOFFS, 0.0)
    calibration: list[tuple[float, bool]] = []
    search_mode = mode
    prefix = f"{SOURCE_PREFIX}{dataset.name}/"

    def ranked_documents(found: SearchResult) -> list[str]:
        ranked: list[str] = []
        for hit in found.hits:  # a document ranks where its best chunk ranks
            doc_id = hit.chunk.path.removeprefix(prefix)
            if doc_id not in ranked:
                ranked.append(doc_id)
        return ranked

    for query_id, text in queries:
        # What a user gets: the default search, ten results (timed, and scored at 10 and below).
        started = time.perf_counter()
        found = engine.search(text, mode=mode, limit=USER_LIMIT)
        latencies.append((time.perf_counter() - started) * 1000)
        search_mode = found.search_mode
        ranked = ranked_documents(found)
        judged = dataset.qrels[query_id]
        calibration += [
            (hit.relevance, judged.get(hit.chunk.path.removeprefix(prefix), 0) > 0) for hit in found.hits
        ]
        ndcg += ndcg_at_k(ranked, judged, 10)
        mrr += mrr_at_k(ranked, judged, 10)
        # Deep recall, measured apart: the same search asking for DEEP_LIMIT results (the arms' default
        # depth, so its first ten are the ones above).
        deep = ranked_documents(engine.search(text, mode=mode, limit=DEEP_LIMIT))
        for cutoff in RECALL_CUTOFFS:
            recall[cutoff] += recall_at_k(ranked if cutoff <= USER_LIMIT else deep, judged, cutoff)
    count = max(1, len(queries))
    return ModeScores(
        mode=mode, search_mode=search_mode, ndcg_10=round(ndcg / count, 4), mrr_10=round(mrr / count, 4),
        recall={k: round(v / count, 4) for k, v in recall.items()},
        ece_10=round(expected_calibration_error(calibration), 4),
        latency_p50_ms=round(percentile(latencies, 0.5), 2), latency_p95_ms=round(percentile(latencies, 0.95), 2),
        queries=len(queries),
    )  # fmt: skip
