"""The SQLite store's search arms: keyword (tantivy side index, else FTS5) and dense (HNSW, else exact),
each on the calling thread's read connection; point-in-time reads on the writer's, under its lock."""

from __future__ import annotations

import re
import sqlite3
from abc import abstractmethod
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from retrievo.models import ArmHit, Filters
from retrievo.store.ann import ANN_MIN_VECTORS, AnnIndexes
from retrievo.store.base import CollectionInfo
from retrievo.store.fts_query import query_terms
from retrievo.store.keyword_index import KEYWORD_INDEX_MIN_ROWS, KeywordIndex
from retrievo.store.sqlite import history
from retrievo.store.sqlite.filters import filter_sql
from retrievo.store.sqlite.search import (
    ONLY_COLLECTION_SQL,
    current_rows,
    exact_filtered_search,
    keyword_search,
    vector_search,
)
from retrievo.store.sqlite.vectors import VectorCache, VectorMatrix

_PIECES = re.compile(r"[^\W_]+")  # a word's pieces as FTS5's unicode61 cuts it
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _quoted(text: str) -> str:
    """An FTS5 string: its words as plain words (operators, quotes and colons inside are no syntax)."""
    return '"' + text.replace('"', '""') + '"'


class SQLiteSearch:
    _db: sqlite3.Connection
    _lock: Any
    _ann: AnnIndexes
    _keywords: KeywordIndex
    _vectors: VectorCache
    _counts: dict[tuple[int, str], tuple[int, int]]
    _indexed_rows: tuple[int, int] | None
    _history_vectors: dict[tuple[int, str, str, int], VectorMatrix]
    _point_indexes: dict[tuple[str, int], history.PointIndex]

    @abstractmethod
    def _reader(self) -> sqlite3.Connection: ...
    @abstractmethod
    def _commit_batch(self) -> None: ...

    @abstractmethod
    def _collection_id(self, name: str) -> int: ...

    @abstractmethod
    def generation(self) -> int: ...

    @abstractmethod
    def get_collection(self, name: str) -> CollectionInfo | None: ...

    @abstractmethod
    def _cataloged(self, key: Hashable, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]: ...

    def _only_collection(self) -> bool:
        """The index holds one collection (``ONLY_COLLECTION_SQL``), remembered for the generation."""
        return int(self._cataloged("count", ONLY_COLLECTION_SQL)[0][0]) == 1

    def sync_search_indexes(self, collection: str) -> None:
        """The tantivy keyword index and the collection's HNSW file, synced (built the first time)."""
        self._commit_batch()  # they read the file on connections of their own
        db = self._reader()
        generation = self.generation()
        if current_rows(db) >= KEYWORD_INDEX_MIN_ROWS:
            self._keywords.ensure(db, generation)
        info = self.get_collection(collection)
        if info is not None and info.model_id is not None:
            collection_id = self._collection_id(collection)
            if self._vector_count(db, collection_id, info.model_id, generation) >= ANN_MIN_VECTORS:
                self._ann.synced_index(db, collection_id, info.model_id, generation)

    def keyword_search(self, collection: str, query: str, filters: Filters, limit: int) -> list[ArmHit]:
        collection_id = self._collection_id(collection)
        if filters.as_of is not None:
            with self._lock:
                generation = self.generation()
                key = (filters.as_of, generation)
                if key not in self._point_indexes:
                    self._point_indexes = {
                        key: history.point_index(self._db, filters.as_of)
                    }  # one point cached
                index = self._point_indexes[key]
                return history.keyword_at(self._db, collection_id, query, filters, limit, index)
        db = self._reader()
        generation = self.generation()
        indexed = self._indexed_rows
        if indexed is None or indexed[0] != generation:
            indexed = self._indexed_rows = (generation, current_rows(db))
        alone = self._only_collection()
        if indexed[1] >= KEYWORD_INDEX_MIN_ROWS and not filter_sql(filters)[0]:
            # The tantivy side index (same ranking, top-k pruning); None while it is not in step.
            only = None if alone else collection_id
            found = self._keywords.search(db, generation, only, query_terms(query), limit)
            if found is not None:
                return [ArmHit(chunk_id, rank, score) for rank, (chunk_id, score) in enumerate(found, 1)]
        return keyword_search(db, collection_id, query, filters, limit, indexed[1], alone)

    def chunks_holding(
        self, collection: str, words: Sequence[str], filters: Filters, limit: int
    ) -> list[int]:
        """FTS5 (full detail: always kept, whatever serves the ranking) ANDs the words, each quoted."""
        if not words:
            return []
        return self._matching(collection, " AND ".join(_quoted(word) for word in words), filters, limit)

    def held_words(self, collection: str, words: Sequence[str]) -> frozenset[str]:
        """A word is held where one chunk holds each of its pieces ("rate_limit": rate, limit; quoted whole,
        FTS5 would ask for them in a run)."""
        return frozenset(
            word
            for word in words
            if (pieces := _PIECES.findall(word)) and self.chunks_holding(collection, pieces, Filters(), 1)
        )

    def chunks_with_phrase(self, collection: str, phrase: str, filters: Filters, limit: int) -> list[int]:
        """FTS5's phrase query (the positions of full detail): the words in a run, in one column."""
        phrase = _CONTROL.sub(" ", phrase)  # FTS5 ends a string at NUL; no control character is a word
        if not phrase.strip():
            return []
        return self._matching(collection, _quoted(phrase), filters, limit)

    def _matching(self, collection: str, expression: str, filters: Filters, limit: int) -> list[int]:
        """Current chunks an FTS5 expression matches, at most ``limit``, none at a point in time. The match
        is taken first (an IN subquery: joined, SQLite's planner walked the collection's chunks and matched
        each, 50–400 ms on SciFact against 0.1–0.8 ms)."""
        if filters.as_of is not None or limit <= 0:
            return []
        where, params = filter_sql(filters)
        rows = (
            self._reader()
            .execute(
                f"""SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id
                WHERE c.id IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)
                AND c.collection_id = ? AND c.superseded_at IS NULL{where} LIMIT ?""",
                [expression, self._collection_id(collection), *params, limit],
            )
            .fetchall()
        )
        return [int(row[0]) for row in rows]

    def vector_search(
        self, collection: str, model_id: str, vector: npt.NDArray[np.float32], filters: Filters, limit: int
    ) -> list[ArmHit]:
        collection_id = self._collection_id(collection)
        if filters.as_of is not None:
            with self._lock:
                generation = self.generation()
                key = (collection_id, model_id, filters.as_of, generation)
                if key not in self._history_vectors:  # one point cached per model (two during a move)
                    kept = {
                        k: v
                        for k, v in self._history_vectors.items()
                        if k[1] != model_id and k[3] == generation
                    }
                    self._history_vectors = kept | {key: history.vectors_at(self._db, *key[:3])}
                matrix = self._history_vectors[key]
                return vector_search(self._db, matrix, collection_id, vector, filters, limit)
        db = self._reader()
        generation = self.generation()
        if self._vector_count(db, collection_id, model_id, generation) >= ANN_MIN_VECTORS:
            if filter_sql(filters)[0]:
                # Filtered: exact, over only the rows the filter allows (no full matrix in memory).
                return exact_filtered_search(db, collection_id, model_id, vector, filters, limit)
            found = self._ann.search(db, collection_id, model_id, generation, vector, limit)
            return [ArmHit(chunk_id, rank, score) for rank, (chunk_id, score) in enumerate(found, start=1)]
        matrix = self._vectors.get(db, collection_id, model_id, generation)
        return vector_search(db, matrix, collection_id, vector, filters, limit)

    def _vector_count(
        self, db: sqlite3.Connection, collection_id: int, model_id: str, generation: int
    ) -> int:
        key = (collection_id, model_id)
        cached = self._counts.get(key)
        if cached is None or cached[0] != generation:
            row = db.execute(
                """SELECT count(*) FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
                   WHERE c.collection_id = ? AND c.superseded_at IS NULL""",
                (model_id, collection_id),
            ).fetchone()
            cached = (generation, int(row[0]))
            self._counts[key] = cached
        return cached[1]
