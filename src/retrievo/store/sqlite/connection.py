"""Opening an index file safely: missing, corrupt or foreign files get clear errors."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from retrievo.errors import IndexCorruptError, IndexMissingError
from retrievo.store.sqlite.history import register_functions
from retrievo.store.sqlite.migrations import apply_migrations

BUSY_TIMEOUT_MS = 30_000


def check_index_file(path: Path, create: bool) -> None:
    if not path.exists():
        if not create:
            raise IndexMissingError(
                f"no index at {path}; run `retrievo index PATH --db {path}` first (or set RETRIEVO_DB)"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        return
    if path.is_dir():
        raise IndexCorruptError(f"{path} is a directory, not an index file; pass a file path with --db")
    # The header is not read here with open(): closing any descriptor of the file drops every POSIX lock
    # this process holds on it, those of another store's open connections too (sqlite.org/howtocorrupt.html
    # 2.2), and a connection closing in another process then deletes the WAL under them: their writes were
    # lost. SQLite reads the header itself (``connect``: "file is not a database").


def connect(path: Path, create: bool) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, foreign keys on."""
    check_index_file(path, create)
    try:
        db = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")
        register_functions(db)
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "migrations" not in tables:
            db.close()
            raise IndexCorruptError(
                f"{path} is an SQLite database but not a retrievo index; choose another --db"
            )
        if create or tables:
            apply_migrations(db)
        if not create and not tables:
            db.close()
            raise IndexMissingError(f"index at {path} is empty; run `retrievo index PATH --db {path}` first")
        db.execute("SELECT count(*) FROM collections").fetchone()
        return db
    except sqlite3.DatabaseError as exc:
        if "file is not a database" in str(exc):
            raise IndexCorruptError(
                f"{path} is not a retrievo index (not an SQLite file); move it aside or choose another --db"
            ) from exc
        raise IndexCorruptError(
            f"index file {path} cannot be read ({exc}); it may be corrupt — move it aside and re-index"
        ) from exc


class Readers:
    """One read connection per thread, so that searches run side by side (WAL: readers never wait
    for each other or for the writer). The writer keeps its own connection, under the store's lock."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[sqlite3.Connection] = []

    def get(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(
                self._path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
            )
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA query_only = ON")
            register_functions(db)
            self._local.db = db
            with self._lock:
                self._all.append(db)
        return db

    def close(self) -> None:
        with self._lock:
            for db in self._all:
                db.close()
            self._all.clear()
        self._local = threading.local()
