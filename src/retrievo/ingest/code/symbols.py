"""Symbols from a tree-sitter syntax tree: name, qualified name, kind, signature, docstring, exact span.

The walk is iterative (deeply nested input cannot overflow the stack) and bounded: files over
``MAX_PARSE_CHARS`` are not parsed, and are chunked by lines like code without a grammar.

A qualified name starts with the file's module: the file's stem (``core.Command.parse_args`` in
``core.py``), except in Go, where a name belongs to its package (the ``package x`` clause) and not to the
file it is written in: ``Run`` on ``Command`` in cobra's ``command.go`` is ``cobra.Command.Run``.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from retrievo.ingest.code.edges import RULES, edges_of
from retrievo.ingest.code.languages import CLASS_LIKE, GRAMMARS, tree_sitter_language

MAX_PARSE_CHARS = 2_000_000
MAX_SIGNATURE_CHARS = 200
_NAME_TYPES = frozenset(
    {"identifier", "field_identifier", "type_identifier", "qualified_identifier", "destructor_name",
     "operator_name", "property_identifier", "namespace_identifier", "scoped_identifier"}
)  # fmt: skip
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_STRING_QUOTES = re.compile(r"^[rRbBuUfF]*(?:\"{3}|'{3}|\"|')|(?:\"{3}|'{3}|\"|')$")
_COMMENT_MARKS = re.compile(r"^\s*(?:/\*\*?|\*/|\*|///?|#|--)\s?")


@dataclass(frozen=True)
class CodeSymbol:
    name: str
    qualified_name: str
    kind: str
    start: int  # character offsets into the file's text; the span includes decorators
    end: int
    signature: str
    docstring: str
    parent: int | None  # index of the enclosing symbol in the list


class _Offsets:
    """Byte offsets (what tree-sitter reports) to character offsets (what chunks use)."""

    def __init__(self, text: str) -> None:
        self._ascii = text.isascii()
        self._starts: list[int] = [] if self._ascii else [0, *accumulate(len(ch.encode()) for ch in text)]

    def char(self, byte: int) -> int:
        return byte if self._ascii else bisect.bisect_right(self._starts, byte) - 1


@dataclass(frozen=True)
class RawEdge:
    source: str  # qualified name of the enclosing symbol, or the module
    kind: str
    target: str
    line: int  # 0-based
    byte_column: int = 0


def parse_symbols(text: str, language: str, module: str) -> list[CodeSymbol] | None:
    """Symbols in source order, or None when the language has no grammar or the file is too large."""
    parsed = parse_code(text, language, module)
    return None if parsed is None else parsed[0]


def unparsed_reason(text: str, language: str) -> str | None:
    """Why a file of ``language`` gets no symbols (it is then indexed as text, by lines), or None if it does."""
    if language not in GRAMMARS:
        return f"no grammar for {language}: read as text"
    if tree_sitter_language(language) is None:
        return f"the {language} grammar ({GRAMMARS[language].module}) is not installed: read as text"
    if len(text) > MAX_PARSE_CHARS:
        return f"too large to parse: {len(text)} characters > {MAX_PARSE_CHARS}: read as text"
    return None


def parse_code(text: str, language: str, module: str) -> tuple[list[CodeSymbol], list[RawEdge]] | None:
    """Symbols in source order and the edges found, or None (no grammar, or the file is too large).

    ``module`` qualifies the names (the file's stem); a Go file's ``package`` clause takes its place."""
    ts_language = tree_sitter_language(language)
    if ts_language is None or len(text) > MAX_PARSE_CHARS:
        return None
    import tree_sitter

    data = text.encode("utf-8")
    tree = tree_sitter.Parser(ts_language).parse(data)
    grammar = GRAMMARS[language]
    if language == "go":
        module = go_package(tree.root_node, data) or module
    offsets = _Offsets(text)
    symbols: list[CodeSymbol] = []
    edges: list[RawEdge] = []
    rules = RULES.get(language)
    stack: list[tuple[Any, int | None]] = [(tree.root_node, None)]
    while stack:
        node, parent = stack.pop()
        if rules is not None:
            source = module if parent is None else symbols[parent].qualified_name
            edges.extend(RawEdge(source, k, t, ln, col) for k, t, ln, col in edges_of(node, rules, data))
        kind = grammar.symbols.get(node.type)
        target = node
        if kind is None and node.type in ("lexical_declaration", "variable_declaration"):
            target, kind = _function_variable(node)
        name = _name(target, language, data) if kind else None
        if kind and name:
            if kind == "function" and parent is not None and symbols[parent].kind in CLASS_LIKE:
                kind = "method"
            span = node.parent if node.parent is not None and node.parent.type in grammar.wrappers else node
            if language == "go" and node.type == "type_spec" and _alone_in(node, "type_declaration"):
                span = node.parent  # ``type Foo struct``: from ``type`` on, and its doc comment above
            if language == "go" and node.type == "method_declaration":
                receiver = _go_receiver(node, data)
                parent_names = [receiver] if receiver else []
            else:
                parent_names = _names_of(symbols, parent)
            symbols.append(
                CodeSymbol(
                    name=name,
                    qualified_name=".".join([module, *parent_names, name]),
                    kind=kind,
                    start=offsets.char(_documented_start(span, data)),
                    end=offsets.char(span.end_byte),
                    signature=_signature(target, data),
                    docstring=_docstring(target, span, data, grammar.docstring_body),
                    parent=parent,
                )
            )
            parent = len(symbols) - 1
        stack.extend((child, parent) for child in reversed(node.named_children))
    symbols.sort(key=lambda s: (s.start, -s.end))
    return _reparent(symbols), edges


def _reparent(symbols: list[CodeSymbol]) -> list[CodeSymbol]:
    """Parent indices after sorting: the nearest earlier symbol whose span contains this one."""
    fixed: list[CodeSymbol] = []
    open_stack: list[int] = []
    for symbol in symbols:
        while open_stack and fixed[open_stack[-1]].end < symbol.end:
            open_stack.pop()
        parent = open_stack[-1] if open_stack else None
        fixed.append(
            CodeSymbol(symbol.name, symbol.qualified_name, symbol.kind, symbol.start, symbol.end,
                       symbol.signature, symbol.docstring, parent)
        )  # fmt: skip
        open_stack.append(len(fixed) - 1)
    return fixed


def _names_of(symbols: list[CodeSymbol], index: int | None) -> list[str]:
    names: list[str] = []
    while index is not None:
        names.append(symbols[index].name)
        index = symbols[index].parent
    return names[::-1]


def _text(node: Any, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _function_variable(node: Any) -> tuple[Any, str | None]:
    """``const f = () => …`` / ``var f = function () …``: the declarator, as a function."""
    declarators = [c for c in node.named_children if c.type == "variable_declarator"]
    if len(declarators) == 1:
        value = declarators[0].child_by_field_name("value")
        if value is not None and value.type in _FUNCTION_VALUES:
            return declarators[0], "function"
    return node, None


def _name(node: Any, language: str, data: bytes) -> str | None:
    if node.type == "impl_item":
        implemented = node.child_by_field_name("type")
        return _text(implemented, data) if implemented is not None else None
    if node.type in ("struct_specifier", "enum_specifier", "class_specifier") and (
        node.child_by_field_name("body") is None
    ):
        return None  # a use or forward declaration, not a definition
    named = node.child_by_field_name("name")
    if named is not None:
        return _text(named, data)[:200]
    declarator = node.child_by_field_name("declarator")
    for _ in range(20):  # C/C++: function_definition → function_declarator → … → identifier
        if declarator is None:
            return None
        if declarator.type in _NAME_TYPES:
            return _text(declarator, data)[:200]
        declarator = declarator.child_by_field_name("declarator") or (
            declarator.named_children[0] if declarator.named_children else None
        )
    return None


def go_package(root: Any, data: bytes) -> str | None:
    """The name in a Go file's ``package x`` clause (the first of the file's top-level nodes that is one)."""
    for node in root.named_children:
        if node.type == "package_clause":
            named = next((c for c in node.named_children if c.type == "package_identifier"), None)
            return _text(named, data) if named is not None else None
    return None


def _go_receiver(node: Any, data: bytes) -> str | None:
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return None
    match = re.search(r"\*?\s*([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*\)\s*$", _text(receiver, data))
    return match.group(1) if match else None


def _signature(node: Any, data: bytes) -> str:
    body = node.child_by_field_name("body") or node.child_by_field_name("value")
    end = body.start_byte if body is not None and body.start_byte > node.start_byte else node.end_byte
    head = data[node.start_byte : min(end, node.start_byte + 4 * MAX_SIGNATURE_CHARS)].decode(
        "utf-8", "replace"
    )
    if body is None:
        head = head.split("\n", 1)[0]
    collapsed = re.sub(r"([(\[])\s+|\s+([)\]])", r"\1\2", " ".join(head.split()))
    return collapsed.rstrip(" {:=")[:MAX_SIGNATURE_CHARS]


def _docstring(node: Any, span: Any, data: bytes, in_body: bool) -> str:
    if in_body:
        body = node.child_by_field_name("body")
        first = body.named_children[0] if body is not None and body.named_children else None
        if first is not None and first.type == "expression_statement" and first.named_children:
            string = first.named_children[0]
            if string.type == "string":
                return _summary(_STRING_QUOTES.sub("", _text(string, data)))
        return ""
    comments: list[str] = []
    sibling = span.prev_named_sibling
    line = span.start_point[0]
    for _ in range(MAX_PREFIXES):
        if sibling is None or sibling.type not in PREFIXES or line - sibling.end_point[0] > 1:
            break
        if sibling.type in COMMENTS:
            comments.insert(0, _text(sibling, data))
        line = sibling.start_point[0]
        sibling = sibling.prev_named_sibling
    return _summary("\n".join(comments))


# What may stand right above a definition and belongs to it: its doc comment (each grammar's comment
# nodes) and, in Rust, its attributes (``/// Doc`` above ``#[derive(..)]`` above ``struct``).
COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
PREFIXES = COMMENTS | {"attribute_item"}
# At most this many read upwards: each step back is a walk over the parent's children in tree-sitter, and
# a file of thousands of comment lines above one definition made the reading quadratic.
MAX_PREFIXES = 64


def _alone_in(node: Any, kind: str) -> bool:
    """Whether ``node``'s parent is a ``kind`` holding no other node of ``node``'s type (not a group)."""
    parent = node.parent
    return (
        parent is not None
        and parent.type == kind
        and sum(c.type == node.type for c in parent.named_children) == 1
    )


def _documented_start(span: Any, data: bytes) -> int:
    """Where a definition's chunk starts: the first line of the comments (and attributes) right above it,
    each on a line of its own with no blank line between; a comment that ends a line of code is not one.
    A Go ``// Foo does X`` above ``func Foo`` was a chunk of its own (222 of a repository's 1,050)."""
    start: int = span.start_byte
    line = span.start_point[0]
    sibling = span.prev_named_sibling
    for _ in range(MAX_PREFIXES):
        if sibling is None or sibling.type not in PREFIXES or line - sibling.end_point[0] > 1:
            break
        begins = data.rfind(b"\n", 0, sibling.start_byte) + 1
        if data[begins : sibling.start_byte].strip():
            break  # after code on its line: that line's comment, not this definition's
        start, line = sibling.start_byte, sibling.start_point[0]
        sibling = sibling.prev_named_sibling
    return start


def _summary(text: str) -> str:
    for line in text.splitlines():
        cleaned = _COMMENT_MARKS.sub("", line).strip().strip('"').strip()
        if cleaned and cleaned not in ("*", "/"):
            return cleaned[:200]
    return ""
