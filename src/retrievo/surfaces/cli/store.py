"""`retrievo migrate`: move collections between an index file and PostgreSQL."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import click

from retrievo.config import Config
from retrievo.errors import ConfigError
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import _errors, json_option, out


@main.command()
@click.option("--from", "source", required=True, help="Index file or postgresql:// URL to copy from.")
@click.option(
    "--to", "target", required=True, help="Index file or postgresql:// URL to copy into (created if new)."
)
@click.option(
    "--collection", "collections", multiple=True, help="Only this collection (repeatable; default all)."
)
@click.option(
    "--move",
    is_flag=True,
    help="Remove each collection from --from once its copy is verified (then point its route at --to).",
)
@json_option
def migrate(source: str, target: str, collections: tuple[str, ...], move: bool, as_json: bool) -> None:
    """Copy collections between SQLite and PostgreSQL without re-embedding; verify counts and hashes.
    With --move, a verified copy's source collection is removed: the collection lives at --to now."""
    from retrievo.store.factory import open_store
    from retrievo.store.transfer import move as transfer

    def location(value: str, create: bool) -> Any:
        is_url = value.startswith(("postgresql://", "postgres://"))
        settings = {"store": value} if is_url else {"db": Path(value)}
        return open_store(Config.from_env(**settings), create=create)

    with _errors():
        origin = location(source, create=False)
        destination = location(target, create=True)
        try:
            if move and not collections:
                raise ConfigError("--move carries named collections: give --collection NAME (repeatable)")
            moved = transfer(origin, destination, list(collections) or None)  # verified, or raises
            for item in moved if move else []:
                origin.delete_collection(item.name)
        finally:
            origin.close()
            destination.close()
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(m) for m in moved], indent=2))
        return
    for item in moved:
        f = item.fingerprint
        out.print(
            f"{'moved' if move else 'copied'} collection '{item.name}': {f.documents} documents, {f.revisions} revisions, {f.chunks} chunks, "
            f"{f.embeddings} vectors — verified (sha256 {f.digest[:16]}…)",
            highlight=False,
        )
