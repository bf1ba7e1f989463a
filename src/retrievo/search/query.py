"""One reading of the query (``read_query``), made once at a search's entry and handed to every arm, re-scorer,
the answer and the highlighter: what a query may be, its words as the keyword arm indexes them, its quoted
phrases, the names it spells as code, and whether it asks, may be copied or is only names.

What a query may be (``clean_query``): hostile text never reaches a tokenizer or FTS5 as is: lone surrogates
(not encodable as UTF-8) become U+FFFD, NUL and other control characters become spaces, and the text is cut at
``MAX_QUERY_CHARS``. The dense arm reads at most ``MAX_EMBED_QUERY_CHARS`` of it (the model sees 256 tokens at
most, so more text is work without effect), and the keyword arm at most 64 distinct terms of at most
``MAX_TERM_CHARS`` characters each.

Words are FTS5's ``porter unicode61 remove_diacritics 2`` tokens (``store/tokenizer.py``: "servers" is
"server", "antibodies" "antibodi"), so every reader compares them as the keyword arm indexes them, on SQLite
and PostgreSQL alike. The reading is linear in the query's length: one pass of the tokenizer over the text
and one over each distinct word, and regular expressions that do not backtrack (``_camel``).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from retrievo.store.fts_query import STOPWORDS
from retrievo.store.tokenizer import shared_tokenizer

# How a search embeds its query: the text -> (model id, vector); raises EmbedderUnavailable.
EmbedQuery = Callable[[str], tuple[str, npt.NDArray[np.float32]]]
MAX_QUERY_CHARS = 10_000
MAX_EMBED_QUERY_CHARS = 2_000
MAX_TERM_CHARS = 100
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# A short query: at most this many content words (a name, a rare word, two words). The fusion moves its
# weights towards the keyword arm for it (``fusion.adaptive_weights``), the answer reads whether its words are
# held at all (``Query.looked``, ``answer/answerability.py``).
SHORT_WORDS = 2
QUOTED = re.compile(r'"([^"]+)"')
# A question, not a passage copied: it opens with a question word or ends with "?" (a FAQ's heading a page
# repeats word for word is still a question).
ASKS = re.compile(r"^\W*(how|where|what|which|why|when|who|whose|does|do|is|are|can|should)\b|\?\s*$", re.I)
COPIED_WORDS = (3, 16)  # an unquoted query of this many words may be a run copied from a passage
# The words that frame a question rather than name its subject ("how does X work", "where is X defined",
# "what is the purpose of the X method", "which X exist"): no passage need hold them for it to be answered.
FRAME = (
    "does do did work works working defined define definition implemented implement implementation exist "
    "exists handled purpose method function class"
)
# English function words: they say how a question is asked, not what it is about (never marked in excerpts).
COMMON_WORDS = frozenset(
    """a an and any are as at be been being but by can could did do does for from had has have he her his
    how i if in into is it its me my no not of on or our she so than that the their them then there these
    they this those to us was we were what when where which who whom why will with would you your""".split()
)
_MARKED = re.compile(r"[^\W_]+", re.UNICODE)  # a word as the highlighter reads it
_SURFACE = re.compile(r"\w+")  # a word as typed
MAX_NAMES = 20  # names read of one query
MAX_COMPOUNDS = 240  # names its adjacent words may spell (``compound_names``): every pair and triple
MAX_COMPOUND_TEXT = 400  # of a query, its first characters only
COMPOUND_WORDS = 30  # a query of more words (an issue's text) spells no compounds: it says too much else
_BACKTICKED = re.compile(r"`([^`\s]{2,200})`")
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")
_SCOPED = re.compile(r"\b[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+\b")  # Ruby's, C++'s, Rust's, PHP's ``A::B``
_ONE_NAME = re.compile(r"\s*([A-Z][A-Za-z0-9_]+)\s*")  # a query that is one capitalised word: a type's name
_WORD = re.compile(r"\w+")
_ALNUM = re.compile(r"[A-Za-z0-9]+")
_RUN_PARTS = re.compile(r"\w+|-|[^\w\s]")  # words, hyphens and other punctuation, in order
_SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+\b|\b_[A-Za-z0-9_]+\b")
_NAME_PUNCTUATION = re.compile(r"[\s`().,:;]+")


def clean_query(text: str) -> str:
    text = text[:MAX_QUERY_CHARS]
    if not text.isascii():
        text = _SURROGATE.sub("\ufffd", text)
    return _CONTROL.sub(" ", text)


@dataclass(frozen=True)
class Query:
    """A query as every part of a search reads it (``read_query``)."""

    text: str  # as searched (``clean_query``)
    tokens: tuple[str, ...]  # every word, in order, as the keyword arm indexes it
    content: frozenset[str]  # the words that are not stop words (all of them, for a query of stop words only)
    quoted: tuple[tuple[str, ...], ...]  # each double-quoted phrase's words (two or more)
    quoted_text: tuple[str, ...]  # each double-quoted phrase as typed
    asked: frozenset[str]  # the content words a question asks about (``FRAME`` left out)
    asks: bool  # a question (``ASKS``): not a passage copied, its words need not be held in a run
    surface: tuple[str, ...]  # its words as typed, lower-cased, distinct, longest first
    looked: tuple[str, ...]  # a short query's content words as typed (``Query.short``; stop words left out)
    marked: frozenset[
        str
    ]  # the stems that matter to a reader (``COMMON_WORDS`` left out): highlighted, counted
    identifiers: tuple[str, ...]  # names it spells as code (``query_identifiers``)
    # names its adjacent words may spell ("JSON object": JsonObject, JSONObject, jsonObject, json_object;
    # ``compound_names``), a query of at most ``COMPOUND_WORDS`` words that is not only names
    compounds: tuple[str, ...]
    names_only: bool  # nothing but names spelled as code (``Command.parse_args``, ``parse_args()``)

    @property
    def empty(self) -> bool:
        return not self.content

    @property
    def short(self) -> bool:
        """At most ``SHORT_WORDS`` content words."""
        return len(self.content) <= SHORT_WORDS

    @property
    def copied(self) -> bool:
        """Whether an unquoted query may be a run of words copied from a passage (``COPIED_WORDS`` words, not
        a question): the passages holding it word for word are looked up by position, not left to the arms'
        top lists (a run of common words — "If a value is provided" — is deep in BM25's list)."""
        low, high = COPIED_WORDS
        return not self.quoted and low <= len(self.tokens) <= high and not self.asks


def read_query(text: str) -> Query:
    """The query read once: ``text`` cleaned (``clean_query``), its words, phrases and names. Cached by the
    cleaned text (at most ``MAX_QUERY_CHARS``): the surfaces read a shown answer's query again for its
    excerpts, and the same query is often asked twice."""
    return _read(clean_query(text))


@functools.lru_cache(maxsize=256)
def _read(text: str) -> Query:
    tokenizer = shared_tokenizer()
    tokens = tuple(tokenizer.tokens(text))
    stops = _stop_stems()
    content = frozenset(t for t in tokens if t not in stops) or frozenset(tokens)
    phrases = [(m, tuple(tokenizer.tokens(m))) for m in QUOTED.findall(text)]
    phrases = [(typed, words) for typed, words in phrases if len(words) > 1]
    asks = bool(ASKS.search(text))
    asked = (content - _frame_stems() if asks else content) or content
    surface = tuple(sorted(set(_SURFACE.findall(text.lower())), key=len, reverse=True))
    looked = (
        tuple(w for w in surface if w not in STOPWORDS and (s := stems(w)) and set(s) <= content)
        if len(content) <= SHORT_WORDS
        else ()
    )
    marked = frozenset(s for w in _MARKED.findall(text.lower()) if w not in COMMON_WORDS for s in stems(w))
    identifiers = tuple(query_identifiers(text))
    names_only = _names_only(text, identifiers)
    return Query(
        text=text,
        tokens=tokens,
        content=content,
        quoted=tuple(words for _, words in phrases),
        quoted_text=tuple(typed for typed, _ in phrases),
        asked=asked,
        asks=asks,
        surface=surface,
        looked=looked,
        marked=marked - _common_stems(),
        identifiers=identifiers,
        compounds=() if names_only else tuple(compound_names(text, identifiers)),
        names_only=names_only,
    )


@functools.lru_cache(maxsize=4096)
def stems(word: str) -> tuple[str, ...]:
    """A word's stems as the keyword arm indexes them ("Servers" -> server, "antibodies" -> antibodi); cached
    (a query's distinct words, a symbol name's parts: short texts)."""
    return tuple(shared_tokenizer().tokens(word))


@functools.cache
def _stop_stems() -> frozenset[str]:
    return frozenset(stem for word in STOPWORDS for stem in stems(word))


@functools.cache
def _frame_stems() -> frozenset[str]:
    return frozenset(stem for word in FRAME.split() for stem in stems(word))


@functools.cache
def _common_stems() -> frozenset[str]:
    return frozenset(stem for word in COMMON_WORDS for stem in stems(word))


def query_identifiers(text: str) -> list[str]:
    """Names a text spells as code: `backticked`, dotted.names (``A::B`` read as ``A.B``), CamelCase,
    snake_case (in that order); a text that is one capitalised word (``Session``, ``Router``) is a name."""
    found: dict[str, None] = {}
    for pattern in (_BACKTICKED, _DOTTED, _SCOPED):
        for match in pattern.finditer(text):
            name = match.group(1) if pattern is _BACKTICKED else match.group(0).replace("::", ".")
            found.setdefault(name.strip("()"), None)
    if one := _ONE_NAME.fullmatch(text):
        found.setdefault(one.group(1), None)
    for match in _WORD.finditer(text):
        if _ALNUM.fullmatch(match.group(0)) and _camel(match.group(0)):
            found.setdefault(match.group(0), None)
    for match in _SNAKE.finditer(text):
        found.setdefault(match.group(0).strip("()"), None)
    return list(found)[:MAX_NAMES]


def spells_names(text: str) -> bool:
    """Whether ``text`` is short enough (at most ``COMPOUND_WORDS`` words) that the names it spells are what it
    asks about; an issue's text says too much else."""
    return sum(1 for _ in itertools.islice(_WORD.finditer(text), COMPOUND_WORDS + 1)) <= COMPOUND_WORDS


def compound_names(text: str, identifiers: Sequence[str] = ()) -> list[str]:
    """Names that two or three adjacent words of ``text`` may spell ("JSON object": ``JsonObject``,
    ``JSONObject``, ``jsonObject``, ``json_object``; "content-type": ``ContentType``, …), for a text of at most
    ``COMPOUND_WORDS`` words. Only words of ASCII letters and digits join, and only across spaces or a hyphen
    (punctuation, a word such as ``parse_args`` or "für", a ``COMMON_WORDS`` word or a number ends a run); at
    most ``MAX_COMPOUNDS`` names, each start's pair then its triple; none that ``identifiers`` holds."""
    if not spells_names(text):
        return []
    parts = _RUN_PARTS.findall(text[:MAX_COMPOUND_TEXT])
    runs: list[list[str]] = [[]]
    for part in parts:
        if part == "-":
            continue
        if _ALNUM.fullmatch(part) and not part.isdigit() and part.lower() not in COMMON_WORDS:
            runs[-1].append(part)
        elif runs[-1]:
            runs.append([])
    found: dict[str, None] = {}
    for words in runs:
        for start in range(len(words) - 1):
            for run in (words[start : start + 2], words[start : start + 3]):
                if len(run) < 2 or (len(run) == 3 and start + 3 > len(words)):
                    continue
                for name in (
                    "".join(w[0].upper() + w[1:].lower() for w in run),
                    "".join(w[0].upper() + w[1:] for w in run),
                    run[0].lower() + "".join(w[0].upper() + w[1:].lower() for w in run[1:]),
                    "_".join(w.lower() for w in run),
                ):
                    found.setdefault(name, None)
    held = set(identifiers)
    return [name for name in found if name not in held][:MAX_COMPOUNDS]


def name_key(name: str) -> str:
    """One key for a name's spellings (``JsonObject``, ``JSONObject``, ``json_object``: ``jsonobject``)."""
    return name.replace("_", "").casefold()


def _camel(word: str) -> bool:
    """CamelCase in one pass over an ASCII word (``parseArgs``, ``XmlHttp``, ``Utf8Decoder``): a lower-case
    letter in its leading letters with a capital after it, or a capital, lower case or digits, a capital.
    (The regular expression that said this took time quadratic in a word's length: 3 s for 10,000 letters.)"""
    letters = next((i for i, c in enumerate(word) if not c.isalpha()), len(word))
    lower = next((i for i in range(letters) if word[i].islower()), -1)
    if lower >= 0 and any(c.isupper() for c in word[lower + 1 :]):
        return True
    if not word[0].isupper():
        return False
    rest = next((i for i in range(1, len(word)) if not (word[i].islower() or word[i].isdigit())), len(word))
    return 1 < rest < len(word) and word[rest].isupper()


def _names_only(text: str, names: tuple[str, ...]) -> bool:
    """Whether ``text`` is nothing but ``names`` spelled as code (``Command.parse_args``, ``parse_args()``)."""
    rest = text
    for name in sorted(names, key=len, reverse=True):
        rest = rest.replace(name, " ").replace(name.replace(".", "::"), " ")
    return bool(names) and not _NAME_PUNCTUATION.sub("", rest)
