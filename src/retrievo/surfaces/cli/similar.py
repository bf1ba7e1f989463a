"""`retrievo similar` (related passages in other documents) and `retrievo neighbours` (a chunk in its place)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from retrievo.errors import ConfigError
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import (
    _engine,
    _errors,
    _print_result,
    collection_option,
    db_option,
    json_option,
    point_options,
)
from retrievo.surfaces.serialize import chunk_to_dict, result_to_dict


@main.command()
@click.argument("chunk_id", type=int, required=False)
@click.option(
    "--document", "document_id", help="Compare a whole document (its mean vector) instead of a chunk."
)
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True)
@db_option
@collection_option
@point_options
@json_option
def similar(
    chunk_id: int | None, document_id: str | None, limit: int, db: Path | None, store: str | None,
    collection: str | None, baseline: str | None, as_of: str | None, as_json: bool,
) -> None:  # fmt: skip
    """Chunks in other documents most similar to CHUNK_ID (from search results) or to --document ID."""
    with _errors(), _engine(db, collection, store=store) as engine:
        if (chunk_id is None) == (document_id is None):
            raise ConfigError("give a CHUNK_ID or --document ID (one of them)")
        result = engine.similar(
            chunk_id=chunk_id, document_id=document_id, limit=limit, baseline=baseline, as_of=as_of,
            collection=collection,
        )  # fmt: skip
    if as_json:
        click.echo(json.dumps(result_to_dict(result), indent=2, ensure_ascii=False))
    else:
        _print_result(result, explain=False)


@main.command()
@click.argument("chunk_id", type=int)
@click.option("--before", type=click.IntRange(0, 20), default=1, show_default=True, help="Chunks before it.")
@click.option("--after", type=click.IntRange(0, 20), default=1, show_default=True, help="Chunks after it.")
@db_option
@json_option
def neighbours(
    chunk_id: int, before: int, after: int, db: Path | None, store: str | None, as_json: bool
) -> None:
    """CHUNK_ID with the chunks around it in its own revision, in document order."""
    with _errors(), _engine(db, None, store=store, embedder="none") as engine:
        found = engine.neighbours(chunk_id, before=before, after=after)
    if as_json:
        click.echo(json.dumps([chunk_to_dict(c) for c in found], indent=2, ensure_ascii=False))
        return
    for chunk in found:
        marker = "▶" if chunk.chunk_id == chunk_id else "·"
        click.echo(
            f"{marker} chunk {chunk.chunk_id} · {chunk.path}:{chunk.line_start}-{chunk.line_end} · {chunk.context}"
        )
        click.echo(chunk.text)
