"""The pgvector HNSW index over current chunk vectors: one partial expression index per dimension."""

from __future__ import annotations

import logging
from typing import Any

import psycopg

log = logging.getLogger(__name__)

# Per vector, beside its float32 values: HNSW neighbour lists (m=16 → up to 32 links on layer 0),
# element and tuple headers. pgvector builds far slower once the graph outgrows maintenance_work_mem.
GRAPH_BYTES_PER_VECTOR = 512
MAX_BUILD_MEMORY_MB = 4096
ANNOUNCE_MIN_VECTORS = 10_000  # below this the build takes seconds; no need to say anything


def index_name(dimensions: int) -> str:
    return f"chunks_hnsw_{int(dimensions)}"


def create(conn: psycopg.Connection[Any], dimensions: int) -> None:
    """Build the index if it is missing, with enough maintenance memory for the graph (in a transaction)."""
    dims = int(dimensions)
    if conn.execute("SELECT to_regclass(%s)", (index_name(dims),)).fetchone()[0]:  # type: ignore[index]
        return
    vectors = int(
        conn.execute(
            "SELECT count(*) FROM chunks WHERE superseded_at IS NULL AND vector_dims(vector) = %s", (dims,)
        ).fetchone()[0]  # type: ignore[index]
    )
    needed_mb = min(MAX_BUILD_MEMORY_MB, 64 + vectors * (dims * 4 + GRAPH_BYTES_PER_VECTOR) // 2**20)
    current_kb = int(
        conn.execute("SELECT setting FROM pg_settings WHERE name = 'maintenance_work_mem'").fetchone()[0]  # type: ignore[index]
    )
    if needed_mb * 1024 > current_kb:
        conn.execute(f"SET LOCAL maintenance_work_mem = '{needed_mb}MB'".encode())
    if vectors >= ANNOUNCE_MIN_VECTORS:
        log.info("building the HNSW index over %d vectors (a few minutes per million)…", vectors)
    conn.execute(
        f"""CREATE INDEX IF NOT EXISTS {index_name(dims)} ON chunks
            USING hnsw ((vector::vector({dims})) vector_cosine_ops)
            WHERE superseded_at IS NULL AND vector_dims(vector) = {dims}""".encode()
    )


def drop_if_empty(conn: psycopg.Connection[Any], dimensions: int) -> bool:
    """Drop the index when no current vector is in it, so a first load need not feed it row by row."""
    dims = int(dimensions)
    holds_vectors = conn.execute(
        """SELECT EXISTS (SELECT 1 FROM chunks
                          WHERE superseded_at IS NULL AND vector IS NOT NULL AND vector_dims(vector) = %s)""",
        (dims,),
    ).fetchone()[0]  # type: ignore[index]
    if holds_vectors:
        return False
    conn.execute(f"DROP INDEX IF EXISTS {index_name(dims)}".encode())
    return True
