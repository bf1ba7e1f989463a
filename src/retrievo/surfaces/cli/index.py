"""`retrievo index` and `retrievo embed`: progress while they run, and a report that says what happened."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from retrievo.engine.indexing import IndexProgress
from retrievo.models import IndexReport, Job
from retrievo.operations.jobs import Jobs
from retrievo.operations.staged import in_stages, index_in_stages
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import _engine, _errors, collection_option, db_option, err, json_option, out
from retrievo.surfaces.serialize import report_to_dict

SKIPPED_LISTED = 10  # skipped files named one by one; the rest are counted
PROGRESS_EVERY_S = float(os.environ.get("RETRIEVO_PROGRESS_EVERY_S", "5"))


class _LineProgress:
    """Off a terminal (CI logs, pipes): a line on stderr every few seconds, JSON lines with --json — the
    stage (reading, embedding, building the side indexes), how far, at what rate, and for embedding how
    long is left at that rate."""

    def __init__(self, as_json: bool, every_s: float = PROGRESS_EVERY_S) -> None:
        self.as_json, self.every_s = as_json, every_s
        self.files = self.embedded_count = 0
        self.to_embed: int | None = None
        self.started = self.last = self.embedding_since = time.monotonic()
        self.step = "reading"

    def file_done(self, path: str) -> None:
        self.files += 1
        self._maybe_say()

    def embedding_started(self, total: int) -> None:
        self.to_embed, self.step, self.embedding_since = total, "embedding", time.monotonic()
        self._say()

    def embedded(self, count: int) -> None:
        self.embedded_count += count
        self._maybe_say()

    def stage(self, name: str) -> None:
        self.step = name
        self._say()

    def _maybe_say(self) -> None:
        if time.monotonic() - self.last >= self.every_s:
            self._say()

    def _say(self) -> None:
        self.last = time.monotonic()
        elapsed = round(self.last - self.started, 1)
        files_rate = self.files / max(elapsed, 1e-6)
        rate = eta = None
        if self.to_embed:
            rate = self.embedded_count / max(self.last - self.embedding_since, 1e-6)
            eta = (self.to_embed - self.embedded_count) / rate if rate > 0 else None
        if self.as_json:
            event = {"event": "progress", "stage": self.step, "elapsed_s": elapsed, "files": self.files,
                     "files_per_s": round(files_rate, 1), "embedded": self.embedded_count,
                     "to_embed": self.to_embed, "chunks_per_s": None if rate is None else round(rate, 1),
                     "eta_s": None if eta is None else round(eta)}  # fmt: skip
            click.echo(json.dumps(event), err=True)
            return
        said = f"retrievo: {elapsed:.0f}s — {self.step}: {self.files} file(s) read ({files_rate:.0f}/s)"
        if self.to_embed:
            said += f", {self.embedded_count}/{self.to_embed} chunks embedded"
            if rate and self.step == "embedding":
                said += f" ({rate:.0f}/s" + (f", about {eta:.0f}s left)" if eta is not None else ")")
        click.echo(said, err=True)


class _RichProgress:
    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.files = progress.add_task("indexing files", total=None)
        self.embed: Any = None

    def file_done(self, path: str) -> None:
        self.progress.advance(self.files)

    def embedding_started(self, total: int) -> None:
        self.embed = self.progress.add_task("embedding chunks", total=total)

    def embedded(self, count: int) -> None:
        self.progress.advance(self.embed, count)

    def stage(self, name: str) -> None:
        self.progress.add_task(name, total=None)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@db_option
@collection_option
@click.option(
    "--chunker",
    default="auto",
    show_default=True,
    help="auto, sentence, paragraph, markdown, code, whole, semantic, or several comma-separated "
    "(each source chunked by every one; search with --strategy to pick one)",
)
@click.option("--include", multiple=True, help="Only index files matching this glob (repeatable).")
@click.option("--exclude", multiple=True, help="Skip files matching this glob (repeatable).")
@click.option("--no-embed", is_flag=True, help="Write chunks only; embed later with `retrievo embed`.")
@click.option("--force", is_flag=True, help="Re-chunk files even when their content is unchanged.")
@click.option("--max-file-bytes", type=int, help="Skip files larger than this (default 10 MB).")
@click.option(
    "--lsp",
    is_flag=True,
    help="Ask language servers (jedi-language-server for Python) where ambiguous calls go.",
)
@click.option(
    "--background", is_flag=True, help="Return a job id at once; a worker indexes (see `retrievo jobs`)."
)
@click.option(
    "--staged/--no-staged",
    default=None,
    help="A new collection: embed with the static model now and move it to the bundled one in a "
    "background job (default: on, $RETRIEVO_STAGED).",
)
@json_option
def index(
    paths: tuple[str, ...],
    db: Path | None,
    store: str | None,
    collection: str | None,
    chunker: str,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    no_embed: bool,
    force: bool,
    max_file_bytes: int | None,
    lsp: bool,
    background: bool,
    staged: bool | None,
    as_json: bool,
) -> None:
    """Index files and folders (incremental: unchanged files are skipped).

    A new collection is searchable by meaning in seconds: its chunks are embedded by the static model
    first, and a background job moves it to the bundled model (`retrievo status` shows it; --no-staged:
    the bundled model only)."""
    with _errors():
        engine = _engine(db, collection, store=store, max_file_bytes=max_file_bytes)
        if background:
            queued = Jobs(engine).submit_index(
                list(paths), collection, chunker=chunker, include=list(include), exclude=list(exclude),
                embed=not no_embed, force=force, lsp=lsp,
            )  # fmt: skip
            _print_job(queued, as_json)
            return
        options: dict[str, Any] = {"chunker": chunker, "include": include, "exclude": exclude, "force": force,
                                   "lsp": lsp}  # fmt: skip
        job: Job | None = None
        with _progress(as_json) as progress:
            if in_stages(engine, collection, not no_embed, staged):
                done = index_in_stages(engine, paths, collection, progress=progress, **options)
                report, job = done.report, done.job
            else:
                report = engine.index(list(paths), embed=not no_embed, progress=progress, **options)
        if as_json:
            staged_job = {"staged_job_id": job.job_id} if job is not None else {}
            click.echo(json.dumps(report_to_dict(report) | staged_job, indent=2))
            return
        _print_report(report, engine.config.db)
        if job is not None:
            out.print(
                "Searchable now by keyword and by meaning (the static model); the bundled model's vectors are "
                f"being made in the background and replace them when all are done: `retrievo job {job.job_id} "
                "--follow`.",
                highlight=False,
            )


@contextmanager
def _progress(as_json: bool) -> Iterator[IndexProgress]:
    """Bars on a terminal; lines (or JSON lines) every few seconds elsewhere."""
    if not err.is_terminal or as_json:
        yield _LineProgress(as_json)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as bars:
        yield _RichProgress(bars)


def _vectors_sentence(report: IndexReport) -> str:
    if report.embed_error and not report.chunks_embedded:
        return f"no chunk embedded ({report.embeddings_missing} without a vector)"
    reused = f", {report.embeddings_reused} reused from identical text" if report.embeddings_reused else ""
    return f"{report.chunks_embedded} chunk(s) embedded{reused}"


def _print_report(report: IndexReport, db: Path) -> None:
    out.print(
        f"Indexed into [bold]{escape(str(db))}[/] (collection '{escape(report.collection)}') in "
        f"{report.duration_s:.1f}s: {report.documents_added} added, {report.documents_changed} changed, "
        f"{report.documents_unchanged} unchanged, {report.documents_removed} removed; "
        f"{report.chunks_written} chunks written, {_vectors_sentence(report)}.",
        highlight=False,
    )
    _print_skipped(report)
    if report.lsp_edges_asked is not None:
        out.print(
            f"language servers: {report.lsp_edges_resolved} of {report.lsp_edges_asked} ambiguous edges resolved",
            highlight=False,
        )
    if report.lsp_warning:
        err.print(f"[yellow]warning:[/] {escape(report.lsp_warning)}", highlight=False)
    if report.embed_error:
        out.print(
            f"[yellow]warning:[/] {report.embeddings_missing} chunk(s) not embedded yet "
            f"(keyword search works): {report.embed_error}",
            highlight=False,
        )


@main.command()
@db_option
@collection_option
@click.option("--background", is_flag=True, help="Return a job id at once; a worker embeds.")
@json_option
def embed(
    db: Path | None, store: str | None, collection: str | None, background: bool, as_json: bool
) -> None:
    """Embed chunks that have no vector yet (after --no-embed or an embedder outage)."""
    with _errors():
        engine = _engine(db, collection, store=store)
        if background:
            _print_job(Jobs(engine).submit_embed(collection), as_json)
            return
        report = engine.embed_missing(
            progress=_LineProgress(as_json) if not err.is_terminal or as_json else None
        )
        if as_json:
            click.echo(json.dumps(report_to_dict(report), indent=2))
            return
        out.print(
            f"Embedded {report.chunks_embedded} chunk(s) of collection '{escape(report.collection)}' in "
            f"{report.duration_s:.1f}s; {report.embeddings_missing} still without a vector.",
            highlight=False,
        )
        if report.embed_error:
            out.print(f"[yellow]warning:[/] {escape(report.embed_error)}", highlight=False)


def _print_job(job: Job, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"job_id": job.job_id, "status": job.status, "collection": job.collection}))
    else:
        click.echo(job.job_id)
        err.print(
            f"{job.kind} job running in the background; follow it with `retrievo job {job.job_id} --follow`"
        )


def _print_skipped(report: IndexReport) -> None:
    for reason, count in sorted(report.skipped_by_reason().items()):
        out.print(f"  skipped {count} file(s): {escape(reason)}", highlight=False)
    for item in report.skipped[:SKIPPED_LISTED]:
        out.print(f"    {escape(item.path)} — {escape(item.reason)}", highlight=False, soft_wrap=True)
    if len(report.skipped) > SKIPPED_LISTED:
        out.print(
            f"    … and {len(report.skipped) - SKIPPED_LISTED} more (all of them with --json)",
            highlight=False,
        )
