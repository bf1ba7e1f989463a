"""`retrievo regenerate` (re-embed, or migrate to another model) and `retrievo drop-vectors MODEL`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click
from rich.markup import escape

from retrievo.models import Kind, RegenerateReport
from retrievo.operations.jobs import Jobs
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import _engine, _errors, collection_option, db_option, err, json_option, out
from retrievo.surfaces.cli.index import _print_job, _progress


@main.command()
@db_option
@collection_option
@click.option("--only-missing", is_flag=True, help="Only chunks that have no vector yet.")
@click.option("--stale", is_flag=True, help="Only chunks whose key no longer matches their text (re-keyed).")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice([k.value for k in Kind]),
    help="Only this kind (repeatable).",
)
@click.option("--limit", type=click.IntRange(min=0), help="At most this many chunks (ordered by key) …")
@click.option("--offset", type=click.IntRange(min=0), default=0, help="… after skipping this many.")
@click.option(
    "--model",
    help="Migrate to this model without downtime: `local`, `static`, openai:NAME or ollama:NAME (with RETRIEVO_EMBED_URL).",
)
@click.option("--drop-old", is_flag=True, help="After a migration, delete the previous model's vectors.")
@click.option("--background", is_flag=True, help="Return a job id at once; a worker does it.")
@json_option
def regenerate(
    db: Path | None,
    store: str | None,
    collection: str | None,
    only_missing: bool,
    stale: bool,
    kinds: tuple[str, ...],
    limit: int | None,
    offset: int,
    model: str | None,
    drop_old: bool,
    background: bool,
    as_json: bool,
) -> None:
    """Re-embed a collection's chunks, or with --model move it to another model while it keeps serving.

    A migration builds the new model's vectors beside the old ones (meanwhile searches rank each chunk by
    the new model's vector where it has one, by the old one's where not), switches atomically when every
    chunk has one, and resumes where it stopped if interrupted.
    """
    options = {
        "only_missing": only_missing, "stale": stale, "kinds": list(kinds), "limit": limit, "offset": offset,
        "model": model, "drop_old": drop_old,
    }  # fmt: skip
    with _errors():
        engine = _engine(db, collection, store=store)
        if background:
            _print_job(Jobs(engine).submit_regenerate(collection, **options), as_json)
            return
        with _progress(as_json) as progress:
            report = engine.regenerate(collection, progress=progress, **options)  # type: ignore[arg-type]
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(report), indent=2))
    else:
        _print_report(report)
    if report.embed_error:
        raise SystemExit(1)


def _print_report(report: RegenerateReport) -> None:
    name = escape(report.collection)
    if report.previous_model_id is not None:
        state = "now serves" if report.switched else "still serves " + report.previous_model_id + ", not yet"
        out.print(
            f"Collection '{name}' {state} {report.model_id}: {report.chunks_embedded} chunk(s) embedded "
            f"in {report.duration_s:.1f}s.",
            highlight=False,
        )
        if report.vectors_dropped:
            out.print(
                f"Dropped {report.vectors_dropped} vector(s) of {report.previous_model_id}.", highlight=False
            )
    else:
        rekeyed = f", {report.chunks_rekeyed} stale chunk(s) re-keyed" if report.chunks_rekeyed else ""
        out.print(
            f"Regenerated {report.chunks_embedded} vector(s) of collection '{name}' with {report.model_id}"
            f"{rekeyed} in {report.duration_s:.1f}s.",
            highlight=False,
        )
    if report.embed_error:
        err.print(f"[yellow]warning:[/] {escape(report.embed_error)}", highlight=False)


@main.command(name="drop-vectors")
@click.argument("model_id")
@db_option
@json_option
def drop_vectors(model_id: str, db: Path | None, store: str | None, as_json: bool) -> None:
    """Delete every vector of MODEL_ID (refused while a collection serves it or migrates to it)."""
    with _errors(), _engine(db, None, store=store, embedder="none") as engine:
        dropped = engine.drop_model(model_id)
    if as_json:
        click.echo(json.dumps({"model_id": model_id, "vectors_dropped": dropped}))
    else:
        out.print(f"Dropped {dropped} vector(s) of {escape(model_id)}.", highlight=False)
