"""A hit's relevance is its own probability of being relevant (issue 55 item 5): above 0.7 holds the hit
that answers, a tail of unrelated documents reads below 0.5, and relevance never rises down the list.
Real model, real SQLite, through the engine."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from retrievo import Config, Engine
from retrievo.search.answer.answerability import STRONG, capped

GOLD = "parental-leave.md"
DOCUMENTS = {
    GOLD: "# Parental leave\n\nEvery employee who becomes a parent gets sixteen weeks of paid parental "
    "leave, taken in one block or split over the child's first year. Tell your manager four weeks ahead.",
    "sourdough.md": "# Sourdough bread\n\nFeed the starter with flour and water, let the dough rise overnight "
    "in a cool kitchen, then bake it in a hot cast-iron pot for forty minutes.",
    "jupiter.md": "# The moons of Jupiter\n\nGalileo saw four moons circling the gas giant in 1610; "
    "Io has volcanoes, Europa hides an ocean under its ice.",
    "tomatoes.md": "# Growing tomatoes\n\nPlant seedlings after the last frost, stake them, water at the roots "
    "and pinch out the side shoots so the fruit ripens.",
    "brakes.md": "# Changing brake pads\n\nLoosen the wheel nuts, jack up the car, remove the caliper bolts "
    "and slide the worn pads out before fitting new ones.",
    "chords.md": "# Major and minor chords\n\nA major triad stacks a major third and a minor third; swap them "
    "and the chord turns minor and sounds darker.",
}
QUESTION = "How many weeks of paid parental leave do employees get?"


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Path:
    base = tmp_path_factory.mktemp("hit_relevance")
    root = base / "notes"
    root.mkdir()
    for name, text in DOCUMENTS.items():
        (root / name).write_text(text, encoding="utf-8")
    db = base / "notes.db"
    with Engine(Config(db=db), embedder=minilm) as engine:
        engine.index([root])
    return db


def test_strong_relevance_holds_the_answer_and_the_unrelated_tail_reads_below_one_half(
    library: Path, minilm: Any
) -> None:
    with Engine(Config(db=library), embedder=minilm) as engine:
        hits = engine.search(QUESTION, limit=10).hits
        strong = [h for h in hits if h.relevance >= STRONG]
        assert [Path(h.chunk.path).name for h in strong] == [GOLD]
        tail = [h for h in hits if Path(h.chunk.path).name != GOLD]
        assert len(tail) == len(DOCUMENTS) - 1 and all(h.relevance < 0.5 for h in tail), hits
        for mode in ("hybrid", "keyword", "semantic"):
            values = [h.relevance for h in engine.search(QUESTION, limit=10, mode=mode).hits]
            assert values and all(b <= a for a, b in itertools.pairwise(values)), (mode, values)


def test_a_threshold_keeps_the_answer_alone(library: Path, minilm: Any) -> None:
    with Engine(Config(db=library), embedder=minilm) as engine:
        kept = engine.search(QUESTION, limit=10, min_score=STRONG).hits
        assert [Path(h.chunk.path).name for h in kept] == [GOLD]


def test_relevance_never_rises_and_keeps_the_rankers_order() -> None:
    values = capped([0.2, 0.9, 0.9, 0.1, 0.1, 0.0])
    assert values[0] == 0.2 and all(b < a or b == 0.0 for a, b in itertools.pairwise(values))
