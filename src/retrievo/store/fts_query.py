"""Turn any user text into a safe FTS5 MATCH expression.

User text is never passed to FTS5 as syntax: it is cut into word tokens (the same notion of a
word as the ``unicode61`` tokenizer), each token is quoted as a phrase, and the phrases are OR-ed,
so quotes, ``NEAR``, ``*``, ``-``, ``:``, parentheses and ``AND/OR/NOT`` are only ever words.
"""

from __future__ import annotations

import re
import unicodedata

from retrievo.text.identifiers import identifier_terms

MAX_TERMS = 64
PRUNE_MIN_ROWS = 1000
MAX_QUERY_CHARS = 10_000
MAX_TERM_CHARS = 100
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
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)  # "Deﬁnition" asks for "Definition" (see keyword_terms)
    seen: dict[str, None] = {}
    # Compound identifiers in the query also match their parts (DiffExecutor → diff, executor).
    words = [*_WORD.findall(text.lower()), *identifier_terms(text[:MAX_QUERY_CHARS]).split()]
    # FTS5 cuts terms at 32 KB, possibly inside a character; no real word is this long anyway.
    for token in (word[:MAX_TERM_CHARS] for word in words):
        if token not in seen:
            seen[token] = None
        if len(seen) >= MAX_TERMS:
            break
    terms = list(seen)
    content = [t for t in terms if t not in STOPWORDS]
    return content or terms


def match_expression(terms: list[str]) -> str | None:
    """The MATCH string for already-extracted terms, or None when there are none."""
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def prune_common_terms(terms: list[str], document_frequency: dict[str, int], rows: int) -> list[str]:
    """Drop terms found in more than half the rows, keeping at least the rarest term.

    Why: BM25 as FTS5 computes it floors such a term's idf at 1e-6, so it adds at most ~2e-6 to
    any score — but matching it makes FTS5 visit and score every row that holds it. Below
    ``PRUNE_MIN_ROWS`` rows nothing is pruned (small indexes are fast anyway and stay exact).
    """
    if rows < PRUNE_MIN_ROWS or not terms:
        return terms
    kept = [term for term in terms if document_frequency.get(term, 0) * 2 <= rows]
    return kept or [min(terms, key=lambda term: document_frequency.get(term, 0))]
