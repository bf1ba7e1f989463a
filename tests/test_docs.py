"""The docs a reader meets: a short README with the two commands, current benchmark tables, no diary words."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CURRENT = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]


def test_readme_is_the_first_ten_minutes() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    assert "make run" in readme and "make test" in readme
    assert "claude mcp add" in readme and "retrievo serve" in readme


def test_benchmarks_are_current_tables_each_with_a_command_and_date() -> None:
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400
    sections = re.split(r"\n## ", text)[1:]
    assert len(sections) >= 10
    for section in sections:
        title = section.splitlines()[0]
        if title == "Reliability":  # a pointer to its own page
            continue
        assert re.search(r"benchmarks/|retrievo (eval|migrate)", section), f"{title}: no command"
        assert re.search(r"2026-\d\d-\d\d", section), f"{title}: no date"


def test_no_page_speaks_of_rounds_of_work() -> None:
    for page in CURRENT:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) round\b",
                             text.replace("-ninth-", "").replace("-tenth-", "")), page.name  # fmt: skip


def test_every_docs_page_is_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (ROOT / "docs").glob("*.md"):
        assert f" {page.name}" in nav, page.name
