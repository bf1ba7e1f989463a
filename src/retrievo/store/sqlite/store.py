"""SQLiteStore: the embedded default Store (see ``retrievo.store.base`` for the contract)."""

from __future__ import annotations

import fcntl
import json
import sqlite3
import threading
from collections.abc import Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt

from retrievo.errors import CollectionNotFound, ConfigError, IndexCorruptError, IndexLockedError
from retrievo.models import (
    Chunk,
    ChunkDraft,
    CollectionStatus,
    DocumentSummary,
    Filters,
    IndexStatus,
    Kind,
    LoadedDocument,
    RevisionText,
)
from retrievo.store import code_index, ids, queries
from retrievo.store.ann import AnnIndexes
from retrievo.store.base import CollectionInfo, DocumentState, NewRevision
from retrievo.store.code_index import CodeIndex
from retrievo.store.keyword_index import KeywordIndex
from retrievo.store.sqlite import documents, history, transfer
from retrievo.store.sqlite import revisions as revisions_module
from retrievo.store.sqlite.ann_source import SQLiteVectorSource
from retrievo.store.sqlite.connection import Readers, connect
from retrievo.store.sqlite.embeddings import SQLiteEmbeddings
from retrievo.store.sqlite.filters import filter_sql
from retrievo.store.sqlite.keys import SQLiteKeys
from retrievo.store.sqlite.keyword_tokens import SQLiteKeywordSource
from retrievo.store.sqlite.searching import SQLiteSearch
from retrievo.store.sqlite.vectors import VectorCache, VectorMatrix
from retrievo.store.sqlite.writing import SQLiteWrites
from retrievo.store.transfer import Record


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class SQLiteStore(SQLiteWrites, history.PointInTime, SQLiteKeys, SQLiteEmbeddings, SQLiteSearch):
    """One file, WAL; writes serialised by a lock (batched inside ``bulk_load``, see ``writing``)."""

    unserved_search_max: int | None = None  # another model's vectors: the side index or the table, any size

    def __init__(self, path: Path, create: bool = False) -> None:
        self.path = str(path)
        self._db = connect(path, create)
        self._lock = threading.RLock()
        self._vectors = VectorCache()
        self._ann = AnnIndexes(f"{self.path}.ann-", SQLiteVectorSource(self.path))
        self._readers = Readers(self.path)
        self._writing = threading.local()  # set while this thread holds a write transaction
        self._bulk = threading.local()  # this thread's bulk_load depth and open batch
        self._keywords = KeywordIndex(self.path, SQLiteKeywordSource(self.path))
        self._counts: dict[tuple[int, str], tuple[int, int]] = {}
        self._indexed_rows: tuple[int, int] | None = None
        self._history_vectors: dict[tuple[int, str, str, int], VectorMatrix] = {}
        self._point_indexes: dict[tuple[str, int], history.PointIndex] = {}
        # ``reading``: this thread's generation while it holds; the collections' small lookups per generation
        self._pinned = threading.local()
        self._catalog: tuple[int, dict[Hashable, list[sqlite3.Row]]] = (-1, {})
        self._coverage: dict[str, tuple[int, int, int]] = {}  # collection -> (generation, chunks, embedded)

    def close(self) -> None:
        self._keywords.close()
        with self._lock:
            self._readers.close()
            self._db.close()

    def _reader(self) -> sqlite3.Connection:
        """This thread's read connection; the writer's own inside a write transaction (to see it)."""
        return self._db if getattr(self._writing, "active", False) else self._readers.get()

    def _read(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        """Rows on this thread's read connection, without the writer's lock (see ``_reader``)."""
        try:
            cursor = self._reader().execute(sql, params)
            cursor.row_factory = sqlite3.Row
            return cursor.fetchall()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            raise IndexCorruptError(f"index file {self.path} cannot be read ({exc})") from exc

    def _db_conn(self) -> sqlite3.Connection:
        return self._db

    def generation(self) -> int:
        pinned: int | None = getattr(self._pinned, "generation", None)
        if pinned is not None and not getattr(self._writing, "active", False):
            return pinned
        return int(self._read("SELECT value FROM meta WHERE key = 'generation'")[0][0])

    @contextmanager
    def reading(self) -> Iterator[None]:
        """This thread's reads inside share one look at the generation (every commit bumps it), so the
        collections' lookups come from memory: a search's dozen small statements become one, each
        of which let the GIL go and waited to get it back under load (measured 2026-11-24, 2 cores)."""
        if getattr(self._pinned, "generation", None) is not None:
            yield  # already inside: the outer one holds
            return
        self._pinned.generation = self.generation()
        try:
            yield
        finally:
            self._unpin()

    def _unpin(self) -> None:
        """After this thread commits, its reads look at the generation again."""
        self._pinned.generation = None

    def _cataloged(self, key: Hashable, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        """The rows of a small lookup on the collections table, remembered for the current generation;
        read afresh inside a write transaction (which sees its own uncommitted rows)."""
        if getattr(self._writing, "active", False):
            return self._read(sql, params)
        generation = self.generation()
        catalog = self._catalog
        if catalog[0] != generation:
            catalog = self._catalog = (generation, {})
        rows = catalog[1].get(key)
        if rows is None:
            rows = catalog[1][key] = self._read(sql, params)
        return rows

    # Collections --------------------------------------------------------------------------------

    def _collection_id(self, name: str) -> int:
        rows = self._cataloged(("id", name), "SELECT id FROM collections WHERE name = ?", (name,))
        if not rows:
            raise CollectionNotFound(
                f"collection {name!r} does not exist; run `retrievo index PATH --collection {name}` first"
            )
        return int(rows[0][0])

    def get_collection(self, name: str) -> CollectionInfo | None:
        rows = self._cataloged(("info", name), queries.COLLECTION_INFO, (name,))
        return CollectionInfo(*rows[0]) if rows else None

    def list_collections(self) -> list[str]:
        return [row[0] for row in self._cataloged("names", "SELECT name FROM collections ORDER BY name")]

    def ensure_collection(self, name: str) -> CollectionInfo:
        info = self.get_collection(name)
        if info is None:
            with self._transaction() as db:
                db.execute("INSERT INTO collections (name, created_at) VALUES (?, ?)", (name, now_iso()))
            info = CollectionInfo(name, None, None)
        return info

    def delete_collection(self, name: str) -> int:
        collection_id = self._collection_id(name)
        with self._transaction() as db:
            documents = db.execute("SELECT count(*) FROM documents WHERE collection_id = ?", (collection_id,))
            count = int(documents.fetchone()[0])
            for table, state in (("chunks_fts", "IS NULL"), ("chunks_history_fts", "IS NOT NULL")):
                db.execute(
                    f"""INSERT INTO {table} ({table}, rowid, context, text, keywords)
                        SELECT 'delete', id, context, text, keywords FROM chunks
                        WHERE collection_id = ? AND superseded_at {state}""",
                    (collection_id,),
                )
            for statement in queries.DELETE_COLLECTION:
                db.execute(statement, (collection_id,))
            db.execute(queries.DELETE_ORPHAN_EMBEDDINGS)
        for path in Path(self.path).parent.glob(f"{Path(self.path).name}.ann-{collection_id}-*"):
            path.unlink(missing_ok=True)  # its vector index beside the file
        return count

    def rename_collection(self, name: str, new_name: str) -> None:
        collection_id = self._collection_id(name)
        try:
            with self._transaction() as db:
                db.execute("UPDATE collections SET name = ? WHERE id = ?", (new_name, collection_id))
        except sqlite3.IntegrityError as exc:
            raise ConfigError(f"a collection named {new_name!r} already exists; choose another name") from exc

    def set_collection_model(self, name: str, model_id: str, dimensions: int) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE collections SET model_id = ?, dimensions = ? WHERE name = ?",
                (model_id, dimensions, name),
            )

    @contextmanager
    def writer_lock(self, collection: str) -> Iterator[None]:
        """One indexer per collection across processes: an exclusive flock on a file beside the index."""
        lock_path = Path(f"{self.path}.{ids.document_id(collection, 'writer-lock')[4:]}.lock")
        with lock_path.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise IndexLockedError(
                    f"another indexer is writing collection {collection!r} in {self.path}; "
                    "wait for it to finish, then run the command again"
                ) from exc
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def mark_indexed(self, collection: str) -> None:
        with self._transaction() as db:
            db.execute("UPDATE collections SET last_indexed_at = ? WHERE name = ?", (now_iso(), collection))

    # Documents and revisions --------------------------------------------------------------------

    def document_state(self, collection: str, source: str) -> DocumentState | None:
        rows = self._read(queries.DOCUMENT_STATE, (collection, source))
        return _state(rows[0]) if rows else None

    def document_states(self, collection: str, sources: Sequence[str]) -> dict[str, DocumentState]:
        rows = self._read(
            queries.DOCUMENT_STATES + "IN (SELECT value FROM json_each(?))",
            (collection, json.dumps(list(sources))),
        )
        return {row[4]: _state(row) for row in rows}

    def write_revision(
        self,
        collection: str,
        document: LoadedDocument,
        source_hash: str,
        drafts: Sequence[ChunkDraft],
        modified_at: str | None,
    ) -> DocumentState:
        return self.write_revisions(collection, [NewRevision(document, source_hash, drafts, modified_at)])[0]

    def write_revisions(self, collection: str, revisions: Sequence[NewRevision]) -> list[DocumentState]:
        collection_id = self._collection_id(collection)
        with self._transaction(batch=True) as db:
            return revisions_module.write(db, collection_id, collection, revisions)

    def position(self) -> None:
        """One file, one writer: every read sees every committed write."""
        return None

    def sources_under(self, collection: str, prefix: str) -> list[str]:
        rows = self._read(
            """SELECT d.source FROM documents d JOIN collections col ON col.id = d.collection_id
               WHERE col.name = ? AND d.deleted_at IS NULL
                 AND (d.source = ? OR substr(d.source, 1, ?) = ? OR substr(d.source, 1, ?) = ?)""",
            (
                collection,
                prefix,
                len(prefix.rstrip("/")) + 1,
                prefix.rstrip("/") + "/",
                len(prefix) + 1,
                prefix + "#",
            ),
        )
        return [row[0] for row in rows]

    def sources_containing(self, collection: str, words: Sequence[str], limit: int) -> list[tuple[str, str]]:
        if not words:
            return []
        rows = self._read(
            f"""SELECT d.source, d.id FROM documents d JOIN collections col ON col.id = d.collection_id
               WHERE col.name = ? AND d.deleted_at IS NULL AND instr(d.source, '#') = 0
                 AND ({" OR ".join("instr(lower(d.source), ?) > 0" for _ in words)})
               ORDER BY d.source LIMIT ?""",
            (collection, *(w.lower() for w in words), limit),
        )
        return [(row[0], row[1]) for row in rows]

    def add_root(self, collection: str, path: str) -> None:
        collection_id = self._collection_id(collection)
        with self._transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO roots (collection_id, path, added_at) VALUES (?, ?, ?)",
                (collection_id, path, now_iso()),
            )

    def code_index(self) -> CodeIndex:
        return CodeIndex(self._read)

    def filter_chunk_ids(self, collection: str, chunk_ids: Sequence[int], filters: Filters) -> set[int]:
        if not chunk_ids:
            return set()
        if filters.as_of is not None:
            with self._lock:
                return history.filter_chunk_ids_at(self._db, collection, chunk_ids, filters)
        where, params = filter_sql(filters)
        rows = self._read(
            f"""SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id
                JOIN collections col ON col.id = c.collection_id
                WHERE col.name = ? AND c.superseded_at IS NULL AND c.id IN ({",".join("?" * len(chunk_ids))}){where}""",
            [collection, *chunk_ids, *params],
        )
        return {int(row[0]) for row in rows}

    def resolve_code_edges(self, resolutions: Sequence[tuple[int, str]]) -> None:
        with self._transaction() as db:
            db.executemany(code_index.RESOLVE_EDGE, [(name, edge_id) for edge_id, name in resolutions])

    def list_records(self, collection: str) -> list[tuple[str, str, str, dict[str, object]]]:
        return [
            (r[0], r[1], r[2], json.loads(r[3] or "{}")) for r in self._read(queries.RECORDS, (collection,))
        ]

    def roots(self, collection: str) -> list[str]:
        rows = self._read(queries.ROOTS, (collection,))
        return [row[0] for row in rows]

    def remove_sources(self, collection: str, sources: Sequence[str]) -> int:
        collection_id = self._collection_id(collection)
        removed = 0
        with self._transaction() as db:
            stamp = history.tick(db, collection_id)
            for source in sources:
                row = db.execute(
                    "SELECT id FROM documents WHERE collection_id = ? AND source = ? AND deleted_at IS NULL",
                    (collection_id, source),
                ).fetchone()
                if row:
                    revisions_module.supersede(db, row[0], stamp)
                    db.execute("UPDATE documents SET deleted_at = ? WHERE id = ?", (stamp, row[0]))
                    removed += 1
        return removed

    # Search: the arms are in SQLiteSearch (searching.py) ----------------------------------------

    def get_chunks(self, chunk_ids: Sequence[int]) -> dict[int, Chunk]:
        if not chunk_ids:
            return {}
        rows = self._read(
            f"""SELECT c.*, d.source, d.title, d.kind, col.name AS collection, {queries.DRIFTED} FROM chunks c
                JOIN documents d ON d.id = c.document_id JOIN collections col ON col.id = c.collection_id
                JOIN revisions r ON r.id = c.revision_id
                WHERE c.id IN ({",".join("?" * len(chunk_ids))})""",
            list(chunk_ids),
        )
        return {row["id"]: _chunk_from_row(row) for row in rows}

    # Documents --------------------------------------------------------------------------------

    def revision_text(self, document_id: str, revision_id: str | None = None) -> RevisionText:
        with self._lock:
            return documents.revision_text(self._db, document_id, revision_id)

    def chunk_ids_of_revision(self, revision_id: str, chunker: str | None = None) -> list[int]:
        with self._lock:
            return documents.chunk_ids_of_revision(self._db, revision_id, chunker)

    def current_chunk_ids(self, document_id: str) -> list[int]:
        with self._lock:
            return documents.current_chunk_ids_of_document(self._db, document_id)

    def chunk_vectors(
        self, chunk_ids: Sequence[int], model_id: str, dimensions: int
    ) -> dict[int, npt.NDArray[np.float32]]:
        with self._lock:
            return documents.chunk_vectors(self._db, chunk_ids, model_id, dimensions)

    def chunks_with_vector(self, chunk_ids: Sequence[int], model_id: str) -> frozenset[int]:
        if not chunk_ids:
            return frozenset()
        rows = self._read(
            """SELECT c.id FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
               WHERE c.id IN (SELECT value FROM json_each(?))""",
            (model_id, json.dumps([int(i) for i in chunk_ids])),
        )
        return frozenset(int(row[0]) for row in rows)

    def list_documents(
        self, collection: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[DocumentSummary]:
        with self._lock:
            return documents.list_documents(self._db, collection, limit, offset)

    # Moving between stores --------------------------------------------------------------------

    def dump(self, collection: str) -> Iterator[Record]:
        with self._lock:
            records = list(transfer.dump(self._db, collection))
        yield from records

    def restore(self, records: Iterable[Record]) -> None:
        with self._lock:
            transfer.restore(self._db, records)

    # Status -------------------------------------------------------------------------------------

    def coverage(self, collection: str) -> tuple[int, int]:
        generation = self.generation()
        cached = self._coverage.get(collection)
        if cached is None or cached[0] != generation:  # counted again only after a write
            rows = self._read(queries.COVERAGE, (collection,))
            cached = (generation, int(rows[0][0]), int(rows[0][1])) if rows else (generation, 0, 0)
            self._coverage[collection] = cached
        return cached[1], cached[2]

    def revision_times(self, revision_ids: Sequence[str]) -> dict[str, str]:
        if not revision_ids:
            return {}
        rows = self._read(
            queries.REVISION_TIMES + "IN (SELECT value FROM json_each(?))", (json.dumps(list(revision_ids)),)
        )
        return {row[0]: row[1] for row in rows}

    def content_kinds(self, fresh: bool = False) -> dict[str, frozenset[str]]:
        return queries.content_kinds(self._cataloged("kinds", queries.CONTENT_KINDS))

    def status(self) -> IndexStatus:
        rows = self._read(queries.STATUS)
        collections = tuple(
            CollectionStatus(
                name=row[0],
                model_id=row[1],
                dimensions=row[2],
                last_indexed=row[3],
                documents=row[4],
                chunks=row[5],
                embedded=row[6],
                missing=row[5] - row[6],
            )
            for row in rows
        )
        path = Path(self.path)
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())
        return IndexStatus(db=self.path, size_bytes=size, collections=collections)


def _state(row: sqlite3.Row) -> DocumentState:
    """A ``DOCUMENT_STATE(S)`` row as a DocumentState (the file's own hash from the metadata)."""
    return DocumentState(row[0], row[1], row[2], json.loads(row[3] or "{}").get("file_sha256"))


def _chunk_from_row(row: sqlite3.Row) -> Chunk:
    return Chunk(
        chunk_id=row["id"],
        document_id=row["document_id"],
        revision_id=row["revision_id"],
        collection=row["collection"],
        ordinal=row["ordinal"],
        text=row["text"],
        context=row["context"],
        start=row["start_offset"],
        end=row["end_offset"],
        line_start=row["line_start"],
        line_end=row["line_end"],
        chunk_hash=row["chunk_hash"],
        source_hash=row["source_hash"],
        chunker=row["chunker"],
        chunker_version=row["chunker_version"],
        metadata=json.loads(row["metadata"]),
        path=row["source"],
        title=row["title"],
        kind=Kind(row["kind"]),
        drifted=_drifted(row),
        embed_key=(row["embed_key"] or "") if "embed_key" in row.keys() else "",  # noqa: SIM118 - a Row's `in` looks at values
    )


def _drifted(row: sqlite3.Row) -> bool:
    """The row's ``drifted`` column, where its query reads one (``get_chunks``)."""
    try:
        return bool(row["drifted"])
    except IndexError:
        return False
