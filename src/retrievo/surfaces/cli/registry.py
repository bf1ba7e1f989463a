"""`retrievo registry add|remove|list|search`: MCP servers, A2A agents and their tools."""

from __future__ import annotations

import json
from pathlib import Path

import click

from retrievo.engine.registry import REGISTRY_COLLECTION
from retrievo.search.records.registry import ENTITY_TYPES
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import _engine, _errors, db_option, json_option
from retrievo.surfaces.serialize import registry_result_to_dict

collection_option = click.option(
    "--collection",
    "-c",
    default=REGISTRY_COLLECTION,
    show_default=True,
    help="Collection holding the registry.",
)


@main.group()
def registry() -> None:
    """MCP servers, A2A agents and their tools: load, remove, list, search."""


@registry.command("add")
@click.argument("paths", nargs=-1, required=True)
@db_option
@collection_option
@json_option
def registry_add(
    paths: tuple[str, ...], db: Path | None, store: str | None, collection: str, as_json: bool
) -> None:
    """Load registry entries from JSON files or folders (an upsert by path); bad entries are listed."""
    with _errors(), _engine(db, None, store=store) as engine:
        report = engine.registry.add(list(paths), collection=collection)
    if as_json:
        click.echo(json.dumps({"added": report.documents_added, "changed": report.documents_changed,
                               "unchanged": report.documents_unchanged, "removed": report.documents_removed,
                               "errors": [s.reason for s in report.skipped], "notes": report.notes}, indent=2))  # fmt: skip
        return
    click.echo(
        f"{report.documents_added} added, {report.documents_changed} changed, {report.documents_unchanged} unchanged, "
        f"{report.documents_removed} removed (servers, agents and tools)"
    )
    for note in report.notes:
        click.echo(f"  note: {note}", err=True)
    for skipped in report.skipped:
        click.echo(f"  refused: {skipped.reason}", err=True)


@registry.command("remove")
@click.argument("path")
@db_option
@collection_option
def registry_remove(path: str, db: Path | None, store: str | None, collection: str) -> None:
    """Remove the server or agent registered at PATH (a server's tools go with it)."""
    with _errors(), _engine(db, None, store=store, embedder="none") as engine:
        removed = engine.registry.remove(path, collection=collection)
    click.echo(f"removed {removed} entr{'y' if removed == 1 else 'ies'}")


@registry.command("list")
@db_option
@collection_option
@json_option
def registry_list(db: Path | None, store: str | None, collection: str, as_json: bool) -> None:
    """Every registered server and agent."""
    with _errors(), _engine(db, None, store=store, embedder="none") as engine:
        entries = engine.registry.entries(collection=collection)
    if as_json:
        click.echo(json.dumps(entries, indent=2))
        return
    for entry in entries:
        disabled = "" if entry["is_enabled"] else "  [disabled]"
        count, word = (
            (entry["skills"], "skill") if entry["entity_type"] == "agent" else (entry["tools"], "tool")
        )
        click.echo(
            f"{entry['entity_type']:6}  {entry['path']}  {entry['name']}  ({count} {word}{'' if count == 1 else 's'}){disabled}"
        )


@registry.command("search")
@click.argument("query")
@db_option
@collection_option
@click.option(
    "--limit", type=click.IntRange(1, 10), default=3, show_default=True, help="Results per entity type."
)
@click.option(
    "--type", "types", multiple=True, type=click.Choice(ENTITY_TYPES), help="Entity types (default all)."
)
@click.option("--tag", "tags", multiple=True, help="Only entries with this tag (repeatable: all must hold).")
@click.option("--include-disabled", is_flag=True, help="Also entries with is_enabled=false.")
@click.option("--profile", type=click.Choice(["seed", "hybrid"]), default="seed", show_default=True)
@json_option
def registry_search(
    query: str, db: Path | None, store: str | None, collection: str, limit: int, types: tuple[str, ...],
    tags: tuple[str, ...], include_disabled: bool, profile: str, as_json: bool,
) -> None:  # fmt: skip
    """Find servers, agents and tools for a need ("context7 docs", "create a Jira issue"), grouped by type."""
    with _errors(), _engine(db, None, store=store) as engine:
        result = engine.registry.search(query, collection=collection, limit=limit, types=types or ENTITY_TYPES,
                                        tags=tags, include_disabled=include_disabled, profile=profile)  # fmt: skip
    data = registry_result_to_dict(result)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    if result.degraded_reason:
        click.echo(f"note: lexical-only search — {result.degraded_reason}", err=True)
    for group in ("servers", "agents", "tools"):
        click.echo(f"{group}:")
        for item in data[group]:
            if group == "tools":  # a tool by its own name, then the server that offers it
                shown = f"{item['tool_name']}  (on {item.get('server_name')} at {item.get('server_path')})"
            else:
                shown = f"{item.get('server_name') or item.get('name')}  ({item.get('path')})"
            click.echo(f"  {item['relevance_score']:.3f}  {shown}")
