"""Vectors: float16 on disk, a float32 matrix in memory per (collection, model), exact cosine search."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

STORAGE_DTYPE = np.float16


def encode_vector(vector: npt.NDArray[np.float32]) -> bytes:
    return np.asarray(vector, dtype=STORAGE_DTYPE).tobytes()


def decode_vectors(blobs: list[bytes], dimensions: int) -> npt.NDArray[np.float32]:
    if not blobs:
        return np.zeros((0, dimensions), dtype=np.float32)
    joined = np.frombuffer(b"".join(blobs), dtype=STORAGE_DTYPE)
    return joined.reshape(len(blobs), -1).astype(np.float32)


@dataclass(frozen=True)
class VectorMatrix:
    ids: npt.NDArray[np.int64]
    matrix: npt.NDArray[np.float32]


def matrix_of(rows: list[tuple[int, bytes]]) -> VectorMatrix:
    """(chunk id, stored vector) rows as ids and a float32 matrix."""
    dims = len(rows[0][1]) // np.dtype(STORAGE_DTYPE).itemsize if rows else 0
    return VectorMatrix(
        ids=np.array([row[0] for row in rows], dtype=np.int64),
        matrix=decode_vectors([row[1] for row in rows], dims),
    )


class VectorCache:
    """Keeps each collection's current vectors in memory until the index's generation changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[int, str], tuple[int, VectorMatrix]] = {}

    def get(self, db: sqlite3.Connection, collection_id: int, model_id: str, generation: int) -> VectorMatrix:
        key = (collection_id, model_id)
        with self._lock:
            cached = self._entries.get(key)
            if cached and cached[0] == generation:
                return cached[1]
            rows = db.execute(
                """SELECT c.id, e.vector FROM chunks c
                   JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
                   WHERE c.collection_id = ? AND c.superseded_at IS NULL ORDER BY c.id""",
                (model_id, collection_id),
            ).fetchall()
            entry = matrix_of(rows)
            self._entries[key] = (generation, entry)
            return entry
