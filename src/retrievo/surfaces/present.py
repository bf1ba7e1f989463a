"""What a person reads for a hit (the page, the CLI table, brief answers): a code hit titled by its symbol
(``Console.export_svg · method · python``) rather than its embedding header, paths relative to the indexed
root, relevance as a band (strong / possible / weak, docs/search.md "Relevance")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePath

from retrievo.models import Chunk, Hit, Kind
from retrievo.search.answer.answerability import band

__all__ = ["band", "label", "passage_label", "short_context", "shown_path", "symbol_name"]

BRIEF_CONTEXT = 80  # characters of heading path in a brief hit


def short_context(context: str, width: int = BRIEF_CONTEXT) -> str:
    """A heading path cut for a brief hit: the title and the nearest heading, within ``width``."""
    if len(context) <= width:
        return context
    parts = context.split(" > ")
    if len(parts) > 2:
        context = f"{parts[0]} > … > {parts[-1]}"
    return context if len(context) <= width else context[: width - 1].rstrip() + "…"


def symbol_name(chunk: Chunk) -> str | None:
    """A code chunk's symbol as a reader names it: the qualified name less its module (``core.Command.x`` in
    core.py is ``Command.x``); None for other chunks."""
    symbol = chunk.metadata.get("symbol")
    if chunk.kind != Kind.CODE or not symbol:
        return None
    module = PurePath(chunk.path).stem
    name = str(symbol)
    return name[len(module) + 1 :] if name.startswith(f"{module}.") and len(name) > len(module) + 1 else name


def label(chunk: Chunk) -> str:
    """The hit's title: ``symbol · kind · language`` for code, else its heading path (title > section)."""
    name = symbol_name(chunk)
    if name is None:
        if chunk.kind == Kind.CODE:  # a file without symbols: its name and language
            return " · ".join(
                p for p in (PurePath(chunk.path).name, str(chunk.metadata.get("language") or "")) if p
            )
        return chunk.context or chunk.title
    return " · ".join(p for p in (name, str(chunk.metadata.get("symbol_kind") or ""),
                                  str(chunk.metadata.get("language") or "")) if p)  # fmt: skip


def shown_path(path: str, roots: Sequence[str]) -> str:
    """``path`` relative to the indexed root that holds it (the deepest); with several roots, the root's
    folder name first. Unchanged when no root holds it (a URI, a file given alone)."""
    best: Path | None = None
    for root in roots:
        try:
            Path(path).relative_to(root)
        except ValueError:
            continue
        if best is None or len(Path(root).parts) > len(best.parts):
            best = Path(root)
    if best is None:
        return path
    inside = Path(path).relative_to(best).as_posix()
    if str(best) == path:  # a file indexed alone is its own root
        return best.name
    return f"{best.name}/{inside}" if len(roots) > 1 else inside


def passage_label(hit: Hit) -> str:
    """A passage named in a line: its symbol or heading, and lines (``Parser.parse_args 120-160``)."""
    chunk = hit.chunk
    name = symbol_name(chunk) or short_context(chunk.context) or "passage"
    return f"{name} {chunk.line_start}-{chunk.line_end}"
