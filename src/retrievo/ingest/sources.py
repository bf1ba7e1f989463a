"""Walk directories into candidate files: .gitignore, include/exclude globs, safe symlinks."""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from retrievo.errors import SourceError

if TYPE_CHECKING:  # loaded by the walk itself: a search never needs it
    import pathspec

log = logging.getLogger(__name__)
ALWAYS_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".retrievo"})


@dataclass(frozen=True)
class Candidate:
    """A file found under a root; ``skip`` says why it will not be loaded, if it will not."""

    path: Path
    relative: str
    skip: str | None = None


def _spec(patterns: Sequence[str]) -> pathspec.GitIgnoreSpec | None:
    import pathspec

    lines = [p for p in patterns if p.strip()]
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def _gitignore_spec(directory: Path) -> pathspec.GitIgnoreSpec | None:
    """The folder's .gitignore; a line git would not read as a pattern (a lone ``!``: psf/black's test
    data has one) is skipped, as git skips it, and said in the log: one bad line never stops a walk."""
    ignore_file = directory / ".gitignore"
    try:
        lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    try:
        return _spec(lines)
    except ValueError:
        kept = [line for line in lines if _valid(line)]
        log.warning("%s: skipped %d line(s) that are no pattern", ignore_file, len(lines) - len(kept))
        return _spec(kept)


def _valid(line: str) -> bool:
    import pathspec

    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except ValueError:
        return False
    return True


def walk(root: Path, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Iterator[Candidate]:
    """Yield every file under ``root`` (or ``root`` itself when it is a file).

    Symlinks are followed only when they resolve inside the root, and each real directory is
    visited once, so symlink loops end. Nested .gitignore files apply to their own subtree.
    """
    if not root.exists():
        raise SourceError(f"path {str(root)!r} does not exist; check the spelling or mount")
    root = root.resolve()
    include_spec, exclude_spec = _spec(include), _spec(exclude)
    if root.is_file():
        yield Candidate(root, root.name)
        return
    visited: set[Path] = set()
    stack: list[tuple[Path, list[tuple[Path, pathspec.GitIgnoreSpec]]]] = [(root, [])]
    while stack:
        directory, ignores = stack.pop()
        real = directory.resolve()
        if real in visited:
            continue
        visited.add(real)
        own = _gitignore_spec(directory)
        ignores = [*ignores, (directory, own)] if own else ignores
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            yield Candidate(directory, str(directory.relative_to(root)), f"unreadable: {exc.strerror}")
            continue
        subdirs: list[Path] = []
        for entry in entries:
            try:
                candidate, is_subdir = _classify(entry, root, ignores, include_spec, exclude_spec)
            except OSError as exc:
                # A symlink loop (ELOOP), a vanished entry, a permission error: skip this one entry.
                path = Path(entry.path)
                candidate, is_subdir = Candidate(path, _relative(path, root), _os_reason(exc)), False
            if is_subdir:
                subdirs.append(Path(entry.path))
            elif candidate is not None:
                yield candidate
        stack.extend((d, ignores) for d in reversed(subdirs))


def _classify(
    entry: os.DirEntry[str],
    root: Path,
    ignores: list[tuple[Path, pathspec.GitIgnoreSpec]],
    include_spec: pathspec.GitIgnoreSpec | None,
    exclude_spec: pathspec.GitIgnoreSpec | None,
) -> tuple[Candidate | None, bool]:
    """(candidate or None, is a directory to descend into). May raise OSError for this entry alone."""
    path = Path(entry.path)
    relative = _relative(path, root)
    if entry.is_symlink() and not os.path.exists(path):
        # A dangling link, or a loop of file links (a -> b, b -> a): exists() is False for both.
        try:
            path.resolve(strict=True)
        except RuntimeError:
            return Candidate(path, relative, "symlink loop: the link resolves to itself"), False
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return Candidate(path, relative, "symlink loop: the link resolves to itself"), False
        return Candidate(path, relative, "dangling symlink: its target does not exist"), False
    is_dir = entry.is_dir(follow_symlinks=True)
    if is_dir and entry.name in ALWAYS_SKIPPED_DIRS:
        return None, False
    if _ignored(path, is_dir, ignores):
        return None, False
    if entry.is_symlink() and not _inside(path, root):
        return Candidate(path, relative, "outside root: symlink points outside the indexed folder"), False
    if is_dir:
        return None, True
    if include_spec and not include_spec.match_file(relative):
        return None, False
    if exclude_spec and exclude_spec.match_file(relative):
        return None, False
    if not entry.is_file(follow_symlinks=True):
        return Candidate(path, relative, "not a regular file: a pipe, socket or device"), False
    return Candidate(path, relative), False


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop: the link resolves to itself"
    return f"unreadable: {exc.strerror or exc}"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def _ignored(path: Path, is_dir: bool, ignores: list[tuple[Path, pathspec.GitIgnoreSpec]]) -> bool:
    for base, spec in ignores:
        relative = path.relative_to(base).as_posix()
        if spec.match_file(relative + "/" if is_dir else relative):
            return True
    return False


def included(root: Path, path: Path) -> bool:
    """Whether ``walk(root)`` would yield ``path``: inside the root, in no always-skipped folder, not ignored."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return False
    if any(part in ALWAYS_SKIPPED_DIRS for part in relative.parts[:-1]):
        return False
    ignores: list[tuple[Path, pathspec.GitIgnoreSpec]] = []
    directory = root
    for part in ("", *relative.parts[:-1]):
        directory = directory / part if part else directory
        own = _gitignore_spec(directory)
        if own:
            ignores.append((directory, own))
        if directory != root and _ignored(directory, True, ignores[:-1] if own else ignores):
            return False
    return not _ignored(path, False, ignores)
