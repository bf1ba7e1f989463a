"""Approximate nearest neighbours for large collections: a usearch HNSW index beside the SQLite file.

Below ``ANN_MIN_VECTORS`` vectors exact numpy search is as fast and exact, so it is used instead.
Above it, an HNSW graph (cosine, float16) is kept per (collection, model) in
``<index file>.ann-<collection id>-<model hash>.usearch``, synced to the collection's current
chunks whenever the index's generation changed: new chunks are added, superseded ones removed,
nothing is rebuilt from scratch.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retrievo.store.sqlite.vectors import decode_vectors

ANN_MIN_VECTORS = 20_000
EXPANSION_SEARCH = 128  # HNSW ef at query time: recall ≈ 0.97+ at 1M (docs/benchmarks.md)
ADD_BATCH = 20_000  # under SQLite's 32,766 bound parameters


@dataclass
class _Entry:
    generation: int
    index: Any
    path: Path


class AnnIndexes:
    """One HNSW index per (collection, model), loaded lazily and kept in step with the store."""

    def __init__(self, db_path: str) -> None:
        self._db_path = db_path
        self._lock = threading.Lock()
        self._entries: dict[tuple[int, str], _Entry] = {}

    def search(
        self,
        db: sqlite3.Connection,
        collection_id: int,
        model_id: str,
        generation: int,
        query: npt.NDArray[np.float32],
        limit: int,
    ) -> list[tuple[int, float]]:
        with self._lock:
            entry = self._synced(db, collection_id, model_id, generation)
            if len(entry.index) == 0:
                return []
            matches = entry.index.search(query.astype(np.float32), min(limit, len(entry.index)))
            return [
                (int(key), 1.0 - float(distance))
                for key, distance in zip(matches.keys, matches.distances, strict=True)
            ]

    def _synced(self, db: sqlite3.Connection, collection_id: int, model_id: str, generation: int) -> _Entry:
        # onnxruntime must be loaded before usearch: the other order crashes the process (a clash of
        # native libraries between usearch 2.26/numkong and onnxruntime 1.31, reproduced here).
        import onnxruntime  # noqa: F401
        from usearch.index import Index

        key = (collection_id, model_id)
        entry = self._entries.get(key)
        if entry is not None and entry.generation == generation:
            return entry
        path = Path(
            f"{self._db_path}.ann-{collection_id}-{hashlib.sha256(model_id.encode()).hexdigest()[:8]}.usearch"
        )
        meta = path.with_suffix(".json")
        if entry is None:
            index = None
            if path.exists() and meta.exists():
                index = Index.restore(str(path))
                if index is not None:
                    # Not kept in the saved file. usearch has a setter its type hints do not show.
                    index.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]
                if json.loads(meta.read_text()).get("generation") == generation and index is not None:
                    entry = _Entry(generation, index, path)
                    self._entries[key] = entry
                    return entry
            if index is None:
                dims = _dimensions(db, collection_id, model_id)
                index = Index(ndim=dims, metric="cos", dtype="f16", expansion_search=EXPANSION_SEARCH)
            entry = _Entry(-1, index, path)
        _sync(db, entry.index, collection_id, model_id)
        entry.generation = generation
        entry.index.save(str(path))
        meta.write_text(json.dumps({"generation": generation, "model_id": model_id}))
        self._entries[key] = entry
        return entry


def _dimensions(db: sqlite3.Connection, collection_id: int, model_id: str) -> int:
    row = db.execute("SELECT dimensions FROM collections WHERE id = ?", (collection_id,)).fetchone()
    return int(row[0])


def _sync(db: sqlite3.Connection, index: Any, collection_id: int, model_id: str) -> None:
    current = np.array(
        [row[0] for row in db.execute(
            """SELECT c.id FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
               WHERE c.collection_id = ? AND c.superseded_at IS NULL""",
            (model_id, collection_id),
        )],
        dtype=np.int64,
    )  # fmt: skip
    held = np.asarray(index.keys, dtype=np.int64) if len(index) else np.zeros(0, dtype=np.int64)
    gone = np.setdiff1d(held, current, assume_unique=True)
    if len(gone):
        index.remove(gone)
    new = np.setdiff1d(current, held, assume_unique=True)
    dims = index.ndim
    for begin in range(0, len(new), ADD_BATCH):
        batch = [int(i) for i in new[begin : begin + ADD_BATCH]]
        rows = db.execute(
            f"""SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
                WHERE c.id IN ({",".join("?" * len(batch))})""",
            [model_id, *batch],
        ).fetchall()
        if rows:
            vectors = decode_vectors([row[1] for row in rows], dims)
            index.add(np.array([row[0] for row in rows], dtype=np.int64), vectors)
