"""One system, run in a child process by ``run.py``: build from the given texts and vectors, time the
queries (query vectors given), score nDCG@10 when there are judgements; write JSON to OUT.

    python systems.py SYSTEM WORK OUT [--ann]

retrievo runs under the project's interpreter; LanceDB, txtai, bm25s and faiss under their own
environment's. ``faiss`` is an exhaustive inner-product index (IndexFlatIP, faiss's own threads);
``matmul`` is the physical floor of exact dense search: one NumPy product and a top-k by
``argpartition``, with BLAS on one thread (``run.py`` starts it with ``OPENBLAS_NUM_THREADS=1``).
Each mode reports p50 / p95 and the process's CPU milliseconds per query (every thread of it).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

LIMIT = 10
WARM_UP = 100  # untimed queries per mode first: caches, memory maps, lazy loads


def ndcg10(ranked: Sequence[str], judged: dict[str, int]) -> float:
    gains = [judged.get(doc, 0) for doc in ranked[:LIMIT]]
    dcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(judged.values(), reverse=True)[:LIMIT]
    best = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best else 0.0


def measure(
    search: Callable[[int], list[str]], queries: int, qrels: dict[str, dict[str, int]]
) -> tuple[dict[str, float], float | None]:
    for number in range(min(WARM_UP, queries)):
        search(number)
    latencies, scores = [], []
    cpu_started = time.process_time()
    for number in range(queries):
        started = time.perf_counter()
        ranked = search(number)
        latencies.append((time.perf_counter() - started) * 1000)
        if qrels:
            scores.append(ndcg10(ranked, qrels[str(number)]))
    cpu_ms = (time.process_time() - cpu_started) * 1000 / max(1, queries)
    ordered = sorted(latencies)
    figures = {
        "p50_ms": statistics.median(ordered),
        "p95_ms": ordered[max(0, round(0.95 * len(ordered)) - 1)],
        "cpu_ms": cpu_ms,
    }
    return figures, (round(statistics.mean(scores), 4) if scores else None)


# Systems: each returns (build seconds, {mode: search(query number) -> ranked ids}) -----------------


def retrievo(work: Path, corpus: dict[str, Any], vectors: np.ndarray, queries: np.ndarray, ann: bool) -> Any:
    from retrievo.config import Config
    from retrievo.embed.base import Embedder, Vectors
    from retrievo.engine import Engine
    from retrievo.models import LoadedDocument
    from retrievo.text.hashing import embedding_key

    by_query = {text: queries[n] for n, text in enumerate(corpus["queries"])}

    class GivenQueries(Embedder):
        model_id = "peers-given-384"

        @property
        def dimensions(self) -> int:
            return int(vectors.shape[1])

        def embed_batch(self, texts: Sequence[str]) -> Vectors:
            return np.stack([by_query[text] for text in texts]).astype(np.float32)

    scratch = Path(tempfile.mkdtemp(dir=work))
    engine = Engine(Config.from_env(db=scratch / "r.db", collection="peers"), embedder=GivenQueries())
    documents = [
        LoadedDocument(source=f"peers://{doc_id}", text=text, title=title)
        for doc_id, title, text in zip(corpus["ids"], corpus["titles"], corpus["texts"], strict=True)
    ]
    row_of = {f"peers://{doc_id}": n for n, doc_id in enumerate(corpus["ids"])}
    started = time.perf_counter()
    engine.add_documents(documents, "peers", chunker="whole", embed=False)
    store = engine._open_store(create=False)
    store.set_collection_model("peers", GivenQueries.model_id, int(vectors.shape[1]))
    rows = store._read(  # type: ignore[attr-defined]
        """SELECT c.context, c.text, d.source FROM chunks c JOIN documents d ON d.id = c.document_id
           WHERE c.superseded_at IS NULL"""
    )
    keys = [embedding_key(row[0], row[1]) for row in rows]
    store.put_embeddings(GivenQueries.model_id, keys, vectors[[row_of[row[2]] for row in rows]])
    store.sync_search_indexes("peers")
    build_s = time.perf_counter() - started
    texts = corpus["queries"]

    def mode_search(mode: str) -> Callable[[int], list[str]]:
        def search(number: int) -> list[str]:
            found = engine.search(texts[number], "peers", limit=LIMIT, mode=mode)
            return [hit.chunk.path.removeprefix("peers://") for hit in found.hits]

        return search

    from retrievo.models import Filters

    document_of = {
        int(row[0]): str(row[1]).removeprefix("peers://")
        for row in store._read(  # type: ignore[attr-defined]
            "SELECT c.id, d.source FROM chunks c JOIN documents d ON d.id = c.document_id"
        )
    }

    pinned: list[Any] = []

    def dense_arm(number: int) -> list[str]:  # the exact dense arm alone, as a search calls it:
        if not pinned:  # inside one look at the index (``Store.reading``, which a search opens)
            pinned.append(store.reading())
            pinned[0].__enter__()
        hits = store.vector_search("peers", GivenQueries.model_id, queries[number], Filters(), LIMIT)
        return [document_of[hit.chunk_id] for hit in hits]

    searches = {mode: mode_search(mode) for mode in ("keyword", "semantic", "hybrid")}
    return build_s, {**searches, "dense arm": dense_arm}


def lancedb(work: Path, corpus: dict[str, Any], vectors: np.ndarray, queries: np.ndarray, ann: bool) -> Any:
    import lancedb as lance
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    started = time.perf_counter()
    db = lance.connect(str(Path(tempfile.mkdtemp(dir=work))))
    texts = [f"{title} {text}" for title, text in zip(corpus["titles"], corpus["texts"], strict=True)]
    dims = int(vectors.shape[1])
    table = db.create_table(
        "docs",
        data=pa.table(
            {
                "id": corpus["ids"],
                "text": texts,
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors.reshape(-1), pa.float32()), dims
                ),
            }
        ),
    )
    table.create_fts_index("text", language="English", stem=True, remove_stop_words=True, with_position=False)
    if ann:
        table.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ")
    build_s = time.perf_counter() - started
    reranker = RRFReranker()
    words = corpus["queries"]

    def ids(rows: list[dict[str, Any]]) -> list[str]:
        return [str(row["id"]) for row in rows]

    return build_s, {
        "keyword": lambda n: ids(
            table.search(words[n], query_type="fts").select(["id"]).limit(LIMIT).to_list()
        ),
        "semantic": lambda n: ids(
            table.search(queries[n], query_type="vector")
            .metric("cosine")
            .select(["id"])
            .limit(LIMIT)
            .to_list()
        ),
        "hybrid": lambda n: ids(
            table.search(query_type="hybrid")
            .vector(queries[n])
            .text(words[n])
            .rerank(reranker)
            .select(["id"])
            .limit(LIMIT)
            .to_list()
        ),
    }


def txtai(work: Path, corpus: dict[str, Any], vectors: np.ndarray, queries: np.ndarray, ann: bool) -> Any:
    from txtai import Embeddings

    texts = [f"{title} {text}" for title, text in zip(corpus["titles"], corpus["texts"], strict=True)]
    lookup = {text: vectors[n] for n, text in enumerate(texts)}
    lookup.update({text: queries[n] for n, text in enumerate(corpus["queries"])})

    def transform(inputs: Sequence[str]) -> np.ndarray:
        return np.stack([lookup[text] for text in inputs]).astype(np.float32)

    started = time.perf_counter()
    embeddings = Embeddings(method="external", transform=transform, hybrid=True, content=False)
    embeddings.index([(doc_id, text, None) for doc_id, text in zip(corpus["ids"], texts, strict=True)])
    build_s = time.perf_counter() - started
    words = corpus["queries"]

    def search(weights: float) -> Callable[[int], list[str]]:
        return lambda n: [str(hit[0]) for hit in embeddings.search(words[n], LIMIT, weights=weights)]

    return build_s, {"keyword": search(0.0), "semantic": search(1.0), "hybrid": search(0.5)}


def bm25s(work: Path, corpus: dict[str, Any], vectors: np.ndarray, queries: np.ndarray, ann: bool) -> Any:
    import bm25s as bm
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    texts = [f"{title} {text}" for title, text in zip(corpus["titles"], corpus["texts"], strict=True)]
    started = time.perf_counter()
    retriever = bm.BM25()
    retriever.index(
        bm.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
    )
    build_s = time.perf_counter() - started
    words, ids = corpus["queries"], corpus["ids"]

    def search(n: int) -> list[str]:
        tokens = bm.tokenize([words[n]], stopwords="en", stemmer=stemmer, show_progress=False)
        found, _ = retriever.retrieve(tokens, k=min(LIMIT, len(ids)), show_progress=False, n_threads=1)
        return [ids[i] for i in found[0]]

    return build_s, {"keyword": search}


def faiss(work: Path, corpus: dict[str, Any], vectors: np.ndarray, queries: np.ndarray, ann: bool) -> Any:
    import faiss as fa

    ids = corpus["ids"]
    started = time.perf_counter()
    index = fa.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    build_s = time.perf_counter() - started
    asked = np.ascontiguousarray(queries, dtype=np.float32)

    def search(n: int) -> list[str]:
        _, found = index.search(asked[n : n + 1], LIMIT)
        return [ids[i] for i in found[0] if i >= 0]

    return build_s, {"semantic": search}


def matmul(work: Path, corpus: dict[str, Any], vectors: np.ndarray, queries: np.ndarray, ann: bool) -> Any:
    ids = corpus["ids"]
    started = time.perf_counter()
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    build_s = time.perf_counter() - started
    asked = np.ascontiguousarray(queries, dtype=np.float32)

    def search(n: int) -> list[str]:
        scores = matrix @ asked[n]
        top = np.argpartition(-scores, LIMIT - 1)[:LIMIT]
        return [ids[i] for i in top[np.argsort(-scores[top])]]

    return build_s, {"semantic": search}


def main() -> None:
    system, work, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    ann = "--ann" in sys.argv
    corpus = json.loads((work / "corpus.json").read_text())
    vectors = np.load(work / "vectors.npy")
    queries = np.load(work / "query_vectors.npy")
    build_s, searches = globals()[system](work, corpus, vectors, queries, ann)
    latency, ndcg = {}, {}
    for mode, search in searches.items():
        latency[mode], ndcg[mode] = measure(search, len(corpus["queries"]), corpus["qrels"])
    out.write_text(json.dumps({"build_s": round(build_s, 2), "latency": latency, "ndcg10": ndcg}))


if __name__ == "__main__":
    main()
