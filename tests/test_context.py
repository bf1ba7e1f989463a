"""Context assembly never exceeds its token budget, and every citation points at the quoted text."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path
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


def test_a_code_block_cut_to_fit_ends_at_a_line_with_a_mark_and_is_labelled_by_its_opening_symbol(
    tmp_path: Path,
) -> None:
    """Cut to fit the budget, a block ends at a line's end with a last line "…" (before: mid-line, no mark);
    its label is the symbol its text opens with, the passage found named beside it; the kept-free budget is
    the one docs/code.md and docs/benchmarks.md state."""
    from retrievo import Config, Engine
    from retrievo.search.context import CUT_MARK, RESERVED_DIVISOR, RESERVED_MAX, CodeBudget

    body = "\n".join(f"    total += item.price * {n}  # line {n} of the sum" for n in range(120))
    source = (
        "def helper(items):\n    return [i for i in items if i]\n\n\n"
        f"def invoice_total(items):\n    total = 0\n    for item in items:\n{body}\n    return total\n"
    )
    (tmp_path / "billing.py").write_text(source)
    with Engine(Config(db=tmp_path / "i.db", embedder="none")) as engine:
        engine.index([tmp_path / "billing.py"])
        assembled = engine.context("invoice_total sum of item price", max_tokens=300, neighbors=1)
    assert assembled.tokens <= 300 and assembled.sources
    block = assembled.text.split("\n\n")[0]
    lines = block.split("\n")
    assert lines[-1] == CUT_MARK, block[-200:]
    assert lines[-2].endswith("of the sum") or lines[-2].endswith(":"), "cut at a line's end"
    first = assembled.sources[0]
    opening = lines[1].strip()
    assert first.symbol is not None and first.symbol.rsplit(".", 1)[-1] in opening.split("(")[0]
    assert (first.found is None) == (first.symbol.endswith("invoice_total"))
    assert (
        CodeBudget.for_code(400).reserved_tokens == 100 and CodeBudget.for_code(8000).reserved_tokens == 1000
    )
    assert (RESERVED_DIVISOR, RESERVED_MAX) == (4, 1000)
    from conftest import ROOT

    for page in ("code.md", "benchmarks.md"):
        text = " ".join((ROOT / "docs" / page).read_text(encoding="utf-8").split())
        assert "a quarter of the budget, at most 1,000 tokens" in text, page
