"""The PostgreSQL store's dense arm at scale: the usearch HNSW side index (``store/ann.py``) that SQLite
keeps beside its file, kept here per (collection, model) in the local cache folder and built from
``chunks.vector``.

pgvector's HNSW walk goes through the buffer manager: 9.1 ms at 1M chunks where this index answers in
2.6 ms (docs/benchmarks.md). The tables stay the source of truth: the side index answers only
unfiltered searches of the current chunks with the collection's served model, when it is in step with
the collection's change stamp and vector counter (every chunk write ticks the one, every write of
``chunks.vector`` bumps the other, each in the same transaction); otherwise, or while a large change is
synced in the background, pgvector answers. Several processes on one host share the folder (each file
is replaced atomically); another host keeps its own.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from retrievo.errors import CollectionNotFound, VectorIndexUnavailable
from retrievo.models import ArmHit
from retrievo.store.ann import ADD_BATCH, ANN_MIN_VECTORS, AnnIndexes, disagreements
from retrievo.store.postgres.keyword_source import PostgresKeywords
from retrievo.store.postgres.rows import configure

# Changed vectors past which a search does not wait for the sync (pgvector answers while it runs).
INLINE_SYNC_VECTORS = 20_000

# Every statement that writes chunks.vector is followed, in its transaction, by one of these.
VECTORS_CHANGED = "UPDATE collections SET vectors_changed = vectors_changed + 1 WHERE id = %s"
VECTORS_CHANGED_FOR_MODEL = "UPDATE collections SET vectors_changed = vectors_changed + 1 WHERE model_id = %s"
VECTORS_CHANGED_FOR_CHUNKS = """UPDATE collections SET vectors_changed = vectors_changed + 1
                                WHERE id IN (SELECT DISTINCT collection_id FROM chunks WHERE id = ANY(%s))"""
VECTORS_CHANGED_FOR_NAME = "UPDATE collections SET vectors_changed = vectors_changed + 1 WHERE name = %s"

GENERATION = """SELECT c.last_change_at, c.vectors_changed, COALESCE(s.chunk_count, 0) FROM collections c
                LEFT JOIN collection_stats s ON s.collection_id = c.id WHERE c.id = %s"""
# What a search needs of its collection, in one round trip: id, served model, dimensions, then the
# side indexes' state (change stamp, vector counter, current chunks).
SEARCH_STATE = """SELECT c.id, c.model_id, c.dimensions, c.last_change_at, c.vectors_changed,
                         COALESCE(s.chunk_count, 0)
                  FROM collections c LEFT JOIN collection_stats s ON s.collection_id = c.id WHERE c.name = %s"""


class PostgresVectorSource:
    """Current chunks' served vectors (``chunks.vector``); a collection's generation is its change
    stamp and vector counter."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]]) -> None:
        self._connect = connect

    def connect(self) -> psycopg.Connection[Any]:
        conn = self._connect()
        configure(conn)
        return conn

    def generation(self, db: psycopg.Connection[Any], collection_id: int) -> str:
        row = db.execute(GENERATION, (collection_id,)).fetchone()
        return _generation(row)

    def dimensions(self, db: psycopg.Connection[Any], collection_id: int, model_id: str) -> int:
        row = db.execute("SELECT dimensions FROM collections WHERE id = %s", (collection_id,)).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    @staticmethod
    def current_ids(db: psycopg.Connection[Any], collection_id: int, model_id: str) -> npt.NDArray[np.int64]:
        with db.cursor() as cursor:
            cursor.execute(
                """SELECT c.id FROM chunks c JOIN collections col ON col.id = c.collection_id
                   WHERE c.collection_id = %s AND col.model_id = %s AND c.superseded_at IS NULL
                     AND c.vector IS NOT NULL AND vector_dims(c.vector) = col.dimensions""",
                (collection_id, model_id),
            )
            ids = np.fromiter((row[0] for row in cursor), dtype=np.int64)
        ids.sort()
        return ids

    @staticmethod
    def vectors(
        db: psycopg.Connection[Any], model_id: str, dimensions: int, ids: list[int]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        # As text, parsed by numpy: no per-row adapter (a million rows read in seconds, not minutes).
        rows = db.execute(
            """SELECT id, trim(both '[]' from vector::text) FROM chunks
               WHERE id = ANY(%s) AND vector IS NOT NULL AND vector_dims(vector) = %s""",
            (ids, dimensions),
        ).fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, dimensions), dtype=np.float32)
        values = np.fromstring(",".join(row[1] for row in rows), dtype=np.float32, sep=",")
        return np.array([row[0] for row in rows], dtype=np.int64), values.reshape(len(rows), dimensions)


def _generation(row: Any) -> str:
    return f"{row[0]}/{row[1]}" if row is not None else ""


class PostgresVectors:
    """The PostgreSQL store's side vector indexes (mixed into PostgresStore)."""

    _url: str
    _cache_dir: Path | None
    _ann: AnnIndexes | None
    _ann_lock: threading.Lock

    @abstractmethod
    def _conn(self) -> AbstractContextManager[psycopg.Connection[Any]]: ...

    @abstractmethod
    def _database_key(self, conn: psycopg.Connection[Any]) -> str: ...

    def side_vector_search(
        self,
        conn: psycopg.Connection[Any],
        collection_id: int,
        model_id: str,
        vector: npt.NDArray[np.float32],
        limit: int,
        state: tuple[Any, ...] | None = None,
    ) -> list[ArmHit] | None:
        """Best first from the side index, or None: too small to need one, no cache folder, being built.
        ``state``: the collection's (change stamp, vector counter, chunk count) when already read."""
        found = self._side_vectors(conn, collection_id, state)
        if found is None:
            return None
        indexes, generation = found
        try:
            hits = indexes.search(conn, collection_id, model_id, generation, vector, limit)
        except VectorIndexUnavailable:
            return None
        return [ArmHit(chunk_id, rank, score) for rank, (chunk_id, score) in enumerate(hits, start=1)]

    def sync_vector_index(
        self, conn: psycopg.Connection[Any], collection_id: int, model_id: str | None
    ) -> None:
        """Bring the collection's side index in step now, however large the change (after indexing)."""
        found = self._side_vectors(conn, collection_id)
        if found is not None and model_id is not None:
            found[0].synced_index(conn, collection_id, model_id, found[1])

    def side_vector_problems(self, collection_id: int, model_id: str) -> list[str]:
        """Where the collection's side index (synced as a search would) disagrees with ``chunks.vector``;
        nothing when it has none."""
        with self._conn() as conn:
            found = self._side_vectors(conn, collection_id)
            if found is None:
                return []
            indexes, generation = found
            held = indexes.synced_index(conn, collection_id, model_id, generation)
            ids = PostgresVectorSource.current_ids(conn, collection_id, model_id)
            read = [
                PostgresVectorSource.vectors(conn, model_id, held.ndim, ids[b : b + ADD_BATCH].tolist())
                for b in range(0, len(ids), ADD_BATCH)
            ] or [(ids, np.zeros((0, held.ndim), dtype=np.float32))]
        return disagreements(held, np.concatenate([r[0] for r in read]), np.concatenate([r[1] for r in read]))

    def forget_vector_index(self, collection_id: int) -> None:
        """A deleted (or repaired) collection's side indexes go, files too; built anew when needed."""
        if self._cache_dir is None:
            return
        indexes = self._vector_indexes()
        if indexes is not None:
            indexes.forget(collection_id=collection_id)

    def _side_vectors(
        self, conn: psycopg.Connection[Any], collection_id: int, state: tuple[Any, ...] | None = None
    ) -> tuple[AnnIndexes, str] | None:
        if self._cache_dir is None:
            return None
        row = state if state is not None else conn.execute(GENERATION, (collection_id,)).fetchone()
        if row is None or int(row[2]) < ANN_MIN_VECTORS:
            return None
        indexes = self._vector_indexes(conn)
        return (indexes, _generation(row)) if indexes is not None else None

    def _vector_indexes(self, conn: psycopg.Connection[Any] | None = None) -> AnnIndexes | None:
        with self._ann_lock:
            if self._ann is None and self._cache_dir is not None:
                if conn is None:
                    with self._conn() as own:
                        key = self._database_key(own)
                else:
                    key = self._database_key(conn)
                folder = self._cache_dir / "vector" / key  # made by the first save, not before
                source = PostgresVectorSource(lambda: psycopg.connect(self._url, autocommit=True))
                self._ann = AnnIndexes(str(folder / "ann-"), source, inline_max=INLINE_SYNC_VECTORS)
            return self._ann


class PostgresSideIndexes(PostgresKeywords, PostgresVectors):
    """Both side indexes of the PostgreSQL store, in the local cache folder."""

    @abstractmethod
    def _collection_id(self, name: str) -> int: ...

    def _search_state(self, conn: psycopg.Connection[Any], collection: str) -> tuple[Any, ...]:
        """The collection's ``SEARCH_STATE`` row; CollectionNotFound when there is none."""
        row = conn.execute(SEARCH_STATE, (collection,)).fetchone()
        if row is None:
            self._collection_id(collection)  # raises CollectionNotFound, saying how to make it
            raise CollectionNotFound(f"collection {collection!r} does not exist")  # (removed meanwhile)
        return tuple(row)

    def sync_search_indexes(self, collection: str) -> None:
        """The collection's side indexes (keywords, vectors), brought in step now (after indexing);
        postings and pgvector's HNSW index are written with the rows."""
        with self._conn() as conn:
            state = self._search_state(conn, collection)
            self.sync_keyword_index(conn, int(state[0]))
            self.sync_vector_index(conn, int(state[0]), state[1])
