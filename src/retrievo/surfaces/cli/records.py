"""CLI commands over indexed models: `retrievo elements` and `retrievo relations`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from retrievo.errors import DocumentNotFound
from retrievo.ingest.records.layers import verbs_of
from retrievo.search.records.elements import ElementRow, list_elements
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import _engine, _errors, collection_option, db_option, json_option


def _rows(
    db: Path | None, store: str | None, collection: str | None, **filters: str | None
) -> list[ElementRow]:
    with _errors(), _engine(db, collection, store=store, embedder="none") as engine:
        backend, name = engine.collection_store(collection)
        return list_elements(backend, name, **filters)


@main.command()
@db_option
@collection_option
@click.option("--layer", help="strategy, business, application, technology, physical, motivation, …")
@click.option("--type", "element_type", help="Element type, e.g. BusinessProcess.")
@click.option("--capability", help="Only elements of this capability.")
@json_option
def elements(
    db: Path | None,
    store: str | None,
    collection: str | None,
    layer: str | None,
    element_type: str | None,
    capability: str | None,
    as_json: bool,
) -> None:
    """List indexed model elements (records), optionally by layer, type or capability."""
    rows = _rows(db, store, collection, layer=layer, element_type=element_type, capability=capability)
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(r) for r in rows], indent=2))
        return
    for row in rows:
        capability_text = f"  [{row.capability}]" if row.capability else ""
        click.echo(f"{row.element_id}  {row.element_type} ({row.layer})  {row.name}{capability_text}")
    click.echo(f"{len(rows)} element(s)", err=True)


@main.command()
@click.argument("element_id")
@db_option
@collection_option
@json_option
def relations(
    element_id: str, db: Path | None, store: str | None, collection: str | None, as_json: bool
) -> None:
    """An element's neighbourhood: every relationship in and out, with the other element's name and type."""
    rows = _rows(db, store, collection)
    by_id = {r.element_id: r for r in rows}
    with _errors():
        element = by_id.get(element_id)
        if element is None:
            raise DocumentNotFound(
                f"no element {element_id!r} in the index; list them with `retrievo elements`"
            )
    lines = []
    for relation in element.relations:
        other = by_id.get(relation.get("element_id", ""))
        out = relation.get("direction") == "out"
        verb = verbs_of(relation.get("type", ""))[0 if out else 1]
        lines.append({
            "relationship_id": relation.get("id"), "type": relation.get("type"), "direction": relation.get("direction"),
            "verb": verb, "element_id": relation.get("element_id"), "element_name": other.name if other else None,
            "element_type": other.element_type if other else None,
        })  # fmt: skip
    if as_json:
        click.echo(json.dumps({"element": dataclasses.asdict(element), "relations": lines}, indent=2))
        return
    click.echo(f"{element.name} ({element.element_type}, {element.layer}) — {element.element_id}")
    for line in lines:
        click.echo(f"  {line['verb']} {line['element_name']} ({line['element_type']}) — {line['element_id']}")
