"""The SQLite store at a point in time: both search arms over the chunks valid then, and retention.

Keyword: FTS5 holds current chunks in ``chunks_fts`` and superseded ones in ``chunks_history_fts``.
At T, each query word's postings come from both tables' ``fts5vocab`` instance views, restricted to
the chunks valid at T, and BM25 is computed exactly as FTS5's ``bm25()`` does — but with N, the
average length and each term's document frequency of the index *as it was at T* (all collections,
as FTS5 counts them at HEAD). So a search at T ranks as a fresh index of the files of T would.
Dense: exact cosine over the vectors of the chunks valid at T (a matrix cached per point in time).
"""

from __future__ import annotations

import json
import math
import sqlite3
from abc import abstractmethod
from collections.abc import Hashable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from retrievo.errors import ConfigError
from retrievo.models import ArmHit, Baseline, Filters, PruneReport
from retrievo.store import history
from retrievo.store.fts_query import PRUNE_MIN_ROWS, prune_common_terms, query_terms
from retrievo.store.sqlite.filters import filter_sql
from retrievo.store.sqlite.search import current_rows, document_frequencies
from retrievo.store.sqlite.vectors import VectorMatrix, matrix_of
from retrievo.store.tokenizer import shared_tokenizer

K1, B = 1.2, 0.75  # FTS5's bm25() constants

SCHEMA = (
    history.HISTORY_SCHEMA
    + """
ALTER TABLE chunks ADD COLUMN token_count INTEGER;
-- Superseded chunks, searchable only at a point in time; same tokenizer as chunks_fts.
CREATE VIRTUAL TABLE chunks_history_fts USING fts5(
    context, text, keywords, content='chunks', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE chunks_terms USING fts5vocab(chunks_fts, 'instance');
CREATE VIRTUAL TABLE chunks_history_terms USING fts5vocab(chunks_history_fts, 'instance');
INSERT INTO chunks_history_fts (rowid, context, text, keywords)
    SELECT id, context, text, keywords FROM chunks WHERE superseded_at IS NOT NULL;
UPDATE chunks SET token_count = (SELECT retrievo_token_count(sz) FROM chunks_fts_docsize s WHERE s.id = chunks.id)
    WHERE superseded_at IS NULL;
UPDATE chunks SET token_count =
    (SELECT retrievo_token_count(sz) FROM chunks_history_fts_docsize s WHERE s.id = chunks.id)
    WHERE superseded_at IS NOT NULL;
"""
)


def token_count(size_blob: bytes | None) -> int | None:
    """The tokens of one FTS5 row: its ``docsize`` record is one SQLite varint per column."""
    if size_blob is None:
        return None
    total, i = 0, 0
    while i < len(size_blob):
        value = 0
        for k in range(9):
            byte = size_blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        total += value
    return total


def register_functions(db: sqlite3.Connection) -> None:
    db.create_function("retrievo_token_count", 1, token_count, deterministic=True)


def supersede_search_rows(db: sqlite3.Connection, document_id: str) -> None:
    """Move a document's current chunks from the HEAD keyword index to the history one."""
    current = "FROM chunks WHERE document_id = ? AND superseded_at IS NULL"
    db.execute(
        f"""INSERT INTO chunks_fts (chunks_fts, rowid, context, text, keywords)
            SELECT 'delete', id, context, text, keywords {current}""",
        (document_id,),
    )
    db.execute(
        f"INSERT INTO chunks_history_fts (rowid, context, text, keywords) SELECT id, context, text, keywords {current}",
        (document_id,),
    )


@dataclass(frozen=True)
class PointIndex:
    """The chunks valid at one point (every collection, as FTS5 counts): ids sorted, lengths, owners."""

    ids: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.float64]
    collections: npt.NDArray[np.int64]
    tokens: int


def point_index(db: sqlite3.Connection, point: str) -> PointIndex:
    """Read once per point (the caller caches it until the index changes)."""
    rows = db.execute(
        f"SELECT c.id, COALESCE(c.token_count, 0), c.collection_id FROM chunks c WHERE {history.VALID_AT} ORDER BY c.id",
        (point, point),
    ).fetchall()
    table = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return PointIndex(
        table[:, 0].copy(), table[:, 1].astype(np.float64), table[:, 2].copy(), int(table[:, 1].sum())
    )


def _term_rows(
    db: sqlite3.Connection, stem: str, index: PointIndex
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """(positions in ``index``, tf) of the chunks valid at the point that hold ``stem``."""
    found = [
        row
        for table in ("chunks_terms", "chunks_history_terms")
        for row in db.execute(f"SELECT doc, count(*) FROM {table} WHERE term = ? GROUP BY doc", (stem,))
    ]
    if not found or len(index.ids) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    pairs = np.array(found, dtype=np.int64)
    positions = np.minimum(np.searchsorted(index.ids, pairs[:, 0]), len(index.ids) - 1)
    valid = index.ids[positions] == pairs[:, 0]
    return positions[valid], pairs[valid, 1].astype(np.float64)


def keyword_at(
    db: sqlite3.Connection,
    collection_id: int,
    query: str,
    filters: Filters,
    limit: int,
    index: PointIndex,
) -> list[ArmHit]:
    """``index``: ``point_index(db, filters.as_of)``, which the caller may cache."""
    words = query_terms(query)
    rows = len(index.ids)
    if not words or limit <= 0 or not rows:
        return []
    if rows >= PRUNE_MIN_ROWS:
        # Words too common to change a ranking are decided as at HEAD (reading their postings at T
        # would cost what pruning saves); below PRUNE_MIN_ROWS nothing is pruned and BM25 is exact.
        words = prune_common_terms(words, document_frequencies(db, words), current_rows(db))
    stems = [list(counts) for counts in shared_tokenizer().term_counts(words)]
    postings = {stem: _term_rows(db, stem, index) for stem in dict.fromkeys(s for g in stems for s in g)}
    # A word is one FTS5 phrase; a word FTS5 splits in several tokens is scored by its first (rare).
    phrases = [group[0] for group in stems if group]
    average = index.tokens / rows
    scores = np.zeros(rows)
    touched = np.zeros(rows, dtype=bool)
    for stem in phrases:  # summed phrase by phrase, in query order, as FTS5 does
        positions, tf = postings[stem]
        idf = math.log((rows - len(positions) + 0.5) / (len(positions) + 0.5))
        idf = idf if idf > 0.0 else 1e-6
        lengths = index.lengths[positions]
        scores[positions] += idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * lengths / average)))
        touched[positions] = True
    candidates = np.flatnonzero(touched & (index.collections == collection_id))
    allowed = _passing(db, index.ids[candidates].tolist(), filters)
    if allowed is not None:
        candidates = candidates[np.isin(index.ids[candidates], np.array(sorted(allowed), dtype=np.int64))]
    order = np.lexsort((index.ids[candidates], -scores[candidates]))[:limit]
    return [
        ArmHit(int(index.ids[candidates[i]]), rank, float(scores[candidates[i]]))
        for rank, i in enumerate(order, start=1)
    ]


def _passing(db: sqlite3.Connection, chunk_ids: list[int], filters: Filters) -> set[int] | None:
    """Which candidates pass the filters other than time (None: no such filter)."""
    where, params = filter_sql(filters)
    if not where:
        return None
    found = db.execute(
        f"""SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id
            WHERE c.id IN (SELECT value FROM json_each(?)){where}""",
        [json.dumps(chunk_ids), *params],
    )
    return {row[0] for row in found}


def filter_chunk_ids_at(
    db: sqlite3.Connection, collection: str, chunk_ids: Sequence[int], filters: Filters
) -> set[int]:
    point = filters.as_of
    where, params = filter_sql(filters)
    found = db.execute(
        f"""SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id
            JOIN collections col ON col.id = c.collection_id
            WHERE col.name = ? AND c.id IN (SELECT value FROM json_each(?)) AND {history.VALID_AT}{where}""",
        [collection, json.dumps(list(chunk_ids)), point, point, *params],
    )
    return {row[0] for row in found}


def vectors_at(db: sqlite3.Connection, collection_id: int, model_id: str, point: str) -> VectorMatrix:
    rows = db.execute(
        f"""SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
            WHERE c.collection_id = ? AND {history.VALID_AT} ORDER BY c.id""",
        (model_id, collection_id, point, point),
    ).fetchall()
    return matrix_of(rows)


def prune(db: sqlite3.Connection, collection_id: int, collection: str, before: str) -> PruneReport:
    """Inside the caller's transaction: superseded revisions closed by ``before`` that no baseline holds."""
    found = db.execute(history.PRUNABLE, (collection_id, before)).fetchall()
    doomed = [row[0] for row in found if not row[2]]
    held = sum(1 for row in found if row[2])
    exact_from = max((row[1] for row in found if not row[2]), default=None)
    chunks = vectors = documents = 0
    if doomed:
        ids = json.dumps(doomed)
        keys = [r[0] for r in db.execute(
            "SELECT DISTINCT embed_key FROM chunks WHERE revision_id IN (SELECT value FROM json_each(?))", (ids,)
        )]  # fmt: skip
        db.execute(
            """INSERT INTO chunks_history_fts (chunks_history_fts, rowid, context, text, keywords)
               SELECT 'delete', id, context, text, keywords FROM chunks
               WHERE revision_id IN (SELECT value FROM json_each(?))""",
            (ids,),
        )
        chunks = db.execute(
            "DELETE FROM chunks WHERE revision_id IN (SELECT value FROM json_each(?))", (ids,)
        ).rowcount
        db.execute("DELETE FROM revisions WHERE id IN (SELECT value FROM json_each(?))", (ids,))
        vectors = db.execute(
            """DELETE FROM embeddings WHERE embed_key IN (SELECT value FROM json_each(?))
               AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_key = embeddings.embed_key)""",
            (json.dumps(keys),),
        ).rowcount
        orphans = [row[0] for row in db.execute(history.ORPHAN_DOCUMENTS, (collection_id,))]
        db.executemany("DELETE FROM documents WHERE id = ?", [(o,) for o in orphans])
        documents = len(orphans)
    if exact_from is not None:
        db.execute(
            "UPDATE collections SET history_from = max(COALESCE(history_from, ''), ?) WHERE id = ?",
            (exact_from, collection_id),
        )
    return PruneReport(collection, before, len(doomed), chunks, vectors, documents, held)


def tick(db: sqlite3.Connection, collection_id: int) -> str:
    """The collection's next change stamp (inside the write transaction, so it is serialised)."""
    stamp = history.next_stamp(db.execute(history.LAST_CHANGE, (collection_id,)).fetchone()[0])
    db.execute(history.SET_LAST_CHANGE, (stamp, collection_id))
    return stamp


class PointInTime(history.PointInTimeReads):
    """The store's point-in-time methods (mixed into SQLiteStore)."""

    def _history_rows(self, sql: str, params: Sequence[object]) -> list[sqlite3.Row]:
        if sql is history.TIMELINE:  # a collection's times: asked at every search, changed by commits only
            return self._cataloged(("timeline", *params), sql, params)
        return self._read(sql, params)

    @abstractmethod
    def _cataloged(self, key: Hashable, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]: ...

    @abstractmethod
    def _read(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]: ...

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

    @abstractmethod
    def _collection_id(self, name: str) -> int: ...

    def create_baseline(self, collection: str, name: str, note: str = "") -> Baseline:
        collection_id = self._collection_id(collection)
        with self._transaction() as db:
            stamp = tick(db, collection_id)
            baseline_id = history.baseline_id(collection, name, stamp)
            try:
                db.execute(
                    history.INSERT_BASELINE,
                    (
                        baseline_id,
                        collection_id,
                        name,
                        note,
                        stamp,
                        history.now_stamp(),
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise ConfigError(f"collection {collection!r} already has a baseline named {name!r}") from exc
        return self.baselines(collection, baseline_id)[0]

    def delete_baseline(self, baseline_id: str) -> None:
        with self._transaction() as db:
            db.execute(history.DELETE_BASELINE, (baseline_id,))

    def prune(self, collection: str, before: str) -> PruneReport:
        collection_id = self._collection_id(collection)
        with self._transaction() as db:
            return prune(db, collection_id, collection, before)
