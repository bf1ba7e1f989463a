"""How the SQLite store writes: one transaction per write, or, inside ``bulk_load``, batches.

A commit per document cost a quarter of a bulk load (and FTS5 a segment per commit), so inside
``bulk_load`` a thread's bulk writes (``_transaction(batch=True)``: document revisions) share one
transaction, committed every BATCH_S. Each write is whole; a crash loses at most the last BATCH_S of
writes, never a committed one, and the next run writes those documents again (their hashes were
never stored). Any other write first commits the open batch, then runs on its own.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from abc import abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager

BATCH_S = 0.5  # inside bulk_load, how long writes share one transaction


class SQLiteWrites:
    _db: sqlite3.Connection
    _lock: threading.RLock
    _writing: threading.local  # .active: this thread is inside a write transaction
    _bulk: threading.local  # .depth (bulk_load nesting), .open, .started (its batch)

    @abstractmethod
    def _unpin(self) -> None:
        """This thread's reads look at the generation again (it may have just changed it)."""

    @contextmanager
    def _transaction(self, batch: bool = False) -> Iterator[sqlite3.Connection]:
        """One write. ``batch`` (the bulk writes: document revisions): inside ``bulk_load``, share the
        thread's open batch; any other write first commits that batch, then runs on its own."""
        if getattr(self._bulk, "depth", 0):
            if batch:
                with self._batched() as db:
                    yield db
                return
            self._commit_batch()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._writing.active = True
            try:
                yield self._db
                self._bump_generation()
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            finally:
                self._writing.active = False
                self._unpin()

    @contextmanager
    def _batched(self) -> Iterator[sqlite3.Connection]:
        """One bulk write inside this thread's batch, which commits once BATCH_S has passed.

        No savepoint per write: FTS5 flushes its pending terms at every savepoint, which cost as much as
        the commits saved. A write that fails rolls the whole batch back (at most BATCH_S of writes, none
        of them committed nor recorded as indexed: the next run writes them again) and raises. While the
        batch is open this thread holds the store lock and SQLite's write lock; the generation is bumped
        when it opens and again at its commit, so nothing this thread reads (and caches) inside it shares
        a generation with what other connections see.
        """
        bulk = self._bulk
        if not getattr(bulk, "open", False):
            self._lock.acquire()  # held until the batch commits: other threads' writes wait for it
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._bump_generation()
            except BaseException:
                self._end_batch(commit=False)
                raise
            self._writing.active = True
            bulk.open, bulk.started = True, time.monotonic()
        try:
            yield self._db
        except BaseException:
            self._end_batch(commit=False)
            raise
        if time.monotonic() - bulk.started >= BATCH_S:
            self._end_batch(commit=True)

    def _end_batch(self, commit: bool) -> None:
        """Commit (or give up) this thread's open batch and let go of the locks."""
        bulk = self._bulk
        bulk.open = False
        self._writing.active = False
        try:
            if commit:
                try:
                    self._bump_generation()
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
            elif self._db.in_transaction:
                self._db.execute("ROLLBACK")
        finally:
            self._unpin()
            self._lock.release()

    def _commit_batch(self) -> None:
        if getattr(self._bulk, "open", False):
            self._end_batch(commit=True)

    def _bump_generation(self) -> None:
        self._db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")

    @contextmanager
    def bulk_load(self, collection: str) -> Iterator[None]:
        """This thread's bulk writes share transactions committed every BATCH_S (see the module);
        leaving, even on an error, commits what was written."""
        bulk = self._bulk
        bulk.depth = getattr(bulk, "depth", 0) + 1
        try:
            yield
        finally:
            bulk.depth -= 1
            if not bulk.depth:
                self._commit_batch()
