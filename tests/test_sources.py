"""Directory walks respect .gitignore and globs, and survive hostile symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retrievo.errors import SourceError
from retrievo.ingest.sources import walk


def _files(root: Path, **kwargs: tuple[str, ...]) -> dict[str, str | None]:
    return {c.relative: c.skip for c in walk(root, **kwargs)}


def test_gitignore_at_any_depth_is_respected(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.log\nbuild/\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("secret.md\n")
    for name in ("a.md", "x.log", "build/out.md", "sub/secret.md", "sub/ok.md", ".git/config"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("text")
    assert set(_files(tmp_path)) == {".gitignore", "a.md", "sub/.gitignore", "sub/ok.md"}


def test_include_and_exclude_globs(tmp_path: Path) -> None:
    for name in ("docs/a.md", "docs/b.txt", "notes/c.md", "notes/draft-d.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("text")
    assert set(_files(tmp_path, include=("*.md",), exclude=("draft-*",))) == {"docs/a.md", "notes/c.md"}


def test_symlinks_outside_the_root_are_reported_and_loops_end(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "private.md").write_text("secret")
    (root / "inside.md").write_text("hello")
    os.symlink(outside / "private.md", root / "leak.md")
    os.symlink(outside, root / "leakdir")
    os.symlink(root, root / "loop")
    os.symlink(root / "inside.md", root / "alias.md")
    files = _files(root)
    assert files["inside.md"] is None and files["alias.md"] is None
    assert files["leak.md"] and files["leak.md"].startswith("outside root")
    assert files["leakdir"] and files["leakdir"].startswith("outside root")
    assert not any(name.startswith("loop/loop") for name in files)


def test_a_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="does not exist"):
        list(walk(tmp_path / "nope"))


def test_a_gitignore_line_git_reads_as_no_pattern_is_skipped_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """psf/black's test data holds a .gitignore with a lone "!": git skips the line; so does the walk,
    keeping the file's other patterns, and says so in the log."""
    (tmp_path / ".gitignore").write_text("!\n*.log\n")
    (tmp_path / "a.md").write_text("a")
    (tmp_path / "b.log").write_text("b")
    with caplog.at_level("WARNING", logger="retrievo.ingest.sources"):
        assert set(_files(tmp_path)) == {".gitignore", "a.md"}
    assert "skipped 1 line(s)" in caplog.text
