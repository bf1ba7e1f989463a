"""The SQLite side of the embedding lifecycle (shared statements in ``retrievo.store.embeddings``)."""

from __future__ import annotations

import sqlite3
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import numpy.typing as npt

from retrievo.store import embeddings
from retrievo.store.ann import ANN_MIN_VECTORS, AnnIndexes, disagreements
from retrievo.store.base import CollectionInfo
from retrievo.store.sqlite.vectors import decode_vectors, encode_vector


class SQLiteEmbeddings(embeddings.EmbeddingTable):
    _ann: AnnIndexes
    _lock: Any

    @abstractmethod
    def _read(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]: ...

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

    @abstractmethod
    def get_collection(self, name: str) -> CollectionInfo | None: ...

    @abstractmethod
    def generation(self) -> int: ...

    def _emb_rows(self, sql: str, params: Sequence[object] = ()) -> list[Sequence[Any]]:
        return list(self._read(sql, params))

    def put_embeddings(
        self, model_id: str, keys: Sequence[str], vectors: npt.NDArray[np.float32], replace: bool = False
    ) -> None:
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self._transaction() as db:
            db.executemany(
                f"{verb} INTO embeddings (embed_key, model_id, vector) VALUES (?, ?, ?)",
                [(key, model_id, encode_vector(vector)) for key, vector in zip(keys, vectors, strict=True)],
            )

    def rekey_chunks(self, pairs: Sequence[tuple[int, str]]) -> None:
        with self._transaction() as db:
            db.executemany("UPDATE chunks SET embed_key = ? WHERE id = ?", [(k, i) for i, k in pairs])

    def set_shadow_model(self, name: str, model_id: str | None, dimensions: int | None) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE collections SET shadow_model_id = ?, shadow_dimensions = ? WHERE name = ?",
                (model_id, dimensions, name),
            )

    def switch_model(self, name: str) -> CollectionInfo:
        collection_id = self._collection_id(name)
        with self._transaction() as db:  # BEGIN IMMEDIATE: no write slips in between check and switch
            shadow, dims = db.execute(
                "SELECT shadow_model_id, shadow_dimensions FROM collections WHERE id = ?", (collection_id,)
            ).fetchone()
            missing = 0
            if shadow is not None:
                missing = db.execute(embeddings.MISSING_FOR_SHADOW, (shadow, collection_id)).fetchone()[0]
            embeddings.check_switch(shadow, int(missing), name)
            db.execute(
                """UPDATE collections SET model_id = shadow_model_id, dimensions = shadow_dimensions,
                   shadow_model_id = NULL, shadow_dimensions = NULL WHERE id = ?""",
                (collection_id,),
            )
        info = self.get_collection(name)
        assert info is not None and dims is not None
        return info

    def drop_model_vectors(self, model_id: str) -> int:
        with self._transaction() as db:
            dropped = db.execute(embeddings.DROP_MODEL, (model_id, model_id, model_id)).rowcount
        if dropped:
            self._ann.forget(model_id=model_id)
        return int(dropped)

    # The usearch side index ---------------------------------------------------------------------

    def side_index_problems(self, collection: str) -> list[str]:
        """Where the HNSW file beside the index disagrees with the vectors table (after the sync a search
        would do): chunks it lacks or holds in excess, vectors that differ."""
        info = self.get_collection(collection)
        if info is None or info.model_id is None:
            return []
        collection_id = self._collection_id(collection)
        table = {
            int(row[0]): row[1]
            for row in self._read(
                """SELECT c.id, e.vector FROM chunks c
                   JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
                   WHERE c.collection_id = ? AND c.superseded_at IS NULL""",
                (info.model_id, collection_id),
            )
        }
        if len(table) < ANN_MIN_VECTORS and not self._ann.has_file(collection_id, info.model_id):
            return []  # searched exactly from the table: there is no side index to disagree
        with self._lock:
            held = self._ann.synced_index(self._db_conn(), collection_id, info.model_id, self.generation())
        ids = np.array(sorted(table), dtype=np.int64)
        dims = int(info.dimensions or held.ndim)
        vectors = decode_vectors([table[i] for i in ids.tolist()], dims) if len(ids) else np.zeros((0, dims))
        return disagreements(held, ids, vectors.astype(np.float32))

    def rebuild_side_index(self, collection: str) -> None:
        """Throw the collection's HNSW files away and build them again from the table."""
        info = self.get_collection(collection)
        collection_id = self._collection_id(collection)
        self._ann.forget(collection_id=collection_id)
        if info is None or info.model_id is None:
            return
        count = self._read(
            """SELECT count(*) FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
               WHERE c.collection_id = ? AND c.superseded_at IS NULL""",
            (info.model_id, collection_id),
        )[0][0]
        if int(count) >= ANN_MIN_VECTORS:
            with self._lock:
                self._ann.synced_index(self._db_conn(), collection_id, info.model_id, self.generation())

    def warm_side_index(self, collection: str, model_id: str) -> None:
        """Build ``model_id``'s HNSW file before a switch, so the first search after it need not."""
        collection_id = self._collection_id(collection)
        count = self._read(
            """SELECT count(*) FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
               WHERE c.collection_id = ? AND c.superseded_at IS NULL""",
            (model_id, collection_id),
        )[0][0]
        if int(count) >= ANN_MIN_VECTORS:
            with self._lock:
                self._ann.synced_index(self._db_conn(), collection_id, model_id, self.generation())

    @abstractmethod
    def _db_conn(self) -> sqlite3.Connection: ...
