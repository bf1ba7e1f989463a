"""The query's words in a text: marked in excerpts, so an agent sees at a glance why a passage matched, and
counted (``word_share``) by ``search_library``'s similarity and the answerability's readings.

A word matches as the keyword arm matches it: through FTS5's own tokenizer (``store.tokenizer``,
``porter unicode61 remove_diacritics 2``), so case and diacritics fold and inflections meet ("servers"
marks "Server", "antibodies" holds "antibody", "Café" is "cafe"); a word is compared whole, never as the
start of another ("the" is not in "theme", "parse" not in "reparse"). Common words (``query.COMMON_WORDS``,
and any query word whose stem is one of theirs) are never matched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import accumulate

from retrievo.search.query import Query, stems
from retrievo.store.tokenizer import shared_tokenizer

# Never marked inside: Markdown attribute lists and anchors ``{ #id }``, HTML tags, link targets ``](…)``.
_PROTECTED = re.compile(r"\{[^{}\n]*\}|<[^<>\n]*>|\]\([^()\n]*\)")


def _terms(text: str) -> list[tuple[int, int, str]]:
    """``text``'s terms with their character offsets, in order (FTS5's tokenizer, ``store.tokenizer``:
    20 us a 780-character passage, in C, where a Python regex over its words alone takes longer)."""
    found = shared_tokenizer().spans(text)
    if len(text.encode("utf-8", "replace")) == len(text):  # ASCII: byte offsets are character offsets
        return found
    starts = [0, *accumulate(len(c.encode("utf-8", "replace")) for c in text)]
    char = {b: i for i, b in enumerate(starts)}
    return [(char[a], char[b], term) for a, b, term in found]


def word_spans(text: str, words: Iterable[str]) -> list[tuple[int, int]]:
    """Where ``text`` holds one of ``words`` as a whole word or an inflection of it, as the keyword arm
    stems it: ``parse`` finds ``parsed``, never ``reparse``; "the" is not in "theme"."""
    found = frozenset(s for w in words for s in stems(w))
    return [(a, b) for a, b, term in _terms(text) if term in found] if found else []


def words_in(text: str, marked: frozenset[str]) -> frozenset[str]:
    """Which of ``marked`` (``Query.marked``) ``text`` holds as words."""
    return marked.intersection(shared_tokenizer().tokens(text)) if marked else frozenset()


def word_share(text: str, query: Query) -> float:
    """The share of the query's words (``Query.marked``: common ones left out, stemmed as the keyword arm
    stems them) that ``text`` holds: 1.0 when every one appears, 0.0 for none (or a query of common words)."""
    marked = query.marked
    return len(words_in(text, marked)) / len(marked) if marked else 0.0


def highlight(text: str, query: Query, width: int = 320, marker: str = "**") -> str:
    """A window of about ``width`` characters around the first match, the query's words (``Query.marked``)
    wrapped in ``marker``."""
    marked = query.marked
    spans: list[tuple[int, int]] = []
    if marked:
        protected = [m.span() for m in _PROTECTED.finditer(text)]
        for a, b, term in _terms(text):
            if spans and a > spans[0][0] + width:
                break  # past any window that starts at or before the first match
            if term in marked and not any(p <= a < q for p, q in protected):
                spans.append((a, b))
    start = 0
    if spans and spans[0][0] > width // 3:
        start = text.rfind(" ", 0, spans[0][0] - width // 3) + 1
    end = min(len(text), start + width)
    if end < len(text):
        end = text.rfind(" ", start, end) if text.rfind(" ", start, end) > start else end
    pieces = ["…" if start > 0 else ""]
    cursor = start
    for s, e in spans:
        if s < start or e > end:
            continue
        pieces.extend([text[cursor:s], marker, text[s:e], marker])
        cursor = e
    pieces.append(text[cursor:end])
    pieces.append("…" if end < len(text) else "")
    return " ".join("".join(pieces).split())
