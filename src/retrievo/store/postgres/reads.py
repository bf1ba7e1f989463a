"""The PostgreSQL store's plain reads: documents, revisions, chunk ids and vectors, records, status."""

from __future__ import annotations

import json
import time
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from retrievo.errors import DocumentNotFound
from retrievo.models import DocumentSummary, IndexStatus, Kind, RevisionText
from retrievo.store import queries
from retrievo.store.postgres import transfer
from retrievo.store.postgres.rows import collection_status
from retrievo.store.queries import format_style

KINDS_TTL_S = 2.0


class PostgresReads:
    path: str
    _kinds: tuple[float, dict[str, frozenset[str]]] | None  # content_kinds remembered (forgotten on writes)

    @abstractmethod
    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]: ...

    def list_records(self, collection: str) -> list[tuple[str, str, str, dict[str, object]]]:
        rows = self._rows(format_style(queries.RECORDS), (collection,))
        return [
            (r[0], r[1], r[2], r[3] if isinstance(r[3], dict) else json.loads(r[3] or "{}")) for r in rows
        ]

    def roots(self, collection: str) -> list[str]:
        return [row[0] for row in self._rows(format_style(queries.ROOTS), (collection,))]

    def revision_text(self, document_id: str, revision_id: str | None = None) -> RevisionText:
        clause = "r.id = %s" if revision_id else "r.id = d.current_revision_id"
        rows = self._rows(
            f"""SELECT d.id, r.id, col.name, d.source, d.title, d.kind, r.text, r.created_at,
                       r.id = d.current_revision_id AND d.deleted_at IS NULL, r.superseded_at
                FROM documents d JOIN revisions r ON r.document_id = d.id
                JOIN collections col ON col.id = d.collection_id WHERE d.id = %s AND {clause}""",
            [document_id, *([revision_id] if revision_id else [])],
        )
        if not rows:
            what = (
                f"revision {revision_id!r} of document {document_id!r}"
                if revision_id
                else f"document {document_id!r}"
            )
            raise DocumentNotFound(f"{what} is not in the index; take ids from search results")
        r = rows[0]
        return RevisionText(r[0], r[1], r[2], r[3], r[4], Kind(r[5]), r[6], r[7], bool(r[8]), r[9])

    def chunk_ids_of_revision(self, revision_id: str, chunker: str | None = None) -> list[int]:
        # Through revisions, so the lookup uses chunks_by_document (document_id leads it).
        rows = self._rows(
            """SELECT c.id FROM revisions r
               JOIN chunks c ON c.document_id = r.document_id AND c.revision_id = r.id
               WHERE r.id = %s AND (%s::text IS NULL OR c.chunker = %s) ORDER BY c.ordinal""",
            (revision_id, chunker, chunker),
        )
        return [int(row[0]) for row in rows]

    def current_chunk_ids(self, document_id: str) -> list[int]:
        rows = self._rows(
            "SELECT id FROM chunks WHERE document_id = %s AND superseded_at IS NULL ORDER BY ordinal",
            (document_id,),
        )
        return [int(row[0]) for row in rows]

    def chunk_vectors(
        self, chunk_ids: Sequence[int], model_id: str, dimensions: int
    ) -> dict[int, npt.NDArray[np.float32]]:
        if not chunk_ids:
            return {}
        rows = self._rows(
            """SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = %s
               WHERE c.id = ANY(%s)""",
            (model_id, [int(i) for i in chunk_ids]),
        )
        return {int(row[0]): transfer.as_array(row[1]) for row in rows}

    def chunks_with_vector(self, chunk_ids: Sequence[int], model_id: str) -> frozenset[int]:
        if not chunk_ids:
            return frozenset()
        rows = self._rows(
            """SELECT c.id FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = %s
               WHERE c.id = ANY(%s)""",
            (model_id, [int(i) for i in chunk_ids]),
        )
        return frozenset(int(row[0]) for row in rows)

    def list_documents(
        self, collection: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[DocumentSummary]:
        rows = self._rows(
            """SELECT d.id, col.name, d.source, d.title, d.kind, d.current_revision_id,
                      length(r.text) - length(replace(r.text, E'\n', ''))
                      + CASE WHEN r.text <> '' AND right(r.text, 1) <> E'\n' THEN 1 ELSE 0 END
               FROM documents d
               JOIN collections col ON col.id = d.collection_id
               LEFT JOIN revisions r ON r.id = d.current_revision_id
               WHERE d.deleted_at IS NULL AND (%s::text IS NULL OR col.name = %s)
               ORDER BY d.source, d.id LIMIT %s OFFSET %s""",
            (collection, collection, limit, offset),
        )
        return [DocumentSummary(r[0], r[1], r[2], r[3], Kind(r[4]), r[5], r[6]) for r in rows]

    def coverage(self, collection: str) -> tuple[int, int]:
        rows = self._rows(format_style(queries.COVERAGE), (collection,))
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    def revision_times(self, revision_ids: Sequence[str]) -> dict[str, str]:
        if not revision_ids:
            return {}
        rows = self._rows(format_style(queries.REVISION_TIMES + "= ANY(?)"), (list(revision_ids),))
        return {row[0]: row[1] for row in rows}

    def content_kinds(self, fresh: bool = False) -> dict[str, frozenset[str]]:
        """Remembered for KINDS_TTL_S (a DISTINCT over every document; SQLite keeps it per generation):
        whoever drops a kind filter on its strength filters the hits again (search/hybrid.py)."""
        now = time.monotonic()
        remembered = self._kinds
        if remembered is None or fresh or now - remembered[0] > KINDS_TTL_S:
            remembered = self._kinds = (
                now,
                queries.content_kinds(self._rows(format_style(queries.CONTENT_KINDS))),
            )
        return remembered[1]

    def status(self) -> IndexStatus:
        rows = self._rows(format_style(queries.STATUS))
        size = int(self._rows("SELECT pg_database_size(current_database())")[0][0])
        return IndexStatus(
            db=self.path, size_bytes=size, collections=tuple(collection_status(r) for r in rows)
        )
