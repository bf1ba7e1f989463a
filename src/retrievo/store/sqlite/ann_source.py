"""The SQLite store's vectors for its HNSW side index (``store/ann.py``): the embeddings table joined
to the current chunks; the generation is the file's write counter."""

from __future__ import annotations

import sqlite3

import numpy as np
import numpy.typing as npt

from retrievo.store.sqlite.vectors import decode_vectors


class SQLiteVectorSource:
    def __init__(self, path: str) -> None:
        self.path = path

    def connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, check_same_thread=False)

    def generation(self, db: sqlite3.Connection, collection_id: int) -> int:
        return int(db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])

    def dimensions(self, db: sqlite3.Connection, collection_id: int, model_id: str) -> int:
        """The model's size: the served model's, or the shadow's while a migration builds its index."""
        row = db.execute(
            """SELECT CASE WHEN shadow_model_id = ? THEN shadow_dimensions ELSE dimensions END
               FROM collections WHERE id = ?""",
            (model_id, collection_id),
        ).fetchone()
        return int(row[0])

    def current_ids(self, db: sqlite3.Connection, collection_id: int, model_id: str) -> npt.NDArray[np.int64]:
        return np.fromiter(
            (row[0] for row in db.execute(
                """SELECT c.id FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
                   WHERE c.collection_id = ? AND c.superseded_at IS NULL""",
                (model_id, collection_id),
            )),
            dtype=np.int64,
        )  # fmt: skip

    def vectors(
        self, db: sqlite3.Connection, model_id: str, dimensions: int, ids: list[int]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        rows = db.execute(
            f"""SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
                WHERE c.id IN ({",".join("?" * len(ids))})""",
            [model_id, *ids],
        ).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, dimensions), dtype=np.float32)
        return np.array([row[0] for row in rows], dtype=np.int64), decode_vectors(
            [row[1] for row in rows], dimensions
        )
