"""Context assembly never exceeds its token budget, and every citation points at the quoted text."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrievo import Config, Engine
from retrievo.embed.tokens import TokenCounter

QUESTIONS = [
    "who approves parental leave",
    "lost laptop",
    "expense receipts and meals",
    "first week onboarding buddy",
    "security incident hotline",
    "working from another country",
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Any:
    from conftest import HANDBOOK, ROOT

    base = tmp_path_factory.mktemp("context")
    shutil.copytree(HANDBOOK, base / "handbook")
    shutil.copytree(ROOT / "docs", base / "docs")
    engine = Engine(Config(db=base / "ctx.db"), embedder=minilm)
    engine.index([base / "handbook", base / "docs"])
    yield engine
    engine.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    budget=st.integers(min_value=1, max_value=3000),
    question=st.sampled_from(QUESTIONS),
    neighbors=st.integers(0, 3),
)
def test_context_never_exceeds_the_budget_and_cites_exact_spans(
    engine: Any, budget: int, question: str, neighbors: int
) -> None:
    assembled = engine.context(question, max_tokens=budget, neighbors=neighbors)
    assert (
        assembled.tokens == TokenCounter().count(assembled.text) if assembled.text else assembled.tokens == 0
    )
    assert assembled.tokens <= budget
    for source in assembled.sources:
        revision = engine.document(source.document_id, source.revision_id)
        quoted = revision.text[source.start : source.end]
        assert quoted and quoted in assembled.text
        assert f"[{source.n}] " in assembled.text
        assert source.line_start == revision.text.count("\n", 0, source.start) + 1
    if budget >= 400:
        assert assembled.sources, "a generous budget holds at least one passage"


def test_neighbours_are_merged_into_one_span_per_stretch_of_a_document(engine: Any) -> None:
    assembled = engine.context("leave policy annual parental sick", max_tokens=4000, neighbors=2)
    spans: dict[str, list[tuple[int, int]]] = {}
    for source in assembled.sources:
        spans.setdefault(source.revision_id, []).append((source.start, source.end))
    for ranges in spans.values():
        ranges.sort()
        for (_, end), (start, _) in itertools.pairwise(ranges):
            assert start > end, "merged spans of one revision never overlap"


def test_context_cli_prints_the_same_assembly_as_json(engine: Any) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", "context", "lost laptop", "--max-tokens", "150", "--json",
         "--db", str(engine.config.db)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    data = json.loads(proc.stdout)
    direct = engine.context("lost laptop", max_tokens=150)
    assert data["text"] == direct.text and data["tokens"] <= 150
    assert [s["chunk_ids"] for s in data["sources"]] == [list(s.chunk_ids) for s in direct.sources]
