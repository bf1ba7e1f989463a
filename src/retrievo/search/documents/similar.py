"""Chunks in other documents most similar to a chunk, or to a whole document's mean vector."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from retrievo.errors import ConfigError, DocumentNotFound, EmbedderUnavailable
from retrievo.models import Filters, Hit, SearchResult
from retrievo.store.base import Store

if TYPE_CHECKING:
    from retrievo.store.read_point import ReadPoint


def check_scope(collection: str, allowed: Collection[str] | None, what: str) -> None:
    """Outside the allow-list reads exactly like absent: existence is not revealed either."""
    if allowed is not None and collection not in allowed:
        raise DocumentNotFound(f"{what} is not in the index; take ids from search results")


def similar_chunks(
    store: Store,
    chunk_id: int | None,
    document_id: str | None,
    limit: int,
    filters: Filters,
    collections: Collection[str] | None,
    read_point: Callable[[str], ReadPoint] | None = None,
    collection_asked: str | None = None,
) -> SearchResult:
    """``read_point`` resolves the caller's read context once the collection is known;
    ``collection_asked``: the collection the caller named, refused with where the chunk is when it is
    elsewhere (after the allow-list: a collection the caller may not see is never named)."""
    started = time.perf_counter()
    if (chunk_id is None) == (document_id is None):
        raise ConfigError("give exactly one of chunk_id or document_id")
    if chunk_id is not None:
        chunk = store.get_chunks([chunk_id]).get(chunk_id)
        if chunk is None:
            raise DocumentNotFound(f"chunk {chunk_id} is not in the index; take ids from search results")
        source_document, collection, ids = chunk.document_id, chunk.collection, [chunk_id]
    else:
        assert document_id is not None
        revision = store.revision_text(document_id)
        source_document, collection = document_id, revision.collection
        ids = store.current_chunk_ids(document_id)
    check_scope(
        collection,
        collections,
        f"chunk {chunk_id}" if chunk_id is not None else f"document {document_id!r}",
    )
    if collection_asked is not None and collection_asked != collection:
        what = f"chunk {chunk_id}" if chunk_id is not None else f"document {document_id!r}"
        raise ConfigError(
            f"{what} is in collection {collection!r}, not {collection_asked!r}: similar passages are found in "
            f"its own collection; name {collection!r} or leave the collection out"
        )
    point = read_point(collection) if read_point else None
    if point is not None and point.filter_as_of is not None:
        filters = replace(filters, as_of=point.filter_as_of)
        if document_id is not None:
            revision_id = store.revision_at(document_id, point.filter_as_of)
            if revision_id is None:
                raise DocumentNotFound(f"document {document_id!r} did not exist at {point.as_of}")
            ids = store.chunk_ids_of_revision(revision_id)
    info = store.get_collection(collection)
    if info is None or info.model_id is None or info.dimensions is None:
        raise EmbedderUnavailable(f"collection {collection!r} has no embeddings; run `retrievo embed` first")
    found = store.chunk_vectors(ids, info.model_id, info.dimensions)
    if not found:
        raise EmbedderUnavailable("that chunk has no vector yet; run `retrievo embed` first")
    query = np.stack(list(found.values())).mean(axis=0)
    query = query / (float(np.linalg.norm(query)) or 1.0)
    base = filters
    scoped = replace(base, exclude_document_ids=(*base.exclude_document_ids, source_document))
    arm = store.vector_search(collection, info.model_id, query.astype(np.float32), scoped, limit)
    chunks = store.get_chunks([hit.chunk_id for hit in arm])
    hits = tuple(
        Hit(chunk=chunks[h.chunk_id], score=h.score, relevance=max(0.0, min(1.0, h.score)))
        for h in arm
        if h.chunk_id in chunks
    )
    elapsed = round((time.perf_counter() - started) * 1000, 3)
    label = f"similar to chunk {chunk_id}" if chunk_id is not None else f"similar to document {document_id}"
    return SearchResult(
        query=label, search_mode="semantic", search_duration_ms=elapsed, hits=hits,
        baseline_id=point.baseline_id if point else None, as_of=point.as_of if point else None,
    )  # fmt: skip
