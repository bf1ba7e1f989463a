"""Point-in-time reads (``engine.history``): baselines, ``as_of`` resolution and retention.

Every query takes a read context — a baseline (by id or name) or an ``as_of`` time, never both — and
every answer says which point it was read at: ``baseline_id`` (None at HEAD) and ``as_of``, the
effective stamp (at HEAD, the collection's latest change), so re-running a query with that ``as_of``
gives the same evidence. See ``retrievo.store.history`` for validity and the clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrievo.errors import ConfigError, PointInTimeError
from retrievo.models import Baseline, PruneReport
from retrievo.store.base import Store
from retrievo.store.history import check_baseline_name, parse_point

if TYPE_CHECKING:
    from retrievo.engine import Engine


@dataclass(frozen=True)
class ReadPoint:
    """Where a query reads: ``filter_as_of`` is None at HEAD (the current chunks, fastest paths)."""

    baseline_id: str | None
    as_of: str | None  # the effective stamp every response reports
    filter_as_of: str | None


def resolve(store: Store, collection: str, baseline: str | None, as_of: str | None) -> ReadPoint:
    if baseline and as_of:
        raise PointInTimeError("give a baseline or an as_of time, not both")
    timeline = store.timeline(collection)
    if baseline:
        found = store.baselines(collection, baseline.strip(), counted=False)
        if not found:
            known = ", ".join(b.name for b in store.baselines(collection, counted=False)) or "none yet"
            raise PointInTimeError(
                f"collection {collection!r} has no baseline {baseline!r} (its baselines: {known}); "
                f"create one with `retrievo baseline create NAME --collection {collection}`"
            )
        return ReadPoint(found[0].baseline_id, found[0].as_of, found[0].as_of)
    if as_of:
        try:
            point = parse_point(as_of)
        except ConfigError as exc:
            raise PointInTimeError(str(exc)) from None
        if point < timeline.created_at:
            raise PointInTimeError(
                f"collection {collection!r} did not exist at {as_of} (it was created {timeline.created_at})"
            )
        if timeline.history_from and point < timeline.history_from:
            raise PointInTimeError(
                f"history of collection {collection!r} before {timeline.history_from} was pruned; "
                "ask for a later time or for a baseline"
            )
        return ReadPoint(None, point, point)
    return ReadPoint(None, timeline.last_change_at or timeline.created_at, None)


class History:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def _store(self, collection: str | None) -> tuple[Store, str]:
        return self._engine._collection_store(collection)

    def create(self, name: str, collection: str | None = None, note: str = "") -> Baseline:
        """Pin the collection's current revisions under ``name`` (cheap: one row, nothing copied)."""
        store, collection_name = self._store(collection)
        return store.create_baseline(collection_name, check_baseline_name(name), note.strip())

    def list(self, collection: str | None = None) -> list[Baseline]:
        """Every baseline, oldest first (of one collection when given)."""
        if collection is None:
            return self._engine._open_store(create=False).baselines()
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
