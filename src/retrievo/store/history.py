"""Transaction time, shared by both stores: the clock, validity, baselines and pruning as SQL.

Every revision (and each of its chunks) is valid from ``created_at`` until ``superseded_at`` (a later
revision or a deletion closed it; NULL while current). A point in time T sees the rows with
``created_at <= T < superseded_at``. Stamps are UTC ISO strings with microseconds from the store's
clock, strictly increasing per collection, so two changes in one second still order and string
order is time order. A baseline is one row: a name for a stamp — it copies no chunk or vector.

SQL here uses ``?`` placeholders; the PostgreSQL store converts them with ``format_style``.
"""

from __future__ import annotations

import hashlib
from abc import abstractmethod
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from retrievo.errors import ConfigError
from retrievo.models import Baseline, Timeline

# The chunk ``c`` was valid at the point in time bound twice after it.
VALID_AT = "c.created_at <= ? AND (c.superseded_at IS NULL OR c.superseded_at > ?)"
REVISION_VALID_AT = "r.created_at <= ? AND (r.superseded_at IS NULL OR r.superseded_at > ?)"

HISTORY_SCHEMA = """
ALTER TABLE collections ADD COLUMN last_change_at TEXT;
ALTER TABLE collections ADD COLUMN history_from TEXT;
CREATE TABLE baselines (
    id TEXT PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    name TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    as_of TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (collection_id, name)
);
CREATE INDEX chunks_validity ON chunks (collection_id, created_at);
CREATE INDEX revisions_validity ON revisions (document_id, created_at);
UPDATE collections SET last_change_at = (
    SELECT max(stamp) FROM (
        SELECT max(r.created_at) AS stamp FROM revisions r JOIN documents d ON d.id = r.document_id
        WHERE d.collection_id = collections.id
        UNION ALL
        SELECT max(d.deleted_at) FROM documents d WHERE d.collection_id = collections.id) x);
"""

# Moving a collection between stores keeps its clock and its baselines.
COLLECTION_CLOCK_FIELDS = ("last_change_at", "history_from")
BASELINE_FIELDS = ("id", "name", "note", "as_of", "created_at")
DUMP_BASELINES = (
    "SELECT id, name, note, as_of, created_at FROM baselines WHERE collection_id = ? ORDER BY as_of"
)
RESTORE_BASELINE = (
    "INSERT INTO baselines (collection_id, id, name, note, as_of, created_at) VALUES (?, ?, ?, ?, ?, ?)"
)
RESTORE_CLOCK = "UPDATE collections SET last_change_at = ?, history_from = ? WHERE id = ?"

LAST_CHANGE = "SELECT last_change_at FROM collections WHERE id = ?"
SET_LAST_CHANGE = "UPDATE collections SET last_change_at = ? WHERE id = ?"
TIMELINE = "SELECT created_at, last_change_at, history_from FROM collections WHERE name = ?"

_PINNED = """(SELECT count(*) FROM revisions r JOIN documents d ON d.id = r.document_id
            WHERE d.collection_id = b.collection_id
              AND r.created_at <= b.as_of AND (r.superseded_at IS NULL OR r.superseded_at > b.as_of))"""


def baselines_sql(counted: bool) -> str:
    """Baselines with how many revisions each pins (a scan of the collection's revisions) or 0."""
    pinned = _PINNED if counted else "0"
    return f"""SELECT b.id, b.name, col.name, b.as_of, b.note, {pinned}
               FROM baselines b JOIN collections col ON col.id = b.collection_id"""


INSERT_BASELINE = (
    "INSERT INTO baselines (id, collection_id, name, note, as_of, created_at) VALUES (?, ?, ?, ?, ?, ?)"
)
DELETE_BASELINE = "DELETE FROM baselines WHERE id = ?"

REVISION_AT = f"""
    SELECT r.id FROM revisions r WHERE r.document_id = ? AND {REVISION_VALID_AT}
    ORDER BY r.number DESC LIMIT 1"""

# Superseded revisions of a collection closed at or before a cutoff, and whether a baseline holds them.
# After a prune, points from the latest closing of a removed revision on are still exact: history_from.
PRUNABLE = """
    SELECT r.id, r.superseded_at, EXISTS (SELECT 1 FROM baselines b WHERE b.collection_id = d.collection_id
                         AND r.created_at <= b.as_of AND r.superseded_at > b.as_of)
    FROM revisions r JOIN documents d ON d.id = r.document_id
    WHERE d.collection_id = ? AND r.superseded_at IS NOT NULL AND r.superseded_at <= ?"""
# Deleted documents with no revision left, and vectors no chunk uses any more.
ORPHAN_DOCUMENTS = """
    SELECT d.id FROM documents d WHERE d.collection_id = ? AND d.deleted_at IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM revisions r WHERE r.document_id = d.id)"""


def format_stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def now_stamp() -> str:
    return format_stamp(datetime.now(UTC))


def next_stamp(last: str | None) -> str:
    """Now, or a microsecond after the collection's last change when the wall clock has not moved past it."""
    now = datetime.now(UTC)
    if last:
        previous = datetime.fromisoformat(last)
        if now <= previous:
            now = previous + timedelta(microseconds=1)
    return format_stamp(now)


def parse_point(value: str, name: str = "as_of") -> str:
    """A user's ISO date or time (naive means UTC) as a stamp comparable with the index's."""
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError as exc:
        raise ConfigError(
            f"{name} must be an ISO date or time such as 2026-11-20 or 2026-11-20T14:30:00Z, got {value!r}"
        ) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return format_stamp(moment)


def baseline_id(collection: str, name: str, stamp: str) -> str:
    return "bl_" + hashlib.sha256(f"{collection}\x00{name}\x00{stamp}".encode()).hexdigest()[:16]


def check_baseline_name(name: str) -> str:
    cleaned = name.strip()
    if not cleaned or len(cleaned) > 200 or any(ch in cleaned for ch in "\x00\n\r"):
        raise ConfigError(f"a baseline name must be 1–200 characters on one line, got {name!r}")
    if cleaned.startswith("bl_"):
        raise ConfigError(f"baseline names may not start with 'bl_' (ids do), got {name!r}")
    return cleaned


def baseline_where(collection: str | None, name_or_id: str | None) -> tuple[str, list[object]]:
    """WHERE for ``BASELINES``: one collection, and one baseline by id or name."""
    clauses: list[str] = []
    params: list[object] = []
    if collection is not None:
        clauses.append("col.name = ?")
        params.append(collection)
    if name_or_id is not None:
        clauses.append("(b.id = ? OR b.name = ?)")
        params.extend([name_or_id, name_or_id])
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


class PointInTimeReads:
    """The point-in-time reads both stores answer with the same SQL (mixed into each store's mixin)."""

    @abstractmethod
    def _history_rows(self, sql: str, params: Sequence[object]) -> Sequence[Sequence[Any]]:
        """Run ``sql`` written with ``?`` placeholders."""

    @abstractmethod
    def _collection_id(self, name: str) -> int: ...

    def timeline(self, collection: str) -> Timeline:
        rows = self._history_rows(TIMELINE, (collection,))
        if not rows:
            self._collection_id(collection)  # raises CollectionNotFound
        return Timeline(rows[0][0], rows[0][1], rows[0][2])

    def baselines(
        self, collection: str | None = None, name_or_id: str | None = None, counted: bool = True
    ) -> list[Baseline]:
        where, params = baseline_where(collection, name_or_id)
        rows = self._history_rows(baselines_sql(counted) + where + " ORDER BY b.as_of", params)
        return [Baseline(r[0], r[1], r[2], r[3], r[4], int(r[5])) for r in rows]

    def revision_at(self, document_id: str, point: str) -> str | None:
        rows = self._history_rows(REVISION_AT, (document_id, point, point))
        return str(rows[0][0]) if rows else None
