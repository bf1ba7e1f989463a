"""Named, ordered, transactional migrations. Opening an older index applies what it lacks."""

from __future__ import annotations

import sqlite3

from retrievo.store import code_index, embeddings, jobs, keys, queries
from retrievo.store.sqlite import history

# Each migration is (name, SQL script); names sort in the order they must run.
M001_INITIAL = """
CREATE TABLE collections (
    id INTEGER PRIMARY KEY,
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
    metadata TEXT NOT NULL DEFAULT '{}',
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
    id INTEGER PRIMARY KEY,
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
    keywords TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    superseded_at TEXT
);
CREATE INDEX chunks_current ON chunks (collection_id, superseded_at);
CREATE INDEX chunks_by_document ON chunks (document_id, revision_id, ordinal);
CREATE INDEX chunks_by_embed_key ON chunks (embed_key);
CREATE TABLE embeddings (
    embed_key TEXT NOT NULL,
    model_id TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (embed_key, model_id)
) WITHOUT ROWID;
-- External-content FTS5 over the current chunks only: BM25 over context + text (+ identifier parts).
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    context, text, keywords, content='chunks', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
-- Per-term document counts, read to skip terms too common to change a BM25 ranking.
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta (key, value) VALUES ('generation', '0');
"""

M002_ROOTS = queries.ROOTS_SCHEMA

# FTS5 writes its pending terms out as a segment each time they pass ``hashsize`` (1 MB by default), and
# merges segments as it goes; 16 MB made a bulk load of 20,000 realistic chunks 3.03 -> 2.83 s (issue 18,
# measured 2026-11-24, 2 cores). Kept in the table's own config, so it holds for every connection.
M008_FTS_HASHSIZE = "INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('hashsize', 16777216);"

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("m001_initial", M001_INITIAL),
    ("m002_roots", M002_ROOTS),
    ("m003_code_structure", code_index.SCHEMA.format(serial="INTEGER")),
    ("m004_history", history.SCHEMA),
    ("m005_api_keys", keys.SCHEMA),
    ("m006_jobs", jobs.SCHEMA),
    ("m007_model_shadow", embeddings.SHADOW_SCHEMA),
    ("m008_fts_hashsize", M008_FTS_HASHSIZE),
    ("m009_job_owners", jobs.OWNERS),
    ("m010_rate_usage", keys.USAGE_SCHEMA),
    ("m011_key_expiry", keys.EXPIRY),
    ("m012_work_index", embeddings.WORK_INDEX),
)


def apply_migrations(db: sqlite3.Connection) -> list[str]:
    """Apply, each in its own transaction, every migration this file has not seen yet."""
    db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {row[0] for row in db.execute("SELECT name FROM migrations")}
    applied: list[str] = []
    for name, sql in MIGRATIONS:
        if name in done:
            continue
        # executescript commits anything pending first, so the transaction lives inside the script.
        script = (
            f"BEGIN IMMEDIATE;\n{sql}\n"
            f"INSERT INTO migrations (name, applied_at) VALUES ('{name}', strftime('%Y-%m-%dT%H:%M:%fZ'));\n"
            "COMMIT;"
        )
        try:
            db.executescript(script)
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        applied.append(name)
    return applied
