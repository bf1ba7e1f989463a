"""What every `retrievo` command module shares: the options, the engine opener, the error handler, the
consoles and the result table.

``app.py`` assembles the ``main`` group; each other module of this package is one group of commands,
registering on ``main``. They import ``app`` and this module, never one another's commands, so the
command line has no import circle."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape

from retrievo.config import Config
from retrievo.errors import RetrievoError
from retrievo.secrets import redact

if TYPE_CHECKING:  # imported where used: `retrievo --version` and a one-off search start fast
    import rich.table

    from retrievo.engine import Engine
    from retrievo.models import Filters, Hit, IndexStatus, SearchResult


def filters_from_pairs(pairs: tuple[str, ...]) -> Filters:
    from retrievo.surfaces.filters import filters_from_pairs as parse

    return parse(pairs)


def result_to_dict(result: SearchResult) -> dict[str, Any]:
    from retrievo.surfaces.serialize import result_to_dict as shape

    return shape(result)


def status_to_dict(state: IndexStatus) -> dict[str, Any]:
    from retrievo.surfaces.serialize import status_to_dict as shape

    return shape(state)


def Table(*args: Any, **kwargs: Any) -> rich.table.Table:  # noqa: N802 - rich's class, made when a table is printed
    from rich.table import Table as RichTable

    return RichTable(*args, **kwargs)


F = TypeVar("F", bound=Callable[..., Any])
PIPE_WIDTH = 1000  # off a terminal (a pipe, a log, CI) tables keep every cell whole instead of 80 columns


def _console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else PIPE_WIDTH)


err = _console(stderr=True)
out = _console()

_db_file = click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Index file (default $RETRIEVO_DB or ~/.retrievo/index.db).",
)
_store_url = click.option(
    "--store",
    "store",
    help="postgresql://… URL: use PostgreSQL + pgvector instead of --db ($RETRIEVO_STORE).",
)


def db_option(command: F) -> F:
    """--db FILE and --store URL: where the index lives."""
    return _db_file(_store_url(command))


collection_option = click.option("--collection", "-c", help="Collection name (default 'default').")
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object instead of a table."
)


def point_options(command: F) -> F:
    """--baseline / --as-of: read the collection as it was at a named baseline or an ISO time."""
    command = click.option("--as-of", "as_of", help="Read as of an ISO time, e.g. 2026-11-20T14:00Z.")(
        command
    )
    return click.option("--baseline", help="Read as pinned by this baseline (name or id).")(command)


def _engine(db: Path | None, collection: str | None, **settings: Any) -> Engine:
    from retrievo.engine import Engine

    return Engine(Config.from_env(db=db, collection=collection, **settings))


@contextmanager
def _errors() -> Iterator[None]:
    """Known errors become one clear line on stderr and exit code 1 — never a traceback."""
    try:
        yield
    except RetrievoError as exc:
        message = escape(redact(str(exc)))
        err.print(f"[bold red]error:[/] {message}", highlight=False, markup=True, soft_wrap=True)
        sys.exit(1)


def _print_result(
    result: SearchResult, explain: bool, load_ms: float = 0.0, roots: Sequence[str] = ()
) -> None:
    """The answer as a table, one row per file in the answer's order (its other passages named, folded):
    a code hit titled by its symbol with its lines numbered, paths relative to the indexed root, relevance
    with its band (docs/search.md "Relevance")."""
    from retrievo.search.answer.answerability import NO_ANSWER
    from retrievo.search.grouping import FILE_PASSAGES
    from retrievo.surfaces.present import band, label, shown_path

    if result.degraded_reason:
        kind = "partly semantic" if result.search_mode.endswith("-partial") else "lexical-only"
        err.print(f"[yellow]note:[/] {kind} search — {escape(result.degraded_reason)}", highlight=False)
    point = f" · baseline {result.baseline_id} ({result.as_of})" if result.baseline_id else ""
    load = f" (+ {load_ms:.0f} ms loading the model)" if load_ms >= 1 else ""
    weights = (
        " · weights " + ", ".join(f"{arm} {w:.2f}" for arm, w in result.fusion_weights.items())
        if result.fusion_weights
        else ""
    )
    if explain and result.models:  # a collection on the move: each chunk read by the best vector it has
        read = {model: sum(h.model_id == model for h in result.hits) for model in result.models}
        weights += " · meaning read by " + ", ".join(f"{m} ({n} hit(s))" for m, n in read.items())
    elif explain and result.model_id:
        weights += f" · meaning read by {result.model_id}"
    files: dict[str, list[Hit]] = {}
    for hit in result.hits:
        files.setdefault(hit.chunk.path, []).append(hit)
    table = Table(
        title=f"{len(result.hits)} result(s) in {len(files)} file(s) · {result.search_mode}"
        f"{f' ({result.fusion} fusion)' if result.fusion else ''} · search {result.search_duration_ms:.1f} ms"
        f"{load}{point}{weights}"
    )
    table.add_column("#", justify="right")
    table.add_column("relevance", justify="right")
    # A citation is never cut: a long path folds onto more lines instead of ending in "…".
    table.add_column("source", overflow="fold", min_width=20)
    table.add_column("text")
    if explain:
        table.add_column("arms")
    for number, (path, own) in enumerate(files.items(), start=1):
        hit, chunk = own[0], own[0].chunk
        where = f"[bold]{escape(label(chunk))}[/]\n{escape(shown_path(path, roots))}:{chunk.line_start}-{chunk.line_end}"
        others = [
            f"{label(h.chunk).split(' · ')[0]} {h.chunk.line_start}-{h.chunk.line_end}" for h in own[1:]
        ]
        if others:
            shown = others[: FILE_PASSAGES - 1]
            more = f" (+{len(others) - len(shown)})" if len(others) > len(shown) else ""
            where += "\n[dim]also: " + escape("; ".join(shown)) + more + "[/]"
        row: list[Any] = [str(number), f"{hit.relevance:.2f} {band(hit.relevance)}", where, _shown_text(hit)]
        if explain and hit.explain is not None:
            row.append("\n".join(f"{arm} #{a.rank} ({a.score:.3f})" for arm, a in hit.explain.items()))
        table.add_row(*row)
    out.print(table)
    if result.hits and result.answerability is not None and result.answerability < NO_ANSWER:
        err.print("[yellow]note:[/] no answer — the index probably does not hold one", highlight=False)
    elif result.hits and result.hits[0].relevance < NO_ANSWER:
        err.print("[yellow]note:[/] nothing strong — no passage reads at least 0.4", highlight=False)


CODE_LINES = 12


def _shown_text(hit: Hit) -> Any:
    """Code as code (its lines numbered from the file's, monospace in a terminal); prose as one line."""
    from retrievo.models import Kind

    chunk = hit.chunk
    if chunk.kind == Kind.CODE:
        from rich.syntax import Syntax

        lines = chunk.text.rstrip("\n").split("\n")
        code = "\n".join(lines[:CODE_LINES]) + (
            f"\n… {len(lines) - CODE_LINES} more lines" if len(lines) > CODE_LINES else ""
        )
        language = str(chunk.metadata.get("language") or "text")
        return Syntax(
            code, language, line_numbers=True, start_line=chunk.line_start, word_wrap=True, theme="ansi_dark"
        )
    snippet = " ".join(chunk.text.split())
    return escape(snippet[:240] + ("…" if len(snippet) > 240 else ""))
