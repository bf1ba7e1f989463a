"""PostgresStore: the Store contract on PostgreSQL + pgvector (see ``retrievo.store.base``)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from retrievo.config import DEFAULT_CACHE_DIR
from retrievo.errors import (
    CollectionNotFound,
    IndexLockedError,
    IndexMissingError,
    StoreUnavailableError,
)
from retrievo.models import (
    ChunkDraft,
    Filters,
    LoadedDocument,
)
from retrievo.secrets import redact, redact_all
from retrievo.store import code_index, ids, queries
from retrievo.store.base import CollectionInfo, DocumentState, NewRevision, read_after
from retrievo.store.code_index import CodeIndex
from retrievo.store.postgres import history, postings, transfer, vector_index
from retrievo.store.postgres.embeddings import PostgresEmbeddings
from retrievo.store.postgres.filters import passing_chunk_ids
from retrievo.store.postgres.keys import PostgresKeys
from retrievo.store.postgres.migrations import apply_migrations
from retrievo.store.postgres.reads import PostgresReads
from retrievo.store.postgres.replicas import Replicas
from retrievo.store.postgres.rows import configure
from retrievo.store.postgres.searching import PostgresSearch
from retrievo.store.postgres.shared_embedding import SharedEmbedding
from retrievo.store.postgres.vector_source import VECTORS_CHANGED_FOR_NAME
from retrievo.store.queries import format_style
from retrievo.store.tokenizer import keyword_source, shared_tokenizer
from retrievo.store.transfer import Record
from retrievo.text.hashing import embedding_key

DEFAULT_EF_SEARCH = 100


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class PostgresStore(
    PostgresSearch, history.PointInTime, PostgresKeys, PostgresEmbeddings, SharedEmbedding, PostgresReads
):
    def __init__(
        self,
        url: str,
        create: bool = False,
        ef_search: int = DEFAULT_EF_SEARCH,
        max_size: int = 8,
        cache_dir: Path | None = DEFAULT_CACHE_DIR,
        read_urls: Sequence[str] = (),
        max_replica_lag_s: float = 10.0,
    ) -> None:
        self.path = redact(url)
        self.ef_search = ef_search
        self._url, self._cache_dir, self._cache_key = url, cache_dir, None  # (the URL is never shown)
        self._keyword_indexes, self._keyword_lock = {}, threading.Lock()
        self._ann, self._ann_lock = None, threading.Lock()
        self._kinds: tuple[float, dict[str, frozenset[str]]] | None = None
        self._bulk_loading: set[str] = set()
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                tables = {
                    r[0]
                    for r in conn.execute(
                        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                    )
                }
                if "migrations" not in tables and not create:
                    raise IndexMissingError(
                        f"no retrievo index in {self.path}; run `retrievo index PATH --store {self.path}` first"
                    )
                apply_migrations(conn)
                self._database_key(conn)  # named by the primary: replicas read the same side indexes
        except psycopg.Error as exc:
            # Not only OperationalError: a malformed URL is a ProgrammingError whose text quotes it.
            detail = redact_all((str(exc).strip().splitlines() or [type(exc).__name__])[0], url)
            raise StoreUnavailableError(
                f"cannot connect to PostgreSQL at {self.path} ({detail}); "
                "check the URL and that the server is running"
            ) from None
        self._pool = ConnectionPool(
            url, min_size=1, max_size=max_size, kwargs={"autocommit": True}, configure=configure, open=True
        )
        # Streaming replicas: a search's reads go to one of them (store/postgres/replicas.py).
        self.replicas = (
            Replicas(read_urls, max_replica_lag_s, self.position, configure) if read_urls else None
        )
        self._routed = threading.local()

    def close(self) -> None:
        self.close_keyword_indexes()
        self._pool.close()
        if self.replicas is not None:
            self.replicas.close()

    def position(self) -> str:
        """The primary's WAL position now: pass it back (``read_after``) to read this write's effects."""
        with self._pool.connection() as conn:
            return str(conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])  # type: ignore[index]

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        pool = getattr(self._routed, "pool", None) or self._pool  # a replica inside reading()
        with pool.connection() as conn:
            yield conn

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with self._pool.connection() as conn, conn.transaction():
            yield conn

    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        with self._conn() as conn:
            return conn.execute(sql.encode(), params).fetchall()

    # Collections --------------------------------------------------------------------------------

    def _collection_id(self, name: str) -> int:
        rows = self._rows("SELECT id FROM collections WHERE name = %s", (name,))
        if not rows:
            raise CollectionNotFound(
                f"collection {name!r} does not exist; run `retrievo index PATH --collection {name}` first"
            )
        return int(rows[0][0])

    def reading(self) -> AbstractContextManager[None]:
        """Each lookup is its own query here; with replicas, this thread's reads inside go to one of them
        (see ``Store.reading`` and store/postgres/replicas.py)."""
        if self.replicas is None or getattr(self._routed, "pool", None) is not None:
            return nullcontext()
        return self._on_replica()

    @contextmanager
    def _on_replica(self) -> Iterator[None]:
        assert self.replicas is not None
        self._routed.pool = self.replicas.choose(read_after.get())
        try:
            yield
        finally:
            self._routed.pool = None

    def get_collection(self, name: str) -> CollectionInfo | None:
        rows = self._rows(format_style(queries.COLLECTION_INFO), (name,))
        return CollectionInfo(*rows[0]) if rows else None

    def list_collections(self) -> list[str]:
        return [row[0] for row in self._rows("SELECT name FROM collections ORDER BY name")]

    def ensure_collection(self, name: str) -> CollectionInfo:
        with self._transaction() as conn:
            row = conn.execute(
                """INSERT INTO collections (name, created_at) VALUES (%s, %s)
                   ON CONFLICT (name) DO NOTHING RETURNING id""",
                (name, now_iso()),
            ).fetchone()
            if row:
                conn.execute("INSERT INTO collection_stats (collection_id) VALUES (%s)", (row[0],))
        info = self.get_collection(name)
        assert info is not None
        return info

    def set_collection_model(self, name: str, model_id: str, dimensions: int) -> None:
        with self._transaction() as conn:
            conn.execute(
                "UPDATE collections SET model_id = %s, dimensions = %s WHERE name = %s",
                (model_id, dimensions, name),
            )
            # Vectors first, then the HNSW index: one pass over a filled table is far faster than
            # inserting into the graph row by row (this is what makes `migrate` fast).
            conn.execute(
                """UPDATE chunks c SET vector = e.vector FROM embeddings e, collections col
                   WHERE col.name = %s AND c.collection_id = col.id AND c.vector IS NULL
                     AND e.model_id = %s AND e.embed_key = c.embed_key""",
                (name, model_id),
            )
            conn.execute(VECTORS_CHANGED_FOR_NAME, (name,))
            if name not in self._bulk_loading:
                vector_index.create(conn, int(dimensions))

    @contextmanager
    def bulk_load(self, collection: str) -> Iterator[None]:
        """A first load builds the vector index once at the end instead of row by row.

        Only an index that holds no current vector is dropped, so no other collection's search slows
        down; if the process dies mid-load the index is missing (search stays exact, just slower) and
        the next index run builds it.
        """
        info = self.get_collection(collection)
        with self._conn() as conn:
            if info is not None and info.dimensions:
                vector_index.drop_if_empty(conn, int(info.dimensions))
            was_empty = not conn.execute(
                """SELECT EXISTS (SELECT 1 FROM chunks c JOIN collections col ON col.id = c.collection_id
                                  WHERE col.name = %s AND c.superseded_at IS NULL)""",
                (collection,),
            ).fetchone()[0]  # type: ignore[index]
        self._bulk_loading.add(collection)
        try:
            yield
        finally:
            self._bulk_loading.discard(collection)
            info = self.get_collection(collection)
            if info is not None and info.dimensions:
                with self._transaction() as conn:
                    vector_index.create(conn, int(info.dimensions))
            if was_empty:
                with self._conn() as conn:
                    # After a first load: statistics for the planner and a visibility map, so that
                    # postings are read by index-only scans now rather than after autovacuum's turn.
                    conn.execute("VACUUM (ANALYZE) postings, chunks, term_stats")

    def mark_indexed(self, collection: str) -> None:
        with self._transaction() as conn:
            conn.execute(
                "UPDATE collections SET last_indexed_at = %s WHERE name = %s", (now_iso(), collection)
            )

    @contextmanager
    def writer_lock(self, collection: str) -> Iterator[None]:
        """One indexer per collection: a session advisory lock, released with the connection."""
        with self._pool.connection() as conn:
            key = f"retrievo:writer:{collection}"
            if not conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()[0]:  # type: ignore[index]
                raise IndexLockedError(
                    f"another indexer is writing collection {collection!r} in {self.path}; "
                    "wait for it to finish, then run the command again"
                )
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))

    # Documents and revisions --------------------------------------------------------------------

    def document_state(self, collection: str, source: str) -> DocumentState | None:
        rows = self._rows(format_style(queries.DOCUMENT_STATE), (collection, source))
        return _state(rows[0]) if rows else None

    def document_states(self, collection: str, sources: Sequence[str]) -> dict[str, DocumentState]:
        rows = self._rows(format_style(queries.DOCUMENT_STATES + "= ANY(?)"), (collection, list(sources)))
        return {row[4]: _state(row) for row in rows}

    def write_revisions(self, collection: str, revisions: Sequence[NewRevision]) -> list[DocumentState]:
        """A write group's revisions in one transaction — all written or, on an error, none (a commit per
        document held a first load on PostgreSQL to ~45 files a second)."""
        self._kinds = None  # what collections hold may change
        collection_id = self._collection_id(collection)
        written: list[Counter[str]] = []  # every chunk's term counts: the statistics, added once at the end
        with self._transaction() as conn:
            states = [
                self._write_revision(
                    conn,
                    collection,
                    collection_id,
                    r.document,
                    r.source_hash,
                    r.drafts,
                    r.modified_at,
                    written,
                )
                for r in revisions
            ]
            postings.add_statistics(conn, collection_id, written)
        return states

    def write_revision(
        self,
        collection: str,
        document: LoadedDocument,
        source_hash: str,
        drafts: Sequence[ChunkDraft],
        modified_at: str | None,
    ) -> DocumentState:
        self._kinds = None  # what collections hold may change
        collection_id = self._collection_id(collection)
        written: list[Counter[str]] = []
        with self._transaction() as conn:
            state = self._write_revision(
                conn, collection, collection_id, document, source_hash, drafts, modified_at, written
            )
            postings.add_statistics(conn, collection_id, written)
        return state

    def _write_revision(
        self,
        conn: psycopg.Connection[Any],
        collection: str,
        collection_id: int,
        document: LoadedDocument,
        source_hash: str,
        drafts: Sequence[ChunkDraft],
        modified_at: str | None,
        written: list[Counter[str]],
    ) -> DocumentState:
        """One revision inside the caller's transaction; its chunks' term counts join ``written``, whose
        statistics the caller adds once (a row of ``term_stats`` updated once a group, not once a document:
        repeated updates of the same rows in one transaction each walked a longer chain of versions)."""
        counts = shared_tokenizer().term_counts([keyword_source(d.context, d.text) for d in drafts])
        found = conn.execute(format_style(queries.DOCUMENT_ID_OF_SOURCE), (collection_id, document.source))
        row = found.fetchone()
        taken = _id_taken(conn)
        document_id = row[0] if row else ids.new_document_id(collection, document.source, taken)
        stamp = history.tick(conn, collection_id)
        if row:  # a document new to the store has nothing to supersede
            self._supersede(conn, collection_id, document_id, stamp)
        conn.execute(
            """INSERT INTO documents (id, collection_id, source, kind, title, media_type, metadata,
                   modified_at, created_at)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, title = excluded.title,
                   media_type = excluded.media_type, metadata = excluded.metadata,
                   modified_at = excluded.modified_at, deleted_at = NULL""",
            (document_id, collection_id, document.source, str(document.kind), document.title,
             document.media_type, json.dumps(document.metadata), modified_at, stamp),
        )  # fmt: skip
        number = conn.execute(
            "SELECT COALESCE(MAX(number), 0) + 1 FROM revisions WHERE document_id = %s", (document_id,)
        ).fetchone()[0]  # type: ignore[index]
        revision_id = ids.revision_id(document_id, number, source_hash)
        conn.execute(
            """INSERT INTO revisions (id, document_id, number, source_hash, text, created_at)
               VALUES (%s, %s, %s, %s, %s, %s)""",
            (revision_id, document_id, number, source_hash, document.text, stamp),
        )
        conn.execute(
            "UPDATE documents SET current_revision_id = %s WHERE id = %s", (revision_id, document_id)
        )
        with conn.cursor() as cursor:
            cursor.executemany(
                """INSERT INTO chunks (collection_id, document_id, revision_id, ordinal, text, context,
                       start_offset, end_offset, line_start, line_end, chunk_hash, source_hash, chunker,
                       chunker_version, embed_key, metadata, created_at, token_count)
                   VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)""",
                [(collection_id, document_id, revision_id, ordinal, d.text, d.context, d.start, d.end,
                  d.line_start, d.line_end, d.chunk_hash, source_hash, d.chunker, d.chunker_version,
                  embedding_key(d.context, d.text), json.dumps(d.metadata), stamp, sum(c.values()))
                 for ordinal, (d, c) in enumerate(zip(drafts, counts, strict=True))],
            )  # fmt: skip
        with conn.cursor() as cursor:
            code_index.write_structure(
                lambda sql, rows: cursor.executemany(format_style(sql).encode(), rows),
                collection_id, document_id, document.structure,
            )  # fmt: skip
        chunk_ids = [row[0] for row in conn.execute(
            "SELECT id FROM chunks WHERE document_id = %s AND revision_id = %s ORDER BY ordinal",
            (document_id, revision_id),
        )]  # fmt: skip
        postings.write_postings(conn, collection_id, zip(chunk_ids, counts, strict=True))
        written.extend(counts)  # the document's current chunks are now exactly this revision's
        conn.execute(
            """UPDATE chunks c SET vector = e.vector FROM embeddings e, collections col
               WHERE c.document_id = %s AND c.revision_id = %s AND col.id = c.collection_id
                 AND e.model_id = col.model_id AND e.embed_key = c.embed_key""",
            (document_id, revision_id),
        )
        return DocumentState(document_id, source_hash, revision_id)

    def _supersede(
        self, conn: psycopg.Connection[Any], collection_id: int, document_id: str, stamp: str
    ) -> None:
        postings.adjust_statistics(conn, collection_id, "document_id = %s", document_id, -1)
        history.retire_postings(conn, document_id)
        for statement in code_index.DELETE:
            conn.execute(format_style(statement).encode(), (document_id,))
        conn.execute(
            "UPDATE chunks SET superseded_at = %s WHERE document_id = %s AND superseded_at IS NULL",
            (stamp, document_id),
        )
        conn.execute(
            "UPDATE revisions SET superseded_at = %s WHERE document_id = %s AND superseded_at IS NULL",
            (stamp, document_id),
        )

    def sources_under(self, collection: str, prefix: str) -> list[str]:
        folder = prefix.rstrip("/") + "/"
        rows = self._rows(
            """SELECT d.source FROM documents d JOIN collections col ON col.id = d.collection_id
               WHERE col.name = %s AND d.deleted_at IS NULL
                 AND (d.source = %s OR left(d.source, %s) = %s OR left(d.source, %s) = %s)""",
            (collection, prefix, len(folder), folder, len(prefix) + 1, prefix + "#"),
        )
        return [row[0] for row in rows]

    def sources_containing(self, collection: str, words: Sequence[str], limit: int) -> list[tuple[str, str]]:
        if not words:
            return []
        rows = self._rows(
            f"""SELECT d.source, d.id FROM documents d JOIN collections col ON col.id = d.collection_id
               WHERE col.name = %s AND d.deleted_at IS NULL AND strpos(d.source, '#') = 0
                 AND ({" OR ".join("strpos(lower(d.source), %s) > 0" for _ in words)})
               ORDER BY d.source LIMIT %s""",
            (collection, *(w.lower() for w in words), limit),
        )
        return [(str(row[0]), str(row[1])) for row in rows]

    def add_root(self, collection: str, path: str) -> None:
        collection_id = self._collection_id(collection)
        with self._transaction() as conn:
            conn.execute(
                """INSERT INTO roots (collection_id, path, added_at) VALUES (%s, %s, %s)
                   ON CONFLICT DO NOTHING""",
                (collection_id, path, now_iso()),
            )

    def code_index(self) -> CodeIndex:
        return CodeIndex(lambda sql, params: self._rows(format_style(sql), params))

    def filter_chunk_ids(self, collection: str, chunk_ids: Sequence[int], filters: Filters) -> set[int]:
        if filters.as_of is not None and chunk_ids:
            return history.filter_chunk_ids_at(self._rows, collection, chunk_ids, filters)
        return passing_chunk_ids(self._rows, collection, chunk_ids, filters)

    def resolve_code_edges(self, resolutions: Sequence[tuple[int, str]]) -> None:
        with self._transaction() as conn, conn.cursor() as cursor:
            cursor.executemany(
                format_style(code_index.RESOLVE_EDGE).encode(),
                [(name, edge_id) for edge_id, name in resolutions],
            )

    def remove_sources(self, collection: str, sources: Sequence[str]) -> int:
        self._kinds = None  # what collections hold may change
        collection_id = self._collection_id(collection)
        removed = 0
        with self._transaction() as conn:
            stamp = history.tick(conn, collection_id)
            for source in sources:
                row = conn.execute(
                    "SELECT id FROM documents WHERE collection_id = %s AND source = %s AND deleted_at IS NULL",
                    (collection_id, source),
                ).fetchone()
                if row:
                    self._supersede(conn, collection_id, row[0], stamp)
                    conn.execute("UPDATE documents SET deleted_at = %s WHERE id = %s", (stamp, row[0]))
                    removed += 1
        return removed

    # Moving between stores --------------------------------------------------------------------

    def dump(self, collection: str) -> Iterator[Record]:
        with self._conn() as conn:
            yield from transfer.dump(conn, collection)

    def restore(self, records: Iterable[Record]) -> None:
        self._kinds = None  # what collections hold may change
        with self._conn() as conn:
            model = transfer.restore(conn, records)
        if model is not None:
            self.set_collection_model(*model)


def _id_taken(conn: psycopg.Connection[Any]) -> Callable[[str], bool]:
    """Whether a document id is held (by any collection's document)."""
    return lambda key: conn.execute(format_style(queries.DOCUMENT_ID_TAKEN), (key,)).fetchone() is not None


def _state(row: Sequence[Any]) -> DocumentState:
    """A ``DOCUMENT_STATE(S)`` row as a DocumentState (the file's own hash from the metadata)."""
    return DocumentState(row[0], row[1], row[2], (row[3] or {}).get("file_sha256"))
