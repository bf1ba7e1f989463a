"""Symbols from a tree-sitter syntax tree: name, qualified name, kind, signature, docstring, exact span.

The walk is iterative (deeply nested input cannot overflow the stack) and bounded: files over
``MAX_PARSE_CHARS`` are not parsed, and are chunked by lines like code without a grammar.

A qualified name starts with the file's module: the file's stem (``core.Command.parse_args`` in
``core.py``), except in Go, where a name belongs to its package (the ``package x`` clause) and not to the
file it is written in: ``Run`` on ``Command`` in cobra's ``command.go`` is ``cobra.Command.Run``. A name
written qualified is read as such: Lua's ``function Queue.new`` is ``new`` in ``Queue``, Elixir's
``defmodule Phoenix.Router`` is ``Router`` in ``Phoenix``.

What a grammar marks as a definition is in ``languages.py``; what stands above one and belongs to it (its
doc comment, attributes) in ``prefixes.py``.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import Any

from retrievo.ingest.code.edges import IDENTIFIER, RULES, edges_of
from retrievo.ingest.code.languages import CLASS_LIKE, GRAMMARS, Grammar, tree_sitter_language
from retrievo.ingest.code.prefixes import COMMENTS, above, docstring

MAX_PARSE_CHARS = 2_000_000
MAX_SIGNATURE_CHARS = 200
_NAME_TYPES = frozenset(
    {"identifier", "field_identifier", "type_identifier", "qualified_identifier", "destructor_name",
     "operator_name", "property_identifier", "namespace_identifier", "scoped_identifier"}
)  # fmt: skip
# Node types that may define a symbol though no grammar's table names them: ``const f = () => …``, Elixir's
# ``def`` (a call).
_MAYBE_DEFINITIONS = frozenset({"lexical_declaration", "variable_declaration", "call"})
_BODIES = frozenset({"class_body", "enum_class_body", "function_body"})  # a body with no field (Kotlin)
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


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
        if rules is not None and node.type in rules.kinds:
            source = module if parent is None else symbols[parent].qualified_name
            edges.extend(RawEdge(source, k, t, ln, col) for k, t, ln, col in edges_of(node, rules, data))
        if node.type not in grammar.symbols and node.type not in _MAYBE_DEFINITIONS:
            stack.extend((child, parent) for child in reversed(node.named_children))
            continue
        kind, target, head = _kind(node, grammar, data)
        name = None if not kind else _name(target, grammar, data) if head is None else _head_name(head, data)
        if kind and name:
            qualifiers: list[str] = []
            if grammar.qualifier:
                *qualifiers, name = [part for part in re.split(grammar.qualifier, name) if part] or [name]
            if kind == "function" and parent is not None and symbols[parent].kind in CLASS_LIKE:
                kind = "method"
            elif kind == "function" and node.parent is not None and node.parent.type in grammar.containers:
                kind = "method"  # Zig's ``fn List(comptime T: type) type { return struct { fn len … } }``
            span = node.parent if node.parent is not None and node.parent.type in grammar.wrappers else node
            if language == "go" and node.type == "type_spec" and _alone_in(node, "type_declaration"):
                span = node.parent  # ``type Foo struct``: from ``type`` on, and its doc comment above
            if language == "go" and node.type == "method_declaration":
                receiver = _go_receiver(node, data)
                owner = ".".join([module, receiver] if receiver else [module])
            else:
                owner = module if parent is None else symbols[parent].qualified_name
            end = span.end_byte
            beside = span.next_named_sibling if grammar.body_siblings else None
            if beside is not None and beside.type in grammar.body_siblings:
                end = beside.end_byte  # Dart: ``void main()`` and, beside it, its ``{ … }``
            prefixes = above(span, tree.root_node, data, grammar)
            typed = next((p for p in prefixes if p.type == "signature"), None)  # Haskell's ``f :: a -> b``
            if typed is not None:
                signature = _signature(typed, data)
            elif head is not None:
                signature = _head_signature(node, head, data)
            else:
                signature = _signature(target, data)
            symbols.append(
                CodeSymbol(
                    name=name,
                    qualified_name=".".join([owner, *qualifiers, name]),
                    kind=kind,
                    start=offsets.char(prefixes[0].start_byte if prefixes else span.start_byte),
                    end=offsets.char(end),
                    signature=signature,
                    docstring=docstring(target, prefixes, data, grammar),
                    parent=parent,
                )
            )
            parent = len(symbols) - 1
        stack.extend((child, parent) for child in reversed(node.named_children))
    if grammar.clauses:
        symbols = _merge_clauses(symbols, text)
    symbols.sort(key=lambda s: (s.start, -s.end))
    return _reparent(symbols), edges


def _kind(node: Any, grammar: Grammar, data: bytes) -> tuple[str | None, Any, Any]:
    """The symbol kind ``node`` defines (None: not a definition), the node that names it, and an Elixir
    definition's head (``match(conn, opts)`` in ``def match(conn, opts) do``; else None)."""
    kind = grammar.symbols.get(node.type)
    if kind is None and grammar.containers and node.type == "variable_declaration":
        value = next((c for c in node.named_children if c.type in grammar.containers), None)
        return (grammar.containers[value.type] if value is not None else None), node, None
    if kind is None and node.type in ("lexical_declaration", "variable_declaration"):
        target, kind = _function_variable(node)
        return kind, target, None
    if kind is None and grammar.definers and node.type == "call":
        callee = node.child_by_field_name("target")
        kind = grammar.definers.get(_text(callee, data)) if callee is not None else None
        arguments = next((c for c in node.named_children if c.type == "arguments"), None)
        head = (
            arguments.named_children[0]
            if kind and arguments is not None and arguments.named_children
            else None
        )
        return (kind, node, head) if head is not None else (None, node, None)
    if kind is not None and grammar.keywords:
        kind = next((grammar.keywords[c.type] for c in node.children if c.type in grammar.keywords), kind)
    if kind == "function" and grammar.method_names:
        named = node.child_by_field_name("name")
        kind = "method" if named is not None and named.type in grammar.method_names else kind
    return kind, node, None


def _head_name(head: Any, data: bytes) -> str | None:
    """The name in an Elixir definition's head: ``Phoenix.Router``, ``match(conn)``, ``foo``, ``bar(x) when …``."""
    if head.type == "binary_operator" and _text(head.child_by_field_name("operator") or head, data) == "when":
        head = head.child_by_field_name("left") or head
    if head.type == "call":
        head = head.child_by_field_name("target") or head
    return _text(head, data)[:200] if head.type in ("alias", "identifier") else None


def _merge_clauses(symbols: list[CodeSymbol], text: str) -> list[CodeSymbol]:
    """One symbol for a function written in clauses (Haskell's equations, Elixir's ``def f(0)``/``def f(n)``):
    a definition right after one of the same name and kind, in the same parent, extends it."""
    kept: list[CodeSymbol] = []
    moved: dict[int, int] = {}
    last: dict[int | None, int] = {}
    for index, symbol in enumerate(symbols):
        parent = None if symbol.parent is None else moved[symbol.parent]
        previous = last.get(parent)
        if (
            previous is not None
            and (kept[previous].qualified_name, kept[previous].kind) == (symbol.qualified_name, symbol.kind)
            and not text[kept[previous].end : symbol.start].strip()
        ):
            kept[previous] = replace(kept[previous], end=symbol.end)
            moved[index] = previous
            continue
        moved[index] = last[parent] = len(kept)
        kept.append(replace(symbol, parent=parent))
    return kept


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


def _name(node: Any, grammar: Grammar, data: bytes) -> str | None:
    if node.type == "impl_item":
        implemented = node.child_by_field_name("type")
        return _text(implemented, data) if implemented is not None else None
    if node.type in ("struct_specifier", "enum_specifier", "class_specifier") and (
        node.child_by_field_name("body") is None
    ):
        return None  # a use or forward declaration, not a definition
    if node.type in grammar.name_fields:
        named = node.child_by_field_name(grammar.name_fields[node.type])
        word = IDENTIFIER.search(_text(named, data)) if named is not None else None
        return word.group() if word else None
    named = node.child_by_field_name("name")
    if named is not None:
        return _text(named, data)[:200]
    if node.type in grammar.names:
        return grammar.names[node.type]
    declarator = node.child_by_field_name("declarator")
    if declarator is None:  # a name with no field of its own: Dart's ``mixin M``, Kotlin's ``typealias T``
        return next((_text(c, data)[:200] for c in node.named_children if c.type in _NAME_TYPES), None)
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


def _head_signature(node: Any, head: Any, data: bytes) -> str:
    """``def match(conn, opts)`` for Elixir's ``def match(conn, opts) do … end``: the definer and the head."""
    callee = node.child_by_field_name("target")
    text = f"{_text(callee, data)} {_text(head, data)[: 4 * MAX_SIGNATURE_CHARS]}"
    return " ".join(text.split())[:MAX_SIGNATURE_CHARS]


def _signature(node: Any, data: bytes) -> str:
    """The definition up to its body, or its first line when it has none; a Haskell type signature whole."""
    body = (
        node.child_by_field_name("body")
        or node.child_by_field_name("value")
        or next((c for c in node.named_children if c.type in _BODIES), None)
    )
    end = body.start_byte if body is not None and body.start_byte > node.start_byte else node.end_byte
    # Ruby: ``module M``, a comment, then its body (which starts after the comment)
    comment = next((c for c in node.named_children if c.type in COMMENTS and c.start_byte < end), None)
    end = comment.start_byte if comment is not None else end
    text = data[node.start_byte : min(end, node.start_byte + 4 * MAX_SIGNATURE_CHARS)].decode(
        "utf-8", "replace"
    )
    if body is None and node.type != "signature":
        text = text.split("\n", 1)[0]
    collapsed = re.sub(r"([(\[])\s+|\s+([)\]])", r"\1\2", " ".join(text.split()))
    return collapsed.rstrip(" {:=")[:MAX_SIGNATURE_CHARS]


def _alone_in(node: Any, kind: str) -> bool:
    """Whether ``node``'s parent is a ``kind`` holding no other node of ``node``'s type (not a group)."""
    parent = node.parent
    return (
        parent is not None
        and parent.type == kind
        and sum(c.type == node.type for c in parent.named_children) == 1
    )
