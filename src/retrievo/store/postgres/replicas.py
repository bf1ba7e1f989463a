"""Read replicas: a search's reads go to a streaming replica of the primary (issue 39).

PostgreSQL's own streaming replication does the copying (a replica made with ``pg_basebackup -R``); this
module only chooses where a read goes. Inside ``Store.reading()`` (one search, one answer's reads) the
thread reads from one replica, round-robin over those that answer and whose lag is at most
``max_lag_s``; writes, jobs and everything outside ``reading()`` use the primary. A replica's state is
looked at once a second at most: reachable, in recovery, how far its replay is behind the primary's WAL
(bytes, and seconds since the last transaction it replayed when it is behind).

Read-your-writes: a write's answer carries the primary's position (``Store.position()``, an LSN); a read
that passes it back (``read_after``) goes to a replica that has replayed that far, waiting up to
``AFTER_WAIT_S`` for one, else to the primary.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from retrievo.secrets import redact

CHECK_S = 1.0  # a replica's state is re-read at most this often
AFTER_WAIT_S = 2.0  # how long a read that passed a position waits for a replica to replay it
CONNECT_TIMEOUT_S = 2

_STATE = """SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text,
    pg_wal_lsn_diff(%s::pg_lsn, pg_last_wal_replay_lsn()),
    COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0)"""


@dataclass
class Replica:
    url: str
    pool: ConnectionPool[Any]
    checked_at: float = 0.0
    usable: bool = False
    replayed: str | None = None  # the LSN it has replayed
    lag_bytes: float = 0.0
    lag_s: float = 0.0
    reason: str = "not checked yet"
    reads: int = 0
    skipped: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def describe(self) -> dict[str, Any]:
        return {"replica": redact(self.url), "usable": self.usable, "replayed": self.replayed,
                "lag_bytes": int(self.lag_bytes), "lag_s": round(self.lag_s, 3), "reason": self.reason,
                "reads": self.reads, "skipped": self.skipped}  # fmt: skip


class Replicas:
    def __init__(
        self,
        urls: Sequence[str],
        max_lag_s: float,
        primary_position: Callable[[], str],
        configure: Callable[[psycopg.Connection[Any]], None] | None = None,
    ) -> None:
        self.max_lag_s = max_lag_s
        self._position = primary_position
        self._replicas = [Replica(url, _pool(url, configure)) for url in urls]
        self._turn = itertools.count()
        self.primary_reads = 0

    def choose(self, after: str | None) -> ConnectionPool[Any] | None:
        """The pool of the replica this read goes to; None: the primary (none usable, or none replayed
        ``after`` within AFTER_WAIT_S)."""
        deadline = time.monotonic() + AFTER_WAIT_S
        while True:
            start = next(self._turn)
            for step in range(len(self._replicas)):
                replica = self._replicas[(start + step) % len(self._replicas)]
                if self._fit(replica, after):
                    replica.reads += 1
                    return replica.pool
            if after is None or time.monotonic() >= deadline:
                self.primary_reads += 1
                return None
            time.sleep(0.05)

    def _fit(self, replica: Replica, after: str | None) -> bool:
        self._check(replica, force=False)
        if not replica.usable:
            replica.skipped += 1
            return False
        if after is None:
            return True
        if not self._replayed(replica, after):
            self._check(replica, force=True)
            return replica.usable and self._replayed(replica, after)
        return True

    @staticmethod
    def _replayed(replica: Replica, after: str) -> bool:
        return replica.replayed is not None and _lsn(replica.replayed) >= _lsn(after)

    def _check(self, replica: Replica, force: bool) -> None:
        with replica.lock:
            if not force and time.monotonic() - replica.checked_at < CHECK_S:
                return
            replica.checked_at = time.monotonic()
            try:
                primary = self._position()
                with replica.pool.connection(timeout=CONNECT_TIMEOUT_S) as conn:
                    row = conn.execute(_STATE, (primary,)).fetchone()
            except (
                Exception
            ) as exc:  # psycopg.Error, the pool's PoolTimeout, OSError: unreachable all the same
                replica.usable, replica.reason = False, f"unreachable ({type(exc).__name__})"
                return
            assert row is not None
            in_recovery, replica.replayed = bool(row[0]), row[1]
            replica.lag_bytes = float(row[2] or 0)
            replica.lag_s = float(row[3]) if replica.lag_bytes > 0 else 0.0  # caught up: no lag
            if not in_recovery:
                replica.usable, replica.reason = False, "not a replica (not in recovery)"
            elif replica.lag_s > self.max_lag_s:
                replica.usable, replica.reason = False, f"{replica.lag_s:.1f} s behind the primary"
            else:
                replica.usable, replica.reason = True, "streaming"

    def status(self) -> list[dict[str, Any]]:
        for replica in self._replicas:
            self._check(replica, force=False)
        return [r.describe() for r in self._replicas]

    def close(self) -> None:
        for replica in self._replicas:
            replica.pool.close()


def _pool(url: str, configure: Callable[[psycopg.Connection[Any]], None] | None) -> ConnectionPool[Any]:
    return ConnectionPool(
        url, min_size=0, max_size=8, timeout=CONNECT_TIMEOUT_S, configure=configure, open=True,
        kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
    )  # fmt: skip


def _lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)
