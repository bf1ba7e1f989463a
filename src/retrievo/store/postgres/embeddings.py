"""The PostgreSQL side of the embedding lifecycle (shared statements in ``retrievo.store.embeddings``).

Here the served vectors also live in ``chunks.vector`` (under one HNSW index per dimension), so the
switch to a new model rewrites that column for the collection in the same transaction that changes
its model: ``chunks.vector`` holds the old model's vectors or the new one's, never a mix. During the
move a search also reads the new model's rows of ``embeddings`` exactly (``search/migrating.py``).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from retrievo.store import embeddings
from retrievo.store.base import CollectionInfo
from retrievo.store.postgres import vector_index
from retrievo.store.postgres.vector_source import (
    VECTORS_CHANGED,
    VECTORS_CHANGED_FOR_CHUNKS,
    VECTORS_CHANGED_FOR_MODEL,
)
from retrievo.store.queries import format_style

# Served vectors copied from the embeddings table (filled by put_embeddings / switch_model).
SERVE_VECTORS = """
    UPDATE chunks c SET vector = e.vector FROM embeddings e
    WHERE c.collection_id = %s AND e.embed_key = c.embed_key AND e.model_id = %s"""


class PostgresEmbeddings(embeddings.EmbeddingTable):
    @abstractmethod
    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[psycopg.Connection[Any]]: ...

    @abstractmethod
    def get_collection(self, name: str) -> CollectionInfo | None: ...

    @abstractmethod
    def forget_vector_index(self, collection_id: int) -> None: ...

    @abstractmethod
    def side_vector_problems(self, collection_id: int, model_id: str) -> list[str]: ...

    def _emb_rows(self, sql: str, params: Sequence[object] = ()) -> list[Sequence[Any]]:
        return list(self._rows(format_style(sql), params))

    def put_embeddings(
        self, model_id: str, keys: Sequence[str], vectors: npt.NDArray[np.float32], replace: bool = False
    ) -> None:
        with self._transaction() as conn:
            self._write_embeddings(conn, model_id, keys, vectors, replace)

    def _write_embeddings(
        self, conn: psycopg.Connection[Any], model_id: str, keys: Sequence[str],
        vectors: npt.NDArray[np.float32], replace: bool,
    ) -> None:  # fmt: skip
        """``put_embeddings`` inside the caller's transaction (a shared batch writes and closes in one)."""
        conflict = "DO UPDATE SET vector = EXCLUDED.vector" if replace else "DO NOTHING"
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO embeddings (embed_key, model_id, vector) VALUES (%s, %s, %s) "
                f"ON CONFLICT (embed_key, model_id) {conflict}".encode(),
                [
                    (key, model_id, np.asarray(v, dtype=np.float32))
                    for key, v in zip(keys, vectors, strict=True)
                ],
            )
        # Keyed on chunks.embed_key so the planner walks its index, not the whole table.
        served = conn.execute(
            """UPDATE chunks c SET vector = e.vector FROM embeddings e
               WHERE c.embed_key = ANY(%s) AND e.embed_key = c.embed_key AND e.model_id = %s
                 AND c.collection_id IN (SELECT id FROM collections WHERE model_id = %s)""",
            (list(keys), model_id, model_id),
        )
        if served.rowcount:
            conn.execute(VECTORS_CHANGED_FOR_MODEL, (model_id,))

    def rekey_chunks(self, pairs: Sequence[tuple[int, str]]) -> None:
        with self._transaction() as conn, conn.cursor() as cursor:
            cursor.executemany(
                """UPDATE chunks c SET embed_key = %s, vector = (
                       SELECT e.vector FROM embeddings e JOIN collections col ON col.id = c.collection_id
                       WHERE e.embed_key = %s AND e.model_id = col.model_id)
                   WHERE c.id = %s""",
                [(k, k, i) for i, k in pairs],
            )
            cursor.execute(VECTORS_CHANGED_FOR_CHUNKS, ([i for i, _ in pairs],))

    def set_shadow_model(self, name: str, model_id: str | None, dimensions: int | None) -> None:
        with self._transaction() as conn:
            conn.execute(
                "UPDATE collections SET shadow_model_id = %s, shadow_dimensions = %s WHERE name = %s",
                (model_id, dimensions, name),
            )

    def switch_model(self, name: str) -> CollectionInfo:
        collection_id = self._collection_id(name)
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT shadow_model_id, shadow_dimensions, dimensions FROM collections WHERE id = %s FOR UPDATE",
                (collection_id,),
            ).fetchone()
            assert row is not None
            shadow, dims, old_dims = row
            missing = 0
            if shadow is not None:
                found = conn.execute(
                    format_style(embeddings.MISSING_FOR_SHADOW).encode(), (shadow, collection_id)
                ).fetchone()
                missing = int(found[0]) if found else 0
            embeddings.check_switch(shadow, missing, name)
            conn.execute(
                """UPDATE collections SET model_id = shadow_model_id, dimensions = shadow_dimensions,
                   shadow_model_id = NULL, shadow_dimensions = NULL WHERE id = %s""",
                (collection_id,),
            )
            conn.execute("UPDATE chunks SET vector = NULL WHERE collection_id = %s", (collection_id,))
            conn.execute(SERVE_VECTORS, (collection_id, shadow))
            conn.execute(VECTORS_CHANGED, (collection_id,))
            vector_index.create(conn, int(dims))
            if old_dims is not None and int(old_dims) != int(dims):
                vector_index.drop_if_empty(conn, int(old_dims))
        self.forget_vector_index(collection_id)  # the old model's side index is of no more use
        info = self.get_collection(name)
        assert info is not None
        return info

    def drop_model_vectors(self, model_id: str) -> int:
        with self._transaction() as conn:
            return int(conn.execute(format_style(embeddings.DROP_MODEL).encode(),
                                    (model_id, model_id, model_id)).rowcount)  # fmt: skip

    def side_index_problems(self, collection: str) -> list[str]:
        """Where ``chunks.vector`` (what the HNSW index serves) disagrees with the embeddings table."""
        info = self.get_collection(collection)
        if info is None or info.model_id is None or info.dimensions is None:
            return []
        rows = self._rows(
            """SELECT count(*) FILTER (WHERE c.vector IS NULL),
                      count(*) FILTER (WHERE c.vector IS NOT NULL AND c.vector <> e.vector)
               FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = %s
               WHERE c.collection_id = %s AND c.superseded_at IS NULL""",
            (info.model_id, self._collection_id(collection)),
        )
        unserved, differ = int(rows[0][0]), int(rows[0][1])
        problems = []
        if unserved:
            problems.append(f"{unserved} chunks have a vector that the vector index does not serve")
        if differ:
            problems.append(f"{differ} served vectors differ from the embeddings table")
        present = self._rows("SELECT to_regclass(%s)", (vector_index.index_name(int(info.dimensions)),))
        if present[0][0] is None:
            problems.append(f"the HNSW index for {info.dimensions} dimensions is missing")
        return problems + self.side_vector_problems(self._collection_id(collection), info.model_id)

    def warm_side_index(self, collection: str, model_id: str) -> None:
        """Nothing to do ahead: the switch fills ``chunks.vector`` and builds the HNSW index itself."""

    def rebuild_side_index(self, collection: str) -> None:
        info = self.get_collection(collection)
        if info is None or info.model_id is None or info.dimensions is None:
            return
        collection_id = self._collection_id(collection)
        with self._transaction() as conn:
            conn.execute("UPDATE chunks SET vector = NULL WHERE collection_id = %s", (collection_id,))
            conn.execute(SERVE_VECTORS, (collection_id, info.model_id))
            conn.execute(VECTORS_CHANGED, (collection_id,))
            vector_index.create(conn, int(info.dimensions))
        self.forget_vector_index(collection_id)  # its vectors may have been the wrong ones too
