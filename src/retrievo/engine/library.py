"""The engine's library search (seed 003's ``search_library``), mixed into ``Engine``."""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from retrievo.errors import ConfigError
from retrievo.models import Filters, Kind, SearchMode, SearchResult
from retrievo.search.library import DocumentHit, by_document
from retrievo.store.base import Store

DEPTH = 500  # passages looked at; the documents above the threshold among them make total_results
MAX_LIMIT = 50


@dataclass(frozen=True)
class LibraryEntry:
    document: DocumentHit
    processed_at: str  # when its revision was indexed (UTC)


@dataclass(frozen=True)
class LibraryResult:
    query: str
    entries: tuple[LibraryEntry, ...]
    total_results: int  # every document above the threshold, not only this page
    offset: int
    next_offset: int | None  # where the next page starts (None: this is the last)
    search_mode: str
    search_duration_ms: float
    degraded_reason: str | None = None
    baseline_id: str | None = None
    as_of: str | None = None


class LibraryQueries:
    @abstractmethod
    def _collection_store(self, collection: str | None) -> tuple[Store, str]: ...

    search: Callable[..., SearchResult]  # Engine.search

    def library(
        self,
        query: str,
        collection: str | None = None,
        limit: int = 10,
        min_similarity: float = 0.7,
        tags: Sequence[str] = (),
        date_from: str | None = None,
        date_to: str | None = None,
        offset: int = 0,
        baseline: str | None = None,
        as_of: str | None = None,
    ) -> LibraryResult:
        """Documents (not passages) most similar to ``query``, each with its best passage, above
        ``min_similarity`` on the seed's similarity scale (``retrievo.search.library``); a page of
        ``limit`` from ``offset``. Without vectors (lexical-only) documents come by keywords and the
        threshold cannot apply: ``degraded_reason`` says so."""
        if not 1 <= limit <= MAX_LIMIT:
            raise ConfigError(f"limit must be 1-{MAX_LIMIT}; ask for the next page with the cursor")
        if not 0.0 <= min_similarity <= 1.0:
            raise ConfigError("min_similarity must be between 0 and 1")
        if offset < 0:
            raise ConfigError("offset must be 0 or more")
        started = time.perf_counter()
        filters = Filters(kinds=(Kind.DOCUMENT,), tags=tuple(tags), date_from=date_from, date_to=date_to)
        result = self.search(
            query,
            collection,
            limit=DEPTH,
            mode=SearchMode.SEMANTIC,
            filters=filters,
            baseline=baseline,
            as_of=as_of,
        )
        documents = by_document(result.hits)
        lexical = result.search_mode not in (SearchMode.SEMANTIC, f"{SearchMode.SEMANTIC}-partial")
        reason = result.degraded_reason
        if lexical:
            reason = f"{reason or 'no vectors'}; documents are ranked by keywords and min_similarity is not applied"
        else:
            documents = [d for d in documents if d.similarity >= min_similarity]
        page = documents[offset : offset + limit]
        store, _ = self._collection_store(collection)
        times = store.revision_times([d.best.chunk.revision_id for d in page])
        entries = tuple(LibraryEntry(d, times.get(d.best.chunk.revision_id, "")) for d in page)
        after = offset + len(page)
        return LibraryResult(
            query=query, entries=entries, total_results=len(documents), offset=offset,
            next_offset=after if after < len(documents) else None, search_mode=result.search_mode,
            search_duration_ms=round((time.perf_counter() - started) * 1000, 3), degraded_reason=reason,
            baseline_id=result.baseline_id, as_of=result.as_of,
        )  # fmt: skip
