"""Filters as SQL: one WHERE fragment over ``c`` (chunks) and ``d`` (documents), bound parameters only."""

from __future__ import annotations

import re
from datetime import datetime

from retrievo.errors import ConfigError
from retrievo.models import Filters

_METADATA_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


def filter_sql(filters: Filters) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if filters.kinds:
        clauses.append(f"d.kind IN ({','.join('?' * len(filters.kinds))})")
        params.extend(str(kind) for kind in filters.kinds)
    if filters.strategy:
        clauses.append("c.chunker = ?")
        params.append(filters.strategy)
    if filters.path_glob:
        clauses.append("d.source GLOB ?")
        params.append(path_glob_pattern(filters.path_glob))
    for tag in filters.tags:
        clauses.append("EXISTS (SELECT 1 FROM json_each(d.metadata, '$.tags') WHERE json_each.value = ?)")
        params.append(tag)
    for key, value in filters.metadata:
        check_metadata_key(key)
        path = f'$."{key}"'
        clauses.append(
            "(CAST(json_extract(c.metadata, ?) AS TEXT) = ? OR CAST(json_extract(d.metadata, ?) AS TEXT) = ?)"
        )
        params.extend([path, value, path, value])
    if filters.date_from:
        clauses.append("d.modified_at >= ?")
        params.append(iso_bound(filters.date_from, "date_from"))
    if filters.date_to:
        clauses.append("d.modified_at <= ?")
        params.append(iso_bound(filters.date_to, "date_to", end_of_day=True))
    if filters.document_ids:
        clauses.append(f"d.id IN ({','.join('?' * len(filters.document_ids))})")
        params.extend(filters.document_ids)
    if filters.exclude_document_ids:
        clauses.append(f"d.id NOT IN ({','.join('?' * len(filters.exclude_document_ids))})")
        params.extend(filters.exclude_document_ids)
    return (" AND " + " AND ".join(clauses) if clauses else ""), params


def check_metadata_key(key: str) -> None:
    if not _METADATA_KEY.match(key):
        raise ConfigError(
            f"metadata filter key {key!r} is not valid; use letters, digits, '_', '-' or '.' (e.g. page=3)"
        )


def path_glob_pattern(glob: str) -> str:
    """Globs match absolute source paths; a relative glob such as ``docs/*.md`` matches at any depth."""
    return glob if glob.startswith("/") else "*" + glob.lstrip("*")


def iso_bound(value: str, name: str, end_of_day: bool = False) -> str:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ConfigError(f"{name} must be an ISO date such as 2026-01-31, got {value!r}") from exc
    if end_of_day and len(value) <= 10:
        return parsed.date().isoformat() + "T23:59:59.999999"
    return parsed.isoformat()
