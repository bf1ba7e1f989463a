"""PostgreSQL search arms: BM25 computed exactly as SQLite FTS5 does, and pgvector HNSW cosine.

BM25 (FTS5's ``bm25()`` with weights 1, k1 = 1.2, b = 0.75): for each query term t present in a
chunk, ``idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))`` summed, where
``idf = max(ln((N − df + 0.5)/(df + 0.5)), 1e-6)``, N and avglen over the collection's current
chunks. The ``postings`` table (term → chunk, tf, length) is the inverted index: only the postings
of the query's terms are read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from retrievo.models import ArmHit, Filters
from retrievo.store.fts_query import PRUNE_MIN_ROWS, prune_common_terms, query_terms
from retrievo.store.history import VALID_AT as VALID_AT_QMARK
from retrievo.store.postgres.filters import filter_sql
from retrievo.store.postgres.postings import MAX_LEXEME_BYTES
from retrievo.store.queries import format_style
from retrievo.store.tokenizer import holds_run, shared_tokenizer
from retrievo.text.identifiers import keyword_terms

K1, B = 1.2, 0.75
VALID_AT = format_style(VALID_AT_QMARK)


def query_stems(query: str) -> list[str]:
    """Each query term's distinct stems, in order: a stem two terms share ("deaths", "death") is listed
    twice and counts twice, as in FTS5, which scores each OR-ed term on its own."""
    stems: list[str] = []
    for counts in shared_tokenizer().term_counts(query_terms(query)):
        stems.extend(counts)
    # PostgreSQL cannot hold lexemes of 2 kB or more, so such a "word" is in no chunk either.
    return [stem for stem in stems if len(stem.encode()) < MAX_LEXEME_BYTES]


def keyword_search(
    conn: psycopg.Connection[Any], collection_id: int, query: str, filters: Filters, limit: int
) -> list[ArmHit]:
    stems = query_stems(query)
    if not stems or limit <= 0:
        return []
    kept = set(prune(conn, collection_id, list(dict.fromkeys(stems))))
    weights = Counter(stem for stem in stems if stem in kept)
    restrict, params = _restricted(filters)
    rows = conn.execute(
        f"""WITH stats AS (
                SELECT chunk_count::float8 AS n, token_total::float8 / GREATEST(chunk_count, 1) AS avgdl
                FROM collection_stats WHERE collection_id = %s),
            q AS (
                SELECT t.term, w.times * GREATEST(ln((s.n - t.df + 0.5) / (t.df + 0.5)), 1e-6) AS idf
                FROM term_stats t JOIN unnest(%s::text[], %s::int[]) AS w(term, times) ON w.term = t.term
                CROSS JOIN stats s
                WHERE t.collection_id = %s AND t.df > 0)
            SELECT p.chunk_id,
                   SUM(q.idf * (p.tf * {K1 + 1}) / (p.tf + {K1} * ({1 - B} + {B} * p.token_count / s.avgdl))) AS score
            FROM postings p JOIN q ON q.term = p.term CROSS JOIN stats s
            WHERE p.collection_id = %s{restrict}
            GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT %s""",
        [collection_id, list(weights), list(weights.values()), collection_id, collection_id, *params, limit],
    ).fetchall()
    return [ArmHit(int(row[0]), rank, float(row[1])) for rank, row in enumerate(rows, start=1)]


def _restricted(filters: Filters) -> tuple[str, list[object]]:
    """A postings query's condition for ``filters`` (on the posting's chunk and its document), and its
    parameters; nothing without filters."""
    where, params = filter_sql(filters)
    if not where:
        return "", params
    return (
        f" AND EXISTS (SELECT 1 FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id = p.chunk_id{where})",
        params,
    )


# A phrase's candidates are read from the postings of its rarest stems only: a chunk holding the phrase
# holds them, and a common word's postings would be most of the collection's.
RAREST_STEMS = 3


def chunks_holding(
    conn: psycopg.Connection[Any],
    collection_id: int,
    words: Sequence[str],
    filters: Filters,
    limit: int,
) -> list[int]:
    """Current chunks holding every one of ``words`` (their stems), at most ``limit``: the postings of the
    ``RAREST_STEMS`` rarest stems, intersected; none if a stem is in no chunk."""
    rarest = _rarest(conn, collection_id, words, RAREST_STEMS)
    return _holding(conn, collection_id, rarest, filters, limit) if rarest else []


def _rarest(conn: psycopg.Connection[Any], collection_id: int, words: Sequence[str], most: int) -> list[str]:
    """The ``most`` rarest distinct stems of ``words``; none if one of them is in no chunk."""
    stems = list(dict.fromkeys(stem for stem in query_stems(" ".join(words))))
    if not stems:
        return []
    counted = dict(
        conn.execute(
            "SELECT term, df FROM term_stats WHERE collection_id = %s AND term = ANY(%s) AND df > 0",
            (collection_id, stems),
        ).fetchall()
    )
    if len(counted) < len(stems):
        return []
    return sorted(stems, key=lambda stem: (int(counted[stem]), stem))[:most]


def _holding(
    conn: psycopg.Connection[Any],
    collection_id: int,
    stems: list[str],
    filters: Filters,
    limit: int,
    after: int = 0,
) -> list[int]:
    """Current chunks holding every one of ``stems``, in id order, ids above ``after`` (to page)."""
    restrict, params = _restricted(filters)
    order = " AND p.chunk_id > %s" if after else ""
    rows = conn.execute(
        f"""SELECT p.chunk_id FROM postings p WHERE p.collection_id = %s AND p.term = ANY(%s){order}{restrict}
            GROUP BY p.chunk_id HAVING count(*) = %s ORDER BY p.chunk_id LIMIT %s""",
        [collection_id, stems, *([after] if after else []), *params, len(stems), limit],
    ).fetchall()
    return [int(row[0]) for row in rows]


def held_words(conn: psycopg.Connection[Any], collection_id: int, words: Sequence[str]) -> frozenset[str]:
    """The words every stem of which some current chunk holds (``term_stats``: one read for all)."""
    stems = {word: list(dict.fromkeys(query_stems(word))) for word in words}
    wanted = sorted({stem for found in stems.values() for stem in found})
    present = {
        str(row[0])
        for row in conn.execute(
            "SELECT term FROM term_stats WHERE collection_id = %s AND term = ANY(%s) AND df > 0",
            (collection_id, wanted),
        ).fetchall()
    }
    return frozenset(word for word, found in stems.items() if found and set(found) <= present)


PHRASE_STEMS = 8  # a phrase's rarest stems whose postings are intersected before positions are checked
PHRASE_BATCH = 100  # chunks holding those stems read at a time, in id order
PHRASE_SCAN = 2_000  # at most this many read (a run of common words: most holders hold its words apart)


def chunks_with_phrase(
    conn: psycopg.Connection[Any], collection_id: int, phrase: str, filters: Filters, limit: int
) -> list[int]:
    """Current chunks holding ``phrase``'s words in a run within one of their columns (context, text, the
    identifiers' words, as FTS5's phrase query reads them on SQLite): the chunks holding its rarest stems
    (postings), read in id order a batch at a time, until ``limit`` hold it or ``PHRASE_SCAN`` were read."""
    tokenizer = shared_tokenizer()
    run = tokenizer.tokens(phrase)
    if not run:
        return []
    # a cheap test before tokenizing: an ASCII text holds each word's stem but its last two letters
    # (Porter changes at most those: "happi" of "happy"); a text with other characters is tokenized
    heads = [stem[: max(2, len(stem) - 2)] for stem in run]
    rarest = _rarest(conn, collection_id, [phrase], PHRASE_STEMS)  # read once, the postings paged
    held: list[int] = []
    after, scanned = 0, 0
    while rarest and len(held) < limit and scanned < PHRASE_SCAN:
        ids = _holding(conn, collection_id, rarest, filters, PHRASE_BATCH, after)
        if not ids:
            break
        rows = conn.execute(
            "SELECT id, context, text FROM chunks WHERE id = ANY(%s) ORDER BY id", (ids,)
        ).fetchall()
        for chunk_id, context, text in rows:
            haystack = f"{context}\n{text}".lower()
            if (not haystack.isascii() or all(head in haystack for head in heads)) and any(
                holds_run(tokenizer.tokens(column), run)
                for column in (context, text, keyword_terms(text, context))
            ):
                held.append(int(chunk_id))
        after, scanned = ids[-1], scanned + len(ids)
    return held[:limit]


def prune(conn: psycopg.Connection[Any], collection_id: int, stems: list[str]) -> list[str]:
    """The same rule as the SQLite store (see ``prune_common_terms``), on this collection's statistics."""
    row = conn.execute(
        "SELECT chunk_count FROM collection_stats WHERE collection_id = %s", (collection_id,)
    ).fetchone()
    rows = int(row[0]) if row else 0
    if rows < PRUNE_MIN_ROWS:
        return stems
    frequencies = dict(
        conn.execute(
            "SELECT term, df FROM term_stats WHERE collection_id = %s AND term = ANY(%s)",
            (collection_id, stems),
        ).fetchall()
    )
    return prune_common_terms(stems, {k: int(v) for k, v in frequencies.items()}, rows)


def vector_search(
    conn: psycopg.Connection[Any],
    collection_id: int,
    dimensions: int,
    query: npt.NDArray[np.float32],
    filters: Filters,
    limit: int,
    ef_search: int,
    model_id: str | None = None,
) -> list[ArmHit]:
    """The served model's vectors (``chunks.vector``, its HNSW index); with ``model_id``, that model's
    rows of the embeddings table, read exactly."""
    if limit <= 0:
        return []
    where, params = filter_sql(filters)
    # HEAD: the current chunks (the partial HNSW index); at a point in time the chunks valid then (exact).
    validity, point = (
        ("c.superseded_at IS NULL", []) if filters.as_of is None else (VALID_AT, [filters.as_of] * 2)
    )
    column, join, model = "c.vector", "", []
    if model_id is not None:
        column, model = "e.vector", [model_id]
        join = " JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = %s"
    cast = f"{column}::vector({int(dimensions)})"
    with conn.transaction():
        # Iterative scans keep filtered HNSW searches from coming back short (pgvector >= 0.8).
        conn.execute(f"SET LOCAL hnsw.ef_search = {max(int(ef_search), limit)}")
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = conn.execute(
            f"""SELECT c.id, 1 - ({cast} <=> %s) AS score
                FROM chunks c JOIN documents d ON d.id = c.document_id{join}
                WHERE c.collection_id = %s AND {validity} AND {column} IS NOT NULL
                  AND vector_dims({column}) = {int(dimensions)}{where}
                ORDER BY {cast} <=> %s LIMIT %s""",
            [query, *model, collection_id, *point, *params, query, limit],
        ).fetchall()
    # relaxed_order may return neighbours slightly out of order: sort by the exact distance.
    ordered = sorted(rows, key=lambda row: (-float(row[1]), int(row[0])))
    return [ArmHit(int(row[0]), rank, float(row[1])) for rank, row in enumerate(ordered, start=1)]
