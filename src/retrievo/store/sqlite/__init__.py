"""The embedded default store: one SQLite file, WAL, FTS5 BM25, exact numpy vector search."""

from retrievo.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
