"""The PostgreSQL store's keyword arm at scale: the tantivy side index (``store/keyword_index.py``) that
SQLite keeps beside its file, kept here per collection in a local cache folder and built from the
``postings`` table.

BM25 in SQL reads every posting of every query term (linear in the corpus: 260–326 ms at 1M chunks,
docs/benchmarks.md); tantivy skips the blocks of postings that cannot reach the top k. The tables stay
the source of truth: the side index answers only unfiltered searches of the current chunks, when it is
in step with the collection's last change stamp (every write ticks it in the same transaction);
otherwise, or while it is being built, SQL answers. Several processes on one host share the folder
(tantivy's writer lock: one syncs, the others answer from SQL meanwhile); another host keeps its own.
The ranking is the SQL arm's: the same tokens (the postings' terms, each repeated tf times, so tantivy
counts the same tf and length), FTS5's idf, k1 and b.
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

from retrievo.models import ArmHit
from retrievo.store.fts_query import query_terms
from retrievo.store.keyword_index import KEYWORD_INDEX_MIN_ROWS, KeywordIndex, remove_files, side_files
from retrievo.text.hashing import sha256_text


class PostgresKeywordSource:
    """One collection's current chunks; the generation is its last change stamp."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], collection_id: int) -> None:
        self._connect = connect
        self.collection_id = collection_id

    def connect(self) -> psycopg.Connection[Any]:
        return self._connect()

    def generation(self, db: psycopg.Connection[Any]) -> str:
        row = db.execute(
            "SELECT last_change_at FROM collections WHERE id = %s", (self.collection_id,)
        ).fetchone()
        return str(row[0]) if row and row[0] is not None else ""

    def current_ids(self, db: psycopg.Connection[Any]) -> npt.NDArray[np.int64]:
        with db.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM chunks WHERE collection_id = %s AND superseded_at IS NULL",
                (self.collection_id,),
            )
            ids = np.fromiter((row[0] for row in cursor), dtype=np.int64)
        ids.sort()
        return ids

    def token_rows(
        self, db: psycopg.Connection[Any], ids: npt.NDArray[np.int64]
    ) -> list[tuple[int, int, str]]:
        # Every existing chunk, one with no postings too (an empty chunk is a document of length 0).
        rows = db.execute(
            """SELECT c.id, COALESCE(string_agg(repeat(p.term || ' ', p.tf), ''), '')
               FROM chunks c LEFT JOIN postings p ON p.chunk_id = c.id
               WHERE c.id = ANY(%s) GROUP BY c.id ORDER BY c.id""",
            (ids.tolist(),),
        ).fetchall()
        return [(int(chunk_id), self.collection_id, str(body)) for chunk_id, body in rows]


class PostgresKeywords:
    """The PostgreSQL store's side keyword indexes (mixed into PostgresStore)."""

    _url: str
    _cache_dir: Path | None
    _keyword_indexes: dict[int, KeywordIndex]
    _keyword_lock: threading.Lock
    _cache_key: str | None

    @abstractmethod
    def _conn(self) -> AbstractContextManager[psycopg.Connection[Any]]: ...

    def side_keyword_search(
        self,
        conn: psycopg.Connection[Any],
        collection_id: int,
        query: str,
        limit: int,
        state: tuple[Any, ...] | None = None,
    ) -> list[ArmHit] | None:
        """Best first from the side index, or None: too small to need one, no cache folder, not in step.
        ``state``: the collection's (change stamp, chunk count) when already read."""
        found = self._side_index(conn, collection_id, state)
        if found is None:
            return None
        index, generation = found
        hits = index.search(conn, generation, None, query_terms(query), limit)
        if hits is None:
            return None
        return [ArmHit(chunk_id, rank, score) for rank, (chunk_id, score) in enumerate(hits, start=1)]

    def sync_keyword_index(self, conn: psycopg.Connection[Any], collection_id: int) -> None:
        """The collection's keyword side index, brought in step now (after indexing)."""
        found = self._side_index(conn, collection_id)
        if found is not None:
            found[0].ensure(conn, found[1])

    def close_keyword_indexes(self) -> None:
        with self._keyword_lock:
            indexes, self._keyword_indexes = list(self._keyword_indexes.values()), {}
        for index in indexes:
            index.close()

    def _forget_keyword_index(self, collection_id: int) -> None:
        """A deleted collection's side index goes with it (files too)."""
        if self._cache_dir is None:
            return
        with self._keyword_lock:
            index = self._keyword_indexes.pop(collection_id, None)
        if index is not None:
            index.close()
        with self._conn() as conn:
            remove_files(*side_files(str(self._folder(conn) / f"collection-{collection_id}")))

    def _folder(self, conn: psycopg.Connection[Any]) -> Path:
        assert self._cache_dir is not None
        return self._cache_dir / "keyword" / self._database_key(conn)

    def _side_index(
        self, conn: psycopg.Connection[Any], collection_id: int, state: tuple[Any, ...] | None = None
    ) -> tuple[KeywordIndex, str] | None:
        if self._cache_dir is None:
            return None
        row = (
            state
            or conn.execute(
                """SELECT c.last_change_at, COALESCE(s.chunk_count, 0) FROM collections c
               LEFT JOIN collection_stats s ON s.collection_id = c.id WHERE c.id = %s""",
                (collection_id,),
            ).fetchone()
        )
        if row is None or int(row[1]) < KEYWORD_INDEX_MIN_ROWS:
            return None
        with self._keyword_lock:
            index = self._keyword_indexes.get(collection_id)
            if index is None:
                folder = self._folder(conn)
                folder.mkdir(parents=True, exist_ok=True)
                source = PostgresKeywordSource(
                    lambda: psycopg.connect(self._url, autocommit=True), collection_id
                )
                index = self._keyword_indexes[collection_id] = KeywordIndex(
                    str(folder / f"collection-{collection_id}"), source
                )
        return index, str(row[0]) if row[0] is not None else ""

    def _database_key(self, conn: psycopg.Connection[Any]) -> str:
        """Names this database on this server (host, port, name, its oid — new when it is recreated —
        and the schema), never the credentials."""
        if self._cache_key is None:
            oid, schema = conn.execute(
                "SELECT oid, current_schema() FROM pg_database WHERE datname = current_database()"
            ).fetchone() or (0, "")
            info = conn.info
            self._cache_key = sha256_text(f"{info.host}:{info.port}/{info.dbname}/{oid}/{schema}")[:20]
        return self._cache_key
