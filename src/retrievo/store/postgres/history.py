"""The PostgreSQL store at a point in time (see ``retrievo.store.history`` for validity and stamps).

Keyword: postings of current chunks stay in ``postings``; when a revision is superseded its postings
move to ``history_postings``. At T, BM25 reads both, restricted to the chunks valid at T, with N,
average length and document frequencies of the collection as it was at T — the same formula and
statistics scope as at HEAD, so a search at T ranks as a fresh index of T would.
Dense: exact cosine over the vectors valid at T (the HNSW index covers current chunks only).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import psycopg

from retrievo.errors import ConfigError
from retrievo.models import ArmHit, Baseline, Filters, PruneReport
from retrievo.store import history, queries
from retrievo.store.fts_query import PRUNE_MIN_ROWS
from retrievo.store.postgres.filters import filter_sql
from retrievo.store.postgres.postings import write_postings
from retrievo.store.postgres.search import VALID_AT, prune
from retrievo.store.queries import format_style
from retrievo.store.tokenizer import keyword_source, shared_tokenizer

K1, B = 1.2, 0.75

SCHEMA = (
    history.HISTORY_SCHEMA
    + """
CREATE TABLE history_postings (
    collection_id INTEGER NOT NULL,
    term TEXT NOT NULL,
    chunk_id BIGINT NOT NULL,
    tf INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    PRIMARY KEY (collection_id, term, chunk_id) INCLUDE (tf, token_count)
);
CREATE INDEX history_postings_by_chunk ON history_postings (chunk_id);
"""
)

_STATS_AT = f"""SELECT count(*), COALESCE(sum(c.token_count), 0) FROM chunks c
                WHERE c.collection_id = %s AND {VALID_AT}"""
# Postings of the query's stems among the chunks valid at T (current ones made by T, superseded ones then).
_POSTINGS_AT = f"""
    SELECT p.term, p.chunk_id, p.tf, p.token_count FROM postings p JOIN chunks c ON c.id = p.chunk_id
    WHERE p.collection_id = %s AND p.term = ANY(%s) AND c.created_at <= %s
    UNION ALL
    SELECT p.term, p.chunk_id, p.tf, p.token_count FROM history_postings p JOIN chunks c ON c.id = p.chunk_id
    WHERE p.collection_id = %s AND p.term = ANY(%s) AND {VALID_AT}"""


def backfill(conn: psycopg.Connection[Any]) -> None:
    """Postings for revisions superseded before history was searchable (their postings were dropped)."""
    rows = conn.execute(
        "SELECT id, collection_id, context, text FROM chunks WHERE superseded_at IS NOT NULL ORDER BY id"
    ).fetchall()
    for begin in range(0, len(rows), 2000):
        batch = rows[begin : begin + 2000]
        counts = shared_tokenizer().term_counts([keyword_source(r[2], r[3]) for r in batch])
        by_collection: dict[int, list[tuple[int, Any]]] = {}
        for row, count in zip(batch, counts, strict=True):
            by_collection.setdefault(int(row[1]), []).append((int(row[0]), count))
        for collection_id, items in by_collection.items():
            write_postings(conn, collection_id, items, table="history_postings")


def retire_postings(conn: psycopg.Connection[Any], document_id: str) -> None:
    """Move a document's current postings to the history table (before its chunks are superseded)."""
    current = "SELECT id FROM chunks WHERE document_id = %s AND superseded_at IS NULL"
    conn.execute(
        f"INSERT INTO history_postings SELECT * FROM postings WHERE chunk_id IN ({current})", (document_id,)
    )
    conn.execute(f"DELETE FROM postings WHERE chunk_id IN ({current})", (document_id,))


def tick(conn: psycopg.Connection[Any], collection_id: int) -> str:
    """The collection's next change stamp; the row lock serialises writers of one collection."""
    last = conn.execute(
        "SELECT last_change_at FROM collections WHERE id = %s FOR UPDATE", (collection_id,)
    ).fetchone()
    stamp = history.next_stamp(last[0] if last else None)
    conn.execute(format_style(history.SET_LAST_CHANGE), (stamp, collection_id))
    return stamp


def keyword_at(
    conn: psycopg.Connection[Any], collection_id: int, stems: list[str], filters: Filters, limit: int
) -> list[ArmHit]:
    point = filters.as_of
    rows, tokens = conn.execute(_STATS_AT, (collection_id, point, point)).fetchone()  # type: ignore[misc]
    if not rows or not stems or limit <= 0:
        return []
    if rows >= PRUNE_MIN_ROWS:
        stems = prune(conn, collection_id, stems)  # decided as at HEAD (see the SQLite store)
    found = conn.execute(
        _POSTINGS_AT, (collection_id, stems, point, collection_id, stems, point, point)
    ).fetchall()
    postings: dict[str, list[tuple[int, int, int]]] = {}
    for term, chunk_id, tf, length in found:
        postings.setdefault(term, []).append((int(chunk_id), int(tf), int(length)))
    average = float(tokens) / float(rows)
    scores: dict[int, float] = {}
    for stem in stems:
        hits = postings.get(stem, [])
        idf = max(float(np.log((rows - len(hits) + 0.5) / (len(hits) + 0.5))), 1e-6)
        for chunk_id, tf, length in hits:
            part = idf * (tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * length / average))
            scores[chunk_id] = scores.get(chunk_id, 0.0) + part
    allowed = _passing(conn, list(scores), filters)
    ranked = sorted(
        ((s, i) for i, s in scores.items() if allowed is None or i in allowed), key=lambda x: (-x[0], x[1])
    )
    return [ArmHit(chunk_id, rank, score) for rank, (score, chunk_id) in enumerate(ranked[:limit], start=1)]


def _passing(conn: psycopg.Connection[Any], chunk_ids: list[int], filters: Filters) -> set[int] | None:
    where, params = filter_sql(filters)
    if not where:
        return None
    found = conn.execute(
        f"""SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id
            WHERE c.id = ANY(%s){where}""",
        [chunk_ids, *params],
    ).fetchall()
    return {int(row[0]) for row in found}


class PointInTime(history.PointInTimeReads):
    """The store's point-in-time methods (mixed into PostgresStore)."""

    def _history_rows(self, sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        return self._rows(format_style(sql), params)

    @abstractmethod
    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[psycopg.Connection[Any]]: ...

    @abstractmethod
    def _collection_id(self, name: str) -> int: ...

    @abstractmethod
    def _forget_keyword_index(self, collection_id: int) -> None: ...

    @abstractmethod
    def forget_vector_index(self, collection_id: int) -> None: ...

    def create_baseline(self, collection: str, name: str, note: str = "") -> Baseline:
        collection_id = self._collection_id(collection)
        try:
            with self._transaction() as conn:
                stamp = tick(conn, collection_id)
                baseline_id = history.baseline_id(collection, name, stamp)
                conn.execute(
                    format_style(history.INSERT_BASELINE),
                    (baseline_id, collection_id, name, note, stamp, history.now_stamp()),
                )
        except psycopg.errors.UniqueViolation as exc:
            raise ConfigError(f"collection {collection!r} already has a baseline named {name!r}") from exc
        return self.baselines(collection, baseline_id)[0]

    def delete_baseline(self, baseline_id: str) -> None:
        with self._transaction() as conn:
            conn.execute(format_style(history.DELETE_BASELINE), (baseline_id,))

    def delete_collection(self, name: str) -> int:
        collection_id = self._collection_id(name)
        with self._transaction() as conn:
            count = conn.execute("SELECT count(*) FROM documents WHERE collection_id = %s", (collection_id,))
            documents = int(count.fetchone()[0])  # type: ignore[index]
            for table in ("postings", "history_postings", "term_stats", "collection_stats"):
                conn.execute(f"DELETE FROM {table} WHERE collection_id = %s".encode(), (collection_id,))
            for statement in queries.DELETE_COLLECTION:
                conn.execute(format_style(statement).encode(), (collection_id,))
            conn.execute(queries.DELETE_ORPHAN_EMBEDDINGS.encode())
        self._forget_keyword_index(collection_id)
        self.forget_vector_index(collection_id)
        return documents

    def rename_collection(self, name: str, new_name: str) -> None:
        collection_id = self._collection_id(name)
        try:
            with self._transaction() as conn:
                conn.execute("UPDATE collections SET name = %s WHERE id = %s", (new_name, collection_id))
        except psycopg.errors.UniqueViolation as exc:
            raise ConfigError(f"a collection named {new_name!r} already exists; choose another name") from exc

    def prune(self, collection: str, before: str) -> PruneReport:
        collection_id = self._collection_id(collection)
        with self._transaction() as conn:
            found = conn.execute(format_style(history.PRUNABLE), (collection_id, before)).fetchall()
            doomed = [row[0] for row in found if not row[2]]
            exact_from = max((row[1] for row in found if not row[2]), default=None)
            chunks = vectors = documents = 0
            if doomed:
                ids = [
                    r[0] for r in conn.execute("SELECT id FROM chunks WHERE revision_id = ANY(%s)", (doomed,))
                ]
                keys = [r[0] for r in conn.execute(
                    "SELECT DISTINCT embed_key FROM chunks WHERE id = ANY(%s)", (ids,)
                )]  # fmt: skip
                conn.execute("DELETE FROM history_postings WHERE chunk_id = ANY(%s)", (ids,))
                chunks = conn.execute("DELETE FROM chunks WHERE id = ANY(%s)", (ids,)).rowcount
                conn.execute("DELETE FROM revisions WHERE id = ANY(%s)", (doomed,))
                vectors = conn.execute(
                    """DELETE FROM embeddings e WHERE e.embed_key = ANY(%s)
                       AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_key = e.embed_key)""",
                    (keys,),
                ).rowcount
                orphans = [
                    r[0] for r in conn.execute(format_style(history.ORPHAN_DOCUMENTS), (collection_id,))
                ]
                conn.execute("DELETE FROM documents WHERE id = ANY(%s)", (orphans,))
                documents = len(orphans)
            if exact_from is not None:
                conn.execute(
                    "UPDATE collections SET history_from = GREATEST(COALESCE(history_from, ''), %s) WHERE id = %s",
                    (exact_from, collection_id),
                )
        held = sum(1 for row in found if row[2])
        return PruneReport(collection, before, len(doomed), chunks, vectors, documents, held)


def filter_chunk_ids_at(rows: Any, collection: str, chunk_ids: Sequence[int], filters: Filters) -> set[int]:
    where, params = filter_sql(filters)
    found = rows(
        f"""SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id
            JOIN collections col ON col.id = c.collection_id
            WHERE col.name = %s AND c.id = ANY(%s) AND {VALID_AT}{where}""",
        [collection, list(chunk_ids), filters.as_of, filters.as_of, *params],
    )
    return {int(row[0]) for row in found}
