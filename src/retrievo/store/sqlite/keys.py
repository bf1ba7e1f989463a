"""The SQLite side of the API-key and job tables (statements shared in ``retrievo.store.keys``)."""

from __future__ import annotations

import sqlite3
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from retrievo.errors import ConfigError
from retrievo.store import jobs, keys


class SQLiteKeys(keys.ApiKeys, jobs.JobTable):
    @abstractmethod
    def _read(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]: ...

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def _key_rows(self, sql: str, params: Sequence[object] = ()) -> list[Sequence[Any]]:
        return list(self._read(sql, params))

    def _key_write(self, sql: str, params: Sequence[object]) -> int:
        try:
            with self._transaction() as db:
                return db.execute(sql, params).rowcount
        except sqlite3.IntegrityError as exc:
            raise ConfigError(str(exc)) from exc
