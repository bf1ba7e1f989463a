"""Indexing throughput (chunks/s) next to the bare model's texts/s on the same texts.

The gap between the two is the pipeline's overhead (walk, load, chunk, hash, SQLite writes, FTS).
Corpus: the project's docs/ and examples/, plus the first N SciFact abstracts when ../shared/data is there.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import peak_rss_mb
from retrievo.config import Config
from retrievo.embed.local import MiniLMEmbedder
from retrievo.engine import Engine
from retrievo.models import IndexReport, LoadedDocument
from retrievo.text.hashing import embedding_input

ROOT = Path(__file__).resolve().parents[2]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"


def scifact_documents(limit: int) -> list[LoadedDocument]:
    documents = []
    with SCIFACT.open(encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            documents.append(
                LoadedDocument(source=f"scifact/{item['_id']}", text=item["text"], title=item["title"])
            )
            if len(documents) == limit:
                break
    return documents


def run(label: str, index: Callable[[Engine], IndexReport], texts_of: Callable[[Engine], list[str]]) -> None:
    embedder = MiniLMEmbedder()
    embedder.embed_query("load the model before timing")
    with tempfile.TemporaryDirectory() as folder:
        engine = Engine(Config(db=Path(folder) / "bench.db"), embedder=embedder)
        started = time.perf_counter()
        report = index(engine)
        pipeline_s = time.perf_counter() - started
        texts = texts_of(engine)
        engine.close()
    started = time.perf_counter()
    embedder.embed_documents(texts)
    bare_s = time.perf_counter() - started
    chunks_per_s = report.chunks_written / pipeline_s
    texts_per_s = len(texts) / bare_s
    print(
        f"{label} | {report.chunks_written} chunks | pipeline {chunks_per_s:.1f} chunks/s ({pipeline_s:.1f} s) | "
        f"bare model {texts_per_s:.1f} texts/s | pipeline/bare {chunks_per_s / texts_per_s:.0%} | "
        f"peak RSS {peak_rss_mb():.0f} MB",
        flush=True,
    )


def _chunk_texts(engine: Engine) -> list[str]:
    store = engine._open_store(create=False)
    ids = [
        hit for doc in store.list_documents(limit=100_000) for hit in store.current_chunk_ids(doc.document_id)
    ]
    chunks = store.get_chunks(ids)
    return [embedding_input(c.context, c.text) for c in chunks.values()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scifact", type=int, default=1000, help="SciFact abstracts to index (0 to skip).")
    args = parser.parse_args()
    print(f"# {platform.machine()}, Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}")
    run("docs + examples (files)", lambda e: e.index([ROOT / "docs", ROOT / "examples"]), _chunk_texts)
    if args.scifact and SCIFACT.exists():
        documents = scifact_documents(args.scifact)
        run(
            f"SciFact {len(documents)} abstracts (whole)",
            lambda e: e.add_documents(documents, chunker="whole"),
            _chunk_texts,
        )


if __name__ == "__main__":
    main()
