"""A code file → a LoadedDocument of kind ``code`` whose sections are its symbols.

Sections partition the file: each symbol's own lines (a class's header and fields, without its
methods), each method and function, and the module remainder (imports, constants). Each section
carries the seed's header as its context — language, file, kind, qualified name, signature,
docstring summary — which is searched and embedded but kept out of the offsets.

The header's file is the path below the indexed root (its last ``HEADER_PATH_PARTS`` parts), never the
folders above the root: ``File: tmpdir/repo/command.go`` put a temporary folder's name into every chunk's
words and vector, and the same repository checked out elsewhere read differently.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import replace
from pathlib import PurePath

from retrievo.ingest.code.edges import target_name
from retrievo.ingest.code.languages import GRAMMARS
from retrievo.ingest.code.symbols import CodeSymbol, RawEdge, parse_code, unparsed_reason
from retrievo.models import CodeEdgeRow, CodeStructure, CodeSymbolRow, Kind, LoadedDocument, Section

_TEST_FILE = re.compile(
    r"(^test_.*\.py$|_test\.(py|go)$|\.(test|spec)\.[cm]?[jt]sx?$|Tests?\.(java|cs|kt)$|_spec\.rb$)"
)
_TEST_DIRS = frozenset({"test", "tests", "__tests__", "spec", "testing"})

HEADER_PATH_PARTS = 3


def load_code(source: str, text: str, language: str, relative: str | None = None) -> LoadedDocument:
    """``relative``: the file's path below its indexed root (``cmd/root.go``), what the header names; without
    it, the last parts of ``source``."""
    path = PurePath(source)
    module = path.stem
    parsed = parse_code(text, language, module)
    symbols = None if parsed is None else parsed[0]
    shown = header_path(relative if relative is not None else source)
    metadata: dict[str, object] = {"language": language}
    if symbols is None:
        metadata["symbols"] = (
            f"none: {unparsed_reason(text, language) or 'not parsed'}" if len(text) else "none"
        )
        sections: tuple[Section, ...] = (
            Section(0, len(text), context=_header(language, shown, "file", module, "", ""),
                    metadata={"language": language}),
        )  # fmt: skip
    else:
        sections = tuple(_sections(text, symbols, language, shown, module))
        metadata["symbols"] = len(symbols)
    test = is_test_path(source)
    if test:
        metadata["test"] = True
    structure = CodeStructure(language, test, *(_rows(text, *parsed) if parsed is not None else ((), ())))
    return LoadedDocument(
        source=source,
        text=text,
        title=path.name,
        kind=Kind.CODE,
        media_type=f"text/x-{language}",
        sections=sections,
        metadata=metadata,
        structure=structure,
    )


def header_path(path: str) -> str:
    """What a header's ``File:`` line names: the last ``HEADER_PATH_PARTS`` parts of ``path``."""
    parts = [part for part in PurePath(path.replace("\\", "/")).parts if part not in ("/", "\\")]
    return "/".join(parts[-HEADER_PATH_PARTS:])


def is_test_path(source: str) -> bool:
    path = PurePath(source)
    return bool(_TEST_FILE.search(path.name)) or any(part in _TEST_DIRS for part in path.parts[:-1])


def _rows(
    text: str, symbols: list[CodeSymbol], edges: list[RawEdge]
) -> tuple[tuple[CodeSymbolRow, ...], tuple[CodeEdgeRow, ...]]:
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]
    lines = text.split("\n")

    def position(offset: int) -> tuple[int, int]:
        line = bisect.bisect_left(newlines, offset)
        return line + 1, offset - (newlines[line - 1] + 1 if line else 0)

    symbol_rows = []
    for symbol in symbols:
        line_start, column_start = position(symbol.start)
        line_end, column_end = position(max(symbol.start, symbol.end - 1))
        symbol_rows.append(
            CodeSymbolRow(symbol.name, symbol.qualified_name, symbol.kind, _visibility(symbol),
                          symbol.signature, symbol.docstring, line_start, line_end, column_start, column_end + 1)
        )  # fmt: skip
    seen: set[tuple[str, str, str, int]] = set()
    edge_rows = []
    for edge in edges:
        key = (edge.source, edge.kind, edge.target, edge.line)
        if key in seen:
            continue
        seen.add(key)
        full_line = lines[edge.line] if edge.line < len(lines) else ""
        name = target_name(edge.target)
        column = _name_column(full_line, edge.byte_column, edge.target, name)
        edge_rows.append(
            CodeEdgeRow(
                edge.source, edge.kind, edge.target, name, edge.line + 1, full_line.strip()[:300], column
            )
        )
    return tuple(symbol_rows), tuple(edge_rows)


def _name_column(line: str, byte_column: int, target: str, name: str) -> int:
    """Character column of the resolving name (``total`` in ``Invoice().total``): where a language server is asked."""
    column = len(line.encode("utf-8")[:byte_column].decode("utf-8", "ignore"))
    first_line = target.split("\n", 1)[0]
    offset = first_line.rfind(name)
    return (
        column + offset if offset >= 0 and line[column : column + len(first_line)] == first_line else column
    )


def _visibility(symbol: CodeSymbol) -> str:
    words = symbol.signature.split("(")[0].split()
    for word in ("private", "protected", "internal", "public"):
        if word in words:
            return word
    if "pub" in words or any(w.startswith("pub(") for w in words):
        return "public"
    if symbol.name.startswith("_") and not symbol.name.endswith("__"):
        return "private"
    return "public"


def _header(language: str, path: str, kind: str, name: str, signature: str, docstring: str) -> str:
    lines = [f"Language: {language}", f"File: {path}", f"Type: {kind}", f"Name: {name}"]
    if signature:
        lines.append(f"Signature: {signature}")
    if docstring:
        lines.append(f"Doc: {docstring}")
    return "\n".join(lines)


# the symbols whose bodies hold members (a class, a module, an impl): their lines between members join one
BODIES = frozenset(
    {"class", "struct", "namespace", "impl", "interface", "enum", "type", "module", "trait", "object"}
)


def _sections(text: str, symbols: list[CodeSymbol], language: str, path: str, module: str) -> list[Section]:
    children: dict[int, list[int]] = {-1: []}
    for index, symbol in enumerate(symbols):
        children.setdefault(index, [])
        children[-1 if symbol.parent is None else symbol.parent].append(index)
    sections: list[Section] = []
    grammar = GRAMMARS.get(language)
    closer = re.compile(rf"\b{grammar.closer}\b") if grammar is not None and grammar.closer else None

    owners: dict[int, int] = {}  # each section's symbol (-1: the module's), by where it starts
    # a symbol's lines after one of its members, by where they start: (that member, the member after them)
    residues: dict[int, tuple[int, int | None]] = {}

    def emit(owner: int, start: int, end: int, before: int | None = None, after: int | None = None) -> None:
        # Between and after symbols: nothing but punctuation, space and the closing word (the "," between an
        # object literal's methods, a closing "};", Ruby's "end") is no passage: indexed and embedded, it
        # would only crowd answers.
        gap = closer.sub("", text[start:end]) if closer is not None else text[start:end]
        if end <= start or not any(character.isalnum() for character in gap):
            return
        if owner < 0:
            context = _header(language, path, "module", module, "", "")
            metadata: dict[str, object] = {"language": language, "symbol": module, "symbol_kind": "module"}
        else:
            symbol = symbols[owner]
            context = _header(
                language, path, symbol.kind, symbol.qualified_name, symbol.signature, symbol.docstring
            )
            metadata = {"language": language, "symbol": symbol.qualified_name, "symbol_kind": symbol.kind}
            if symbol.signature:
                metadata["signature"] = symbol.signature
        owners[start] = owner
        if before is not None and owner >= 0 and symbols[owner].kind in BODIES:
            residues[start] = (before, after)
        sections.append(Section(start, end, context=context, metadata=metadata))

    stack: list[tuple[int, int, int]] = [(-1, 0, len(text))]
    while stack:
        owner, start, end = stack.pop()
        cursor, previous = start, None
        for child in children[owner]:
            symbol = symbols[child]
            child_start, child_end = max(symbol.start, cursor), min(symbol.end, end)
            if child_end <= child_start:
                continue
            emit(owner, cursor, child_start, previous, child)
            stack.append((child, child_start, child_end))
            cursor, previous = child_end, child
        emit(owner, cursor, end, previous)
    sections.sort(key=lambda section: section.start)
    return _joined(text, sections, owners, residues, closer)


def _joined(
    text: str,
    sections: list[Section],
    owners: dict[int, int],
    residues: dict[int, tuple[int, int | None]],
    closer: re.Pattern[str] | None,
) -> list[Section]:
    """A class body's one line between or after its members joins a member's passage: alone it was a
    passage of one line that a word of it put first ("application startup": sinatra's ``alias start! run!``).
    It joins the member right below it when no blank line parts them (a TypeScript decorator, C++'s
    ``template <…>`` or ``public:`` over the member they belong to), else the member before it (Ruby's
    ``alias start! run!`` or ``private``, a one-line attribute), and only that member's own passage (not a
    passage of a member nested in it); the body's closing word (``end``, ``}``) does not count as a line. A
    module's own lines between its symbols (a Go ``var``, a constant) and a function's lines around a
    function nested in it stay passages of their own."""
    joined: list[Section] = []
    owner_of: list[int] = []  # each joined passage's symbol
    carried: int | None = None  # where a line joining the passage after it starts
    for at, own in enumerate(sections):
        start = own.start
        section = own if carried is None else replace(own, start=carried)
        carried = None
        body = text[start : section.end]
        line = body.strip()
        said = [
            row
            for row in line.splitlines()
            if any(c.isalnum() for c in (closer.sub("", row) if closer else row))
        ]
        if start in residues and len(said) == 1:
            member_before, member_after = residues[start]
            below = sections[at + 1] if at + 1 < len(sections) else None
            if (
                member_after is not None
                and below is not None
                and below.start == section.end
                and owners.get(below.start) == member_after
                and said[0] == line
                and body[len(body.rstrip()) :].count("\n") <= 1
            ):
                carried = section.start
                continue
            if joined and owner_of[-1] == member_before and not text[joined[-1].end : section.start].strip():
                joined[-1] = replace(joined[-1], end=section.end)
                continue
        joined.append(section)
        owner_of.append(owners.get(start, -1))
    return joined
