"""`retrievo search` and `retrievo context`: the passages for a question, as a table, JSON or packed
under a token budget with numbered citations."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from retrievo.models import SearchMode
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import (
    _engine,
    _errors,
    _print_result,
    collection_option,
    db_option,
    err,
    filters_from_pairs,
    json_option,
    point_options,
    result_to_dict,
)


@main.command()
@click.argument("query")
@db_option
@collection_option
@click.option("--limit", "-n", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--mode", type=click.Choice([m.value for m in SearchMode]), default="hybrid", show_default=True)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    help="KEY=VALUE: kind, path (glob), tag, date_from, date_to, or metadata.",
)
@click.option(
    "--min-score", type=click.FloatRange(0, 1), help="Drop hits whose relevance (0-1) is below this."
)
@click.option("--explain", is_flag=True, help="Show each arm's rank and raw score, and the fusion's weights.")
@click.option(
    "--fusion",
    type=click.Choice(["adaptive", "zscore", "rrf"]),
    help="Hybrid fusion (default adaptive; $RETRIEVO_FUSION).",
)
@click.option("--group", type=click.Choice(["file"]), help="One row per file, its passages aggregated.")
@point_options
@json_option
def search(
    query: str,
    db: Path | None,
    store: str | None,
    collection: str | None,
    limit: int,
    mode: str,
    filters: tuple[str, ...],
    min_score: float | None,
    explain: bool,
    fusion: str | None,
    group: str | None,
    baseline: str | None,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Search an index by meaning and by keyword (now, or at a baseline or time)."""
    with _errors():
        engine = _engine(db, collection, store=store, fusion=fusion)
        # Loading the model is timed apart, so the search time shown is the search's own.
        load_ms = engine.warm_up(collection) if mode != SearchMode.KEYWORD else 0.0
        result = engine.search(
            query,
            limit=max(limit, 50) if group else limit,  # distinct files count against limit
            mode=mode,
            filters=filters_from_pairs(filters),
            min_score=min_score,
            explain=explain,
            baseline=baseline,
            as_of=as_of,
        )
        from retrievo.surfaces.present import shown_path

        held = sorted({hit.chunk.collection for hit in result.hits})
        roots = (
            sorted({root for name in held for root in engine.roots(name)})
            if held
            else engine.roots(collection)
        )
        if group:
            from retrievo.surfaces.cli.code import print_files

            print_files(result, limit, as_json, roots)
        elif as_json:  # paths below the indexed roots, as on every surface; the roots where they are
            data = {**result_to_dict(result), "roots": roots, "model_load_ms": round(load_ms, 1)}
            for hit in data["results"]:
                hit["path"] = shown_path(hit["path"], roots)
            click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        else:
            _print_result(result, explain, load_ms, roots)
            if not result.hits and min_score is not None:
                err.print(
                    f"[yellow]note:[/] no hit reached --min-score {min_score:g}; lower it (or leave it out) to "
                    "see the best hits", highlight=False,
                )  # fmt: skip


@main.command()
@click.argument("query")
@db_option
@collection_option
@click.option("--max-tokens", type=click.IntRange(1, 1_000_000), default=4000, show_default=True)
@click.option("--neighbors", type=click.IntRange(0, 10), default=1, show_default=True)
@click.option("--filter", "filters", multiple=True, help="KEY=VALUE, as for search.")
@point_options
@json_option
def context(
    query: str,
    db: Path | None,
    store: str | None,
    collection: str | None,
    max_tokens: int,
    neighbors: int,
    filters: tuple[str, ...],
    baseline: str | None,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Print the best evidence for QUERY packed under a token budget, with numbered citations."""
    with _errors():
        assembled = _engine(db, collection, store=store).context(
            query, max_tokens=max_tokens, neighbors=neighbors, filters=filters_from_pairs(filters),
            baseline=baseline, as_of=as_of,
        )  # fmt: skip
        if as_json:
            data = dataclasses.asdict(assembled)
            click.echo(json.dumps(data, indent=2, ensure_ascii=False))
            return
        click.echo(assembled.text)
        click.echo(f"\n({assembled.tokens}/{assembled.max_tokens} tokens, {assembled.search_mode})", err=True)
