"""Exact-match evidence: how much of the query a passage holds word for word, and whether as a phrase.

The dense arm reads meaning, BM25 reads the rarity of each word on its own; neither says "this passage
holds every word you typed, in your order". A one-word query, a name, a phrase copied from a document —
what agents send besides questions — are answered by exactly that. Words are compared as the keyword arm
indexes them (the query's reading, ``search/query.py``), over what the keyword arm indexes of a chunk (its
context, its text, its identifiers' words), so the reading is the same on SQLite and PostgreSQL.

- ``coverage``: the share of the query's words (stop words left out) the passage holds;
- ``phrase``: 1 when the passage holds the whole query (two words or more, stop words included) word
  after word in its order — a phrase copied from a document — else 0 (a question's words in a run
  are chance: a share of a run moved CoSQA's questions −0.006 nDCG@10);
- ``quoted``: the share of the query's double-quoted phrases the passage holds whole, word after word (a
  quoted phrase is an instruction: the fusion puts the passages that hold it first).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

from retrievo.models import ArmHit, Chunk, Filters
from retrievo.search.query import Query
from retrievo.store.base import Store
from retrievo.store.tokenizer import keyword_source, shared_tokenizer

KEYWORD, SEMANTIC = "keyword", "semantic"
EXACT_KEYWORD, EXACT_SEMANTIC = 30, 10  # candidates read word for word
QUOTED_LOOKUP = 200  # chunks holding a quoted phrase in a run (Store.chunks_with_phrase)
COPIED_LOOKUP = 50  # chunks holding an unquoted query in a run, when it may be copied (``Query.copied``)
QUOTED_PHRASES = 8  # a query's distinct quoted phrases looked up (a pasted text may quote hundreds)


@dataclass(frozen=True)
class Evidence:
    coverage: float
    phrase: float
    quoted: float = 0.0


@dataclass(frozen=True)
class Exact:
    """What the store holds of a query word for word (``read``)."""

    words: int = 0  # the query's content words (0: no evidence read)
    evidence: dict[int, tuple[float, float, float]] = field(default_factory=dict)  # chunk id -> Evidence
    missing: float = 0.0  # the share of a short query's words no current passage holds


def read(
    store: Store,
    collection: str,
    query: Query,
    filters: Filters,
    arms: Mapping[str, list[ArmHit]],
    fetched: dict[int, Chunk],
    candidates_read: bool = True,
) -> Exact:
    """The share of a short query's words the collection lacks (``Store.held_words``: what the answer's
    answerability reads as "not here"), and with ``candidates_read`` the query's content-word count and, for
    the keyword arm's first ``EXACT_KEYWORD`` and the dense arm's first ``EXACT_SEMANTIC`` candidates
    (deeper ones change nothing measurable on the battery) and, for a quoted phrase, up to ``QUOTED_LOOKUP``
    chunks holding it word after word (by position, ``Store.chunks_with_phrase``), and for a query that may
    be a run copied from a passage (``Query.copied``) up to ``COPIED_LOOKUP`` holding it so, what they hold
    of it word for word; the chunks read join ``fetched``.

    The missing share is 0 for longer queries, for any question (its words are often a synonym away, or
    name a relationship: "what is the firewall connected to" over a model whose relationships are typed,
    not worded), for quoted phrases (read on their own) and at a point in time."""
    missing = 0.0
    if query.looked and not (query.quoted or query.asks or filters.as_of is not None):
        missing = 1.0 - len(store.held_words(collection, list(query.looked))) / len(query.looked)
    if query.empty or not candidates_read:
        return Exact(missing=missing)
    candidates = dict.fromkeys(
        [h.chunk_id for h in arms.get(KEYWORD, [])[:EXACT_KEYWORD]]
        + [h.chunk_id for h in arms.get(SEMANTIC, [])[:EXACT_SEMANTIC]]
    )
    for phrase in list(dict.fromkeys(query.quoted_text))[:QUOTED_PHRASES]:  # its holders are candidates
        candidates.update(dict.fromkeys(store.chunks_with_phrase(collection, phrase, filters, QUOTED_LOOKUP)))
    if query.copied:
        candidates.update(
            dict.fromkeys(store.chunks_with_phrase(collection, query.text, filters, COPIED_LOOKUP))
        )
    ids = list(candidates)
    unread = [chunk_id for chunk_id in ids if chunk_id not in fetched]
    if unread:
        fetched.update(store.get_chunks(unread))
    # A longer query without quotes counts only where a passage holds all of it, word for word: one that
    # lacks one of its words as typed (any case) is passed over without reading its words (SciFact's
    # claims: most candidates).
    surface = () if query.quoted or query.short else query.surface
    found: dict[int, tuple[float, float, float]] = {}
    for chunk_id in ids:
        chunk = fetched.get(chunk_id)
        if chunk is None:
            continue
        haystack = f"{chunk.context}\n{chunk.text}".lower() if surface else ""
        if surface and not all(word in haystack for word in surface):
            found[chunk_id] = (0.0, 0.0, 0.0)
            continue
        held = evidence(query, passage_tokens(chunk.context, chunk.text))
        found[chunk_id] = (held.coverage, held.phrase, held.quoted)
    return Exact(len(query.content), found, missing)


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


def evidence(query: Query, tokens: list[str]) -> Evidence:
    """What ``tokens`` (a passage's, ``passage_tokens``) hold of the query. A run of words is held where the
    passage's words, joined by spaces, hold the run's so joined (a term never holds a space)."""
    if query.empty:
        return Evidence(0.0, 0.0)
    held = set(tokens)
    coverage = len(query.content & held) / len(query.content)
    joined = f" {' '.join(tokens)} " if coverage == 1.0 or query.quoted else ""
    phrase = 1.0 if len(query.tokens) > 1 and coverage == 1.0 and _run(query.tokens) in joined else 0.0
    if not query.quoted:
        return Evidence(coverage, phrase)
    whole = sum(_run(q) in joined for q in query.quoted if set(q) <= held) / len(query.quoted)
    return Evidence(coverage, phrase, whole)


def _run(words: tuple[str, ...]) -> str:
    return f" {' '.join(words)} "
