"""Code-aware keyword terms: the words inside compound identifiers.

``DiffExecutor`` → ``diff executor``; ``run_target`` → ``run target``; ``HTTPServerError`` →
``http server error``. Keyword search indexes these beside the text (FTS5's tokenizer keeps
``DiffExecutor`` as one token), so "differential executor" finds code that only spells it as an
identifier. Measured on the Anthropic code set: see docs/benchmarks.md.
"""

from __future__ import annotations

import re
import string
import unicodedata

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[A-Za-z0-9]")
# Where an identifier can have more than one part (``split_identifier``): an underscore, a lower case
# letter then a capital, two capitals then a lower case letter, a letter then a digit (an identifier
# starts with a letter or "_", so its first digit follows one of those). Looked for with ``bytes.find``
# in a copy of the text with each character replaced by its class (a, A, 0, _, or a space for anything
# outside [A-Za-z0-9_], non-ASCII included): only the runs of [A-Za-z0-9_] holding one are read by the
# regex. SciFact's 7.8 M characters: 0.16 -> 0.08 s (a regex blanking plain words first: 0.16 s;
# listing every identifier: 0.17 s); equal to the plain definition (tests/test_identifiers.py).
_CLASSES = bytes(
    ord("a" if c in string.ascii_lowercase else "A" if c in string.ascii_uppercase
        else "0" if c in string.digits else "_" if c == "_" else " ")
    for c in map(chr, range(256))
)  # fmt: skip
_MARKS = (b"_", b"aA", b"AAa", b"a0", b"A0")
_WORD = re.compile(r"\w+")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def split_identifier(identifier: str) -> list[str]:
    parts: list[str] = []
    for piece in identifier.split("_"):
        parts.extend(part.lower() for part in _PARTS.findall(piece))
    return parts


def keyword_terms(text: str, context: str = "") -> str:
    """What keyword search indexes beside a chunk: the text's identifier parts, and folded words of both.

    PDFs set in LaTeX keep ligatures (``ﬁ``, ``ﬀ``, ``ﬂ``) and full-width forms: "Deﬁnition" is one token
    that "Definition" never matches. Each such word is added in its NFKC form (the chunk's own text is
    never changed, so ``text == source[start:end]`` holds); queries are folded the same way.
    """
    terms = identifier_terms(text)
    if text.isascii() and context.isascii():
        return terms
    if unicodedata.is_normalized("NFKC", text) and unicodedata.is_normalized("NFKC", context):
        return terms  # no word of a normalized text changes (in C; SciFact: 1,123 of 1,189 non-ASCII texts)
    folded = [
        unicodedata.normalize("NFKC", word)
        for word in dict.fromkeys(_WORD.findall(f"{context} {text}"))
        if unicodedata.normalize("NFKC", word) != word
    ]
    return " ".join([terms, *folded]).strip()


def identifier_terms(text: str) -> str:
    """Space-separated parts of every compound identifier in ``text`` (each identifier once, in order)."""
    classes = text.encode("ascii", "replace").translate(_CLASSES)  # one byte a character: same offsets
    runs: set[tuple[int, int]] = set()
    for mark in _MARKS:
        at = classes.find(mark)
        while at != -1:
            end = classes.find(b" ", at)
            end = len(classes) if end == -1 else end
            runs.add((classes.rfind(b" ", 0, at) + 1, end))
            at = classes.find(mark, end)
    words: list[str] = []
    seen: set[str] = set()
    for start, end in sorted(runs):
        for identifier in _IDENTIFIER.findall(text, start, end):
            if identifier in seen:
                continue
            seen.add(identifier)
            parts = split_identifier(identifier)
            if len(parts) > 1:
                words.extend(parts)
    return " ".join(words)
