"""Code-aware keyword terms: the words inside compound identifiers.

``DiffExecutor`` → ``diff executor``; ``run_target`` → ``run target``; ``HTTPServerError`` →
``http server error``. Keyword search indexes these beside the text (FTS5's tokenizer keeps
``DiffExecutor`` as one token), so "differential executor" finds code that only spells it as an
identifier. Measured on the Anthropic code set: see docs/benchmarks.md.
"""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[A-Za-z0-9]")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def split_identifier(identifier: str) -> list[str]:
    parts: list[str] = []
    for piece in identifier.split("_"):
        parts.extend(part.lower() for part in _PARTS.findall(piece))
    return parts


def identifier_terms(text: str) -> str:
    """Space-separated parts of every compound identifier in ``text`` (each identifier once)."""
    words: list[str] = []
    for identifier in dict.fromkeys(_IDENTIFIER.findall(text)):
        parts = split_identifier(identifier)
        if len(parts) > 1:
            words.extend(parts)
    return " ".join(words)
