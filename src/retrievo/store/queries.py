"""SQL both stores run as written (qmark placeholders; the PostgreSQL store converts them once).

One text per question keeps the two stores from drifting apart.
"""

from __future__ import annotations

from collections.abc import Sequence

STATUS = """
    SELECT col.name, col.model_id, col.dimensions, col.last_indexed_at,
      (SELECT COUNT(*) FROM documents d WHERE d.collection_id = col.id AND d.deleted_at IS NULL),
      (SELECT COUNT(*) FROM chunks c WHERE c.collection_id = col.id AND c.superseded_at IS NULL),
      (SELECT COUNT(*) FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = col.model_id
       WHERE c.collection_id = col.id AND c.superseded_at IS NULL)
    FROM collections col ORDER BY col.name"""

# One collection's current chunks, and how many of them have a vector for the collection's model.
COVERAGE = """
    SELECT (SELECT COUNT(*) FROM chunks c WHERE c.collection_id = col.id AND c.superseded_at IS NULL),
      (SELECT COUNT(*) FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = col.model_id
       WHERE c.collection_id = col.id AND c.superseded_at IS NULL)
    FROM collections col WHERE col.name = ?"""

# Whether a chunk (``c``) has drifted from its revision (``r``): its text is no longer the revision's text
# at its offsets, or its source hash is not the revision's (substr counts characters in both stores, as
# the offsets do). Read with every chunk, so a search's hits say it without another query.
DRIFTED = """(r.source_hash <> c.source_hash
    OR substr(r.text, c.start_offset + 1, c.end_offset - c.start_offset) <> c.text) AS drifted"""

# When revisions were written (the seed's ``processed_at``); the membership test is appended.
REVISION_TIMES = "SELECT id, created_at FROM revisions WHERE id "

# What each collection holds: its documents' kinds, registry entries told apart by their media type.
CONTENT_KINDS = """
    SELECT DISTINCT col.name, d.kind, d.media_type = 'application/x-registry-entry' FROM documents d
    JOIN collections col ON col.id = d.collection_id
    WHERE d.deleted_at IS NULL"""


def content_kinds(rows: Sequence[Sequence[object]]) -> dict[str, frozenset[str]]:
    """``CONTENT_KINDS``'s rows as collection -> kinds ("document", "code", "record", "registry")."""
    kinds: dict[str, set[str]] = {}
    for name, kind, registry in rows:
        kinds.setdefault(str(name), set()).add("registry" if registry else str(kind))
    return {name: frozenset(found) for name, found in kinds.items()}


# A document's state by (collection, source): the test of ``d.source`` is appended (``= ?`` for one
# source, each store's membership in a list for many).
DOCUMENT_STATES = """
    SELECT d.id, r.source_hash, r.id, d.metadata, d.source FROM documents d
    JOIN collections col ON col.id = d.collection_id
    JOIN revisions r ON r.id = d.current_revision_id
    WHERE col.name = ? AND d.deleted_at IS NULL AND d.source """
DOCUMENT_STATE = DOCUMENT_STATES + "= ?"

# Deleting a collection, children first (``?`` is the collection's id); stores add their index tables.
DELETE_COLLECTION = (
    "DELETE FROM chunks WHERE collection_id = ?",
    "DELETE FROM code_edges WHERE collection_id = ?",
    "DELETE FROM code_symbols WHERE collection_id = ?",
    "DELETE FROM revisions WHERE document_id IN (SELECT id FROM documents WHERE collection_id = ?)",
    "DELETE FROM documents WHERE collection_id = ?",
    "DELETE FROM roots WHERE collection_id = ?",
    "DELETE FROM baselines WHERE collection_id = ?",
    "DELETE FROM collections WHERE id = ?",
)
# Vectors no chunk uses any more (embeddings are shared by text across collections).
DELETE_ORPHAN_EMBEDDINGS = "DELETE FROM embeddings WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_key = embeddings.embed_key)"
# A document keeps its id for life, also after its collection is renamed (citations stay valid).
DOCUMENT_ID_OF_SOURCE = "SELECT id FROM documents WHERE collection_id = ? AND source = ?"
DOCUMENT_ID_TAKEN = "SELECT 1 FROM documents WHERE id = ?"  # by any collection's document

COLLECTION_INFO = """
    SELECT name, model_id, dimensions, shadow_model_id, shadow_dimensions FROM collections WHERE name = ?"""

# The folders and files a user chose to index: the only places a refresh may re-read (both stores).
ROOTS_SCHEMA = """
CREATE TABLE roots (
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    path TEXT NOT NULL,
    added_at TEXT NOT NULL,
    PRIMARY KEY (collection_id, path)
);
"""

ROOTS = """
    SELECT r.path FROM roots r JOIN collections col ON col.id = r.collection_id
    WHERE col.name = ? ORDER BY r.path"""

RECORDS = """
    SELECT d.id, d.source, d.title, d.metadata FROM documents d JOIN collections col ON col.id = d.collection_id
    WHERE col.name = ? AND d.kind = 'record' AND d.deleted_at IS NULL ORDER BY d.title, d.source"""

# Rows of one collection for moving it between stores: (kind, SQL with the collection id as its parameter).
DUMP = (
    ("document", "SELECT * FROM documents WHERE collection_id = ? ORDER BY id"),
    ("revision", "SELECT r.* FROM revisions r JOIN documents d ON d.id = r.document_id "
                 "WHERE d.collection_id = ? ORDER BY r.id"),
    ("chunk", "SELECT * FROM chunks WHERE collection_id = ? ORDER BY id"),
)  # fmt: skip

DUMP_EMBEDDINGS = """
    SELECT e.embed_key, e.vector FROM embeddings e WHERE e.model_id = ? AND e.embed_key IN
    (SELECT embed_key FROM chunks WHERE collection_id = ?) ORDER BY e.embed_key"""


def format_style(sql: str) -> str:
    """The same statement with psycopg's ``%s`` placeholders (no statement here contains a literal ``?``)."""
    return sql.replace("%", "%%").replace("?", "%s")
