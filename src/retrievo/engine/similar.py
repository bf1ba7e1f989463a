"""The engine's reads around one chunk (``similar``, ``neighbours``), mixed into ``Engine``."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection

from retrievo.errors import ConfigError, DocumentNotFound
from retrievo.models import Chunk, Filters, SearchResult
from retrievo.search.documents.similar import check_scope, similar_chunks
from retrievo.store.base import Store
from retrievo.store.read_point import resolve

MAX_NEIGHBOURS = 20


class SimilarQueries:
    @abstractmethod
    def _open_store(self, create: bool, collection: str | None = None) -> Store: ...

    def similar(
        self,
        chunk_id: int | None = None,
        document_id: str | None = None,
        limit: int = 10,
        filters: Filters | None = None,
        collections: Collection[str] | None = None,
        baseline: str | None = None,
        as_of: str | None = None,
        collection: str | None = None,
    ) -> SearchResult:
        """Chunks in other documents most similar to a chunk (or to a whole document's mean vector), in its
        own collection.

        ``collections`` (an allow-list) hides every chunk and document outside it; ``baseline`` or
        ``as_of`` compares with the chunks valid then; ``collection``, when named, must be the one the
        chunk or document is in (a clear error says where it is).
        """
        store = self._open_store(create=False)
        return similar_chunks(
            store, chunk_id, document_id, limit, filters or Filters(), collections,
            lambda name: resolve(store, name, baseline, as_of), collection,
        )  # fmt: skip

    def neighbours(
        self, chunk_id: int, before: int = 1, after: int = 1, collections: Collection[str] | None = None
    ) -> list[Chunk]:
        """The chunk with up to ``before`` and ``after`` chunks on each side in its own revision, in order."""
        if not (0 <= before <= MAX_NEIGHBOURS and 0 <= after <= MAX_NEIGHBOURS):
            raise ConfigError(f"before and after must be 0-{MAX_NEIGHBOURS}")
        store = self._open_store(create=False)
        chunk = store.get_chunks([chunk_id]).get(chunk_id)
        if chunk is None:
            raise DocumentNotFound(f"chunk {chunk_id} is not in the index; take ids from search results")
        check_scope(chunk.collection, collections, f"chunk {chunk_id}")
        ids = store.chunk_ids_of_revision(chunk.revision_id, chunk.chunker)
        at = ids.index(chunk_id)
        window = ids[max(0, at - before) : at + after + 1]
        found = store.get_chunks(window)
        return [found[i] for i in window if i in found]
