"""The PostgreSQL + pgvector store: same contract as SQLite, real BM25, HNSW vectors, a pool."""

from retrievo.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
