"""Exact-match evidence: how much of the query a passage holds word for word, and whether as a phrase.

The dense arm reads meaning, BM25 reads the rarity of each word on its own; neither says "this passage
holds every word you typed, in your order". A one-word query, a name, a phrase copied from a document —
what agents send besides questions — are answered by exactly that. Words are compared as the keyword arm
indexes them (FTS5's ``porter unicode61 remove_diacritics 2`` tokens, ``store/tokenizer.py``: "servers"
holds "Server", "antibodies" "antibody"), over what the keyword arm indexes of a chunk (its context, its
text, its identifiers' words), so the reading is the same on SQLite and PostgreSQL.

- ``coverage``: the share of the query's words (stop words left out) the passage holds;
- ``phrase``: 1 when the passage holds the whole query (two words or more, stop words included) word
  after word in its order — a phrase copied from a document — else 0 (a question's words in a run
  are chance: a share of a run moved CoSQA's questions −0.006 nDCG@10);
- ``quoted``: the share of the query's double-quoted phrases the passage holds whole, word after word (a
  quoted phrase is an instruction: the fusion puts the passages that hold it first).
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from retrievo.store.fts_query import STOPWORDS
from retrievo.store.tokenizer import holds_run, keyword_source, shared_tokenizer

QUOTED = re.compile(r'"([^"]+)"')
# A question, not a passage copied: it opens with a question word or ends with "?" (a FAQ's heading a page
# repeats word for word is still a question).
ASKS = re.compile(r"^\W*(how|where|what|which|why|when|who|whose|does|do|is|are|can|should)\b|\?\s*$", re.I)
COPIED_WORDS = (3, 16)  # an unquoted query of this many words may be a run copied from a passage


@dataclass(frozen=True)
class QueryWords:
    tokens: tuple[str, ...]  # every word of the query, in order, as the keyword arm indexes it
    content: frozenset[str]  # the words that are not stop words
    quoted: tuple[tuple[str, ...], ...]  # each double-quoted phrase's words
    quoted_text: tuple[str, ...] = ()  # each double-quoted phrase as typed
    asked: frozenset[str] = frozenset()  # the content words a question asks about (``FRAME`` left out)

    @property
    def empty(self) -> bool:
        return not self.content


def copied(query: str) -> bool:
    """Whether an unquoted query may be a run of words copied from a passage (``COPIED_WORDS`` words, not
    a question): the passages holding it word for word are looked up by position, not left to the arms'
    top lists (a run of common words — "If a value is provided" — is deep in BM25's list)."""
    words = query_words(query)
    low, high = COPIED_WORDS
    return not words.quoted and low <= len(words.tokens) <= high and not ASKS.search(query)


@functools.lru_cache(maxsize=1024)
def query_words(query: str) -> QueryWords:
    """The query's words as the keyword arm indexes them (the fusion and the answer read them once)."""
    tokenizer = shared_tokenizer()
    tokens = tuple(tokenizer.tokens(query))
    stops = _stop_stems()
    content = frozenset(t for t in tokens if t not in stops) or frozenset(tokens)
    phrases = [(m, tuple(tokenizer.tokens(m))) for m in QUOTED.findall(query)]
    phrases = [(text, words) for text, words in phrases if len(words) > 1]
    asked = content - _frame_stems() if ASKS.search(query) else content
    return QueryWords(
        tokens, content, tuple(w for _, w in phrases), tuple(t for t, _ in phrases), asked or content
    )


# The words that frame a question rather than name its subject ("how does X work", "where is X defined",
# "what is the purpose of the X method", "which X exist"): no passage need hold them for it to be answered.
FRAME = (
    "does do did work works working defined define definition implemented implement implementation exist "
    "exists handled purpose method function class"
)


@functools.cache
def _frame_stems() -> frozenset[str]:
    tokenizer = shared_tokenizer()
    return frozenset(stem for word in FRAME.split() for stem in tokenizer.tokens(word))


def stems(word: str) -> list[str]:
    """A word's stems as the keyword arm indexes them."""
    return shared_tokenizer().tokens(word)


@functools.cache
def _stop_stems() -> frozenset[str]:
    tokenizer = shared_tokenizer()
    return frozenset(stem for word in STOPWORDS for stem in tokenizer.tokens(word))


@dataclass(frozen=True)
class Evidence:
    coverage: float
    phrase: float
    quoted: float = 0.0


_TOKENS: OrderedDict[tuple[str, str], list[str]] = OrderedDict()
TOKEN_CACHE = 4096  # passages' tokens kept (a search reads ~40; the next searches read many of the same)
_TOKENS_LOCK = threading.Lock()


def passage_tokens(context: str, text: str) -> list[str]:
    """A passage's words as the keyword arm indexes them (cached by its text)."""
    key = (context, text)
    with _TOKENS_LOCK:
        found = _TOKENS.get(key)
        if found is not None:
            _TOKENS.move_to_end(key)
            return found
    tokens = shared_tokenizer().tokens(keyword_source(context, text))
    with _TOKENS_LOCK:
        _TOKENS[key] = tokens
        if len(_TOKENS) > TOKEN_CACHE:
            _TOKENS.popitem(last=False)
    return tokens


def evidence(words: QueryWords, tokens: list[str]) -> Evidence:
    """What ``tokens`` (a passage's, ``passage_tokens``) hold of the query."""
    if words.empty:
        return Evidence(0.0, 0.0)
    held = set(tokens)
    coverage = len(words.content & held) / len(words.content)
    whole_query = len(words.tokens) > 1 and coverage == 1.0 and holds_run(tokens, words.tokens)
    phrase = 1.0 if whole_query else 0.0
    if not words.quoted:
        return Evidence(coverage, phrase)
    whole = sum(holds_run(tokens, q) for q in words.quoted if set(q) <= held) / len(words.quoted)
    return Evidence(coverage, phrase, whole)


_SURFACE = re.compile(r"\w+")


def surface_words(query: str) -> list[str]:
    """The query's words as typed, lower-cased, longest first (``may_hold``)."""
    return sorted(set(_SURFACE.findall(query.lower())), key=len, reverse=True)


def may_hold(surface: list[str], context: str, text: str) -> bool:
    """Whether a passage can hold the query word for word: it holds each of its words as typed, any case
    (a cheap test before its words are read; a copy of the query passes it)."""
    haystack = f"{context}\n{text}".lower()
    return all(word in haystack for word in surface)
