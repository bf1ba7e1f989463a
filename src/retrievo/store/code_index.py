"""The structure index of code (symbols and edges), shared by both stores: SQL in qmark style.

Rows are current-only: a document's rows are replaced when it gets a new revision and deleted when
it is removed, inside the same transaction as its chunks. Edges keep their target as text and
resolve by name at query time, so edges pointing into a changed file never go stale.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from retrievo.models import CodeStructure, CodeSymbolRow

SCHEMA = """
CREATE TABLE code_symbols (
    id {serial} PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    document_id TEXT NOT NULL REFERENCES documents(id),
    language TEXT NOT NULL,
    is_test INTEGER NOT NULL,
    name TEXT NOT NULL,
    qualified_name TEXT NOT NULL,
    kind TEXT NOT NULL,
    visibility TEXT NOT NULL,
    signature TEXT NOT NULL,
    docstring TEXT NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    column_start INTEGER NOT NULL,
    column_end INTEGER NOT NULL
);
CREATE INDEX code_symbols_name ON code_symbols (collection_id, name);
CREATE INDEX code_symbols_lower_name ON code_symbols (collection_id, lower(name));
CREATE INDEX code_symbols_qualified ON code_symbols (collection_id, qualified_name);
CREATE INDEX code_symbols_document ON code_symbols (document_id);
CREATE TABLE code_edges (
    id {serial} PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    document_id TEXT NOT NULL REFERENCES documents(id),
    is_test INTEGER NOT NULL,
    source TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    target_name TEXT NOT NULL,
    line INTEGER NOT NULL,
    column_start INTEGER NOT NULL,
    line_text TEXT NOT NULL,
    resolved TEXT
);
CREATE INDEX code_edges_target ON code_edges (collection_id, target_name);
CREATE INDEX code_edges_source ON code_edges (collection_id, source);
CREATE INDEX code_edges_document ON code_edges (document_id);
"""

DELETE = ("DELETE FROM code_symbols WHERE document_id = ?", "DELETE FROM code_edges WHERE document_id = ?")
INSERT_SYMBOL = """INSERT INTO code_symbols (collection_id, document_id, language, is_test, name, qualified_name,
    kind, visibility, signature, docstring, line_start, line_end, column_start, column_end)
    VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"""
INSERT_EDGE = """INSERT INTO code_edges (collection_id, document_id, is_test, source, kind, target, target_name,
    line, column_start, line_text) VALUES (?,?,?,?,?,?,?,?,?,?)"""
RESOLVE_EDGE = "UPDATE code_edges SET resolved = ? WHERE id = ?"

_SYMBOL_COLUMNS = """s.name, s.qualified_name, s.kind, s.visibility, s.signature, s.docstring, s.line_start,
    s.line_end, s.column_start, s.column_end, s.language, s.is_test, s.document_id, d.source"""
FIND_SYMBOLS = f"""
    SELECT {_SYMBOL_COLUMNS} FROM code_symbols s
    JOIN collections col ON col.id = s.collection_id JOIN documents d ON d.id = s.document_id
    WHERE col.name = ? AND (lower(s.name) LIKE ? ESCAPE '\\' OR lower(s.qualified_name) LIKE ? ESCAPE '\\'
           OR lower(s.qualified_name) LIKE ? ESCAPE '\\')
      {{extra}}
    ORDER BY (lower(s.name) = ?) DESC, s.is_test, length(s.qualified_name), s.qualified_name LIMIT ?"""
SYMBOLS_NAMED = f"""
    SELECT {_SYMBOL_COLUMNS} FROM code_symbols s
    JOIN collections col ON col.id = s.collection_id JOIN documents d ON d.id = s.document_id
    WHERE col.name = ? AND s.{{column}} IN ({{marks}})"""
_EDGE_COLUMNS = """e.source, e.kind, e.target, e.target_name, e.line, e.line_text, e.is_test, e.document_id, d.source,
    e.id, e.column_start, e.resolved"""
EDGES_FROM = f"""
    SELECT {_EDGE_COLUMNS} FROM code_edges e
    JOIN collections col ON col.id = e.collection_id JOIN documents d ON d.id = e.document_id
    WHERE col.name = ? AND e.source IN ({{marks}}) AND e.kind IN ({{kinds}})"""
EDGES_OF_DOCUMENT = f"""
    SELECT {_EDGE_COLUMNS} FROM code_edges e JOIN documents d ON d.id = e.document_id
    WHERE e.document_id = ? AND e.kind IN ({{kinds}}) ORDER BY e.id"""
SYMBOLS_OF_DOCUMENT = f"""
    SELECT {_SYMBOL_COLUMNS} FROM code_symbols s JOIN documents d ON d.id = s.document_id
    WHERE s.document_id = ? ORDER BY s.line_start"""
EDGES_TO = f"""
    SELECT {_EDGE_COLUMNS} FROM code_edges e
    JOIN collections col ON col.id = e.collection_id JOIN documents d ON d.id = e.document_id
    WHERE col.name = ? AND e.target_name IN ({{marks}}) AND e.kind IN ({{kinds}})"""
# Imports that make a name part of a module's face: a ``pub use`` in a Rust ``lib.rs`` or ``mod.rs``, an
# import in a Python package's ``__init__.py``. Read from those files' edges (the documents first: no scan of
# every edge), the shallowest file first.
REEXPORTS = f"""
    SELECT {_EDGE_COLUMNS} FROM documents d
    JOIN collections col ON col.id = d.collection_id JOIN code_edges e ON e.document_id = d.id
    WHERE col.name = ? AND d.deleted_at IS NULL AND e.kind = 'imports'
      AND (d.source LIKE '%/mod.rs' OR d.source LIKE '%/lib.rs' OR d.source LIKE '%/\\_\\_init\\_\\_.py' ESCAPE '\\')
      AND (e.line_text LIKE 'pub use %' OR e.line_text LIKE 'pub(crate) use %' OR d.source LIKE '%.py')
      AND ({{likes}} OR d.source LIKE '%.py' AND e.line_text LIKE '%(')
    ORDER BY length(d.source) - length(replace(d.source, '/', '')), d.source, e.line LIMIT 200"""
CHUNK_LINES = """SELECT id, document_id, line_start, line_end FROM chunks
    WHERE superseded_at IS NULL AND document_id IN ({marks}) ORDER BY id"""
COUNTS = """SELECT (SELECT COUNT(*) FROM code_symbols s JOIN collections col ON col.id = s.collection_id
    WHERE col.name = ?), (SELECT COUNT(*) FROM code_edges e JOIN collections col ON col.id = e.collection_id
    WHERE col.name = ?)"""
CODE_FILES = """SELECT d.source, d.metadata FROM documents d JOIN collections col ON col.id = d.collection_id
    WHERE col.name = ? AND d.kind = 'code' AND d.deleted_at IS NULL ORDER BY d.source"""
SYMBOLS_BY_LANGUAGE = """SELECT s.language, COUNT(*) FROM code_symbols s JOIN collections col ON col.id = s.collection_id
    WHERE col.name = ? GROUP BY s.language"""
EDGES_BY_KIND = """SELECT e.kind, COUNT(*) FROM code_edges e JOIN collections col ON col.id = e.collection_id
    WHERE col.name = ? GROUP BY e.kind"""
DUMP_SYMBOLS = "SELECT * FROM code_symbols WHERE collection_id = ? ORDER BY id"
DUMP_EDGES = "SELECT * FROM code_edges WHERE collection_id = ? ORDER BY id"
SYMBOL_FIELDS = ("document_id", "language", "is_test", "name", "qualified_name", "kind", "visibility", "signature",
                 "docstring", "line_start", "line_end", "column_start", "column_end")  # fmt: skip
EDGE_FIELDS = ("document_id", "is_test", "source", "kind", "target", "target_name", "line", "column_start", "line_text",
               "resolved")  # fmt: skip
EDGE_KINDS = ("imports", "calls", "inherits", "implements", "uses")


@dataclass(frozen=True)
class SymbolHit(CodeSymbolRow):
    """A symbol as read back: the stored row, plus where it lives."""

    language: str
    is_test: bool
    document_id: str
    path: str


@dataclass(frozen=True)
class EdgeHit:
    source: str
    kind: str
    target: str
    target_name: str
    line: int
    line_text: str
    is_test: bool
    document_id: str
    path: str
    id: int
    column: int  # 0-based character column of the target's name on its line
    resolved: str | None  # the qualified name a language server resolved it to, if one did


@dataclass(frozen=True)
class CodeStats:
    """What a collection holds of code: files per language, symbols per language, edges per kind, and the code
    files read as text without symbols (path, why: no grammar, too large to parse)."""

    files: dict[str, int]
    test_files: int
    symbols: dict[str, int]
    edges: dict[str, int]
    without_symbols: tuple[tuple[str, str], ...]


def _by_count(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def symbol_hit(row: Sequence[Any]) -> SymbolHit:
    values = list(row)
    values[11] = bool(values[11])
    return SymbolHit(*values)


def edge_hit(row: Sequence[Any]) -> EdgeHit:
    values = list(row)
    values[6] = bool(values[6])
    return EdgeHit(*values)


_NAME = re.compile(r"\w+")


def continued(edge: EdgeHit) -> bool:
    """A Python import that goes on over lines (``from x import (``): the line holds none of its names."""
    return edge.path.endswith(".py") and edge.line_text.rstrip().endswith("(")


def like_pattern(pattern: str) -> str:
    """A user's name or glob (``*``, ``?``) as a lower-case LIKE pattern; a plain name matches exactly."""
    escaped = pattern.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%").replace("?", "_")


def write_structure(
    executemany: Callable[[str, list[tuple[Any, ...]]], object],
    collection_id: int,
    document_id: str,
    structure: CodeStructure | None,
) -> None:
    """Insert a document's rows (the caller has deleted its old ones in the same transaction)."""
    if structure is None:
        return
    test = int(structure.is_test)
    if structure.symbols:
        executemany(
            INSERT_SYMBOL,
            [(collection_id, document_id, structure.language, test, s.name, s.qualified_name, s.kind, s.visibility,
              s.signature, s.docstring, s.line_start, s.line_end, s.column_start, s.column_end)
             for s in structure.symbols],
        )  # fmt: skip
    if structure.edges:
        executemany(
            INSERT_EDGE,
            [(collection_id, document_id, test, e.source, e.kind, e.target, e.target_name, e.line, e.column,
              e.line_text) for e in structure.edges],
        )  # fmt: skip


Rows = Callable[[str, Sequence[object]], Sequence[Sequence[Any]]]


class CodeIndex:
    """Reads of the structure index, over any store's qmark-style row reader."""

    def __init__(self, rows: Rows) -> None:
        self._rows = rows

    def find_symbols(
        self,
        collection: str,
        pattern: str,
        kind: str | None = None,
        language: str | None = None,
        limit: int = 20,
    ) -> list[SymbolHit]:
        like = like_pattern(pattern)
        extra, params = "", []
        if kind:
            extra += " AND s.kind = ?"
            params.append(kind)
        if language:
            extra += " AND s.language = ?"
            params.append(language)
        sql = FIND_SYMBOLS.format(extra=extra)
        # A name also matches as the last part of a qualified name ("parse_args" → "core.Command.parse_args").
        found = self._rows(sql, [collection, like, like, "%." + like, *params, pattern.lower(), limit])
        return [symbol_hit(row) for row in found]

    def symbols_named(
        self, collection: str, names: Sequence[str], qualified: bool = False
    ) -> list[SymbolHit]:
        if not names:
            return []
        column = "qualified_name" if qualified else "name"
        sql = SYMBOLS_NAMED.format(column=column, marks=",".join("?" * len(names)))
        return [symbol_hit(row) for row in self._rows(sql, [collection, *names])]

    def edges_from(
        self, collection: str, sources: Sequence[str], kinds: Sequence[str] = EDGE_KINDS
    ) -> list[EdgeHit]:
        if not sources:
            return []
        sql = EDGES_FROM.format(marks=",".join("?" * len(sources)), kinds=",".join("?" * len(kinds)))
        return [edge_hit(row) for row in self._rows(sql, [collection, *sources, *kinds])]

    def edges_to(
        self, collection: str, names: Sequence[str], kinds: Sequence[str] = EDGE_KINDS
    ) -> list[EdgeHit]:
        if not names:
            return []
        sql = EDGES_TO.format(marks=",".join("?" * len(names)), kinds=",".join("?" * len(kinds)))
        return [edge_hit(row) for row in self._rows(sql, [collection, *names, *kinds])]

    def edges_of_document(self, document_id: str, kinds: Sequence[str] = EDGE_KINDS) -> list[EdgeHit]:
        sql = EDGES_OF_DOCUMENT.format(kinds=",".join("?" * len(kinds)))
        return [edge_hit(row) for row in self._rows(sql, [document_id, *kinds])]

    def symbols_of_document(self, document_id: str) -> list[SymbolHit]:
        return [symbol_hit(row) for row in self._rows(SYMBOLS_OF_DOCUMENT, [document_id])]

    def counts(self, collection: str) -> tuple[int, int]:
        row = self._rows(COUNTS, [collection, collection])[0]
        return int(row[0]), int(row[1])

    def stats(self, collection: str) -> CodeStats:
        """The collection's code in numbers (``retrievo status``): one pass over its code files' metadata."""
        files: dict[str, int] = {}
        tests = 0
        without: list[tuple[str, str]] = []
        for source, metadata in self._rows(CODE_FILES, [collection]):
            data = metadata if isinstance(metadata, dict) else json.loads(metadata or "{}")
            language = str(data.get("language") or "unknown")
            files[language] = files.get(language, 0) + 1
            tests += bool(data.get("test"))
            symbols = data.get("symbols")
            if isinstance(symbols, str) and symbols.startswith("none: "):
                without.append((str(source), symbols.removeprefix("none: ")))
        by_language = {str(k): int(n) for k, n in self._rows(SYMBOLS_BY_LANGUAGE, [collection])}
        by_kind = {str(k): int(n) for k, n in self._rows(EDGES_BY_KIND, [collection])}
        return CodeStats(_by_count(files), tests, _by_count(by_language), _by_count(by_kind), tuple(without))

    def reexports(self, collection: str, names: Sequence[str]) -> list[EdgeHit]:
        """The re-exports (``REEXPORTS``) that may name one of ``names``: those whose import names one as a
        whole word, and a Python import that goes on over lines (``from x import (``: its names are on the
        lines after; the caller reads them). Where a name defined outside the collection (a dependency's
        ``FromRequest`` that ``axum::extract`` re-exports) is reached."""
        names = [name for name in names if _NAME.fullmatch(name)]
        if not names:
            return []
        likes = " OR ".join(
            ["lower(e.target) LIKE ? ESCAPE '\\' OR lower(e.line_text) LIKE ? ESCAPE '\\'"] * len(names)
        )
        patterns = [p for name in names for p in ("%" + like_pattern(name) + "%",) * 2]
        words = re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")
        rows = self._rows(REEXPORTS.format(likes=likes), [collection, *patterns])
        return [
            edge
            for edge in map(edge_hit, rows)
            if words.search(edge.target + " " + edge.line_text) or continued(edge)
        ]

    def chunks_at(self, places: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The current chunk that holds each (document id, 1-based line), where one does."""
        lines: dict[str, list[int]] = {}
        for document_id, line in places:
            lines.setdefault(document_id, []).append(line)
        found: dict[tuple[str, int], int] = {}
        if not lines:
            return found
        sql = CHUNK_LINES.format(marks=",".join("?" * len(lines)))
        for chunk_id, document_id, start, end in self._rows(sql, list(lines)):
            for line in lines[document_id]:
                if start <= line <= end:
                    found.setdefault((document_id, line), int(chunk_id))
        return found

    def chunks_of_symbols(self, symbols: Sequence[SymbolHit]) -> dict[str, list[int]]:
        """Current chunk ids per qualified name (a long symbol has several chunks)."""
        wanted: dict[str, set[str]] = {}
        for symbol in symbols:
            wanted.setdefault(symbol.document_id, set()).add(symbol.qualified_name)
        if not wanted:
            return {}
        found: dict[str, list[int]] = {}
        sql = (
            "SELECT id, document_id, metadata FROM chunks WHERE superseded_at IS NULL AND document_id IN "
            f"({','.join('?' * len(wanted))}) ORDER BY id"
        )
        for chunk_id, document_id, metadata in self._rows(sql, list(wanted)):
            data = metadata if isinstance(metadata, dict) else json.loads(metadata or "{}")
            name = data.get("symbol")
            if name in wanted[document_id]:
                found.setdefault(name, []).append(int(chunk_id))
        return found


UNREFINED_EDGES = f"""
    SELECT {_EDGE_COLUMNS} FROM code_edges e
    JOIN collections col ON col.id = e.collection_id JOIN documents d ON d.id = e.document_id
    WHERE col.name = ? AND d.media_type = ? AND d.deleted_at IS NULL AND e.resolved IS NULL
      AND e.kind IN ('calls', 'inherits', 'implements') ORDER BY e.document_id, e.id"""


def unrefined_edges(index: CodeIndex, collection: str, media_type: str) -> list[EdgeHit]:
    """Edges of one language's files that no language server has been asked about yet."""
    return [edge_hit(row) for row in index._rows(UNREFINED_EDGES, [collection, media_type])]
