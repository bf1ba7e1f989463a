"""Excerpts with the query's words marked, so an agent sees at a glance why a passage matched."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_WORD_CHAR = re.compile(r"[^\W_]", re.UNICODE)
# Never marked inside: Markdown attribute lists and anchors ``{ #id }``, HTML tags, link targets ``](…)``.
_PROTECTED = re.compile(r"\{[^{}\n]*\}|<[^<>\n]*>|\]\([^()\n]*\)")
COMMON_WORDS = frozenset(
    "a an and are as at be by for from how in is it of on or the to was what when who why with".split()
)


def _stem(word: str) -> str:
    # A crude prefix stem (keyboard ≈ keyboards, approve ≈ approves) is enough for marking text.
    return word[: max(4, len(word) - 2)] if len(word) > 4 else word


@lru_cache(maxsize=256)
def _candidates(stems: frozenset[str]) -> re.Pattern[str]:
    """Whole words beginning with one of ``stems`` (any case)."""
    alternatives = "|".join(sorted(map(re.escape, stems), key=len, reverse=True))
    return re.compile(rf"(?<![^\W_])(?:{alternatives})[^\W_]*", re.IGNORECASE)


def _words_starting_with(text: str, stems: frozenset[str]) -> Iterator[re.Match[str]]:
    """Whole words of ``text`` beginning with one of ``stems`` (any case), in order.

    ``str.find`` per stem over the lowered text, then the word at each hit: four times faster than
    one regex of alternatives (45 -> ~10 us a 780-character chunk, ten a search, under the GIL).
    """
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lower case is longer: offsets would shift
        yield from _candidates(stems).finditer(text)
        return
    starts: set[int] = set()
    for stem in stems:
        at = lowered.find(stem)
        while at != -1:
            if at == 0 or not _WORD_CHAR.match(lowered, at - 1):
                starts.add(at)
            at = lowered.find(stem, at + 1)
    for start in sorted(starts):
        word = _WORD.match(text, start)
        if word is not None:
            yield word


def query_words(query: str) -> frozenset[str]:
    """The query's words as matched: common ones left out, crudely stemmed."""
    return frozenset(_stem(w) for w in _WORD.findall(query.lower()) if w not in COMMON_WORDS)


def word_spans(text: str, words: Iterable[str]) -> list[tuple[int, int]]:
    """Where ``text`` holds one of ``words`` as a whole word, or an inflection of it (the crude stem that
    marking matches by: ``parse`` finds ``parsed``, never ``reparse``; "the" is not in "theme")."""
    stems = frozenset(_stem(w.lower()) for w in words)
    if not stems:
        return []
    return [m.span() for m in _words_starting_with(text, stems) if _stem(m.group().lower()) in stems]


def words_in(text: str, stems: frozenset[str]) -> frozenset[str]:
    """Which of ``stems`` (``query_words``) ``text`` holds as words."""
    return frozenset(
        stem for m in _words_starting_with(text, stems) if (stem := _stem(m.group().lower())) in stems
    )


def word_share(text: str, query: str) -> float:
    """The share of the query's words (common ones left out, crudely stemmed as when marking) that
    ``text`` holds as words: 1.0 when every one appears, 0.0 for none (or a query of common words)."""
    stems = query_words(query)
    return len(words_in(text, stems)) / len(stems) if stems else 0.0


def highlight(text: str, query: str, width: int = 320, marker: str = "**") -> str:
    """A window of about ``width`` characters around the first match, matched words wrapped in ``marker``."""
    stems = query_words(query)
    spans: list[tuple[int, int]] = []
    if stems:
        protected = [m.span() for m in _PROTECTED.finditer(text)]
        # Only words that start with a stem can match: find those, then check.
        for m in _words_starting_with(text, stems):
            if spans and m.start() > spans[0][0] + width:
                break  # past any window that starts at or before the first match
            if _stem(m.group().lower()) in stems and not any(a <= m.start() < b for a, b in protected):
                spans.append(m.span())
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
