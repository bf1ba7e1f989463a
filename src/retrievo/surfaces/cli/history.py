"""CLI for point-in-time reads: `retrievo baseline …`, `retrievo document`, `retrievo prune`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click
from rich.table import Table

from retrievo.models import Baseline
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import (
    _engine,
    _errors,
    collection_option,
    db_option,
    json_option,
    out,
    point_options,
)


@main.group()
def baseline() -> None:
    """Named points in a collection's history: create, list, show, delete."""


def _print_baselines(found: list[Baseline]) -> None:
    table = Table(title=f"{len(found)} baseline(s)")
    for column in ("name", "baseline_id", "collection", "as of (UTC)", "revisions", "note"):
        table.add_column(column, overflow="fold")
    for b in found:
        table.add_row(b.name, b.baseline_id, b.collection, b.as_of, str(b.revisions), b.note)
    out.print(table)


@baseline.command(name="create")
@click.argument("name")
@db_option
@collection_option
@click.option("--note", default="", help="Why it was taken (shown by list and show).")
@json_option
def baseline_create(
    name: str, db: Path | None, store: str | None, collection: str | None, note: str, as_json: bool
) -> None:
    """Pin the collection's current revisions as NAME (cheap: nothing is copied); prints its id."""
    with _errors(), _engine(db, collection, store=store, embedder="none") as engine:
        made = engine.history.create(name, collection, note)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(made), indent=2))
    else:
        click.echo(made.baseline_id)
        click.echo(f"baseline {made.name!r} pins {made.revisions} revision(s) as of {made.as_of}", err=True)


@baseline.command(name="list")
@db_option
@collection_option
@json_option
def baseline_list(db: Path | None, store: str | None, collection: str | None, as_json: bool) -> None:
    """Every baseline (of one collection with --collection), oldest first."""
    with _errors(), _engine(db, collection, store=store, embedder="none") as engine:
        found = engine.history.list(collection)
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(b) for b in found], indent=2))
    else:
        _print_baselines(found)


@baseline.command(name="show")
@click.argument("name_or_id")
@db_option
@collection_option
@json_option
def baseline_show(
    name_or_id: str, db: Path | None, store: str | None, collection: str | None, as_json: bool
) -> None:
    """One baseline: its id, point in time, note and how many revisions it pins."""
    with _errors(), _engine(db, collection, store=store, embedder="none") as engine:
        found = engine.history.get(name_or_id, collection)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(found), indent=2))
    else:
        _print_baselines([found])


@baseline.command(name="delete")
@click.argument("name_or_id")
@db_option
@collection_option
@json_option
def baseline_delete(
    name_or_id: str, db: Path | None, store: str | None, collection: str | None, as_json: bool
) -> None:
    """Forget a baseline; its revisions stay until `retrievo prune` may remove them."""
    with _errors(), _engine(db, collection, store=store, embedder="none") as engine:
        gone = engine.history.delete(name_or_id, collection)
    if as_json:
        click.echo(json.dumps({"deleted": dataclasses.asdict(gone)}, indent=2))
    else:
        click.echo(f"deleted baseline {gone.name!r} ({gone.baseline_id})")


@main.command()
@click.option("--before", required=True, help="ISO date or time: revisions superseded by then may go.")
@db_option
@collection_option
@json_option
def prune(before: str, db: Path | None, store: str | None, collection: str | None, as_json: bool) -> None:
    """Remove superseded revisions (chunks, vectors) older than --before that no baseline holds."""
    with _errors(), _engine(db, collection, store=store, embedder="none") as engine:
        report = engine.history.prune(before, collection)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(report), indent=2))
        return
    click.echo(
        f"pruned {report.revisions} revision(s), {report.chunks} chunk(s), {report.vectors} vector(s) and "
        f"{report.documents} deleted document(s) of {report.collection!r} superseded before {report.before}; "
        f"kept {report.kept_for_baselines} held by baselines"
    )


@main.command()
@click.argument("document_id")
@db_option
@collection_option
@click.option("--revision", help="A revision id (default: current, or the one valid at --baseline/--as-of).")
@point_options
@json_option
def document(
    document_id: str,
    db: Path | None,
    store: str | None,
    collection: str | None,
    revision: str | None,
    baseline: str | None,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Print a document's exact text: current, a revision, or as it was at a baseline or time."""
    with _errors(), _engine(db, collection, store=store, embedder="none") as engine:
        found = engine.document(document_id, revision, baseline=baseline, as_of=as_of)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(found), indent=2, ensure_ascii=False))
        return
    click.echo(found.text, nl=not found.text.endswith("\n"))
    state = "current" if found.is_current else f"valid {found.created_at} – {found.valid_to or 'deleted'}"
    click.echo(f"({found.path} · {found.revision_id} · {state})", err=True)
