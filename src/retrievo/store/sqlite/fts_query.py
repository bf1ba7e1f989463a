"""Turn any user text into a safe FTS5 MATCH expression.

User text is never passed to FTS5 as syntax: it is cut into word tokens (the same notion of a
word as the ``unicode61`` tokenizer), each token is quoted as a phrase, and the phrases are OR-ed,
so quotes, ``NEAR``, ``*``, ``-``, ``:``, parentheses and ``AND/OR/NOT`` are only ever words.
"""

from __future__ import annotations

import re

from retrievo.ingest.identifiers import identifier_terms

MAX_TERMS = 64
MAX_QUERY_CHARS = 10_000
# Very common English words carry almost no BM25 signal but make FTS5 score many more rows.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def query_terms(text: str) -> list[str]:
    """Distinct lower-cased word tokens, stop-words dropped unless nothing else is left."""
    seen: dict[str, None] = {}
    # Compound identifiers in the query also match their parts (DiffExecutor → diff, executor).
    words = [*_WORD.findall(text.lower()), *identifier_terms(text[:MAX_QUERY_CHARS]).split()]
    for token in words:
        if token not in seen:
            seen[token] = None
        if len(seen) >= MAX_TERMS:
            break
    terms = list(seen)
    content = [t for t in terms if t not in STOPWORDS]
    return content or terms


def match_expression(text: str) -> str | None:
    """The MATCH string for ``text``, or None when it contains no searchable word."""
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
