"""A code file → a LoadedDocument of kind ``code`` whose sections are its symbols.

Sections partition the file: each symbol's own lines (a class's header and fields, without its
methods), each method and function, and the module remainder (imports, constants). Each section
carries the seed's header as its context — language, file, kind, qualified name, signature,
docstring summary — which is searched and embedded but kept out of the offsets.
"""

from __future__ import annotations

from pathlib import PurePath

from retrievo.ingest.code.symbols import CodeSymbol, parse_symbols
from retrievo.models import Kind, LoadedDocument, Section

HEADER_PATH_PARTS = 3


def load_code(source: str, text: str, language: str) -> LoadedDocument:
    path = PurePath(source)
    module = path.stem
    symbols = parse_symbols(text, language, module)
    shown = "/".join(path.parts[-HEADER_PATH_PARTS:])
    metadata: dict[str, object] = {"language": language}
    if symbols is None:
        metadata["symbols"] = "none: no grammar for this language" if len(text) else "none"
        sections: tuple[Section, ...] = (
            Section(0, len(text), context=_header(language, shown, "file", module, "", ""),
                    metadata={"language": language}),
        )  # fmt: skip
    else:
        sections = tuple(_sections(text, symbols, language, shown, module))
        metadata["symbols"] = len(symbols)
    return LoadedDocument(
        source=source,
        text=text,
        title=path.name,
        kind=Kind.CODE,
        media_type=f"text/x-{language}",
        sections=sections,
        metadata=metadata,
    )


def _header(language: str, path: str, kind: str, name: str, signature: str, docstring: str) -> str:
    lines = [f"Language: {language}", f"File: {path}", f"Type: {kind}", f"Name: {name}"]
    if signature:
        lines.append(f"Signature: {signature}")
    if docstring:
        lines.append(f"Doc: {docstring}")
    return "\n".join(lines)


def _sections(text: str, symbols: list[CodeSymbol], language: str, path: str, module: str) -> list[Section]:
    children: dict[int, list[int]] = {-1: []}
    for index, symbol in enumerate(symbols):
        children.setdefault(index, [])
        children[-1 if symbol.parent is None else symbol.parent].append(index)
    sections: list[Section] = []

    def emit(owner: int, start: int, end: int) -> None:
        if end <= start or not text[start:end].strip():
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
        sections.append(Section(start, end, context=context, metadata=metadata))

    stack: list[tuple[int, int, int]] = [(-1, 0, len(text))]
    while stack:
        owner, start, end = stack.pop()
        cursor = start
        for child in children[owner]:
            symbol = symbols[child]
            child_start, child_end = max(symbol.start, cursor), min(symbol.end, end)
            if child_end <= child_start:
                continue
            emit(owner, cursor, child_start)
            stack.append((child, child_start, child_end))
            cursor = child_end
        emit(owner, cursor, end)
    sections.sort(key=lambda section: section.start)
    return sections
