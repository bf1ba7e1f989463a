"""SQLite side of moving collections between stores (see ``retrievo.store.transfer``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from retrievo.errors import ConfigError
from retrievo.store import history
from retrievo.store.code_index import DUMP_EDGES, DUMP_SYMBOLS, EDGE_FIELDS, SYMBOL_FIELDS
from retrievo.store.queries import DUMP, DUMP_EMBEDDINGS
from retrievo.store.sqlite.vectors import STORAGE_DTYPE, encode_vector
from retrievo.store.transfer import CHUNK_FIELDS, DOCUMENT_FIELDS, REVISION_FIELDS, Record
from retrievo.text.identifiers import keyword_terms


def dump(db: sqlite3.Connection, collection: str) -> Iterator[Record]:
    cursor = db.execute("SELECT * FROM collections WHERE name = ?", (collection,))
    cursor.row_factory = sqlite3.Row
    col = cursor.fetchone()
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
        cursor = db.execute(sql, (col["id"],))
        cursor.row_factory = sqlite3.Row
        for row in cursor:
            record = {f: row[f] for f in fields}
            if "metadata" in record:
                record["metadata"] = json.loads(record["metadata"])
            yield kind, record
    for kind, sql, fields in (
        ("code_symbol", DUMP_SYMBOLS, SYMBOL_FIELDS),
        ("code_edge", DUMP_EDGES, EDGE_FIELDS),
    ):
        cursor = db.execute(sql, (col["id"],))
        cursor.row_factory = sqlite3.Row
        for row in cursor:
            yield kind, {f: row[f] for f in fields}
    for row in db.execute(history.DUMP_BASELINES, (col["id"],)).fetchall():
        yield "baseline", dict(zip(history.BASELINE_FIELDS, row, strict=True))
    for path, added_at in db.execute(
        "SELECT path, added_at FROM roots WHERE collection_id = ?", (col["id"],)
    ):
        yield "root", {"path": path, "added_at": added_at}
    if col["model_id"]:
        rows = db.execute(DUMP_EMBEDDINGS, (col["model_id"], col["id"]))
        for key, blob in rows:
            vector = np.frombuffer(blob, dtype=STORAGE_DTYPE).astype(np.float32)
            yield "embedding", {"embed_key": key, "model_id": col["model_id"], "vector": vector}


def restore(db: sqlite3.Connection, records: Iterable[Record]) -> None:
    """Write a dumped collection in one transaction (all of it, or nothing)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        collection_id: int | None = None
        for kind, row in records:
            if kind == "collection":
                cursor = db.execute(
                    """INSERT INTO collections (name, model_id, dimensions, created_at, last_indexed_at)
                       VALUES (:name, :model_id, :dimensions, :created_at, :last_indexed_at)""",
                    row,
                )
                collection_id = cursor.lastrowid
                db.execute(
                    history.RESTORE_CLOCK, (row.get("last_change_at"), row.get("history_from"), collection_id)
                )
            elif kind in ("code_symbol", "code_edge"):
                fields = SYMBOL_FIELDS if kind == "code_symbol" else EDGE_FIELDS
                table = "code_symbols" if kind == "code_symbol" else "code_edges"
                db.execute(
                    f"INSERT INTO {table} (collection_id, {', '.join(fields)}) VALUES (?{', ?' * len(fields)})",
                    (collection_id, *(row[f] for f in fields)),
                )
            elif kind == "baseline":
                db.execute(
                    history.RESTORE_BASELINE, (collection_id, *(row[f] for f in history.BASELINE_FIELDS))
                )
            elif kind == "root":
                db.execute(
                    "INSERT OR IGNORE INTO roots (collection_id, path, added_at) VALUES (?, ?, ?)",
                    (collection_id, row["path"], row["added_at"]),
                )
            elif kind == "embedding":
                db.execute(
                    "INSERT OR IGNORE INTO embeddings (embed_key, model_id, vector) VALUES (?, ?, ?)",
                    (row["embed_key"], row["model_id"], encode_vector(row["vector"])),
                )
            else:
                _insert(db, kind, row, collection_id)
        db.execute(
            """INSERT INTO chunks_fts (rowid, context, text, keywords)
               SELECT id, context, text, keywords FROM chunks WHERE collection_id = ? AND superseded_at IS NULL""",
            (collection_id,),
        )
        db.execute(
            """INSERT INTO chunks_history_fts (rowid, context, text, keywords)
               SELECT id, context, text, keywords FROM chunks WHERE collection_id = ? AND superseded_at IS NOT NULL""",
            (collection_id,),
        )
        for table, state in (("chunks_fts", "IS NULL"), ("chunks_history_fts", "IS NOT NULL")):
            db.execute(
                f"""UPDATE chunks SET token_count =
                        (SELECT retrievo_token_count(sz) FROM {table}_docsize s WHERE s.id = chunks.id)
                    WHERE collection_id = ? AND superseded_at {state}""",
                (collection_id,),
            )
        db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
        db.execute("COMMIT")
    except sqlite3.IntegrityError as exc:
        db.execute("ROLLBACK")
        raise ConfigError(
            f"the target index already holds some of these ids ({exc}); migrate into an empty index"
        ) from exc
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _insert(db: sqlite3.Connection, kind: str, row: dict[str, Any], collection_id: int | None) -> None:
    values = dict(row)
    if "metadata" in values:
        values["metadata"] = json.dumps(values["metadata"])
    if kind in ("document", "chunk"):
        values["collection_id"] = collection_id
    if kind == "chunk":
        values["keywords"] = keyword_terms(values["text"], values["context"])
    table = {"document": "documents", "revision": "revisions", "chunk": "chunks"}[kind]
    columns = ", ".join(values)
    db.execute(f"INSERT INTO {table} ({columns}) VALUES ({', '.join(':' + c for c in values)})", values)
