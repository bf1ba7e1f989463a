"""The PostgreSQL store's searches: each arm from its side index when one can answer (unfiltered, current
chunks, in step), from SQL otherwise; chunks read back for the answer."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from psycopg.rows import dict_row

from retrievo.models import ArmHit, Chunk, Filters
from retrievo.store import queries
from retrievo.store.postgres import history, search
from retrievo.store.postgres.filters import filter_sql
from retrievo.store.postgres.rows import chunk_from_row
from retrievo.store.postgres.vector_source import PostgresSideIndexes

# The most current chunks of a collection whose moving-to model's vectors a search reads, exactly: at
# 100,000 a search reads them in ~120 ms on 2 cores (pgvector's exact scan, 384 dimensions, 2026-11-29).
SHADOW_EXACT_MAX = 200_000


class PostgresSearch(PostgresSideIndexes):
    ef_search: int
    unserved_search_max: int | None = SHADOW_EXACT_MAX

    def keyword_search(self, collection: str, query: str, filters: Filters, limit: int) -> list[ArmHit]:
        with self._conn() as conn:
            state = self._search_state(conn, collection)
            collection_id = int(state[0])
            if filters.as_of is not None:
                return history.keyword_at(conn, collection_id, search.query_stems(query), filters, limit)
            if not filter_sql(filters)[0]:
                found = self.side_keyword_search(conn, collection_id, query, limit, (state[3], state[5]))
                if found is not None:
                    return found
            return search.keyword_search(conn, collection_id, query, filters, limit)

    def vector_search(
        self, collection: str, model_id: str, vector: npt.NDArray[np.float32], filters: Filters, limit: int
    ) -> list[ArmHit]:
        with self._conn() as conn:
            state = self._search_state(conn, collection)
            collection_id, served, dimensions = int(state[0]), state[1], state[2]
            if served is not None and served != model_id:
                # Another model's vectors (one the collection is moving to): exact, from the embeddings
                # table (no index keeps them; read only during a migration), up to SHADOW_EXACT_MAX
                # chunks; above, none (the caller reads the served model alone until the switch).
                if self.unserved_search_max is not None and int(state[5]) > self.unserved_search_max:
                    return []
                return search.vector_search(
                    conn, collection_id, len(vector), vector, filters, limit, self.ef_search, model_id
                )
            if dimensions is None:
                return []
            if filters.as_of is None and not filter_sql(filters)[0]:
                found = self.side_vector_search(conn, collection_id, model_id, vector, limit, state[3:])
                if found is not None:
                    return found
            return search.vector_search(
                conn, collection_id, dimensions, vector, filters, limit, self.ef_search
            )

    def chunks_holding(
        self, collection: str, words: Sequence[str], filters: Filters, limit: int
    ) -> list[int]:
        if not words or filters.as_of is not None or limit <= 0:
            return []
        with self._conn() as conn:
            collection_id = int(self._search_state(conn, collection)[0])
            return search.chunks_holding(conn, collection_id, words, filters, limit)

    def held_words(self, collection: str, words: Sequence[str]) -> frozenset[str]:
        if not words:
            return frozenset()
        with self._conn() as conn:
            collection_id = int(self._search_state(conn, collection)[0])
            return search.held_words(conn, collection_id, words)

    def chunks_with_phrase(self, collection: str, phrase: str, filters: Filters, limit: int) -> list[int]:
        if not phrase.strip() or filters.as_of is not None or limit <= 0:
            return []
        with self._conn() as conn:
            collection_id = int(self._search_state(conn, collection)[0])
            return search.chunks_with_phrase(conn, collection_id, phrase, filters, limit)

    def get_chunks(self, chunk_ids: Sequence[int]) -> dict[int, Chunk]:
        if not chunk_ids:
            return {}
        with self._conn() as conn, conn.cursor(row_factory=dict_row) as cursor:
            rows = cursor.execute(
                f"""SELECT c.*, d.source, d.title, d.kind, col.name AS collection, {queries.DRIFTED} FROM chunks c
                   JOIN documents d ON d.id = c.document_id JOIN collections col ON col.id = c.collection_id
                   JOIN revisions r ON r.id = c.revision_id
                   WHERE c.id = ANY(%s)""",
                (list(chunk_ids),),
            ).fetchall()
        return {row["id"]: chunk_from_row(row) for row in rows}
