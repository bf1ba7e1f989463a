"""The PostgreSQL side of the API-key and job tables (statements shared in ``retrievo.store.keys``)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from retrievo.errors import ConfigError
from retrievo.store import jobs, keys
from retrievo.store.queries import format_style


class PostgresKeys(keys.ApiKeys, jobs.JobTable):
    @abstractmethod
    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[psycopg.Connection[Any]]: ...

    def _key_rows(self, sql: str, params: Sequence[object] = ()) -> list[Sequence[Any]]:
        return list(self._rows(format_style(sql), params))

    def _key_write(self, sql: str, params: Sequence[object]) -> int:
        try:
            with self._transaction() as conn:
                return conn.execute(format_style(sql).encode(), params).rowcount
        except psycopg.errors.UniqueViolation as exc:
            raise ConfigError(str(exc)) from exc
