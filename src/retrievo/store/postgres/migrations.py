"""Named, ordered, transactional migrations for PostgreSQL (each in its own transaction)."""

from __future__ import annotations

import psycopg

from retrievo.store import code_index, embeddings, jobs, keys, queries
from retrievo.store.postgres import history, shared_embedding

M001_INITIAL = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE collections (
    id SERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    model_id TEXT,
    dimensions INTEGER,
    created_at TEXT NOT NULL,
    last_indexed_at TEXT
);
CREATE TABLE documents (
    id TEXT PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    source TEXT NOT NULL,
    kind TEXT NOT NULL,
    title TEXT NOT NULL,
    media_type TEXT NOT NULL,
    current_revision_id TEXT,
    metadata JSONB NOT NULL DEFAULT '{}',
    modified_at TEXT,
    created_at TEXT NOT NULL,
    deleted_at TEXT,
    UNIQUE (collection_id, source)
);
CREATE TABLE revisions (
    id TEXT PRIMARY KEY,
    document_id TEXT NOT NULL REFERENCES documents(id),
    number INTEGER NOT NULL,
    source_hash TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL,
    superseded_at TEXT,
    UNIQUE (document_id, number)
);
CREATE TABLE chunks (
    id BIGSERIAL PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    document_id TEXT NOT NULL REFERENCES documents(id),
    revision_id TEXT NOT NULL REFERENCES revisions(id),
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    context TEXT NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    chunk_hash TEXT NOT NULL,
    source_hash TEXT NOT NULL,
    chunker TEXT NOT NULL,
    chunker_version INTEGER NOT NULL,
    embed_key TEXT NOT NULL,
    metadata JSONB NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    superseded_at TEXT,
    token_count INTEGER NOT NULL,
    vector VECTOR
);
CREATE INDEX chunks_current ON chunks (collection_id) WHERE superseded_at IS NULL;
CREATE INDEX chunks_by_document ON chunks (document_id, revision_id, ordinal);
CREATE INDEX chunks_by_embed_key ON chunks (embed_key);
-- The keyword index: one row per (term, current chunk) with FTS5-identical terms, the term's count in
-- the chunk and the chunk's length, so BM25 reads only the postings of the query's terms.
CREATE TABLE postings (
    collection_id INTEGER NOT NULL,
    term TEXT NOT NULL,
    chunk_id BIGINT NOT NULL,
    tf INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    PRIMARY KEY (collection_id, term, chunk_id)
);
CREATE INDEX postings_by_chunk ON postings (chunk_id);
CREATE TABLE embeddings (
    embed_key TEXT NOT NULL,
    model_id TEXT NOT NULL,
    vector VECTOR NOT NULL,
    PRIMARY KEY (embed_key, model_id)
);
-- BM25 statistics over the current chunks of each collection, kept by the store's writes.
CREATE TABLE collection_stats (
    collection_id INTEGER PRIMARY KEY REFERENCES collections(id),
    chunk_count BIGINT NOT NULL DEFAULT 0,
    token_total BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE term_stats (
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    term TEXT NOT NULL,
    df BIGINT NOT NULL,
    PRIMARY KEY (collection_id, term)
);
"""

# The postings key carries tf and length, so BM25 reads one term's postings from the index alone
# (index-only scan, in key order) instead of fetching each row from the heap at random.
M002_COVERING_POSTINGS = """
ALTER TABLE postings DROP CONSTRAINT postings_pkey;
ALTER TABLE postings ADD PRIMARY KEY (collection_id, term, chunk_id) INCLUDE (tf, token_count);
"""

M003_ROOTS = queries.ROOTS_SCHEMA

# Bumped with every write of chunks.vector, in its transaction: the vector side index's generation is
# the collection's change stamp and this (store/postgres/vector_source.py).
M009_VECTORS_CHANGED = "ALTER TABLE collections ADD COLUMN vectors_changed BIGINT NOT NULL DEFAULT 0;"

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("m001_initial", M001_INITIAL),
    ("m002_covering_postings", M002_COVERING_POSTINGS),
    ("m003_roots", M003_ROOTS),
    ("m004_code_structure", code_index.SCHEMA.format(serial="BIGSERIAL")),
    ("m005_history", history.SCHEMA),
    ("m006_api_keys", keys.SCHEMA),
    ("m007_jobs", jobs.SCHEMA),
    ("m008_model_shadow", embeddings.SHADOW_SCHEMA),
    ("m009_vectors_changed", M009_VECTORS_CHANGED),
    ("m010_job_owners", jobs.OWNERS),
    ("m011_rate_usage", keys.USAGE_SCHEMA),
    ("m012_embed_batches", shared_embedding.SCHEMA),
    ("m013_key_expiry", keys.EXPIRY),
    ("m014_work_index", embeddings.WORK_INDEX),
)


def apply_migrations(conn: psycopg.Connection[object]) -> list[str]:
    # One server, many processes: a transaction-scoped advisory lock serialises migrating.
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('retrievo:migrations'))")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)"
        )
        done = {row[0] for row in conn.execute("SELECT name FROM migrations").fetchall()}  # type: ignore[index]
        for name, sql in MIGRATIONS:
            if name in done:
                continue
            conn.execute(sql.encode())
            if name == "m005_history":
                history.backfill(conn)
            conn.execute("INSERT INTO migrations (name, applied_at) VALUES (%s, now())", (name,))
            applied.append(name)
    return applied
