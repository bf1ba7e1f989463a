"""Relevance on the final order: what a search answers, read once every re-scorer has spoken (issue 46).

A hit's relevance is read in two parts, both on [0, 1]:

- **answerability** ``A``: the estimated probability that the collection answers the question at all, from
  readings of the answer's first ``READ`` hits that mean the same on every collection — the dense arm's
  best cosine, the largest share of the query's words one hit holds, the share of the hits the keyword
  arm found too, and whether none of the query's words appears in any of them (``no_words``: a string of
  random letters can sit close to code in the embedding, never in its words). A logistic model
  (``answerability.json``), fitted on judged questions and on questions the collection cannot answer (gibberish,
  another domain's questions), a wrongly refused answer weighing three times a wrongly kept non-answer
  (the goals are 95 % kept, 90 % refused), chosen leave-one-dataset-out (``benchmarks/quality/answerability.py``;
  docs/benchmarks.md "No answer"). One profile per set of arms that ran: ``hybrid``, ``keyword`` (also
  lexical-only), ``semantic``.
- **the hit's own probability** ``q`` of being relevant, given the collection answers: a logistic model
  (``answerability.json`` "hit") over three readings of the hit that mean the same under every fusion and mode —
  its calibrated arm evidence (``calibration.py``) as a logit, its fused score relative to the first
  hit's over the first ``READ`` (``score_share``) and its lead over the next hit on that scale (``lead``);
  fitted on the top 10 hits of every judged question, chosen leave-one-dataset-out
  (``benchmarks/quality/hit_relevance.py``: per-hit ECE ≤ 0.02, AUC ≥ 0.84 on each held-out set).

``relevance``: ``q``, never above ``A`` (``relevances``; an exact name of the first hit's element or symbol
reads ``NAMED``); capped at the hit above it, a hair less (``capped``): down the list it never rises and
the order stays the one the re-scorers chose (exact names, file evidence, field boosts decide between
equals). So a relevance is a probability a threshold can use on its own: among hits at ≥ ``STRONG`` most
are relevant, an unrelated tail reads well below one half. A threshold keeps a prefix of the list; at
``NO_ANSWER`` (the documented ``--min-score`` for "no answer") nothing passes for ≥ 90 % of unanswerable
questions on every judged set, while an answer the collection gives keeps its first hit: a threshold keeps
the first hit while ``A`` reaches it (``rescore.cut``), every other hit by its own relevance. A query the first hit holds as typed is answerable (``HELD``); a quoted phrase
no passage holds is not (``UNQUOTED``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path

from retrievo.models import AnswerSignals, Hit, SearchResult
from retrievo.search import exact
from retrievo.search.answer.calibration import Model, models  # the same logistic model and file shape
from retrievo.search.answer.highlight import words_in
from retrievo.search.query import COPIED_WORDS, SHORT_WORDS, Query

COEFFICIENTS = Path(__file__).with_name("answerability.json")
READ = 10  # hits read for the answerability (a search reads at least this many before cutting)
NO_ANSWER = 0.4  # documented --min-score for "no answer"; bands: strong ≥ 0.7, possible ≥ 0.4, weak below
STRONG = 0.7
FEATURES = ("top_cosine", "word_share", "keyword_share", "no_words")
HIT_FEATURES = ("own", "score_share", "lead")


def band(relevance: float) -> str:
    """How a person reads a relevance: strong, possible or weak (docs/search.md "Relevance")."""
    return "strong" if relevance >= STRONG else "possible" if relevance >= NO_ANSWER else "weak"


def readings(hits: Sequence[Hit], query: Query, signals: AnswerSignals) -> dict[str, float]:
    """The answerability's readings of an answer's first ``READ`` hits (``FEATURES``)."""
    stems = query.marked
    found = [words_in(f"{h.chunk.title}\n{h.chunk.context}\n{h.chunk.text}", stems) for h in hits[:READ]]
    return {
        "top_cosine": signals.top_cosine or 0.0,
        "word_share": max((len(f) / len(stems) for f in found), default=0.0) if stems else 0.0,
        "keyword_share": sum(h.chunk.chunk_id in signals.keyword_ids for h in hits[:READ]) / READ,
        # a query of common words only ("how do I do it") has no words to miss: no_words stays 0 for it
        "no_words": float(bool(stems) and not frozenset().union(*found)),
    }


def answerability(hits: Sequence[Hit], query: Query, signals: AnswerSignals) -> float:
    profile = "hybrid" if signals.top_cosine is not None and signals.keyword_ran else (
        "semantic" if signals.top_cosine is not None else "keyword"
    )  # fmt: skip
    return models(COEFFICIENTS)[profile].probability(readings(hits, query, signals))


def hit_features(hits: Sequence[Hit]) -> list[dict[str, float]]:
    """Each hit's own evidence (``HIT_FEATURES``): its calibrated arm evidence as a logit (``own``), its
    fused score relative to the first hit's over the first ``READ`` (``score_share``: 1 at the first, 0 at
    the lowest) and its lead over the next hit on that scale (``lead``). Relative readings only: they mean
    the same under every fusion and mode (keyword mode's score is raw BM25)."""
    scores = [h.score for h in hits[:READ]]
    low = min(scores, default=0.0)
    span = (scores[0] - low) if scores else 0.0

    def share(value: float) -> float:
        return min(1.0, max(0.0, value / span)) if span > 0 else 0.0

    return [
        {
            "own": _logit(h.relevance),
            "score_share": share(h.score - low) if span > 0 else 1.0,
            "lead": share(h.score - hits[i + 1].score) if i + 1 < len(hits) else 0.0,
        }
        for i, h in enumerate(hits)
    ]


def capped(values: Sequence[float]) -> list[float]:
    """Each value at most the one above it, a hair less (no ties): the re-scorers' order stays, a
    threshold keeps a prefix."""
    out: list[float] = []
    last = 1.0001
    for value in values:
        last = max(min(round(value, 4), round(last - 0.0001, 4)), 0.0)
        out.append(last)
    return out


def settle(result: SearchResult, query: Query) -> SearchResult:
    """The answer with each hit's relevance on its final order (the hit model), never rising down the list;
    ``query``: the search's reading of its query (``search/query.py``)."""
    signals = result.signals
    if signals is None:
        return result
    if not result.hits:  # nothing found: the collection does not answer
        return replace(result, answerability=0.0)
    hits = result.hits
    model = hit_model()
    own = [model.probability(f) for f in hit_features(hits)]
    name = named(hits[0], query)  # the query is the first hit's name: an element's, a symbol's
    a = answerability(hits, query, signals)
    holds = held(hits, query)
    if holds:
        a = max(a, HELD)
    elif holds is None:  # a quoted phrase no passage holds: not found, whatever is near it in meaning
        a = min(a, UNQUOTED)
    if signals.missing >= MISSING:  # one or two words the collection holds none of
        a = min(a, UNQUOTED)
    if name:
        a, own[0] = max(a, NAMED), max(own[0], NAMED)
    values = capped(relevances(a, own))
    settled = tuple(replace(hit, relevance=value) for hit, value in zip(hits, values, strict=True))
    return replace(result, hits=settled, answerability=round(a, 4))


# A query the first hit holds as typed is answerable, whatever the model fitted on questions reads: one or two
# words it holds every one of (a rare word's answerability read 0.3: 18–51 % of them kept at NO_ANSWER on the
# query-style battery), the whole query word for word, or its quoted phrases (``search/exact.py``).
HELD = 0.9
# One or two words (not a question) none of which any passage of the collection holds (``AnswerSignals.missing``):
# not answered here, whatever sits near them in meaning — the query-style battery's unanswerable one- and
# two-word queries. Not one word of two ("vacation rules" over a handbook saying "leave policy" is answered by
# meaning), not longer queries: "paying out money to customers after an accident" over Archisurance lacks half
# its words and is answered (a third of a copied run's words missing, tried, refused it).
MISSING = 1.0
UNQUOTED = (
    0.3  # a quoted phrase no hit holds: below NO_ANSWER (the query-style battery: refused 0.50–0.95 → 1.00)
)


def held(hits: Sequence[Hit], query: Query) -> bool | None:
    """Whether the first hit holds the query as typed (``HELD``): its whole run of words, its quoted
    phrases, or its one or two words — a question's, its frame left out ("how does set pixel work": set,
    pixel) — which may lie in other passages of the first hit's document among the first ``READ`` hits (two
    words a file holds in two functions). None: a query of at most 16 words quotes a phrase the first hit
    does not hold — the fusion puts every passage holding it first, so none does (a longer text's quotes,
    an issue's string literals, are no instruction)."""
    if query.empty:
        return False
    first = hits[0].chunk
    tokens = exact.passage_tokens(first.context, first.text)
    found = exact.evidence(query, tokens)
    if query.quoted and found.quoted == 1.0:
        return True
    if query.quoted and len(query.tokens) <= COPIED_WORDS[1]:
        return None
    # (a longer text's quotes — an issue's code, its string literals — are no instruction to refuse it)
    if found.phrase == 1.0:
        return True
    # one or two words (those a question asks about: "how does set pixel work" → set, pixel)
    if len(query.asked) > SHORT_WORDS or not query.asked & set(tokens):
        return False
    same = [h.chunk for h in hits[1:READ] if h.chunk.document_id == first.document_id]
    held_words = set(tokens).union(*(exact.passage_tokens(c.context, c.text) for c in same))
    return query.asked <= held_words


NAMED = 0.9  # the query is the first hit's name (an element's, a symbol's): strong, as HELD
MAX_NAME = 200  # characters: a longer query is no name


def named(hit: Hit, query: Query) -> bool:
    """Whether ``query`` is the hit's name as typed (case and spacing aside, a call's ``()`` too): a model
    element's name, or a symbol's qualified name or its last parts (``Command.Run``, ``Run``)."""
    wanted = " ".join(query.text.split()).casefold().strip("`'\" ").removesuffix("()")
    if not wanted or len(wanted) > MAX_NAME:
        return False
    meta = hit.chunk.metadata
    element = meta.get("element_name")
    if isinstance(element, str) and " ".join(element.split()).casefold() == wanted:
        return True
    symbol = meta.get("symbol")
    if not isinstance(symbol, str) or meta.get("symbol_kind") == "module":
        return False
    parts = symbol.casefold().split(".")
    return any(".".join(parts[-k:]) == wanted for k in range(1, len(parts) + 1))


def relevances(a: float, own: Sequence[float]) -> list[float]:
    """Each hit's relevance (before ``capped``) from the answer's answerability ``a`` and the hits' own
    probabilities of being relevant (``hit_model``): ``min(a, q)``, the first hit too — no floor, so a wrong
    first hit reads as weak as it is (issue 66: a floor of 0.5 labelled every first hit "possible", right
    or wrong). Whether the collection answers at all is ``a``'s to say: ``rescore.cut`` keeps the first hit
    while ``a`` reaches the threshold. Measured (``benchmarks/quality/hit_relevance.py``, held out): per-hit
    ECE 0.01–0.03; the first hit at ``a``: ECE 0.04–0.07 and 40–62 % of the hits at ≥ 0.7 relevant; every
    hit a × q / q₁: ECE 0.09–0.13."""
    return [min(a, q) for q in own]


@cache
def hit_model(path: Path = COEFFICIENTS) -> Model:
    entry = json.loads(path.read_text(encoding="utf-8"))["hit"]
    return Model(tuple(entry["features"]), tuple(entry["coef"]), float(entry["intercept"]))


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))
