"""How much of a collection the semantic arm can see: a search over a half-embedded index says so.

``retrievo index`` embeds as it goes and ``retrievo embed`` fills in later, so a collection can be
searched while only some of its chunks have vectors. The dense arm then ranks only those; the answer
carries ``coverage`` (the share with vectors), its ``search_mode`` gains ``-partial`` and
``degraded_reason`` says what to run. Counts come from ``Store.coverage`` (SQLite recounts only after
a write) and are refreshed off the search path every ``TTL_S``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from retrievo.models import Hit, SearchMode, SearchResult
from retrievo.store.base import CollectionInfo, Store
from retrievo.text.hashing import embedding_key, sha256_text

TTL_S = 5.0
LEXICAL_ONLY = "lexical-only"  # the search mode when the semantic arm could not run (search/hybrid.py)


class Coverage:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[int, str], tuple[float, int, int]] = {}
        self._refreshing: set[tuple[int, str]] = set()

    def counts(self, store: Store, collection: str) -> tuple[int, int]:
        """(current chunks, chunks with a vector for the collection's model).

        Counted on the first search; after that, counts older than ``TTL_S`` are refreshed in a thread
        while searches go on with the last ones, so counting never sits on a search's path.
        """
        key, now = (id(store), collection), time.monotonic()
        with self._lock:
            seen = self._seen.get(key)
            stale = seen is not None and now - seen[0] > TTL_S and key not in self._refreshing
            if stale:
                self._refreshing.add(key)
        if seen is None:
            return self._count(store, collection, key)
        if stale:
            threading.Thread(target=self._count, args=(store, collection, key), daemon=True).start()
        return seen[1], seen[2]

    def _count(self, store: Store, collection: str, key: tuple[int, str]) -> tuple[int, int]:
        try:
            chunks, embedded = store.coverage(collection)
        finally:
            with self._lock:
                self._refreshing.discard(key)
        with self._lock:
            self._seen[key] = (time.monotonic(), chunks, embedded)
        return chunks, embedded

    def apply(self, store: Store, collection: str, result: SearchResult) -> SearchResult:
        """The result with ``coverage`` and each hit's ``embedding_status`` when the semantic arm ran, or
        would have (lexical-only: each hit says whether it has a vector at all, ``missing`` without)."""
        if result.search_mode == LEXICAL_ONLY:
            info = store.get_collection(collection)
            return replace(
                result,
                hits=tuple(replace(h, embedding_status=_status(store, info, h, False)) for h in result.hits),
            )
        if result.search_mode not in (SearchMode.HYBRID, SearchMode.SEMANTIC):
            return result
        chunks, embedded = self.counts(store, collection)
        info = store.get_collection(collection)
        hits = tuple(
            replace(hit, embedding_status=_status(store, info, hit, embedded >= chunks))
            for hit in result.hits
        )
        if not chunks or embedded >= chunks:
            return replace(result, hits=hits, coverage=1.0)
        share = embedded / chunks
        reason = (
            f"only {embedded} of {chunks} chunks ({share:.0%}) have vectors, so meaning-based ranking saw only "
            "those; run `retrievo embed` (or re-run `retrievo index`) to embed the rest"
        )
        return replace(
            result, hits=hits, coverage=round(share, 4), search_mode=f"{result.search_mode}-partial",
            degraded_reason=result.degraded_reason or reason,
        )  # fmt: skip


def _status(store: Store, info: CollectionInfo | None, hit: Hit, complete: bool) -> str:
    chunk = hit.chunk
    if chunk.drifted or sha256_text(chunk.text) != chunk.chunk_hash:
        # Never served silently: the stored text and its hash disagree, or the text is no longer its
        # revision's at its offsets, or the revision's source hash changed (`retrievo verify`).
        return "damaged"
    if chunk.embed_key and chunk.embed_key != embedding_key(chunk.context, chunk.text):
        return "stale"  # its vector is another text's: `regenerate --stale` re-embeds exactly these
    if complete or info is None or info.model_id is None or info.dimensions is None:
        return "fresh" if complete else "missing"
    found = store.chunk_vectors([hit.chunk.chunk_id], info.model_id, info.dimensions)
    return "fresh" if found else "missing"


def unavailable_reason(
    no_embedder: bool, store: Store, collection: str, cooling_down: Callable[[], str | None]
) -> str | None:
    """Why the semantic arm cannot run at all (the search is then lexical-only), or None."""
    if no_embedder:
        return "embedder is 'none' (RETRIEVO_EMBEDDER=none): keyword search only"
    info = store.get_collection(collection)
    if info is not None and info.model_id is None:
        return "this collection has no embeddings yet; run `retrievo embed` or re-run `retrievo index`"
    return cooling_down()
