"""Reads of whole documents, revisions and chunk neighbourhoods (for citations and context)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from retrievo.errors import DocumentNotFound
from retrievo.models import DocumentSummary, Kind, RevisionText
from retrievo.store.sqlite.vectors import decode_vectors


def revision_text(db: sqlite3.Connection, document_id: str, revision_id: str | None) -> RevisionText:
    revision_clause = "r.id = ?" if revision_id else "r.id = d.current_revision_id"
    params: list[object] = [document_id, *([revision_id] if revision_id else [])]
    row = db.execute(
        f"""SELECT d.id, r.id, col.name, d.source, d.title, d.kind, r.text, r.created_at,
                   r.id = d.current_revision_id AND d.deleted_at IS NULL, r.superseded_at
            FROM documents d JOIN revisions r ON r.document_id = d.id
            JOIN collections col ON col.id = d.collection_id
            WHERE d.id = ? AND {revision_clause}""",
        params,
    ).fetchone()
    if row is None:
        what = (
            f"revision {revision_id!r} of document {document_id!r}"
            if revision_id
            else f"document {document_id!r}"
        )
        raise DocumentNotFound(f"{what} is not in the index; take ids from search results")
    return RevisionText(
        document_id=row[0], revision_id=row[1], collection=row[2], path=row[3], title=row[4], kind=Kind(row[5]),
        text=row[6], created_at=row[7], is_current=bool(row[8]), valid_to=row[9],
    )  # fmt: skip


def chunk_ids_of_revision(db: sqlite3.Connection, revision_id: str, chunker: str | None = None) -> list[int]:
    # Through revisions, so the lookup uses chunks_by_document (document_id leads it), not a table scan.
    rows = db.execute(
        """SELECT c.id FROM revisions r
           JOIN chunks c ON c.document_id = r.document_id AND c.revision_id = r.id
           WHERE r.id = ? AND (? IS NULL OR c.chunker = ?) ORDER BY c.ordinal""",
        (revision_id, chunker, chunker),
    )
    return [row[0] for row in rows]


def current_chunk_ids_of_document(db: sqlite3.Connection, document_id: str) -> list[int]:
    rows = db.execute(
        "SELECT id FROM chunks WHERE document_id = ? AND superseded_at IS NULL ORDER BY ordinal",
        (document_id,),
    )
    return [row[0] for row in rows]


def chunk_vectors(
    db: sqlite3.Connection, chunk_ids: Sequence[int], model_id: str, dimensions: int
) -> dict[int, npt.NDArray[np.float32]]:
    if not chunk_ids:
        return {}
    rows = db.execute(
        """SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
           WHERE c.id IN (SELECT value FROM json_each(?))""",
        (model_id, json.dumps([int(i) for i in chunk_ids])),
    ).fetchall()
    vectors = decode_vectors([row[1] for row in rows], dimensions)
    return {int(row[0]): vector for row, vector in zip(rows, vectors, strict=True)}


def list_documents(
    db: sqlite3.Connection, collection: str | None, limit: int, offset: int = 0
) -> list[DocumentSummary]:
    where = "AND col.name = ?" if collection else ""
    rows = db.execute(
        f"""SELECT d.id, col.name, d.source, d.title, d.kind, d.current_revision_id,
                   length(r.text) - length(replace(r.text, char(10), ''))
                   + (r.text <> '' AND substr(r.text, -1) <> char(10))
            FROM documents d
            JOIN collections col ON col.id = d.collection_id
            LEFT JOIN revisions r ON r.id = d.current_revision_id
            WHERE d.deleted_at IS NULL {where} ORDER BY d.source, d.id LIMIT ? OFFSET ?""",
        [collection, limit, offset] if collection else [limit, offset],
    ).fetchall()
    return [DocumentSummary(r[0], r[1], r[2], r[3], Kind(r[4]), r[5], r[6]) for r in rows]
