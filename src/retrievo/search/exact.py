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

import re
from dataclasses import dataclass

from retrievo.store.fts_query import STOPWORDS
from retrievo.store.tokenizer import keyword_source, shared_tokenizer

QUOTED = re.compile(r'"([^"]+)"')


@dataclass(frozen=True)
class QueryWords:
    tokens: tuple[str, ...]  # every word of the query, in order, as the keyword arm indexes it
    content: frozenset[str]  # the words that are not stop words
    quoted: tuple[tuple[str, ...], ...]  # each double-quoted phrase's words
    quoted_text: tuple[str, ...] = ()  # each double-quoted phrase as typed

    @property
    def empty(self) -> bool:
        return not self.content


def query_words(query: str) -> QueryWords:
    tokenizer = shared_tokenizer()
    tokens = tuple(tokenizer.tokens(query))
    stops = {stem for word in STOPWORDS for stem in tokenizer.tokens(word)}
    content = frozenset(t for t in tokens if t not in stops) or frozenset(tokens)
    phrases = [(m, tuple(tokenizer.tokens(m))) for m in QUOTED.findall(query)]
    phrases = [(text, words) for text, words in phrases if len(words) > 1]
    return QueryWords(tokens, content, tuple(w for _, w in phrases), tuple(t for t, _ in phrases))


@dataclass(frozen=True)
class Evidence:
    coverage: float
    phrase: float
    quoted: float = 0.0


def passage_tokens(context: str, text: str) -> list[str]:
    return shared_tokenizer().tokens(keyword_source(context, text))


def evidence(words: QueryWords, tokens: list[str]) -> Evidence:
    """What ``tokens`` (a passage's, ``passage_tokens``) hold of the query."""
    if words.empty:
        return Evidence(0.0, 0.0)
    held = set(tokens)
    coverage = len(words.content & held) / len(words.content)
    whole_query = len(words.tokens) > 1 and _longest_run(words.tokens, tokens) == len(words.tokens)
    phrase = 1.0 if whole_query else 0.0
    if not words.quoted:
        return Evidence(coverage, phrase)
    whole = sum(_longest_run(q, tokens) == len(q) for q in words.quoted) / len(words.quoted)
    return Evidence(coverage, phrase, whole)


def _longest_run(query: tuple[str, ...], tokens: list[str]) -> int:
    """The longest run of consecutive query tokens that occurs, in order and adjacent, in ``tokens``."""
    positions: dict[str, list[int]] = {}
    wanted = set(query)
    for position, token in enumerate(tokens):
        if token in wanted:
            positions.setdefault(token, []).append(position)
    best = 0
    for start in range(len(query)):
        if len(query) - start <= best:
            break
        for position in positions.get(query[start], ()):
            length = 1
            while start + length < len(query) and _at(positions, query[start + length], position + length):
                length += 1
            best = max(best, length)
    return best


def _at(positions: dict[str, list[int]], token: str, position: int) -> bool:
    found = positions.get(token)
    if not found:
        return False
    from bisect import bisect_left

    index = bisect_left(found, position)
    return index < len(found) and found[index] == position
