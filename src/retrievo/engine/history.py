"""Point-in-time reads (``engine.history``): baselines, ``as_of`` resolution and retention.

Every query takes a read context — a baseline (by id or name) or an ``as_of`` time, never both — and
every answer says which point it was read at: ``baseline_id`` (None at HEAD) and ``as_of``, the
effective stamp (at HEAD, the collection's latest change), so re-running a query with that ``as_of``
gives the same evidence. See ``retrievo.store.history`` for validity and the clock.
"""

from __future__ import annotations

from typing import Protocol

from retrievo.errors import ConfigError, PointInTimeError
from retrievo.models import Baseline, PruneReport
from retrievo.store.base import Store
from retrievo.store.history import check_baseline_name, parse_point
from retrievo.store.read_point import ReadPoint, resolve

__all__ = ["History", "ReadPoint", "resolve"]


class StoreHost(Protocol):
    """What the facade needs of the engine (its public methods; the engine is never imported here)."""

    def collection_store(self, collection: str | None) -> tuple[Store, str]: ...

    def open_store(self, create: bool = False, collection: str | None = None) -> Store: ...


class History:
    def __init__(self, engine: StoreHost) -> None:
        self._engine = engine

    def _store(self, collection: str | None) -> tuple[Store, str]:
        return self._engine.collection_store(collection)

    def create(self, name: str, collection: str | None = None, note: str = "") -> Baseline:
        """Pin the collection's current revisions under ``name`` (cheap: one row, nothing copied)."""
        store, collection_name = self._store(collection)
        return store.create_baseline(collection_name, check_baseline_name(name), note.strip())

    def list(self, collection: str | None = None) -> list[Baseline]:
        """Every baseline, oldest first (of one collection when given)."""
        if collection is None:
            return self._engine.open_store().baselines()
        store, collection_name = self._store(collection)
        return store.baselines(collection_name)

    def get(self, name_or_id: str, collection: str | None = None) -> Baseline:
        store, collection_name = self._store(collection)
        found = store.baselines(collection_name, name_or_id.strip())
        if not found:
            raise PointInTimeError(f"collection {collection_name!r} has no baseline {name_or_id!r}")
        return found[0]

    def delete(self, name_or_id: str, collection: str | None = None) -> Baseline:
        """Forget a baseline; its revisions stay until a later ``prune`` may remove them."""
        baseline = self.get(name_or_id, collection)
        self._store(collection)[0].delete_baseline(baseline.baseline_id)
        return baseline

    def prune(self, before: str, collection: str | None = None) -> PruneReport:
        """Remove revisions superseded before ``before`` that no baseline holds, with chunks and vectors."""
        store, collection_name = self._store(collection)
        try:
            point = parse_point(before, "before")
        except ConfigError as exc:
            raise PointInTimeError(str(exc)) from None
        with store.writer_lock(collection_name):
            return store.prune(collection_name, point)

    def point(self, collection: str | None, baseline: str | None, as_of: str | None) -> ReadPoint:
        store, collection_name = self._store(collection)
        return resolve(store, collection_name, baseline, as_of)
