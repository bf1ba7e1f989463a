"""The public Python surface is deliberate."""

from __future__ import annotations

from pathlib import Path

import retrievo


def test_all_is_sorted_and_every_name_exists() -> None:
    assert retrievo.__all__ == sorted(retrievo.__all__)
    for name in retrievo.__all__:
        assert hasattr(retrievo, name), name


def test_open_indexes_and_searches(tmp_path: Path, handbook: Path) -> None:
    with retrievo.open(db=tmp_path / "api.db") as engine:
        report = engine.index([handbook])
        assert report.documents_added == 5
        result = engine.search("multi-factor authentication", limit=2)
        assert len(result.hits) == 2 and result.search_mode == "hybrid"
        assert engine.status().collections[0].documents == 5


def test_open_reads_the_database_path_from_the_environment(tmp_path: Path, monkeypatch: object) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setenv("RETRIEVO_DB", str(tmp_path / "env.db"))
    engine = retrievo.open()
    assert engine.config.db == tmp_path / "env.db"
    try:
        engine.status()
    except retrievo.IndexMissingError as exc:
        assert "env.db" in str(exc)
    else:
        raise AssertionError("status on a missing index must say so")


def test_every_cli_command_is_in_the_cli_pages_overview() -> None:
    """The generated reference lists every command by itself; the overview table is written by hand."""
    import click

    from retrievo.surfaces.cli import main

    overview = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    for name in main.list_commands(click.Context(main)):
        assert f"retrievo {name}" in overview, f"`retrievo {name}` is missing from docs/cli.md's overview"
