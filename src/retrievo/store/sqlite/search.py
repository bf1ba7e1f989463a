"""The SQLite store's two search arms: FTS5 BM25 and exact cosine over the cached matrix."""

from __future__ import annotations

import sqlite3

import numpy as np
import numpy.typing as npt

from retrievo.models import ArmHit, Filters
from retrievo.store.sqlite.filters import filter_sql
from retrievo.store.sqlite.fts_query import match_expression
from retrievo.store.sqlite.vectors import VectorMatrix

# bm25() column weights for (context, text, keywords); equal, as the PostgreSQL store assumes.
BM25_WEIGHTS = (1.0, 1.0, 1.0)


def keyword_search(
    db: sqlite3.Connection, collection_id: int, query: str, filters: Filters, limit: int
) -> list[ArmHit]:
    expression = match_expression(query)
    if expression is None:
        return []
    where, params = filter_sql(filters)
    rows = db.execute(
        f"""SELECT c.id, bm25(chunks_fts, {", ".join(map(str, BM25_WEIGHTS))}) AS rank_score
            FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
            JOIN documents d ON d.id = c.document_id
            WHERE chunks_fts MATCH ? AND c.collection_id = ? AND c.superseded_at IS NULL{where}
            ORDER BY rank_score LIMIT ?""",
        [expression, collection_id, *params, limit],
    ).fetchall()
    # FTS5's bm25() is negated so that ascending order is best-first; report the usual positive score.
    return [ArmHit(row[0], rank, -float(row[1])) for rank, row in enumerate(rows, start=1)]


def vector_search(
    db: sqlite3.Connection,
    vectors: VectorMatrix,
    collection_id: int,
    query: npt.NDArray[np.float32],
    filters: Filters,
    limit: int,
) -> list[ArmHit]:
    if len(vectors.ids) == 0 or limit <= 0:
        return []
    scores = vectors.matrix @ query.astype(np.float32)
    where, params = filter_sql(filters)
    if where:
        allowed = [
            row[0]
            for row in db.execute(
                f"""SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id
                    WHERE c.collection_id = ? AND c.superseded_at IS NULL{where}""",
                [collection_id, *params],
            )
        ]
        mask = np.isin(vectors.ids, np.array(allowed, dtype=np.int64))
        scores = np.where(mask, scores, -np.inf)
    count = min(limit, int(np.isfinite(scores).sum()))
    if count == 0:
        return []
    top = np.argpartition(-scores, count - 1)[:count]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [ArmHit(int(vectors.ids[i]), rank, float(scores[i])) for rank, i in enumerate(top, start=1)]
