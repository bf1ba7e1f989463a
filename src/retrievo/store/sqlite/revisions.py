"""Writing documents' revisions into the SQLite store: one at a time (a changed document supersedes its
chunks), or documents new to the collection many at once, a few statements for all of them.

A bulk load writes mostly new documents; statement by statement each cost a dozen round trips through
Python and SQLite (SciFact's 5,183 abstracts: ~0.25 s of a 1.45 s load). Together they share one change
stamp, one id lookup for chunks and one ``executemany`` per table. Either way each chunk's row is
written once, with its FTS5 token count read back from ``chunks_fts_docsize`` after its tokens.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence

from retrievo.store import code_index, ids, queries
from retrievo.store.base import DocumentState, NewRevision
from retrievo.store.sqlite import history
from retrievo.text.hashing import embedding_key
from retrievo.text.identifiers import keyword_terms

INSERT_DOCUMENT = """
    INSERT INTO documents (id, collection_id, source, kind, title, media_type, metadata, modified_at,
        created_at, current_revision_id)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, title = excluded.title,
        media_type = excluded.media_type, metadata = excluded.metadata, modified_at = excluded.modified_at,
        deleted_at = NULL, current_revision_id = excluded.current_revision_id"""
INSERT_REVISION = (
    "INSERT INTO revisions (id, document_id, number, source_hash, text, created_at) VALUES (?,?,?,?,?,?)"
)
INSERT_FTS = "INSERT INTO chunks_fts (rowid, context, text, keywords) VALUES (?, ?, ?, ?)"
INSERT_CHUNK = """
    INSERT INTO chunks (id, collection_id, document_id, revision_id, ordinal, text, context, start_offset,
        end_offset, line_start, line_end, chunk_hash, source_hash, chunker, chunker_version, embed_key,
        keywords, metadata, created_at, token_count)
    VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"""


def write(
    db: sqlite3.Connection, collection_id: int, collection: str, revisions: Sequence[NewRevision]
) -> list[DocumentState]:
    """Each revision written, in order, inside the caller's write transaction; new documents together."""
    states: list[DocumentState | None] = [None] * len(revisions)
    fresh: list[tuple[int, str]] = []  # (position, document id) of documents new to the collection
    fresh_ids: set[str] = set()
    sources: set[str] = set()
    # Read for the whole group at once: each source's document, and which first-choice ids are held.
    known, held = _known(db, collection_id, collection, [r.document.source for r in revisions])
    in_table = _id_taken(db)

    def taken(key: str) -> bool:  # by a document of this group (not in the table yet) or in the table
        return key in fresh_ids or (held[key] if key in held else in_table(key))

    def write_fresh() -> None:
        if fresh:
            stamp = history.tick(db, collection_id)  # one change: they are committed together
            targets = [(revisions[n], document_id, 1) for n, document_id in fresh]
            for (n, _), state in zip(fresh, _insert(db, collection_id, targets, stamp), strict=True):
                states[n] = state

    for n, revision in enumerate(revisions):
        source = revision.document.source
        if source in sources:  # the same source twice: the first is written before the second reads it
            write_fresh()
            held.update(dict.fromkeys(fresh_ids, True))
            fresh.clear()
            fresh_ids.clear()
            sources.clear()
            found = db.execute(queries.DOCUMENT_ID_OF_SOURCE, (collection_id, source)).fetchone()
        else:
            found = (known[source],) if source in known else None
        if found:
            states[n] = _write_changed(db, collection_id, found[0], revision)
        else:
            document_id = ids.new_document_id(collection, source, taken)
            fresh.append((n, document_id))
            fresh_ids.add(document_id)
            sources.add(source)
    write_fresh()
    return [state for state in states if state is not None]


def _write_changed(
    db: sqlite3.Connection, collection_id: int, document_id: str, revision: NewRevision
) -> DocumentState:
    """A new revision of a document the collection holds: its current chunks leave search first."""
    stamp = history.tick(db, collection_id)
    # (only here: with foreign keys on, a DELETE opens a statement journal, which makes FTS5 flush its
    # pending terms: a fifth of a bulk load when new documents went through it too)
    supersede(db, document_id, stamp)
    number = db.execute(
        "SELECT COALESCE(MAX(number), 0) + 1 FROM revisions WHERE document_id = ?", (document_id,)
    ).fetchone()[0]
    return _insert(db, collection_id, [(revision, document_id, int(number))], stamp)[0]


def supersede(db: sqlite3.Connection, document_id: str, stamp: str) -> None:
    """Take a document's current chunks out of search; they stay stored for point-in-time reads."""
    for statement in code_index.DELETE:
        db.execute(statement, (document_id,))
    history.supersede_search_rows(db, document_id)
    for table in ("chunks", "revisions"):
        db.execute(
            f"UPDATE {table} SET superseded_at = ? WHERE document_id = ? AND superseded_at IS NULL",
            (stamp, document_id),
        )


def _insert(
    db: sqlite3.Connection,
    collection_id: int,
    targets: list[tuple[NewRevision, str, int]],
    stamp: str,
) -> list[DocumentState]:
    """Rows for ``targets`` (revision, document id, revision number); their states, in order."""
    document_rows, revision_rows, fts_rows, chunk_rows = [], [], [], []
    # The id SQLite would give (max + 1), taken first: FTS5 counts the tokens, then the row is written
    # once with them (an UPDATE afterwards rewrote every chunk row: 14 % of a bulk load).
    chunk_id = first = int(db.execute("SELECT COALESCE(MAX(id), 0) FROM chunks").fetchone()[0]) + 1
    states: list[DocumentState] = []
    for revision, document_id, number in targets:
        document, source_hash = revision.document, revision.source_hash
        revision_id = ids.revision_id(document_id, number, source_hash)
        document_rows.append(
            (document_id, collection_id, document.source, str(document.kind), document.title,
             document.media_type, json.dumps(document.metadata), revision.modified_at, stamp, revision_id)
        )  # fmt: skip
        revision_rows.append((revision_id, document_id, number, source_hash, document.text, stamp))
        for ordinal, draft in enumerate(revision.drafts):
            keywords = keyword_terms(draft.text, draft.context)
            fts_rows.append((chunk_id, draft.context, draft.text, keywords))
            chunk_rows.append(
                [chunk_id, collection_id, document_id, revision_id, ordinal, draft.text, draft.context,
                 draft.start, draft.end, draft.line_start, draft.line_end, draft.chunk_hash, source_hash,
                 draft.chunker, draft.chunker_version, embedding_key(draft.context, draft.text), keywords,
                 json.dumps(draft.metadata), stamp, None]
            )  # fmt: skip
            chunk_id += 1
        states.append(DocumentState(document_id, source_hash, revision_id))
    db.executemany(INSERT_DOCUMENT, document_rows)
    db.executemany(INSERT_REVISION, revision_rows)
    for revision, document_id, _ in targets:
        code_index.write_structure(db.executemany, collection_id, document_id, revision.document.structure)
    if not fts_rows:
        return states
    db.executemany(INSERT_FTS, fts_rows)
    sizes = dict(
        db.execute("SELECT id, sz FROM chunks_fts_docsize WHERE id BETWEEN ? AND ?", (first, chunk_id - 1))
    )
    for row in chunk_rows:
        row[-1] = history.token_count(sizes.get(row[0]))
    db.executemany(INSERT_CHUNK, chunk_rows)
    return states


def _known(
    db: sqlite3.Connection, collection_id: int, collection: str, sources: list[str]
) -> tuple[dict[str, str], dict[str, bool]]:
    """({source: its document id} for the sources the collection holds, {first-choice id of each other
    source: whether a document holds it}), in two statements."""
    known: dict[str, str] = dict(
        db.execute(
            "SELECT source, id FROM documents WHERE collection_id = ? AND source IN (SELECT value FROM json_each(?))",
            (collection_id, json.dumps(sources)),
        ).fetchall()
    )
    firsts = [ids.document_id(collection, source) for source in sources if source not in known]
    held = {
        row[0]
        for row in db.execute(
            "SELECT id FROM documents WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(firsts),)
        )
    }
    return known, {key: key in held for key in firsts}


def _id_taken(db: sqlite3.Connection) -> Callable[[str], bool]:
    """Whether a document id is held (by any collection's document)."""
    return lambda key: db.execute(queries.DOCUMENT_ID_TAKEN, (key,)).fetchone() is not None
