"""The engine's library search (seed 003's ``search_library``), mixed into ``Engine``."""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from retrievo.errors import ConfigError
from retrievo.models import Filters, Kind, SearchMode, SearchResult
from retrievo.search.documents.library import DocumentHit, by_document
from retrievo.search.query import read_query
from retrievo.store.base import Store
from retrievo.store.sqlite.filters import iso_bound

DEPTH = 500  # passages looked at, at most; the documents above the threshold among them make total_results
FIRST_DEPTH = 50  # passages looked at first (deeper only while every document among them passes)
MAX_LIMIT = 50


def _bound(value: str | None, name: str, end_of_day: bool = False) -> datetime | None:
    """An ISO date or time (checked as every date filter is) as a UTC instant."""
    if value is None:
        return None
    moment = datetime.fromisoformat(iso_bound(value, name, end_of_day))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _within(processed_at: str | None, since: datetime | None, until: datetime | None) -> bool:
    if not processed_at:
        return False
    moment = datetime.fromisoformat(processed_at)
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return (since is None or moment >= since) and (until is None or moment <= until)


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

    def _revision_times(self, documents: Sequence[DocumentHit]) -> dict[str, str]:
        """When each document's revision was indexed, read from its own collection's store (a search over
        several collections, each maybe in a store of its own)."""
        revisions: dict[str, list[str]] = {}
        for document in documents:
            chunk = document.best.chunk
            revisions.setdefault(chunk.collection, []).append(chunk.revision_id)
        times: dict[str, str] = {}
        for name, ids in revisions.items():
            store, _ = self._collection_store(name)
            times.update(store.revision_times(ids))
        return times

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
        """Documents (not passages) most similar to ``query`` by the hybrid search, each with its best
        passage, above ``min_similarity`` on the seed's similarity scale (``retrievo.search.documents.library``:
        the cosine, lifted by the share of the query's words a passage holds), best first; a page of
        ``limit`` from ``offset``. ``date_from`` / ``date_to`` compare against ``processed_at``, when the
        document's revision was indexed (seed 003). Without vectors the similarity is by words only (a
        cosine of 0 lifted by them, at most 0.75): ``degraded_reason`` says so."""
        if not 1 <= limit <= MAX_LIMIT:
            raise ConfigError(f"limit must be 1-{MAX_LIMIT}; ask for the next page with the cursor")
        if not 0.0 <= min_similarity <= 1.0:
            raise ConfigError("min_similarity must be between 0 and 1")
        if offset < 0:
            raise ConfigError("offset must be 0 or more")
        started = time.perf_counter()
        since, until = _bound(date_from, "date_from"), _bound(date_to, "date_to", end_of_day=True)
        filters = Filters(kinds=(Kind.DOCUMENT,), tags=tuple(tags))
        # Similarities never rise down the fused order (search/documents/library.py), so the documents above the
        # threshold are a prefix: look deeper only while every document seen so far is above it.
        depth = FIRST_DEPTH  # the same on every page: a cursor's pages read one list
        while True:
            result = self.search(
                query, collection, limit=depth, mode=SearchMode.HYBRID, filters=filters, explain=True,
                baseline=baseline, as_of=as_of,
            )  # fmt: skip
            found = by_document(result.hits, read_query(query))
            if (
                depth >= DEPTH
                or len(result.hits) < depth
                or (found and found[-1].similarity < min_similarity)
            ):
                break
            depth = min(DEPTH, depth * 4)
        documents = [d for d in found if d.similarity >= min_similarity]
        dated = since is not None or until is not None  # seed 003: documents processed in the range
        times = self._revision_times(documents) if dated else {}
        if dated:
            documents = [d for d in documents if _within(times.get(d.best.chunk.revision_id), since, until)]
        reason = result.degraded_reason
        if result.search_mode == SearchMode.KEYWORD:
            reason = (
                f"{reason or 'no vectors'}; similarity is by words only: a cosine of 0 lifted by the share "
                "of the query's words a document holds, at most 0.75"
            )
        page = documents[offset : offset + limit]
        if not dated:
            times = self._revision_times(page)
        entries = tuple(LibraryEntry(d, times.get(d.best.chunk.revision_id, "")) for d in page)
        after = offset + len(page)
        return LibraryResult(
            query=query, entries=entries, total_results=len(documents), offset=offset,
            next_offset=after if after < len(documents) else None, search_mode=result.search_mode,
            search_duration_ms=round((time.perf_counter() - started) * 1000, 3), degraded_reason=reason,
            baseline_id=result.baseline_id, as_of=result.as_of,
        )  # fmt: skip
