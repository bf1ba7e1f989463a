"""What stands right above a definition and belongs to it: its doc comment, attributes and annotations,
Elixir's ``@doc``/``@spec``, a Haskell type signature; and the docstring read from them.

They are found by position, line by line upwards, not among the definition's siblings: grammars put a
comment where the text has it, and that is not always beside the definition. Ruby's comment above a
class that opens a module's body is the module's child (the body starts at the class), Haskell's
haddock above the first declaration ends the imports.
"""

from __future__ import annotations

import re
from typing import Any

from retrievo.ingest.code.languages import Grammar

# Each grammar's comment nodes.
COMMENTS = frozenset(
    {"comment", "line_comment", "block_comment", "multiline_comment", "documentation_comment", "haddock"}
)
# What belongs to the definition below it in every grammar: comments and, in Rust, attributes
# (``/// Doc`` above ``#[derive(..)]`` above ``struct``). A grammar adds its own (Grammar.prefixes).
PREFIXES = COMMENTS | {"attribute_item"}
# At most this many read upwards: a file of thousands of comment lines above one definition made the
# reading quadratic.
MAX_PREFIXES = 64
MAX_SUMMARY_CHARS = 200
_STRING_QUOTES = re.compile(r"^(?:~[A-Za-z]+|[rRbBuUfF]*)(?:\"{3}|'{3}|\"|')|(?:\"{3}|'{3}|\"|')$")
_COMMENT_ENDS = re.compile(r"\s*(?:\*/|-\})\s*$")
_COMMENT_MARKS = re.compile(r"^\s*(?:/\*[*!]?|\*/|\*|//[/!]?|#+|\{-\|?|-\}|--+\s*\|?)\s?")


def above(span: Any, root: Any, data: bytes, grammar: Grammar) -> list[Any]:
    """The nodes right above ``span`` that belong to it, top first: each on lines of its own, no blank line
    between, not indented deeper than the definition. A comment that ends a line of code, or one above a
    definition that does not start its line, is not one. A Go ``// Foo does X`` above ``func Foo`` was a
    chunk of its own (222 of a repository's 1,050)."""
    line = data.rfind(b"\n", 0, span.start_byte) + 1
    indent = span.start_byte - line
    if data[line : span.start_byte].strip():
        return []
    found: list[Any] = []
    for _ in range(MAX_PREFIXES):
        if line == 0:
            break
        previous = data.rfind(b"\n", 0, line - 1) + 1
        text = data[previous:line]
        first = previous + len(text) - len(text.lstrip())
        if not text.strip():
            break
        node = root.named_descendant_for_byte_range(first, first + 1)
        while node is not None and node.end_byte <= line and not _belongs(node, grammar, data):
            node = node.parent
        if node is None or node.end_byte > line or data[node.end_byte : line].strip():
            break
        begins = data.rfind(b"\n", 0, node.start_byte) + 1
        if data[begins : node.start_byte].strip() or node.start_byte - begins > indent:
            break  # after code on its line (that line's comment), or deeper (the end of the code above)
        found.insert(0, node)
        line = begins
    return found


def _belongs(node: Any, grammar: Grammar, data: bytes) -> bool:
    if node.type in COMMENTS:
        text = data[node.start_byte : node.start_byte + 3]
        if text.startswith(b"#!"):
            return False  # a shebang documents nothing
        # an inner doc comment (Rust's ``//!``) documents the module it is in
        return not (grammar.inner_docs and text.startswith(grammar.inner_docs))
    return (
        node.type in PREFIXES or node.type in grammar.prefixes or attribute(node, data) in grammar.attributes
    )


def attribute(node: Any, data: bytes) -> str | None:
    """``doc`` for Elixir's ``@doc "…"`` (a module attribute's name), None for any other node."""
    operand = node.child_by_field_name("operand") if node.type == "unary_operator" else None
    callee = operand.child_by_field_name("target") if operand is not None and operand.type == "call" else None
    if callee is None or data[node.start_byte : node.start_byte + 1] != b"@":
        return None
    return data[callee.start_byte : callee.end_byte].decode("utf-8", "replace")


def docstring(node: Any, prefixes: list[Any], data: bytes, grammar: Grammar) -> str:
    """The docstring's first line: Python's docstring; else the comments above (and Elixir's ``@doc``);
    else an Elixir module's ``@moduledoc``."""
    if grammar.docstring_body:
        body = node.child_by_field_name("body")
        first = body.named_children[0] if body is not None and body.named_children else None
        if first is not None and first.type == "expression_statement" and first.named_children:
            string = first.named_children[0]
            if string.type == "string":
                return summary(_STRING_QUOTES.sub("", _text(string, data)))
        return ""
    written = [
        _text(p, data) if p.type in COMMENTS else _attribute_text(p, data)
        for p in prefixes
        if p.type in COMMENTS or attribute(p, data) == "doc"
    ]
    if not written and grammar.attributes:
        body = next((c for c in node.named_children if c.type == "do_block"), None)
        module_doc = (
            next((c for c in body.named_children if attribute(c, data) == "moduledoc"), None)
            if body
            else None
        )
        written = [_attribute_text(module_doc, data)] if module_doc is not None else []
    return summary("\n".join(written))


def _attribute_text(node: Any, data: bytes) -> str:
    """The string an Elixir attribute holds (``@doc \"\"\"…\"\"\"``, ``@doc ~S"…"``); "" for ``@doc false``."""
    arguments = next((c for c in node.named_children[0].named_children if c.type == "arguments"), None)
    value = arguments.named_children[0] if arguments is not None and arguments.named_children else None
    if value is None or value.type not in ("string", "sigil"):
        return ""
    return _STRING_QUOTES.sub("", _text(value, data))


def summary(text: str) -> str:
    for line in text.splitlines():
        cleaned = _COMMENT_ENDS.sub("", _COMMENT_MARKS.sub("", line)).strip().strip('"').strip()
        if cleaned and cleaned not in ("*", "/"):
            return cleaned[:MAX_SUMMARY_CHARS]
    return ""


def _text(node: Any, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")
