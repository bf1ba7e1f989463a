"""The query's words in a text: marked in excerpts, so an agent sees at a glance why a passage matched, and
counted (``word_share``) by ``search_library``'s similarity and the answerability's readings.

A word matches as the keyword arm matches it: through FTS5's own tokenizer (``store.tokenizer``,
``porter unicode61 remove_diacritics 2``), so case and diacritics fold and inflections meet ("servers"
marks "Server", "antibodies" holds "antibody", "Café" is "cafe"); a word is compared whole, never as the
start of another ("the" is not in "theme", "parse" not in "reparse"). Common words (``COMMON_WORDS``, and
any query word whose stem is one of theirs) are never matched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from itertools import accumulate

from retrievo.store.tokenizer import shared_tokenizer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Never marked inside: Markdown attribute lists and anchors ``{ #id }``, HTML tags, link targets ``](…)``.
_PROTECTED = re.compile(r"\{[^{}\n]*\}|<[^<>\n]*>|\]\([^()\n]*\)")
# English function words: they say how a question is asked, not what it is about.
COMMON_WORDS = frozenset(
    """a an and any are as at be been being but by can could did do does for from had has have he her his
    how i if in into is it its me my no not of on or our she so than that the their them then there these
    they this those to us was we were what when where which who whom why will with would you your""".split()
)


def _terms(text: str) -> list[tuple[int, int, str]]:
    """``text``'s terms with their character offsets, in order (FTS5's tokenizer, ``store.tokenizer``:
    20 us a 780-character passage, in C, where a Python regex over its words alone takes longer)."""
    found = shared_tokenizer().spans(text)
    if len(text.encode("utf-8", "replace")) == len(text):  # ASCII: byte offsets are character offsets
        return found
    starts = [0, *accumulate(len(c.encode("utf-8", "replace")) for c in text)]
    char = {b: i for i, b in enumerate(starts)}
    return [(char[a], char[b], term) for a, b, term in found]


@lru_cache(maxsize=4_096)
def _stems(word: str) -> tuple[str, ...]:
    """``word``'s terms as the keyword arm indexes them ("Servers" -> server, "antibodies" -> antibodi)."""
    return tuple(term for _, _, term in _terms(word))


@lru_cache(maxsize=1)
def _common_stems() -> frozenset[str]:
    return frozenset(s for w in COMMON_WORDS for s in _stems(w))


def query_words(query: str) -> frozenset[str]:
    """The stems of the query's words that matter: common words left out."""
    found = (s for w in _WORD.findall(query.lower()) if w not in COMMON_WORDS for s in _stems(w))
    return frozenset(found) - _common_stems()


def word_spans(text: str, words: Iterable[str]) -> list[tuple[int, int]]:
    """Where ``text`` holds one of ``words`` as a whole word or an inflection of it, as the keyword arm
    stems it: ``parse`` finds ``parsed``, never ``reparse``; "the" is not in "theme"."""
    stems = frozenset(s for w in words for s in _stems(w))
    return [(a, b) for a, b, term in _terms(text) if term in stems] if stems else []


def words_in(text: str, stems: frozenset[str]) -> frozenset[str]:
    """Which of ``stems`` (``query_words``) ``text`` holds as words."""
    return stems.intersection(shared_tokenizer().tokens(text)) if stems else frozenset()


def word_share(text: str, query: str) -> float:
    """The share of the query's words (``query_words``: common ones left out, stemmed as the keyword arm
    stems them) that ``text`` holds: 1.0 when every one appears, 0.0 for none (or a query of common words)."""
    stems = query_words(query)
    return len(words_in(text, stems)) / len(stems) if stems else 0.0


def highlight(text: str, query: str, width: int = 320, marker: str = "**") -> str:
    """A window of about ``width`` characters around the first match, matched words wrapped in ``marker``."""
    stems = query_words(query)
    spans: list[tuple[int, int]] = []
    if stems:
        protected = [m.span() for m in _PROTECTED.finditer(text)]
        for a, b, term in _terms(text):
            if spans and a > spans[0][0] + width:
                break  # past any window that starts at or before the first match
            if term in stems and not any(p <= a < q for p, q in protected):
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
