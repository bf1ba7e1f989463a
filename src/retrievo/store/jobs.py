"""Background jobs in the index itself, so any process on the same store can follow or resume them.

A job row says what runs (``kind``, ``collection``, ``parameters``), how far it got (``done`` of
``total``), and its state: queued → running → done | failed | cancelled, with ``cancelling`` asked for
by another process and ``interrupted`` when its worker died without finishing (kill -9, a crash). The
worker beats ``heartbeat_at`` while it runs. Both stores run these statements (``?`` placeholders).

Jobs for a tier of servers (``retrievo serve`` on one PostgreSQL, ``retrievo.operations.jobs.JobTaker``) carry an
``owner``: empty while queued, then the server that took it (``host:pid``). ``claim_job`` gives each such
job to exactly one caller: the oldest queued one, or one whose owner stopped beating (died) before
``stale_before`` — taken over, ``attempts`` counting the takes.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from retrievo.models import Job

SCHEMA = """
CREATE TABLE jobs (
    job_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    collection TEXT NOT NULL,
    status TEXT NOT NULL,
    done INTEGER NOT NULL DEFAULT 0,
    total INTEGER NOT NULL DEFAULT 0,
    parameters TEXT NOT NULL,
    result TEXT,
    error TEXT,
    pid INTEGER,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    heartbeat_at TEXT
);
"""
OWNERS = """
ALTER TABLE jobs ADD COLUMN owner TEXT;
ALTER TABLE jobs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
"""
# Jobs a server may take: a tier job queued, or running with its owner's heartbeat stopped.
CLAIMABLE = "owner IS NOT NULL AND kind <> 'watch' AND (status = 'queued' OR (status = 'running' AND heartbeat_at < ?))"
CLAIM_SET = (
    "status = 'running', owner = ?, attempts = attempts + 1, pid = NULL, heartbeat_at = ?, "
    "started_at = COALESCE(started_at, ?)"
)
COLUMNS = (
    "job_id", "kind", "collection", "status", "done", "total", "parameters", "result", "error", "pid",
    "created_at", "started_at", "finished_at", "heartbeat_at", "owner", "attempts",
)  # fmt: skip
UPDATABLE = frozenset(COLUMNS) - {"job_id", "kind", "collection", "parameters", "created_at"}


def _job(row: Sequence[Any]) -> Job:
    data = dict(zip(COLUMNS, row, strict=True))
    data["parameters"] = json.loads(data["parameters"])
    data["result"] = json.loads(data["result"]) if data["result"] else None
    return Job(**data)


class JobTable:
    """The store's job methods (mixed into both stores); each store supplies reads and one write."""

    @abstractmethod
    def _key_rows(self, sql: str, params: Sequence[object] = ()) -> list[Sequence[Any]]: ...

    @abstractmethod
    def _key_write(self, sql: str, params: Sequence[object]) -> int: ...

    def save_job(self, job: Job) -> None:
        values = [getattr(job, c) for c in COLUMNS]
        values[COLUMNS.index("parameters")] = json.dumps(job.parameters)
        values[COLUMNS.index("result")] = json.dumps(job.result) if job.result is not None else None
        self._key_write(
            f"INSERT INTO jobs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})", values
        )

    def update_job(self, job_id: str, only_if: Sequence[str] = (), **fields: Any) -> bool:
        """Set ``fields``; with ``only_if``, only while the job's status is one of those. True if it changed."""
        unknown = set(fields) - UPDATABLE
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        if "result" in fields and fields["result"] is not None:
            fields["result"] = json.dumps(fields["result"])
        sql = f"UPDATE jobs SET {', '.join(f'{name} = ?' for name in fields)} WHERE job_id = ?"
        params = [*fields.values(), job_id]
        if only_if:
            sql += f" AND status IN ({', '.join('?' * len(only_if))})"
            params += list(only_if)
        return self._key_write(sql, params) > 0

    def claim_job(self, owner: str, at: str, stale_before: str) -> Job | None:
        """Take one tier job for ``owner`` (see the module's docstring); None when there is none. Each job
        goes to one caller: the update is a compare-and-set on the state it was chosen in."""
        rows = self._key_rows(
            f"SELECT job_id FROM jobs WHERE {CLAIMABLE} ORDER BY created_at LIMIT 10", (stale_before,)
        )
        for (job_id,) in rows:
            taken = self._key_write(
                f"UPDATE jobs SET {CLAIM_SET} WHERE job_id = ? AND {CLAIMABLE}",
                (owner, at, at, job_id, stale_before),
            )
            if taken:
                return self.get_job(job_id)
        return None

    def take_lease(self, lease_id: str, owner: str, at: str, stale_before: str) -> bool:
        """Hold the lease row ``lease_id`` (a ``watch`` job, made by the caller) for ``owner``: taken when it
        has ended, is the caller's own, or its holder stopped beating before ``stale_before``. A
        compare-and-set, so of two takers one wins."""
        return (
            self._key_write(
                "UPDATE jobs SET status = 'running', owner = ?, heartbeat_at = ?, attempts = attempts + 1 "
                "WHERE job_id = ? AND (status <> 'running' OR owner = ? OR heartbeat_at < ?)",
                (owner, at, lease_id, owner, stale_before),
            )
            > 0
        )

    def get_job(self, job_id: str) -> Job | None:
        rows = self._key_rows(f"SELECT {', '.join(COLUMNS)} FROM jobs WHERE job_id = ?", (job_id,))
        return _job(rows[0]) if rows else None

    def list_jobs(self, limit: int = 50) -> list[Job]:
        rows = self._key_rows(
            f"SELECT {', '.join(COLUMNS)} FROM jobs ORDER BY created_at DESC, job_id LIMIT ?", (limit,)
        )
        return [_job(row) for row in rows]
