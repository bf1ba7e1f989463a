"""The PostgreSQL keyword index: postings rows and the BM25 statistics derived from them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import psycopg

MAX_LEXEME_BYTES = 2046  # longer "words" are noise; keeping them out keeps the btree small
# COPY's text format: backslash, tab, newline and carriage return must be escaped inside a value.
COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def write_postings(
    conn: psycopg.Connection[Any],
    collection_id: int,
    chunks: Iterable[tuple[int, Counter[str]]],
    table: str = "postings",
) -> None:
    """One row per (term, chunk) with the term's count and the chunk's length, loaded with COPY.

    The rows are formatted here as one block of COPY text: per-row ``write_row`` calls cost more than
    the server's work on a large load (~80 postings a chunk).
    """
    lines: list[str] = []
    for chunk_id, counts in chunks:
        length = sum(counts.values())
        lines.extend(
            f"{collection_id}\t{term.translate(COPY_ESCAPES)}\t{chunk_id}\t{tf}\t{length}\n"
            for term, tf in counts.items()
            if len(term.encode()) < MAX_LEXEME_BYTES
        )
    with (
        conn.cursor() as cursor,
        cursor.copy(
            f"COPY {table} (collection_id, term, chunk_id, tf, token_count) FROM STDIN".encode()
        ) as copy,
    ):
        copy.write("".join(lines))


def adjust_statistics(
    conn: psycopg.Connection[Any], collection_id: int, where: str, value: str, sign: int
) -> None:
    """Add (sign=+1) or remove (sign=-1) the current chunks selected by ``where`` from N, avglen and df."""
    conn.execute(
        f"""UPDATE collection_stats s SET chunk_count = s.chunk_count + %s * x.n,
                   token_total = s.token_total + %s * x.tokens
            FROM (SELECT count(*) AS n, COALESCE(sum(token_count), 0) AS tokens FROM chunks
                  WHERE {where} AND superseded_at IS NULL) x
            WHERE s.collection_id = %s""".encode(),
        (sign, sign, value, collection_id),
    )
    conn.execute(
        f"""INSERT INTO term_stats (collection_id, term, df)
            SELECT %s, p.term, %s * count(*) FROM postings p JOIN chunks c ON c.id = p.chunk_id
            WHERE c.{where} AND c.superseded_at IS NULL GROUP BY p.term
            ON CONFLICT (collection_id, term) DO UPDATE SET df = term_stats.df + excluded.df""".encode(),
        (collection_id, sign, value),
    )


def add_statistics(conn: psycopg.Connection[Any], collection_id: int, counts: list[Counter[str]]) -> None:
    """``adjust_statistics(+1)`` for chunks just written, from their term counts in hand: the same N,
    token total and df (over the terms ``write_postings`` kept), without reading the postings back —
    that read was a third of a bulk load's time."""
    df = Counter(term for chunk in counts for term in chunk if len(term.encode()) < MAX_LEXEME_BYTES)
    conn.execute(
        """UPDATE collection_stats SET chunk_count = chunk_count + %s, token_total = token_total + %s
           WHERE collection_id = %s""",
        (len(counts), sum(sum(chunk.values()) for chunk in counts), collection_id),
    )
    if df:
        conn.execute(
            """INSERT INTO term_stats (collection_id, term, df)
               SELECT %s, u.term, u.df FROM unnest(%s::text[], %s::bigint[]) AS u(term, df)
               ON CONFLICT (collection_id, term) DO UPDATE SET df = term_stats.df + excluded.df""",
            (collection_id, list(df), list(df.values())),
        )


def rebuild_statistics(conn: psycopg.Connection[Any], collection_id: int) -> None:
    conn.execute(
        """UPDATE collection_stats s SET chunk_count = x.n, token_total = x.tokens
           FROM (SELECT count(*) AS n, COALESCE(sum(token_count), 0) AS tokens FROM chunks
                 WHERE collection_id = %s AND superseded_at IS NULL) x WHERE s.collection_id = %s""",
        (collection_id, collection_id),
    )
    conn.execute("DELETE FROM term_stats WHERE collection_id = %s", (collection_id,))
    conn.execute(
        """INSERT INTO term_stats (collection_id, term, df)
           SELECT %s, term, count(*) FROM postings WHERE collection_id = %s GROUP BY term""",
        (collection_id, collection_id),
    )
