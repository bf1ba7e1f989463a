"""API keys in the index itself, so every server process on one store sees the same keys.

Only a hash of each secret is stored (argon2, see ``retrievo.surfaces.access``); a key is found by its public
``key_id`` and revoked by setting ``revoked_at`` (the row stays, so a revoked key can be listed).
Both stores run these statements (``?`` placeholders; PostgreSQL converts them).
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from retrievo.errors import ConfigError
from retrievo.models import ApiKey

SCHEMA = """
CREATE TABLE api_keys (
    key_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    scope TEXT NOT NULL,
    collections TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE UNIQUE INDEX api_keys_active_name ON api_keys (name) WHERE revoked_at IS NULL;
"""

# A key may expire (``keys create --expires``): refused from then on, like a revoked one.
EXPIRY = "ALTER TABLE api_keys ADD COLUMN expires_at TEXT;"

COLUMNS = "key_id, name, scope, collections, created_at, revoked_at, expires_at"
INSERT = (
    "INSERT INTO api_keys (key_id, name, scope, collections, secret_hash, created_at, expires_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
SELECT_ALL = f"SELECT {COLUMNS} FROM api_keys ORDER BY created_at, key_id"
SELECT_ONE = f"SELECT {COLUMNS}, secret_hash FROM api_keys WHERE key_id = ?"
SELECT_BY_NAME = f"SELECT {COLUMNS} FROM api_keys WHERE (key_id = ? OR name = ?) AND revoked_at IS NULL"
REVOKE = "UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL"


USAGE_SCHEMA = """
CREATE TABLE rate_usage (
    key_id TEXT NOT NULL,
    server TEXT NOT NULL,
    second BIGINT NOT NULL,
    used INTEGER NOT NULL,
    PRIMARY KEY (key_id, server, second)
);
"""
USAGE_UPSERT = (
    "INSERT INTO rate_usage (key_id, server, second, used) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (key_id, server, second) DO UPDATE SET used = excluded.used"
)


def _key(row: Sequence[Any]) -> ApiKey:
    return ApiKey(
        key_id=row[0], name=row[1], scope=row[2], collections=tuple(json.loads(row[3])),
        created_at=row[4], revoked_at=row[5], expires_at=row[6],
    )  # fmt: skip


class ApiKeys:
    """The store's key methods (mixed into both stores); each store supplies reads and one write."""

    @abstractmethod
    def _key_rows(self, sql: str, params: Sequence[object] = ()) -> list[Sequence[Any]]: ...

    @abstractmethod
    def _key_write(self, sql: str, params: Sequence[object]) -> int:
        """Run one statement in its own transaction; the rows it changed. A duplicate: ConfigError."""

    def save_key(self, key: ApiKey, secret_hash: str) -> None:
        try:
            self._key_write(
                INSERT,
                (
                    key.key_id,
                    key.name,
                    key.scope,
                    json.dumps(list(key.collections)),
                    secret_hash,
                    key.created_at,
                    key.expires_at,
                ),
            )
        except ConfigError as exc:
            raise ConfigError(f"an active key is already named {key.name!r}; pick another name") from exc

    def api_keys(self, include_revoked: bool = False) -> list[ApiKey]:
        keys = [_key(row) for row in self._key_rows(SELECT_ALL)]
        return [key for key in keys if include_revoked or key.revoked_at is None]

    def key_secret(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key and its secret's hash, revoked or not (the caller checks ``revoked_at``)."""
        rows = self._key_rows(SELECT_ONE, (key_id,))
        return (_key(rows[0]), rows[0][7]) if rows else None

    def revoke_key(self, key_id_or_name: str, at: str) -> ApiKey:
        rows = self._key_rows(SELECT_BY_NAME, (key_id_or_name, key_id_or_name))
        if not rows:
            raise ConfigError(
                f"no active key has the id or name {key_id_or_name!r}; `retrievo keys list` shows them"
            )
        key = _key(rows[0])
        self._key_write(REVOKE, (at, key.key_id))
        return ApiKey(**{**key.__dict__, "revoked_at": at})

    # Rate-limit usage shared by the servers of one store (``retrievo.surfaces.access.SharedRate``) -------------

    def record_usage(self, server: str, second: int, used: dict[str, int]) -> None:
        """``server``'s requests per key in ``second`` (epoch seconds); rows older than a minute go."""
        for key_id, count in used.items():
            self._key_write(USAGE_UPSERT, (key_id, server, second, count))
        self._key_write("DELETE FROM rate_usage WHERE second < ?", (second - 60,))

    def usage_since(self, second: int, excluding: str) -> dict[str, int]:
        """Requests per key since ``second`` through every server but ``excluding``."""
        rows = self._key_rows(
            "SELECT key_id, SUM(used) FROM rate_usage WHERE second >= ? AND server <> ? GROUP BY key_id",
            (second, excluding),
        )
        return {str(row[0]): int(row[1]) for row in rows}
