"""Filters as PostgreSQL SQL over ``c`` (chunks) and ``d`` (documents); same meaning as SQLite's."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from retrievo.models import Filters
from retrievo.store.sqlite.filters import check_metadata_key, iso_bound, path_glob_pattern


def glob_to_regex(glob: str) -> str:
    """SQLite GLOB semantics (``*`` any run, ``?`` one character, ``[...]`` a class) as a POSIX regex."""
    out, i = ["^"], 0
    while i < len(glob):
        ch = glob[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[" and "]" in glob[i + 2 :]:
            end = glob.index("]", i + 2)
            body = glob[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("^") else body) + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out) + "$"


def filter_sql(filters: Filters) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if filters.kinds:
        clauses.append("d.kind = ANY(%s)")
        params.append([str(kind) for kind in filters.kinds])
    if filters.strategy:
        clauses.append("c.chunker = %s")
        params.append(filters.strategy)
    if filters.path_glob:
        clauses.append("d.source ~ %s")
        params.append(glob_to_regex(path_glob_pattern(filters.path_glob)))
    for tag in filters.tags:
        clauses.append("d.metadata -> 'tags' ? %s")
        params.append(tag)
    for key, value in filters.metadata:
        check_metadata_key(key)
        clauses.append("(c.metadata ->> %s = %s OR d.metadata ->> %s = %s)")
        params.extend([key, value, key, value])
    if filters.date_from:
        clauses.append("d.modified_at >= %s")
        params.append(iso_bound(filters.date_from, "date_from"))
    if filters.date_to:
        clauses.append("d.modified_at <= %s")
        params.append(iso_bound(filters.date_to, "date_to", end_of_day=True))
    if filters.document_ids:
        clauses.append("d.id = ANY(%s)")
        params.append(list(filters.document_ids))
    if filters.exclude_document_ids:
        clauses.append("NOT (d.id = ANY(%s))")
        params.append(list(filters.exclude_document_ids))
    return (" AND " + " AND ".join(clauses) if clauses else ""), params


def passing_chunk_ids(
    rows: Callable[[str, Sequence[object]], list[tuple[Any, ...]]],
    collection: str,
    chunk_ids: Sequence[int],
    filters: Filters,
) -> set[int]:
    """Which of these current chunks of the collection pass ``filters``."""
    if not chunk_ids:
        return set()
    where, params = filter_sql(filters)
    found = rows(
        f"""SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id
            JOIN collections col ON col.id = c.collection_id
            WHERE col.name = %s AND c.superseded_at IS NULL AND c.id = ANY(%s){where}""",
        [collection, list(chunk_ids), *params],
    )
    return {int(row[0]) for row in found}
