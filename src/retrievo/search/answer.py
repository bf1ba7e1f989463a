"""Relevance on the final order: what a search answers, read once every re-scorer has spoken (issue 46).

A hit's relevance is read in two parts, both on [0, 1]:

- **answerability** ``A``: the estimated probability that the collection answers the question at all, from
  readings of the answer's first ``READ`` hits that mean the same on every collection — the dense arm's
  best cosine, the largest share of the query's words one hit holds, the share of the hits the keyword
  arm found too, and whether none of the query's words appears in any of them (``no_words``: a string of
  random letters can sit close to code in the embedding, never in its words). A logistic model
  (``answer.json``), fitted on judged questions and on questions the collection cannot answer (gibberish,
  another domain's questions), a wrongly refused answer weighing three times a wrongly kept non-answer
  (the goals are 95 % kept, 90 % refused), chosen leave-one-dataset-out (``benchmarks/quality/answerability.py``;
  docs/benchmarks.md "No answer"). One profile per set of arms that ran: ``hybrid``, ``keyword`` (also
  lexical-only), ``semantic``.
- **place**: each hit's own calibrated probability of being relevant (``calibration.py``, its arms'
  evidence), as the best of its own and every hit's below it (the ranker put it above them), relative to
  the first hit's, mixed with a floor: ``FLOOR + (1 − FLOOR) × own / first``; then ``STEP`` less for each
  place down, so no two hits tie and the order stays the one the re-scorers chose (exact names, file
  evidence, field boosts decide between equals, not rounding).

``relevance = A × place``: the first hit's relevance is the probability that the collection answers; down
the list it never rises. A threshold keeps a prefix of the list; at ``NO_ANSWER`` (the documented
``--min-score`` for "no answer") nothing passes for ≥ 90 % of unanswerable questions on every judged set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from retrievo.models import AnswerSignals, Hit, SearchResult
from retrievo.search.calibration import models  # the same logistic model and file shape
from retrievo.search.highlight import query_words, words_in

COEFFICIENTS = Path(__file__).with_name("answer.json")
READ = 10  # hits read for the answerability (a search reads at least this many before cutting)
FLOOR = 0.7  # the least share of the first hit's relevance a hit keeps for its place (chosen LODO)
STEP = 0.01  # and one per cent less for each place down
NO_ANSWER = 0.4  # documented --min-score for "no answer"; bands: strong ≥ 0.7, possible ≥ 0.4, weak below
STRONG = 0.7
FEATURES = ("top_cosine", "word_share", "keyword_share", "no_words")


def band(relevance: float) -> str:
    """How a person reads a relevance: strong, possible or weak (docs/search.md "Relevance")."""
    return "strong" if relevance >= STRONG else "possible" if relevance >= NO_ANSWER else "weak"


def readings(hits: Sequence[Hit], query: str, signals: AnswerSignals) -> dict[str, float]:
    """The answerability's readings of an answer's first ``READ`` hits (``FEATURES``)."""
    stems = query_words(query)
    found = [words_in(f"{h.chunk.title}\n{h.chunk.context}\n{h.chunk.text}", stems) for h in hits[:READ]]
    return {
        "top_cosine": signals.top_cosine or 0.0,
        "word_share": max((len(f) / len(stems) for f in found), default=0.0) if stems else 0.0,
        "keyword_share": sum(h.chunk.chunk_id in signals.keyword_ids for h in hits[:READ]) / READ,
        # a query of common words only ("how do I do it") has no words to miss: no_words stays 0 for it
        "no_words": float(bool(stems) and not frozenset().union(*found)),
    }


def answerability(hits: Sequence[Hit], query: str, signals: AnswerSignals) -> float:
    profile = "hybrid" if signals.top_cosine is not None and signals.keyword_ran else (
        "semantic" if signals.top_cosine is not None else "keyword"
    )  # fmt: skip
    return models(COEFFICIENTS)[profile].probability(readings(hits, query, signals))


def places(own: Sequence[float]) -> list[float]:
    """Each hit's share for its place: ``FLOOR + (1 − FLOOR) × best-at-or-below / first's``, × (1 − STEP)
    per place down."""
    best, below = [], 0.0
    for value in reversed(own):
        below = max(below, value)
        best.append(below)
    best.reverse()
    top = best[0] if best and best[0] > 0 else 1.0
    return [(FLOOR + (1.0 - FLOOR) * b / top) * (1.0 - STEP) ** i for i, b in enumerate(best)]


def settle(result: SearchResult) -> SearchResult:
    """The answer with relevance on its final order (``A × place``), strictly falling down the list."""
    signals = result.signals
    if signals is None:
        return result
    if not result.hits:  # nothing found: the collection does not answer
        return replace(result, answerability=0.0)
    hits = result.hits
    a = answerability(hits, result.query, signals)
    settled: list[Hit] = []
    last = 1.0001
    for hit, place in zip(hits, places([h.relevance for h in hits]), strict=True):
        value = min(round(a * place, 4), round(last - 0.0001, 4))
        last = max(value, 0.0)
        settled.append(replace(hit, relevance=last))
    return replace(result, hits=tuple(settled), answerability=round(a, 4))
