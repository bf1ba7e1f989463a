"""The SQLite store's source for the keyword side index (``store/keyword_index.py``): tokens made
inside SQLite, and the spool that keeps them between a bulk load's follower and the sync at its end."""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from retrievo.store.tokenizer import FTS5_TOKENIZER


class Spool:
    """Token strings of chunks made ahead of the sync that adds them: lines ``id<TAB>collection<TAB>
    tokens`` in an unlinked temporary file (gone with the process, even killed), their ids in memory.
    A chunk's row never changes, so a spooled line never goes stale; one not asked for is skipped."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._lock = threading.Lock()
        self.ids = np.zeros(0, dtype=np.int64)  # sorted

    def add(self, rows: list[tuple[int, int, str]]) -> None:
        with self._lock:
            self._file.seek(0, os.SEEK_END)
            self._file.writelines(
                f"{chunk_id}\t{collection}\t{body}\n" for chunk_id, collection, body in rows
            )
            self.ids = np.union1d(self.ids, np.array([row[0] for row in rows], dtype=np.int64))

    def take(self, wanted: npt.NDArray[np.int64]) -> Iterable[tuple[int, int, str]]:
        """The spooled rows among ``wanted``, once each (read lazily: a million rows need not fit)."""
        keep = set(wanted.tolist())
        if not keep:
            return
        with self._lock:
            self._file.seek(0)
            for line in self._file:
                chunk_id, collection, body = line.rstrip("\n").split("\t", 2)
                if int(chunk_id) in keep:
                    keep.discard(int(chunk_id))
                    yield int(chunk_id), int(collection), body

    def close(self) -> None:
        with self._lock:
            self._file.close()


def token_strings(db: sqlite3.Connection, ids: npt.NDArray[np.int64]) -> list[tuple[int, int, str]]:
    """(id, collection id, FTS5 tokens space-separated) of each chunk in ``ids`` that exists.

    Tokenized by FTS5 itself (the chunk's three columns, in a scratch table of the connection's temp
    schema, read back through ``fts5vocab``: the tokens ``shared_tokenizer`` would make, tested), in
    a few statements and little Python per row, so a thread doing this holds the GIL only briefly: beside
    a bulk load's Python (``following``) that matters more than the work itself.
    """
    db.execute("DROP TABLE IF EXISTS temp.kw_scratch_terms")
    db.execute("DROP TABLE IF EXISTS temp.kw_scratch")  # new each batch: no FTS5 tombstones to walk
    db.execute(f"CREATE VIRTUAL TABLE temp.kw_scratch USING fts5(body, tokenize='{FTS5_TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE temp.kw_scratch_terms USING fts5vocab(temp, kw_scratch, 'instance')")
    wanted = json.dumps(ids.tolist())
    db.execute(
        """INSERT INTO temp.kw_scratch (rowid, body)
           SELECT id, context || ' ' || text || ' ' || keywords FROM chunks
           WHERE id IN (SELECT value FROM json_each(?))""",
        (wanted,),
    )
    (chunks,) = db.execute(
        "SELECT json_group_array(json_array(id, collection_id)) FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
        (wanted,),
    ).fetchone()
    # As bytes: FTS5 cuts a very long term at a byte limit, which can split a UTF-8 character.
    (tokens,) = db.execute(
        """SELECT CAST(json_group_object(doc, tokens) AS BLOB) FROM (
               SELECT doc, group_concat(term, ' ') AS tokens FROM temp.kw_scratch_terms GROUP BY doc)"""
    ).fetchone()
    db.execute("DROP TABLE temp.kw_scratch_terms")
    db.execute("DROP TABLE temp.kw_scratch")
    bodies: dict[str, str] = json.loads(tokens.decode("utf-8", "replace"))
    return [(int(i), int(c), bodies.get(str(i), "")) for i, c in json.loads(chunks)]


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
