"""Where a build's seconds go: SciFact (../shared/data) indexed as the peers benchmark does it.

Every document through ``engine.add_documents(..., chunker="whole", embed=False)`` (the side indexes
synced at its end, as `retrievo index` does), then given vectors stored. Prints the phases and the
SQLite statements that took longest (each statement timed on the store's writer connection);
``--cprofile`` prints Python's profile instead of the statement table.

    .venv/bin/python -m benchmarks.scale.profile_build [--cprofile] [--size 20000]

``--size`` builds the peers benchmark's realistic corpus (benchmarks/scale/realistic.py) at that size instead.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import json
import pstats
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.models import LoadedDocument
from retrievo.store.sqlite import connection
from retrievo.text.hashing import embedding_key

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact"
SECONDS: collections.Counter[str] = collections.Counter()
CALLS: collections.Counter[str] = collections.Counter()
_CONNECT = sqlite3.connect


class TimedConnection(sqlite3.Connection):
    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        started = time.perf_counter()
        cursor = super().execute(sql, parameters)
        key = " ".join(sql.split())[:100]
        SECONDS[key] += time.perf_counter() - started
        CALLS[key] += 1
        return cursor

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        started = time.perf_counter()
        cursor = super().executemany(sql, parameters)
        key = "(many) " + " ".join(sql.split())[:93]
        SECONDS[key] += time.perf_counter() - started
        CALLS[key] += 1
        return cursor


def _timed_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    kwargs.setdefault("factory", TimedConnection)
    return _CONNECT(*args, **kwargs)


def build(size: int | None = None) -> dict[str, float]:
    if size is None:
        with (DATA / "corpus.jsonl").open(encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle]
    else:  # the peers benchmark's realistic corpus at that size
        from benchmarks.scale.realistic import realistic_texts

        records = [
            {"_id": str(n), "text": text, "title": f"Document {n // 1000}"}
            for n, text in enumerate(realistic_texts(size))
        ]
    documents = [
        LoadedDocument(source=f"peers://{r['_id']}", text=r["text"], title=r["title"]) for r in records
    ]
    vectors = np.random.default_rng(0).standard_normal((len(records), 384)).astype(np.float32)
    row_of = {document.source: n for n, document in enumerate(documents)}
    engine = Engine(Config.from_env(db=Path(tempfile.mkdtemp()) / "build.db", collection="peers"))
    started = time.perf_counter()
    engine.add_documents(documents, "peers", chunker="whole", embed=False)
    added = time.perf_counter()
    store = engine._open_store(create=False)
    store.set_collection_model("peers", "given-384", 384)
    rows = store._read(  # type: ignore[attr-defined]
        """SELECT c.context, c.text, d.source FROM chunks c JOIN documents d ON d.id = c.document_id
           WHERE c.superseded_at IS NULL"""
    )
    store.put_embeddings(
        "given-384", [embedding_key(r[0], r[1]) for r in rows], vectors[[row_of[r[2]] for r in rows]]
    )
    stored = time.perf_counter()
    store.sync_search_indexes("peers")
    engine.close()
    return {
        "documents (with keyword side index)": added - started,
        "vectors": stored - added,
        "vector side index": time.perf_counter() - stored,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--size", type=int, help="The realistic corpus at this size instead of SciFact.")
    args = parser.parse_args()
    if args.cprofile:
        profiler = cProfile.Profile()
        phases = profiler.runcall(build, args.size)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top * 3)
    else:
        connection.sqlite3.connect = _timed_connect  # type: ignore[attr-defined]  (the store's writer)
        phases = build(args.size)
        for sql, seconds in SECONDS.most_common(args.top):
            print(f"{seconds:7.3f} s {CALLS[sql]:7d}×  {sql}")
    for name, seconds in phases.items():
        print(f"{name}: {seconds:.2f} s")


if __name__ == "__main__":
    main()
