"""The engine's public doors for what sits beside or above it: the facades (``history``, ``registry``),
the operations (jobs, watch), the server tier (keys, jobs) and the evaluation. Each is one line over
the part that does the work, so none of them reaches into the engine's private methods."""

from __future__ import annotations

from abc import abstractmethod
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from retrievo.embed.base import Embedder
from retrievo.engine.indexing import IndexProgress
from retrievo.models import IndexReport
from retrievo.search.query import EmbedQuery
from retrievo.store.base import Store

if TYPE_CHECKING:
    from retrievo.embed.pool import ModelPool


class Doors:
    _pool: ModelPool

    @abstractmethod
    def _open_store(self, create: bool, collection: str | None = None) -> Store: ...

    @abstractmethod
    def _collection_store(self, collection: str | None) -> tuple[Store, str]: ...

    @abstractmethod
    def _indexing(
        self, name: str, embed: bool, progress: IndexProgress
    ) -> AbstractContextManager[tuple[Store, IndexReport]]: ...

    @abstractmethod
    def _query_fn(self, store: Store, collection: str) -> tuple[EmbedQuery, str | None]: ...

    def open_store(self, create: bool = False, collection: str | None = None) -> Store:
        """The store holding ``collection`` (its route's, else the default one); ``create`` makes it."""
        return self._open_store(create, collection)

    def collection_store(self, collection: str | None) -> tuple[Store, str]:
        """An existing collection's store and name (CollectionNotFound names the ones there are)."""
        return self._collection_store(collection)

    def writing(
        self, collection: str, embed: bool, progress: IndexProgress
    ) -> AbstractContextManager[tuple[Store, IndexReport]]:
        """One write session: the collection's writer lock held; leaving it embeds what is missing
        (``embed``) and stamps the collection."""
        return self._indexing(collection, embed, progress)

    def query_embedding(self, store: Store, collection: str) -> tuple[EmbedQuery, str | None]:
        """How to embed a query for this collection, and why the semantic arm cannot run (or None)."""
        return self._query_fn(store, collection)

    def require_model(self, model_id: str) -> Embedder:
        """The embedder of ``model_id`` (ConfigError when this configuration cannot reach it)."""
        return self._pool.require(model_id)

    def forget_query_vectors(self) -> None:
        """Drop the cached query vectors (a timed run embeds its queries again)."""
        self._pool.forget_queries()
