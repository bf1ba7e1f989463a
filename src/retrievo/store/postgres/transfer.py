"""PostgreSQL side of moving collections between stores (see ``retrievo.store.transfer``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import dict_row

from retrievo.errors import ConfigError
from retrievo.store import history
from retrievo.store.code_index import DUMP_EDGES, DUMP_SYMBOLS, EDGE_FIELDS, SYMBOL_FIELDS
from retrievo.store.postgres import postings
from retrievo.store.queries import DUMP, DUMP_EMBEDDINGS, format_style
from retrievo.store.tokenizer import keyword_source, shared_tokenizer
from retrievo.store.transfer import CHUNK_FIELDS, DOCUMENT_FIELDS, REVISION_FIELDS, Record

BATCH = 1000


def as_array(vector: Any) -> np.ndarray[Any, np.dtype[np.float32]]:
    """pgvector hands back ``Vector`` objects (or arrays, by version); the rest of retrievo wants numpy."""
    values = vector.to_numpy() if hasattr(vector, "to_numpy") else vector
    return np.asarray(values, dtype=np.float32)


def dump(conn: psycopg.Connection[Any], collection: str) -> Iterator[Record]:
    with conn.cursor(row_factory=dict_row) as cursor:
        col = cursor.execute("SELECT * FROM collections WHERE name = %s", (collection,)).fetchone()
    if col is None:
        return
    yield (
        "collection",
        {k: col[k] for k in ("name", "model_id", "dimensions", "created_at", "last_indexed_at",
                             *history.COLLECTION_CLOCK_FIELDS)},
    )  # fmt: skip
    fields_of = {"document": DOCUMENT_FIELDS, "revision": REVISION_FIELDS, "chunk": CHUNK_FIELDS}
    for kind, sql in DUMP:
        fields = fields_of[kind]
        with conn.cursor(row_factory=dict_row) as cursor:
            for row in cursor.execute(format_style(sql).encode(), (col["id"],)):
                yield kind, {f: row[f] for f in fields}
    for kind, sql, fields in (
        ("code_symbol", DUMP_SYMBOLS, SYMBOL_FIELDS),
        ("code_edge", DUMP_EDGES, EDGE_FIELDS),
    ):
        with conn.cursor(row_factory=dict_row) as cursor:
            for row in cursor.execute(format_style(sql).encode(), (col["id"],)):
                yield kind, {f: row[f] for f in fields}
    for row in conn.execute(format_style(history.DUMP_BASELINES).encode(), (col["id"],)).fetchall():
        yield "baseline", dict(zip(history.BASELINE_FIELDS, row, strict=True))
    for path, added_at in conn.execute(
        "SELECT path, added_at FROM roots WHERE collection_id = %s", (col["id"],)
    ).fetchall():
        yield "root", {"path": path, "added_at": added_at}
    if col["model_id"]:
        with conn.cursor() as cursor:
            rows = cursor.execute(format_style(DUMP_EMBEDDINGS).encode(), (col["model_id"], col["id"]))
            for key, vector in rows:
                yield (
                    "embedding",
                    {"embed_key": key, "model_id": col["model_id"], "vector": as_array(vector)},
                )


def restore(conn: psycopg.Connection[Any], records: Iterable[Record]) -> tuple[str, str, int] | None:
    """Write a dumped collection in one transaction; returns (name, model, dims) to finish vectors."""
    model: tuple[str, str, int] | None = None
    try:
        with conn.transaction():
            collection_id = None
            pending: list[dict[str, Any]] = []
            vectors: list[tuple[str, str, np.ndarray[Any, np.dtype[np.float32]]]] = []
            for kind, row in records:
                if kind == "collection":
                    collection_id = conn.execute(
                        """INSERT INTO collections (name, model_id, dimensions, created_at, last_indexed_at)
                           VALUES (%(name)s, %(model_id)s, %(dimensions)s, %(created_at)s, %(last_indexed_at)s)
                           RETURNING id""",
                        row,
                    ).fetchone()[0]  # type: ignore[index]
                    conn.execute("INSERT INTO collection_stats (collection_id) VALUES (%s)", (collection_id,))
                    conn.execute(
                        format_style(history.RESTORE_CLOCK),
                        (row.get("last_change_at"), row.get("history_from"), collection_id),
                    )
                    if row["model_id"]:
                        model = (row["name"], row["model_id"], int(row["dimensions"]))
                elif kind in ("code_symbol", "code_edge"):
                    fields = SYMBOL_FIELDS if kind == "code_symbol" else EDGE_FIELDS
                    table = "code_symbols" if kind == "code_symbol" else "code_edges"
                    conn.execute(
                        f"INSERT INTO {table} (collection_id, {', '.join(fields)}) VALUES (%s{', %s' * len(fields)})".encode(),
                        (collection_id, *(row[f] for f in fields)),
                    )
                elif kind == "baseline":
                    conn.execute(
                        format_style(history.RESTORE_BASELINE),
                        (collection_id, *(row[f] for f in history.BASELINE_FIELDS)),
                    )
                elif kind == "root":
                    conn.execute(
                        "INSERT INTO roots (collection_id, path, added_at) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                        (collection_id, row["path"], row["added_at"]),
                    )
                elif kind == "chunk":
                    pending.append(row)
                    if len(pending) >= BATCH:
                        _insert_chunks(conn, pending, collection_id)
                        pending = []
                elif kind == "embedding":
                    vectors.append(
                        (row["embed_key"], row["model_id"], np.asarray(row["vector"], dtype=np.float32))
                    )
                    if len(vectors) >= BATCH:
                        _insert_embeddings(conn, vectors)
                        vectors = []
                else:
                    _insert_row(conn, kind, row, collection_id)
            _insert_chunks(conn, pending, collection_id)
            _insert_embeddings(conn, vectors)
            assert collection_id is not None
            postings.rebuild_statistics(conn, collection_id)
            conn.execute("SELECT setval('chunks_id_seq', GREATEST((SELECT max(id) FROM chunks), 1))")
    except psycopg.errors.UniqueViolation as exc:
        raise ConfigError(
            f"the target database already holds some of these ids ({exc}); migrate into an empty one"
        ) from exc
    return model


def _insert_row(
    conn: psycopg.Connection[Any], kind: str, row: dict[str, Any], collection_id: int | None
) -> None:
    values = dict(row)
    if "metadata" in values:
        values["metadata"] = json.dumps(values["metadata"])
    if kind == "document":
        values["collection_id"] = collection_id
    table = {"document": "documents", "revision": "revisions"}[kind]
    columns = ", ".join(values)
    conn.execute(
        f"INSERT INTO {table} ({columns}) VALUES ({', '.join(f'%({c})s' for c in values)})".encode(), values
    )


def _insert_chunks(
    conn: psycopg.Connection[Any], rows: list[dict[str, Any]], collection_id: int | None
) -> None:
    if not rows or collection_id is None:
        return
    counts = shared_tokenizer().term_counts([keyword_source(row["context"], row["text"]) for row in rows])
    with conn.cursor() as cursor:
        cursor.executemany(
            f"""INSERT INTO chunks (collection_id, {", ".join(CHUNK_FIELDS)}, token_count)
                VALUES (%s, {", ".join(["%s"] * len(CHUNK_FIELDS))}, %s)""".encode(),
            [
                (collection_id, *(json.dumps(r[f]) if f == "metadata" else r[f] for f in CHUNK_FIELDS),
                 sum(c.values()))
                for r, c in zip(rows, counts, strict=True)
            ],
        )  # fmt: skip
    current = [(row["id"], c) for row, c in zip(rows, counts, strict=True) if row["superseded_at"] is None]
    postings.write_postings(conn, collection_id, current)
    past = [(row["id"], c) for row, c in zip(rows, counts, strict=True) if row["superseded_at"] is not None]
    postings.write_postings(conn, collection_id, past, table="history_postings")


def _insert_embeddings(
    conn: psycopg.Connection[Any], rows: list[tuple[str, str, np.ndarray[Any, np.dtype[np.float32]]]]
) -> None:
    if rows:
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO embeddings (embed_key, model_id, vector) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                rows,
            )
