"""Parse user-facing filters (``KEY=VALUE`` strings or a JSON object) into ``Filters``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from retrievo.errors import ConfigError
from retrievo.ingest.chunkers import CHUNKERS
from retrievo.models import Filters, Kind

_KINDS = ", ".join(k.value for k in Kind)


def filters_from_pairs(pairs: Iterable[str]) -> Filters:
    """``kind=code``, ``path=docs/*.md``, ``tag=hr``, ``date_from=2026-01-01``, ``strategy=semantic``,
    anything else metadata."""
    values: dict[str, list[str]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"filter {pair!r} must look like KEY=VALUE, e.g. kind=document or tag=hr")
        values.setdefault(key.strip(), []).append(value.strip())
    return filters_from_mapping(values)


def filters_from_mapping(raw: Mapping[str, Any]) -> Filters:
    def many(key: str) -> list[str]:
        value = raw.get(key)
        if value is None:
            return []
        items = value if isinstance(value, list) else [value]
        return [str(item) for item in items]

    def one(key: str) -> str | None:
        items = many(key)
        if len(items) > 1:
            raise ConfigError(f"filter {key!r} takes one value, got {len(items)}")
        return items[0] if items else None

    kinds: list[Kind] = []
    for kind in many("kind"):
        try:
            kinds.append(Kind(kind))
        except ValueError as exc:
            raise ConfigError(f"unknown kind {kind!r}; choose one of {_KINDS}") from exc
    known = {"kind", "path", "tag", "tags", "date_from", "date_to", "document_id", "collection", "metadata",
             "strategy"}  # fmt: skip
    strategy = one("strategy")
    if strategy is not None and strategy not in CHUNKERS:
        raise ConfigError(f"unknown strategy {strategy!r}; choose one of {', '.join(CHUNKERS)}")
    metadata = [(key, value) for key in raw if key not in known for value in many(key)]
    nested = raw.get("metadata")
    if nested is not None:
        if not isinstance(nested, Mapping):
            raise ConfigError("filter 'metadata' must be an object of key/value pairs")
        metadata.extend((str(k), str(v)) for k, v in nested.items())
    return Filters(
        kinds=tuple(kinds),
        path_glob=one("path"),
        tags=tuple(many("tag") + many("tags")),
        metadata=tuple(metadata),
        date_from=one("date_from"),
        date_to=one("date_to"),
        document_ids=tuple(many("document_id")),
        strategy=strategy,
    )
