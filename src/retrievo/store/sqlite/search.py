"""The SQLite store's two search arms: FTS5 BM25 and exact cosine over the cached matrix."""

from __future__ import annotations

import sqlite3

import numpy as np
import numpy.typing as npt

from retrievo.models import ArmHit, Filters
from retrievo.store.fts_query import PRUNE_MIN_ROWS, match_expression, prune_common_terms, query_terms
from retrievo.store.history import VALID_AT
from retrievo.store.sqlite.filters import filter_sql
from retrievo.store.sqlite.vectors import VectorMatrix, decode_vectors
from retrievo.store.tokenizer import shared_tokenizer

# bm25() column weights for (context, text, keywords); equal, as the PostgreSQL store assumes.
BM25_WEIGHTS = (1.0, 1.0, 1.0)


def keyword_search(
    db: sqlite3.Connection,
    collection_id: int,
    query: str,
    filters: Filters,
    limit: int,
    indexed_rows: int,
    only: bool,
) -> list[ArmHit]:
    """``indexed_rows``: current chunks in the FTS index (all collections) — BM25's N in FTS5;
    ``only``: the index holds this one collection (``ONLY_COLLECTION_SQL``)."""
    terms = query_terms(query)
    if indexed_rows >= PRUNE_MIN_ROWS and terms:
        terms = prune_common_terms(terms, document_frequencies(db, terms), indexed_rows)
    expression = match_expression(terms)
    if expression is None:
        return []
    where, params = filter_sql(filters)
    if not where and only:
        # Nothing to exclude: let FTS5 rank alone, without joining every match to its chunk row.
        rows = db.execute(
            f"""SELECT rowid, bm25(chunks_fts, {", ".join(map(str, BM25_WEIGHTS))}) AS rank_score
                FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank_score LIMIT ?""",
            [expression, limit],
        ).fetchall()
        return [ArmHit(row[0], rank, -float(row[1])) for rank, row in enumerate(rows, start=1)]
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


# One collection in the index: the FTS table holds only its current chunks (``SQLiteSearch._only_collection``).
ONLY_COLLECTION_SQL = "SELECT count(*) FROM collections"


def current_rows(db: sqlite3.Connection) -> int:
    """Rows in the FTS index (current chunks of every collection): BM25's N in FTS5."""
    return int(db.execute("SELECT count(*) FROM chunks WHERE superseded_at IS NULL").fetchone()[0])


def document_frequencies(db: sqlite3.Connection, terms: list[str]) -> dict[str, int]:
    stems = shared_tokenizer().term_counts(terms)
    frequencies: dict[str, int] = {}
    for term, counts in zip(terms, stems, strict=True):
        found = [
            db.execute("SELECT doc FROM chunks_vocab WHERE term = ?", (stem,)).fetchone() for stem in counts
        ]
        frequencies[term] = max((row[0] for row in found if row), default=0)
    return frequencies


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
    scores = vectors.matrix @ (query if query.dtype == np.float32 else query.astype(np.float32))
    where, params = filter_sql(filters)
    if where:
        # HEAD: current chunks; at a point in time (``filters.as_of``) the chunks valid then.
        validity, point = (
            ("c.superseded_at IS NULL", []) if filters.as_of is None else (VALID_AT, [filters.as_of] * 2)
        )
        allowed = [
            row[0]
            for row in db.execute(
                f"""SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id
                    WHERE c.collection_id = ? AND {validity}{where}""",
                [collection_id, *point, *params],
            )
        ]
        mask = np.isin(vectors.ids, np.array(allowed, dtype=np.int64))
        scores = np.where(mask, scores, -np.inf)
        return top_hits(vectors.ids, scores, limit, masked=True)
    return top_hits(vectors.ids, scores, limit)


def top_hits(
    ids: npt.NDArray[np.int64], scores: npt.NDArray[np.float32], limit: int, masked: bool = False
) -> list[ArmHit]:
    """The ``limit`` best finite scores, best first, as 1-based ranked hits. ``masked``: some scores
    are -inf (left out by a filter); otherwise every score counts, and is not checked again (the
    exact dense arm's floor is one product and this top-k: docs/benchmarks.md, "A busy machine")."""
    count = min(limit, int(np.isfinite(scores).sum()) if masked else len(scores))
    if count == 0:
        return []
    rest = len(scores) - count
    top = np.argpartition(scores, rest)[rest:] if rest else np.arange(count)
    top = top[np.argsort(-scores[top], kind="stable")]
    return [
        ArmHit(chunk_id, rank, score)
        for rank, (chunk_id, score) in enumerate(zip(ids[top].tolist(), scores[top].tolist(), strict=True), 1)
    ]


def exact_filtered_search(
    db: sqlite3.Connection,
    collection_id: int,
    model_id: str,
    query: npt.NDArray[np.float32],
    filters: Filters,
    limit: int,
) -> list[ArmHit]:
    """Exact cosine over the vectors of the rows a filter allows, read straight from the index."""
    where, params = filter_sql(filters)
    rows = db.execute(
        f"""SELECT c.id, e.vector FROM chunks c JOIN documents d ON d.id = c.document_id
            JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
            WHERE c.collection_id = ? AND c.superseded_at IS NULL{where}""",
        [model_id, collection_id, *params],
    ).fetchall()
    if not rows:
        return []
    matrix = decode_vectors([row[1] for row in rows], len(query))
    allowed = VectorMatrix(ids=np.array([row[0] for row in rows], dtype=np.int64), matrix=matrix)
    return vector_search(db, allowed, collection_id, query, Filters(), limit)
