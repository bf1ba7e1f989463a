"""The roots of a collection: the folders and files a person chose to index, and paths inside them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from retrievo.errors import SourceError


def checked_path(path: str | Path) -> Path:
    text = str(path)
    if "\x00" in text:
        raise SourceError("the path contains a NUL byte; pass a real file or folder path")
    try:
        return Path(text).expanduser().resolve()
    except (OSError, RuntimeError) as exc:
        raise SourceError(f"path {text!r} cannot be resolved ({exc})") from exc


def resolve_inside_roots(path: str | Path, roots: Sequence[Path]) -> Path | None:
    """``path`` resolved to an existing-or-indexed location inside one of ``roots``, else None.

    Absolute paths must resolve inside a root; relative ones are tried against each folder root.
    Symlinks and ``..`` are resolved first, so neither can step out of a root.
    """
    text = str(path)
    if "\x00" in text:
        raise SourceError("the path contains a NUL byte; pass a real file or folder path")
    raw = Path(text).expanduser()
    if raw.is_absolute():
        bases = [raw]
    else:
        # Inside each folder root, or naming the root by its own name ("docs", "docs/guide.md").
        folders = [root for root in roots if root.is_dir()]
        bases = [root / raw for root in folders] + [root.parent / raw for root in folders]
    inside: list[Path] = []
    for base in bases:
        try:
            target = base.resolve()
        except (OSError, RuntimeError):
            continue
        if any(target == root or root in target.parents for root in roots):
            inside.append(target)
    existing = [target for target in inside if target.exists()]
    chosen = existing or inside
    return chosen[0] if chosen else None
