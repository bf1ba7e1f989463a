"""CLI commands over the code structure index: `retrievo symbols`, `retrievo deps`, `retrievo tests-for`.

Plain lines, never wrapped or cut, so `path:line` citations survive pipes.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import click

from retrievo.models import SearchResult
from retrievo.operations.staged import in_stages, index_in_stages
from retrievo.search.code.structure import MAX_DEPTH, GraphEdge
from retrievo.search.grouping import by_file
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import _engine, _errors, collection_option, db_option, json_option
from retrievo.surfaces.present import passage_label, shown_path
from retrievo.surfaces.serialize import hit_to_dict, located_to_dict


@main.command()
@click.argument("pattern")
@db_option
@collection_option
@click.option("--kind", help="function, method, class, interface, struct, enum, type, namespace, impl.")
@click.option("--language", help="python, javascript, typescript, go, java, csharp, c, cpp, rust.")
@click.option("--limit", type=click.IntRange(1, 500), default=20, show_default=True)
@json_option
def symbols(
    pattern: str,
    db: Path | None,
    store: str | None,
    collection: str | None,
    kind: str | None,
    language: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """Find code symbols by name, qualified name or glob (`parse_args`, `*Parser`, `core.Command.*`)."""
    with _errors(), _engine(db, collection, store=store, embedder="none") as engine:
        found = engine.find_symbol(pattern, kind=kind, language=language, limit=limit)
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(s) for s in found], indent=2))
        return
    if not found:
        click.echo(f"no symbol matches {pattern!r}")
    for s in found:
        test = "  [test]" if s.is_test else ""
        click.echo(f"{s.path}:{s.line_start}-{s.line_end}  {s.kind} {s.qualified_name}{test}")
        if s.signature:
            click.echo(f"    {s.signature}")


@main.command()
@click.argument("symbol")
@db_option
@collection_option
@click.option("--dependents", is_flag=True, help="What depends on SYMBOL (default: what SYMBOL depends on).")
@click.option("--depth", type=click.IntRange(1, MAX_DEPTH), default=1, show_default=True)
@json_option
def deps(
    symbol: str,
    db: Path | None,
    store: str | None,
    collection: str | None,
    dependents: bool,
    depth: int,
    as_json: bool,
) -> None:
    """A symbol's dependencies (imports, calls, inherits, implements, uses) or dependents, with file:line."""
    direction = "dependents" if dependents else "dependencies"
    with _errors(), _engine(db, collection, store=store, embedder="none") as engine:
        graph = engine.symbol_graph(symbol, direction=direction, depth=depth)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(graph), indent=2))
        return
    root = graph.symbol
    click.echo(f"{root.kind} {root.qualified_name} — {root.path}:{root.line_start}  ({direction})")
    for edge in graph.edges:
        _print_edge(edge, dependents)
    if graph.truncated:
        click.echo("  … more edges than shown (cut at 500)")


@main.command("tests-for")
@click.argument("symbol")
@db_option
@collection_option
@json_option
def tests_for(symbol: str, db: Path | None, store: str | None, collection: str | None, as_json: bool) -> None:
    """Tests that exercise SYMBOL: test code calling it directly, or through what calls it (helpers in test
    files, and up to three callers outside the tests), each with the chain it reaches SYMBOL by."""
    with _errors(), _engine(db, collection, store=store, embedder="none") as engine:
        graph = engine.symbol_graph(symbol, direction="dependents", depth=1)
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(t) for t in graph.tests], indent=2))
        return
    if not graph.tests:
        click.echo(f"no test reaches {graph.symbol.qualified_name}")
    for edge in graph.tests:
        click.echo(f"{edge.path}:{edge.line}  {edge.source}  (depth {edge.depth})")
        click.echo(f"    {edge.line_text}")
        if edge.via:
            click.echo(f"    via {' → '.join(edge.via)} → {graph.symbol.qualified_name}")


def _print_edge(edge: GraphEdge, dependents: bool) -> None:
    indent = "  " * edge.depth
    if dependents:
        head = f"{indent}{edge.source} {edge.kind} it"
    else:
        resolved = ", ".join(edge.resolved) if edge.resolved else "(outside the index)"
        head = f"{indent}{edge.kind} {edge.target} → {resolved}"
    click.echo(f"{head}  — {edge.path}:{edge.line}")


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@db_option
@collection_option
@click.option("--no-embed", is_flag=True, help="Keep keyword search current only; embed later.")
@json_option
def watch(
    paths: tuple[Path, ...],
    db: Path | None,
    store: str | None,
    collection: str | None,
    no_embed: bool,
    as_json: bool,
) -> None:
    """Index PATHS, then keep them indexed as files change (Ctrl-C stops): edits, additions, deletions, renames."""
    from retrievo.operations.watch import Update, Watcher

    def show(update: Update) -> None:
        r = update.report
        if as_json:
            click.echo(json.dumps({"paths": list(update.paths), "report": dataclasses.asdict(r),
                                   "keyword_ms": update.keyword_ms, "embedded_ms": update.embedded_ms}))  # fmt: skip
            return
        vectors = f", vectors after {update.embedded_ms:.0f} ms" if update.embedded_ms is not None else ""
        click.echo(
            f"{len(update.paths)} path(s): {r.documents_added} added, {r.documents_changed} changed, "
            f"{r.documents_removed} removed, {r.documents_unchanged} unchanged — searchable after "
            f"{update.keyword_ms:.0f} ms{vectors}",
            err=True,
        )

    with _errors(), _engine(db, collection, store=store) as engine:
        if in_stages(engine, collection, not no_embed):  # a new collection: searchable in seconds
            report = index_in_stages(engine, list(paths), collection).report
        else:
            report = engine.index(list(paths), embed=not no_embed)
        click.echo(
            f"indexed {report.files_seen} file(s); watching {len(paths)} path(s) (Ctrl-C stops)", err=True
        )
        Watcher(engine, paths, embed=not no_embed, on_update=show).run()


@main.command()
@click.argument("text")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 100))
@db_option
@collection_option
@json_option
def locate(
    text: str, limit: int, db: Path | None, store: str | None, collection: str | None, as_json: bool
) -> None:
    """The files an issue's TEXT is about (paste a bug report or traceback), best first, with why.

    The same ranking (keyword, meaning and structure) and the same JSON as MCP's and REST's ``locate``."""
    with _errors(), _engine(db, collection, store=store) as engine:
        files = engine.locate(text, limit=limit)
        roots = engine.roots()
    shown = [located_to_dict(f, roots) for f in files]
    if as_json:
        click.echo(json.dumps({"files": shown, "roots": roots or None}, indent=2, ensure_ascii=False))
        return
    if not files:
        click.echo("no file matches")
    for n, found in enumerate(shown, 1):
        click.echo(
            f"{n:>2}. {found['path']}  ({found['role']}, {found['score']:.2f}) — {'; '.join(found['why'])}"
        )
        for symbol in found["symbols"]:
            click.echo(f"      {symbol}")


def print_files(result: SearchResult, limit: int, as_json: bool, roots: Sequence[str] = ()) -> None:
    """`retrievo search --group file`: one row per file (its best passage, the file's score, the others),
    paths below the indexed roots as on every surface."""
    files = by_file(result.hits, limit)
    if as_json:
        rows = [{"path": shown_path(f.hit.chunk.path, roots), "score": f.score,
                 "best": {**hit_to_dict(f.hit), "path": shown_path(f.hit.chunk.path, roots)},
                 "also": [passage_label(h) for h in f.also], "why": list(f.hit.why)} for f in files]  # fmt: skip
        data = {"query": result.query, "search_mode": result.search_mode, "files": rows, "roots": list(roots)}
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if not files:
        click.echo("no file matches")
    for n, found in enumerate(files, 1):
        why = f" — {'; '.join(found.hit.why[1:])}" if found.hit.why else ""
        click.echo(f"{n:>2}. {shown_path(found.hit.chunk.path, roots)}  ({found.score:.3f}){why}")
        for hit in (found.hit, *found.also):
            click.echo(f"      {passage_label(hit)}")
