"""Everyday housekeeping: `retrievo status`, `retrievo collection delete|rename`, `retrievo docs`, `retrievo chunks`,
`retrievo verify`."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from retrievo.operations.staged import migration
from retrievo.store.code_index import CodeStats
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import _engine, _errors, collection_option, db_option, json_option, out
from retrievo.surfaces.serialize import chunk_to_dict, status_to_dict


@main.group()
def collection() -> None:
    """Delete or rename a collection."""


@collection.command(name="delete")
@click.argument("name")
@db_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def collection_delete(name: str, db: Path | None, store: str | None, yes: bool) -> None:
    """Remove collection NAME with all its documents, history, vectors and baselines."""
    if not yes:
        click.confirm(f"Delete collection {name!r} and everything in it?", abort=True, err=True)
    with _errors(), _engine(db, name, store=store, embedder="none") as engine:
        count = engine.delete_collection(name)
    click.echo(f"deleted collection {name!r} ({count} document(s))")


@collection.command(name="rename")
@click.argument("name")
@click.argument("new_name")
@db_option
def collection_rename(name: str, new_name: str, db: Path | None, store: str | None) -> None:
    """Rename collection NAME to NEW_NAME (document ids and citations stay valid)."""
    with _errors(), _engine(db, name, store=store, embedder="none") as engine:
        engine.rename_collection(name, new_name)
    click.echo(f"renamed collection {name!r} to {new_name!r}")


@main.command()
@db_option
@collection_option
@click.option("--limit", "-n", type=click.IntRange(1), help="At most this many (default: every one).")
@click.option(
    "--offset", type=click.IntRange(0), default=0, help="Skip this many first (with --limit: pages)."
)
@json_option
def docs(
    db: Path | None, store: str | None, collection: str | None, limit: int | None, offset: int, as_json: bool
) -> None:
    """List indexed documents: id, kind, title and path (all collections unless --collection)."""
    with _errors(), _engine(db, collection, store=store, embedder="none") as engine:
        found = engine.documents(collection, limit, offset)
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(d) for d in found], indent=2, ensure_ascii=False))
        return
    table = Table(title=f"{len(found)} document(s)")
    for column in ("document_id", "collection", "kind", "title", "path", "lines"):
        table.add_column(column, overflow="fold")
    for d in found:
        lines = str(d.line_count) if d.line_count is not None else "-"
        table.add_row(d.document_id, d.collection, str(d.kind), d.title, d.path, lines)
    out.print(table)


@main.command()
@click.argument("document_id")
@db_option
@json_option
def chunks(document_id: str, db: Path | None, store: str | None, as_json: bool) -> None:
    """One document's current chunks in order, with their lines, context and hashes."""
    with _errors(), _engine(db, None, store=store, embedder="none") as engine:
        found = engine.chunks(document_id)
    if as_json:
        click.echo(json.dumps([chunk_to_dict(c) for c in found], indent=2, ensure_ascii=False))
        return
    for chunk in found:
        click.echo(f"── chunk {chunk.chunk_id} · lines {chunk.line_start}-{chunk.line_end} · {chunk.context}")
        click.echo(chunk.text)


@main.command()
@db_option
@collection_option
@click.option("--fix", is_flag=True, help="Re-embed chunks that lack a vector, then check again.")
@json_option
def verify(db: Path | None, store: str | None, collection: str | None, fix: bool, as_json: bool) -> None:
    """Check every chunk: its hash, its offsets into its revision, the revision's hash, its vector.

    Exit status 1 when a problem remains (after --fix); each kind is counted with a few examples.
    """
    from retrievo.engine.verify import PROBLEMS

    with _errors(), _engine(db, collection, store=store, **({} if fix else {"embedder": "none"})) as engine:
        report = engine.verify(collection, fix=fix)
    if as_json:
        click.echo(json.dumps({**dataclasses.asdict(report), "ok": report.ok}, indent=2))
    else:
        table = Table(
            title=f"{report.collection}: {report.chunks} chunks ({report.current_chunks} current), "
            f"{report.revisions} revisions, {report.vectors} vectors ({report.model_id or 'no model'})"
        )
        table.add_column("check")
        table.add_column("problems", justify="right")
        table.add_column("examples", overflow="fold")
        for kind, count in report.problems.items():
            table.add_row(f"{kind}: {PROBLEMS[kind]}", str(count), "\n".join(report.examples.get(kind, [])))
        out.print(table)
        for kind, count in report.fixed.items():
            click.echo(f"fixed: {count} {kind.replace('_', ' ')}(s)")
        if report.cannot_fix:
            click.echo(
                f"cannot fix here: {', '.join(report.cannot_fix)} — re-index the files named above with "
                "`retrievo index --force PATH`",
                err=True,
            )
        click.echo("ok: every check passed" if report.ok else "problems found", err=not report.ok)
    if not report.ok:
        sys.exit(1)


@main.command()
@db_option
@json_option
def status(db: Path | None, store: str | None, as_json: bool) -> None:
    """Show collections, documents, chunks, embedded and missing vectors; for code, the files per language,
    symbols, edges and the code files read without symbols (and why)."""
    with _errors():
        engine = _engine(db, None, store=store)
        state = engine.status()
        model = engine.embedder.describe() if engine.embedder is not None else None
        code = {c.name: engine.code_stats(c.name) for c in state.collections}
        moving = {c.name: m for c in state.collections if (m := migration(engine, c.name)) is not None}
        if as_json:
            shown = status_to_dict(state)
            for entry in shown["collections"]:
                stats = code.get(entry["name"])
                entry["code"] = dataclasses.asdict(stats) if stats is not None else None
                to = moving.get(entry["name"])
                entry["moving_to"] = {"model_id": to[0], "missing": to[1]} if to is not None else None
            click.echo(json.dumps(shown | {"embedder": model}, indent=2))
            return
        table = Table(title=f"{state.db} ({state.size_bytes / 1e6:.1f} MB)")
        for column in ("collection", "documents", "chunks", "embedded", "missing", "model", "last indexed"):
            table.add_column(column)
        for c in state.collections:
            table.add_row(
                c.name, str(c.documents), str(c.chunks), str(c.embedded), str(c.missing),
                f"{c.model_id or '-'} ({c.dimensions or '-'}d)", c.last_indexed or "-",
            )  # fmt: skip
        out.print(table)
        for name, (model_id, missing) in moving.items():
            out.print(
                f"'{name}' is moving to {model_id}: {missing:,} chunk text(s) still without its vector; searches "
                "rank the chunks that have one by it and the rest by the model above until every one has it "
                "(`retrievo jobs`)",
                highlight=False, markup=False, soft_wrap=True,
            )  # fmt: skip
        for name, stats in code.items():
            if stats is not None:
                for line in code_lines(name, stats):
                    out.print(line, highlight=False, markup=False, soft_wrap=True)
        out.print(embedder_line(model), highlight=False, markup=False, soft_wrap=True)


SHOWN_WITHOUT_SYMBOLS = 10  # files read without symbols listed by name; the rest are counted


def code_lines(collection: str, stats: CodeStats) -> list[str]:
    """`retrievo status` on a collection's code: files per language, symbols, edges, files without symbols."""

    def counts(by: dict[str, int]) -> str:
        return ", ".join(f"{key} {n:,}" for key, n in by.items()) or "none"

    lines = [
        f"code in {collection!r}: {sum(stats.files.values()):,} files ({counts(stats.files)}), "
        f"{stats.test_files:,} of them tests; {sum(stats.symbols.values()):,} symbols ({counts(stats.symbols)}); "
        f"{sum(stats.edges.values()):,} edges ({counts(stats.edges)})"
    ]
    if stats.without_symbols:
        lines.append(f"  read as text, without symbols ({len(stats.without_symbols):,}):")
        lines += [f"    {path} — {why}" for path, why in stats.without_symbols[:SHOWN_WITHOUT_SYMBOLS]]
        if len(stats.without_symbols) > SHOWN_WITHOUT_SYMBOLS:
            lines.append(
                f"    … {len(stats.without_symbols) - SHOWN_WITHOUT_SYMBOLS:,} more (--json lists all)"
            )
    return lines


def embedder_line(model: dict[str, Any] | None) -> str:
    """One line on what embeds here: the model, and for the bundled one its kernels and the CPU's say."""
    if model is None:
        return "embedder: none (keyword search only)"
    line = f"embedder: {model['model_id']} ({model['dimensions'] or '?'}d)"
    if "kernels" not in model:
        return line
    cpu = model["cpu"]
    features = ", ".join(cpu["features"]) or "none of avx2, VNNI, ARM dot products"
    exact = ", ".join(cpu["exact"]) or "none"
    return (f"{line} on {model['kernels']} kernels (RETRIEVO_KERNELS={model['setting']}); CPU {cpu['name']} "
            f"({features}), exact integer paths here: {exact}")  # fmt: skip
