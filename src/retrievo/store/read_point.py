"""Where a query reads: a baseline (by id or name), an ``as_of`` time, or HEAD, resolved against a
collection's timeline (``retrievo.engine.history`` is the facade over it)."""

from __future__ import annotations

from dataclasses import dataclass

from retrievo.errors import ConfigError, PointInTimeError
from retrievo.store.base import Store
from retrievo.store.history import parse_point


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
