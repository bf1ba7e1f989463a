"""Collections across databases (issue 39): a routing table places collections on other stores.

``routes`` (``RETRIEVO_ROUTES="hr=postgresql://…;it=/data/it.db"``, or a ``[routes]`` table beside
``[serve]`` in the config file) names, per collection, the store that holds it: another PostgreSQL server
or a SQLite file. Every collection not named lives in the default store (``--store`` / ``--db``), which
also keeps the shared state: API keys, jobs, the registry. A call about one collection opens its store;
a call about a document (``get_document``, find_similar by document) finds the store that holds it.

A search over several collections (``collection="hr,it"``) asks each and merges the answers by
relevance, a calibrated probability on every store, so one ranking comes out (``search_collections``).
``retrievo migrate --move`` carries one collection from a store to another (copied, verified, then
removed at the source); the route is then pointed at its new home.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from retrievo.config import DEFAULT_COLLECTION, Config
from retrievo.errors import ConfigError, DocumentNotFound
from retrievo.models import CollectionStatus, IndexStatus, SearchResult
from retrievo.store.base import Store
from retrievo.store.factory import open_store


class Routes:
    config: Config
    _store: Store | None
    _lock: threading.Lock
    _routed: dict[str, Store]

    def _routed_stores(self) -> dict[str, Store]:
        found: dict[str, Store] | None = getattr(self, "_routed", None)
        if found is None:
            found = {}
            self._routed = found
        return found

    def route(self, collection: str | None) -> str | None:
        """The store URL or file ``collection`` is routed to; None: the default store."""
        return dict(self.config.routes).get(collection) if collection else None

    def _open_store(self, create: bool, collection: str | None = None) -> Store:
        """The store holding ``collection`` (the default store without one, or when it is not routed)."""
        target = self.route(collection)
        with self._lock:
            if target is None:
                if self._store is None:
                    self._store = open_store(self.config, create)
                return self._store
            routed = self._routed_stores()
            if target not in routed:
                routed[target] = open_store(_config_for(self.config, target), create)
            return routed[target]

    def _every_store(self) -> list[Store]:
        """The default store and every routed one (opened now if need be)."""
        stores = [self._open_store(create=False)]
        for name, _ in self.config.routes:
            store = self._open_store(create=False, collection=name)
            if all(store is not s for s in stores):
                stores.append(store)
        return stores

    def _store_of_document(self, document_id: str) -> Store:
        """The store that holds a document (its id is unique across stores); DocumentNotFound if none."""
        stores = self._every_store() if self.config.routes else [self._open_store(create=False)]
        for store in stores[:-1]:
            try:
                store.revision_text(document_id)
            except DocumentNotFound:
                continue
            return store
        return stores[-1]  # the last one says DocumentNotFound itself

    def _close_routes(self) -> None:
        for store in self._routed_stores().values():
            store.close()
        self._routed_stores().clear()

    def status(self) -> IndexStatus:
        """Every collection's counts, whichever store holds it."""
        if not self.config.routes:
            return self._open_store(create=False).status()
        stores = self._every_store()
        statuses = [store.status() for store in stores]
        routed = dict(self.config.routes)
        collections: list[CollectionStatus] = []
        for store, status in zip(stores, statuses, strict=True):
            for item in status.collections:  # a collection shows where its route says it is
                if self._open_store(create=False, collection=item.name) is store:
                    collections.append(item)
        place = "; ".join(s.db for s in statuses)
        return IndexStatus(db=place, size_bytes=sum(s.size_bytes for s in statuses),
                           collections=tuple(sorted(collections, key=lambda c: (c.name in routed, c.name))))  # fmt: skip

    def content_kinds(self, fresh: bool = False) -> dict[str, frozenset[str]]:
        """What each collection holds now ("document", "code", "record", "registry"); empty before the
        first index. Surfaces offer the tools that can answer over it. ``fresh``: never a remembered reading."""
        try:
            stores = self._every_store()
        except Exception:
            return {}
        kinds: dict[str, frozenset[str]] = {}
        for store in stores:
            for name, held in store.content_kinds(fresh).items():
                if self._open_store(create=False, collection=name) is store:
                    kinds[name] = held
        return kinds

    def holding_content(self) -> str:
        """Where a search that names no collection reads when the default (``default``, not configured by
        another name) does not exist: every collection holding documents or code, comma-joined; "" when
        there is none (the search's "does not exist" stands). Asked only once the default was not found."""
        existing = set(self.collections() or ())
        if self.config.collection != DEFAULT_COLLECTION or DEFAULT_COLLECTION in existing:
            return ""
        kinds = self.content_kinds(fresh=True)
        return ",".join(n for n, has in sorted(kinds.items()) if n in existing and has & {"document", "code"})

    def searched(self, collection: str | None) -> str:
        """The collections a search reads: the one named, else the default, else — when the default does not
        exist — those holding documents or code (``holding_content``; none: the search says the default does
        not exist)."""
        wanted = collection or self.config.collection
        if collection is None and "," not in wanted:
            store = self._open_store(create=False, collection=wanted)
            if store.get_collection(wanted) is None and (held := self.holding_content()):
                return held
        return wanted

    def collections(self) -> list[str] | None:
        """The collections, wherever they are; None when the index cannot be read (the next call says why)."""
        try:
            stores = self._every_store()
            names = {name for store in stores for name in store.list_collections()
                     if self._open_store(create=False, collection=name) is store}  # fmt: skip
        except Exception:
            return None
        return sorted(names)

    def one_store(self, result: SearchResult, collection: str | None) -> tuple[Store, SearchResult]:
        """The store an answer is packed from — the named collection's, else its first hit's (a search naming
        none may fan out over collections in other stores) — and the answer's hits that it holds."""
        first = result.hits[0].chunk.collection if result.hits and not collection else None
        store = self._open_store(create=False, collection=first or collection or self.config.collection)
        held = tuple(
            h for h in result.hits if self._open_store(create=False, collection=h.chunk.collection) is store
        )
        return store, replace(result, hits=held)

    def search_collections(
        self, query: str, collections: list[str], limit: int, **options: Any
    ) -> SearchResult:
        """One search over several collections (any stores): each asked for ``limit``, the answers merged by
        relevance (a calibrated probability everywhere), the first ``limit`` kept."""
        if len(set(collections)) != len(collections) or not all(collections):
            raise ConfigError(f"name each collection once: {','.join(collections)!r}")
        answers: list[SearchResult] = [
            self.search(query, name, limit, **options)  # type: ignore[attr-defined]
            for name in collections
        ]
        hits = sorted((h for a in answers for h in a.hits), key=lambda h: (-h.relevance, -h.score))[:limit]
        first = answers[0]
        reasons = "; ".join(f"{name}: {a.degraded_reason}" for name, a in zip(collections, answers, strict=True)
                            if a.degraded_reason)  # fmt: skip
        models = tuple(sorted({m for a in answers for m in a.models}))
        return replace(first, hits=tuple(hits), degraded_reason=reasons or None, models=models,
                       search_duration_ms=round(sum(a.search_duration_ms for a in answers), 3),
                       baseline_id=None if len(answers) > 1 else first.baseline_id,
                       answerability=max((a.answerability for a in answers if a.answerability is not None),
                                         default=None))  # fmt: skip


def _config_for(config: Config, target: str) -> Config:
    """The default configuration with ``target`` (a postgresql:// URL or an index file) as its store."""
    if target.startswith(("postgresql://", "postgres://")):
        return replace(config, store=target, read_stores=(), routes=())
    return replace(config, store=None, db=Path(target).expanduser(), read_stores=(), routes=())
