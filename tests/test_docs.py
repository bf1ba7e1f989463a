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
        assert re.search(r"benchmarks[/.]|retrievo (eval|migrate)", section), f"{title}: no command"
        assert re.search(r"2026-\d\d-\d\d", section), f"{title}: no date"


SCRIPT_PATH = re.compile(r"(?<![\w./])benchmarks/[\w/]+\.py\b")  # benchmarks/speed/query.py
SCRIPT_MODULE = re.compile(r"-m (benchmarks(?:\.\w+)+)")  # python -m benchmarks.speed.query
BENCHMARKS = ROOT / "benchmarks"
TABLE_RULE = re.compile(r"^\|(?: *:?-+:? *\|)+$", re.MULTILINE)  # a table's |---|---| line


def named_scripts(text: str) -> set[str]:
    """The benchmark scripts a text names, as paths from the root (a package run by -m: its __main__.py)."""
    named = set(SCRIPT_PATH.findall(text))
    for module in SCRIPT_MODULE.findall(text):
        path = module.replace(".", "/")
        named.add(f"{path}/__main__.py" if (ROOT / path).is_dir() else f"{path}.py")
    return named


def missing_scripts(text: str) -> list[str]:
    return sorted(path for path in named_scripts(text) if not (ROOT / path).is_file())


def test_every_benchmark_script_the_docs_name_exists() -> None:
    assert missing_scripts("`benchmarks/speed/nope.py`, python -m benchmarks.nope.x") == [
        "benchmarks/nope/x.py",
        "benchmarks/speed/nope.py",
    ]
    assert missing_scripts("`benchmarks/speed/query.py`; python -m benchmarks.reliability.hostile") == []
    pages = [*CURRENT, *sorted(BENCHMARKS.rglob("*.md")), *sorted(BENCHMARKS.rglob("*.py"))]
    named = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        named += len(named_scripts(text))
        assert missing_scripts(text) == [], page.relative_to(ROOT)
    assert named >= 50


def test_every_table_in_benchmarks_md_names_the_script_that_produced_it() -> None:
    """Each ## or ### section of docs/benchmarks.md that holds a table names a benchmark script that exists
    (or the CLI's own `retrievo eval` / `retrievo migrate`, whose tables those commands print)."""
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    sections = re.split(r"\n(?=###? )", text)[1:]
    with_tables = [section for section in sections if TABLE_RULE.search(section)]
    assert len(with_tables) >= 12
    for section in with_tables:
        title = section.splitlines()[0]
        by_cli = re.search(r"retrievo (eval|migrate) ", section)
        assert named_scripts(section) or by_cli, f"{title}: no script"
        assert missing_scripts(section) == [], title


def test_no_page_speaks_of_rounds_of_work() -> None:
    for page in CURRENT:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) round\b",
                             text.replace("-ninth-", "").replace("-tenth-", "")), page.name  # fmt: skip


def test_every_docs_page_is_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (ROOT / "docs").glob("*.md"):
        assert f" {page.name}" in nav, page.name
