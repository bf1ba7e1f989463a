"""The SQLite store's source for the keyword side index (``store/keyword_index.py``): the current
chunks' ids and their FTS5 tokens."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import numpy.typing as npt

from retrievo.store.tokenizer import shared_tokenizer


def token_strings(db: sqlite3.Connection, ids: npt.NDArray[np.int64]) -> list[tuple[int, int, str]]:
    """(id, collection id, FTS5 tokens space-separated) of each chunk in ``ids`` that exists, by id.

    The chunk's three FTS5 columns through FTS5's own tokenizer (``shared_tokenizer``): the tokens its
    ``chunks_fts`` row holds, tested.
    """
    rows = db.execute(
        """SELECT id, collection_id, context || ' ' || text || ' ' || keywords FROM chunks
           WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id""",
        (json.dumps(ids.tolist()),),
    ).fetchall()
    joined = shared_tokenizer().joined
    return [(int(chunk_id), int(collection), joined(body)) for chunk_id, collection, body in rows]


class SQLiteKeywordSource:
    """Every collection's current chunks in one SQLite file; the generation is the file's."""

    def __init__(self, path: str) -> None:
        self.path = path

    def connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False)
        db.isolation_level = None
        return db

    def generation(self, db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])

    def current_ids(self, db: sqlite3.Connection) -> npt.NDArray[np.int64]:
        ids = np.fromiter(
            (row[0] for row in db.execute("SELECT id FROM chunks WHERE superseded_at IS NULL")),
            dtype=np.int64,
        )
        ids.sort()
        return ids

    def token_rows(self, db: sqlite3.Connection, ids: npt.NDArray[np.int64]) -> list[tuple[int, int, str]]:
        return token_strings(db, ids)
