"""The PostgreSQL side of the API-key and job tables (statements shared in ``retrievo.store.keys``)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from retrievo.errors import ConfigError
from retrievo.models import Job
from retrievo.store import jobs, keys
from retrievo.store.queries import format_style


class PostgresKeys(keys.ApiKeys, jobs.JobTable):
    @abstractmethod
    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[psycopg.Connection[Any]]: ...

    def _key_rows(self, sql: str, params: Sequence[object] = ()) -> list[Sequence[Any]]:
        return list(self._rows(format_style(sql), params))

    def claim_job(self, owner: str, at: str, stale_before: str) -> Job | None:
        """One statement: the oldest claimable job, locked with ``FOR UPDATE SKIP LOCKED`` (servers
        claiming at once each get a different one, none waits), taken and returned."""
        sql = (
            f"UPDATE jobs SET {jobs.CLAIM_SET} WHERE job_id = (SELECT job_id FROM jobs WHERE {jobs.CLAIMABLE} "
            "ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING job_id"
        )
        with self._transaction() as conn:
            row = conn.execute(format_style(sql).encode(), (owner, at, at, stale_before)).fetchone()
        return self.get_job(row[0]) if row else None

    def _key_write(self, sql: str, params: Sequence[object]) -> int:
        try:
            with self._transaction() as conn:
                return conn.execute(format_style(sql).encode(), params).rowcount
        except psycopg.errors.UniqueViolation as exc:
            raise ConfigError(str(exc)) from exc
