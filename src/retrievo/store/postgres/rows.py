"""Rows and connections of the PostgreSQL store: the pgvector adapter, a chunk row as a ``Chunk``."""

from __future__ import annotations

from typing import Any

import psycopg

from retrievo.models import Chunk, CollectionStatus, Kind


def configure(conn: psycopg.Connection[Any]) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)


def chunk_from_row(row: dict[str, Any]) -> Chunk:
    return Chunk(
        chunk_id=int(row["id"]), document_id=row["document_id"], revision_id=row["revision_id"],
        collection=row["collection"], ordinal=row["ordinal"], text=row["text"], context=row["context"],
        start=row["start_offset"], end=row["end_offset"], line_start=row["line_start"], line_end=row["line_end"],
        chunk_hash=row["chunk_hash"], source_hash=row["source_hash"], chunker=row["chunker"],
        chunker_version=row["chunker_version"], metadata=row["metadata"], path=row["source"], title=row["title"],
        kind=Kind(row["kind"]), drifted=bool(row.get("drifted", False)), embed_key=row.get("embed_key") or "",
    )  # fmt: skip


def collection_status(r: tuple[Any, ...]) -> CollectionStatus:
    """One row of ``queries.STATUS``."""
    return CollectionStatus(
        name=r[0], model_id=r[1], dimensions=r[2], last_indexed=r[3], documents=int(r[4]), chunks=int(r[5]),
        embedded=int(r[6]), missing=int(r[5]) - int(r[6]),
    )  # fmt: skip
