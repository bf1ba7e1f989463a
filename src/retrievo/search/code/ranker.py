"""A learned file ranker: the files ``files.rank_files`` found, re-ordered by weights fitted on real
commits (issue 59).

``rank_files`` weighs each file's evidence with round values chosen by hand on 31 issues. Here the same
evidence, and a few things it leaves unread (how long the file is, whether the text names its file or
folder, the best single passage), are weighed by a linear model fitted on mined commit message → files
changed pairs (``benchmarks/locate/``: ``features.py`` reads them, ``train.py`` fits and chooses the model
leave-one-repository-out and writes ``ranker.json`` beside this module, with its provenance). The
model re-orders the best ``window`` files of the hand-weighted ranking (a listwise softmax over them was
fitted), so it adds no candidates and costs one small dot product a file. ``files`` asks it only of a
one-line statement of at most ``files.LEARNED_WORDS`` words (a commit's subject): held out, better
there; an issue's text and a question keep the hand weights (docs/benchmarks.md).

``features`` is the one definition of a file's features, read by the training script and at query time.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol, TypeVar

WEIGHTS = Path(__file__).with_name("ranker.json")
# every feature ``features`` computes; a model names the ones it reads
FEATURES = (
    "hand", "hand_rank", "words", "words_best", "passages", "meaning", "defines", "module", "frame",
    "innermost", "named", "stem_named", "folder_named", "test", "docs", "example", "other", "init",
    "length", "depth", "words_sum", "name_overlap",
)  # fmt: skip
_TOKEN = re.compile(r"[a-z0-9_]+")
_VAGUE = frozenset({"src", "lib", "core", "utils", "util", "main", "base", "common", "tests", "test", "py"})


class Signals(Protocol):
    """What ``files.FileSignals`` holds of a file (read only here)."""

    @property
    def words(self) -> float: ...
    @property
    def meaning(self) -> float: ...
    @property
    def defines(self) -> float: ...
    @property
    def module(self) -> bool: ...
    @property
    def frame(self) -> bool: ...
    @property
    def innermost(self) -> bool: ...
    @property
    def named(self) -> bool: ...
    @property
    def passages(self) -> tuple[float, ...]: ...


@dataclass(frozen=True)
class Query:
    """What every file's features share of one text's ranking."""

    tokens: frozenset[str]  # the text's lower-cased words (``a_b`` kept whole)
    parts: frozenset[str]  # and their parts (``a_b``: a, b), a plural's ``s`` dropped
    spaced: str  # the text lower-cased, ``_`` and ``-`` as spaces
    best_hand: float  # the best file's hand-weighted score
    best_passage: float  # the best keyword chunk's BM25 score


def query(text: str, best_hand: float, best_passage: float) -> Query:
    lowered = text.lower()
    spaced = " ".join(re.split(r"[\s_\-]+", lowered))
    words = frozenset(_TOKEN.findall(lowered))
    return Query(words, _parts(words), f" {spaced} ", best_hand, best_passage)


def _parts(words: frozenset[str] | list[str]) -> frozenset[str]:
    return frozenset(p.removesuffix("s") for w in words for p in w.split("_") if len(p) >= 3)


def features(
    q: Query, relative: str, s: Signals, role: str, hand: float, rank: int, chunks: int
) -> dict[str, float]:
    """A file's features: ``relative`` its path from the repository's root, ``hand`` its hand-weighted score
    and ``rank`` (1-based) its place by it, ``chunks`` how many chunks it has (its length)."""
    parts = relative.replace("\\", "/").split("/")
    stem = parts[-1].rsplit(".", 1)[0].lower()
    folder = parts[-2].lower() if len(parts) > 1 else ""
    init = stem == "__init__"
    named_stem = not init and len(stem) >= 3 and stem not in _VAGUE
    stem_named = named_stem and (stem in q.tokens or f" {stem.replace('_', ' ')} " in q.spaced)
    folder_named = bool(folder) and folder not in _VAGUE and len(folder) >= 3 and folder in q.tokens
    best = s.passages[0] / q.best_passage if s.passages and q.best_passage > 0 else 0.0
    own = _parts([w for w in stem.split("_") if w not in _VAGUE]) if not init else frozenset()
    return {
        "hand": hand / q.best_hand if q.best_hand > 0 else 0.0,
        "hand_rank": -math.log(rank),
        "words": s.words,
        "words_best": best,
        "passages": math.log1p(len(s.passages)),
        "meaning": s.meaning,
        "defines": s.defines,
        "module": float(s.module),
        "frame": float(s.frame),
        "innermost": float(s.innermost),
        "named": float(s.named),
        "stem_named": float(stem_named),
        "folder_named": float(folder_named),
        "test": float(role == "test"),
        "docs": float(role == "docs"),
        "example": float(role in ("example", "benchmark")),
        "other": float(role in ("other", "generated", "changelog")),
        "init": float(init),
        "length": math.log1p(chunks),
        "depth": float(len(parts) - 1),
        "words_sum": math.log1p(sum(s.passages) / q.best_passage) if q.best_passage > 0 else 0.0,
        "name_overlap": len(own & q.parts) / len(own) if own else 0.0,
    }


@dataclass(frozen=True)
class FileRanker:
    """A linear model over named features; ``window``: how many of the hand-weighted ranking's best files
    it re-orders."""

    names: tuple[str, ...]
    weights: tuple[float, ...]
    window: int

    def score(self, rows: Sequence[Mapping[str, float]]) -> list[float]:
        return [sum(w * row[n] for n, w in zip(self.names, self.weights, strict=True)) for row in rows]

    def order(self, rows: Sequence[Mapping[str, float]]) -> list[int]:
        """The rows' places, best first (ties: the hand-weighted order, which ``rows`` come in)."""
        scores = self.score(rows)
        return sorted(range(len(rows)), key=lambda i: (-scores[i], i))


@lru_cache(maxsize=4)
def load(path: Path = WEIGHTS) -> FileRanker | None:
    """The fitted ranker ``path`` holds, or None where there is none (not trained here)."""
    if not path.exists():
        return None
    model = json.loads(path.read_text(encoding="utf-8"))
    weights = model["weights"]
    unknown = set(weights) - set(FEATURES)
    if unknown:
        raise ValueError(f"{path} names features this version does not compute: {sorted(unknown)}")
    return FileRanker(tuple(weights), tuple(float(w) for w in weights.values()), int(model["window"]))


class Ranked(Protocol):
    """What ``files.FileHit`` holds that the model reads."""

    @property
    def path(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def score(self) -> float: ...


H = TypeVar("H", bound=Ranked)


def rerank(
    model: FileRanker,
    text: str,
    ranked: Sequence[H],
    signals: Mapping[str, Signals],
    relative: Mapping[str, str],
    chunks: Mapping[str, int],
    best_passage: float,
) -> list[H]:
    """The best ``model.window`` of ``ranked`` (hand-weighted, best first) re-ordered by ``model``, the rest
    after them as they were; ``relative`` and ``chunks``: each windowed file's path from its root and length."""
    window = ranked[: model.window]
    if not window:
        return list(ranked)
    q = query(text, window[0].score, best_passage)
    rows = [
        features(q, relative[h.path], signals[h.path], h.role, h.score, i + 1, chunks[h.path])
        for i, h in enumerate(window)
    ]
    return [window[i] for i in model.order(rows)] + list(ranked[model.window :])
