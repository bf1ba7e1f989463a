"""Query latency (p50/p95) per mode at growing sizes, excluding query embedding; peak RSS.

Synthetic text and low-rank vectors (spread like real sentence embeddings, see
`ann_recall_clustered.py`) stand in for real chunks; real text is for quality, in `retrievo eval`.
Each size is built in a fresh index through the store's public methods, inside ``bulk_load`` as
`retrievo index` does for a first load. "first search s" is the first query after the build: on
SQLite it includes building the HNSW graph beside the file (20k+ vectors).

    .venv/bin/python -m benchmarks.speed.query --sizes 10000 100000 1000000 [--store postgresql://…]
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from benchmarks.common import low_rank, p50_p95, peak_rss_mb, synthetic_texts, timed
from retrievo.config import Config
from retrievo.embed.base import Embedder, Vectors
from retrievo.engine import Engine
from retrievo.ingest.chunkers import LineIndex
from retrievo.models import ChunkDraft, LoadedDocument
from retrievo.store.base import Store
from retrievo.store.factory import open_store
from retrievo.text.hashing import embedding_key, sha256_text

DIMS = 384
CHUNKS_PER_DOCUMENT = 1000
MODEL_ID = "bench-random-384"


class FixedQueryEmbedder(Embedder):
    """Returns precomputed query vectors, so timings exclude the model."""

    model_id = MODEL_ID

    def __init__(self, queries: np.ndarray) -> None:
        self.queries = queries
        self.next = 0

    @property
    def dimensions(self) -> int:
        return DIMS

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        vector = self.queries[self.next % len(self.queries)]
        self.next += 1
        return np.tile(vector, (len(texts), 1))


def config_for(db: Path, store_url: str | None) -> Config:
    return Config(db=db, store=store_url, collection="bench")


def build(config: Config, size: int, model_id: str = MODEL_ID, texts: Iterator[str] | None = None) -> float:
    store = open_store(config, create=True)
    store.ensure_collection("bench")
    store.set_collection_model("bench", model_id, DIMS)
    texts = texts if texts is not None else synthetic_texts(size)
    started = time.perf_counter()
    with store.bulk_load("bench"):
        _write(store, texts, size, model_id)
    store.close()
    return time.perf_counter() - started


def _write(store: Store, texts: Iterator[str], size: int, model_id: str = MODEL_ID) -> None:
    written = 0
    while written < size:
        batch = [next(texts) for _ in range(min(CHUNKS_PER_DOCUMENT, size - written))]
        write_document(store, written, batch, low_rank(len(batch), DIMS, seed=written + 1), model_id)
        written += len(batch)


def write_document(
    store: Store, number: int, batch: list[str], vectors: np.ndarray, model_id: str = MODEL_ID
) -> None:
    """One document of the ``bench`` collection whose chunks are ``batch`` (one per line), with vectors."""
    body = "\n".join(batch)
    lines = LineIndex(body)
    drafts, offset = [], 0
    for text in batch:
        drafts.append(
            ChunkDraft(
                text=text, start=offset, end=offset + len(text), line_start=lines.line_of(offset),
                line_end=lines.line_of(offset), context=f"Document {number}", chunker="bench",
                chunker_version=1, chunk_hash=sha256_text(text),
            )
        )  # fmt: skip
        offset += len(text) + 1
    document = LoadedDocument(source=f"/bench/{number}.txt", text=body, title=f"Document {number}")
    store.write_revision("bench", document, sha256_text(body), drafts, None)
    store.put_embeddings(model_id, [embedding_key(d.context, d.text) for d in drafts], vectors)


def measure(config: Config, queries: int) -> tuple[float, dict[str, tuple[float, float]]]:
    rng = np.random.default_rng(5)
    query_vectors = low_rank(queries, DIMS, seed=9)
    words = list(synthetic_texts(queries, seed=3, words=6))
    engine = Engine(config, embedder=FixedQueryEmbedder(query_vectors))
    _, first_ms = timed(lambda: engine.search("warm up the caches", limit=10))
    results: dict[str, tuple[float, float]] = {}
    for mode in ("keyword", "semantic", "hybrid"):
        latencies = []
        for i in range(queries):
            text = " ".join(words[i].split()[: int(rng.integers(2, 6))])
            _, ms = timed(lambda text=text, mode=mode: engine.search(text, mode=mode, limit=10))
            latencies.append(ms)
        results[mode] = p50_p95(latencies)
    engine.close()
    return first_ms / 1000, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--keep", type=Path, help="Folder to keep the built indexes in.")
    parser.add_argument("--store", help="postgresql:// URL of an empty database (one size per database).")
    phase = parser.add_mutually_exclusive_group()
    # Build and measure apart, so that latencies are taken on a quiet machine.
    phase.add_argument("--build-only", action="store_true", help="Build the indexes, measure nothing.")
    phase.add_argument("--measure-only", action="store_true", help="Measure indexes built before.")
    args = parser.parse_args()
    print(
        f"# {platform.processor() or platform.machine()}, Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}"
    )
    print(f"# store: {'PostgreSQL' if args.store else 'SQLite'}")
    print(
        "size | build s | first search s | keyword p50/p95 ms | semantic p50/p95 ms | hybrid p50/p95 ms | peak RSS MB"
    )
    for size in args.sizes:
        folder = args.keep or Path(tempfile.mkdtemp(prefix="retrievo-bench-"))
        db = folder / f"bench-{size}.db"
        config = config_for(db, args.store)
        # With --keep, a second run skips the build, so its peak RSS is the query phase alone.
        fresh = args.store is not None or not db.exists()
        build_s = build(config, size) if fresh and not args.measure_only else 0.0
        if args.build_only:
            print(f"{size} | {build_s:.0f} | built", flush=True)
            continue
        first_s, latencies = measure(config, args.queries)
        cells = " | ".join(f"{p50:.1f} / {p95:.1f}" for p50, p95 in latencies.values())
        print(f"{size} | {build_s:.0f} | {first_s:.1f} | {cells} | {peak_rss_mb():.0f}", flush=True)


if __name__ == "__main__":
    main()
