"""`retrievo jobs` and `retrievo job ID [--follow] | cancel ID | resume ID` (and the worker, `job run ID`)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from retrievo.errors import ConfigError
from retrievo.models import Job
from retrievo.operations.jobs import ENDED, Jobs
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import _engine, _errors, db_option, err, json_option, out

FOLLOW_EVERY_S = 1.0


def _line(job: Job) -> str:
    progress = f"{job.done}/{job.total}" if job.total else f"{job.done} file(s)"
    tail = f" — {job.error}" if job.error else ""
    return f"{job.job_id} {job.kind} {job.collection} {job.status} {progress}{tail}"


@main.command()
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@db_option
@json_option
def jobs(limit: int, db: Path | None, store: str | None, as_json: bool) -> None:
    """Background jobs, newest first, with their progress (a dead worker's job shows as interrupted)."""
    with _errors(), _engine(db, None, store=store, embedder="none") as engine:
        found = Jobs(engine).list(limit)
    if as_json:
        click.echo(json.dumps({"jobs": [dataclasses.asdict(j) for j in found]}, indent=2))
        return
    table = Table("job", "kind", "collection", "status", "progress", "started", "finished")
    for job in found:
        progress = f"{job.done}/{job.total}" if job.total else f"{job.done} file(s)"
        table.add_row(
            job.job_id,
            job.kind,
            job.collection,
            job.status,
            progress,
            job.started_at or "",
            job.finished_at or "",
        )
    out.print(table)


@main.command(name="job")
@click.argument("words", nargs=-1, required=True)
@click.option("--follow", is_flag=True, help="Print progress until the job ends (JSON lines with --json).")
@db_option
@json_option
def job_command(
    words: tuple[str, ...], follow: bool, db: Path | None, store: str | None, as_json: bool
) -> None:
    """`job ID [--follow]`: one job; `job cancel ID`; `job resume ID` (after an interruption)."""
    action, job_id = (words[0], words[1]) if len(words) == 2 else ("show", words[0])
    with (
        _errors(),
        _engine(db, None, store=store, **({} if action == "run" else {"embedder": "none"})) as engine,
    ):
        if len(words) > 2 or action not in ("show", "cancel", "resume", "run"):
            raise ConfigError("usage: retrievo job ID [--follow] | job cancel ID | job resume ID")
        jobs = Jobs(engine)
        job = {"show": jobs.get, "cancel": jobs.cancel, "resume": jobs.resume, "run": jobs.run}[action](
            job_id
        )
        if follow and err.is_terminal and not as_json:
            job = _follow_with_bar(jobs, job)
        while follow and job.status not in ENDED:
            _print(job, as_json, stream=True)
            time.sleep(FOLLOW_EVERY_S)
            job = jobs.get(job_id)
    _print(job, as_json)
    if job.status in ("failed", "interrupted", "cancelled") and follow:
        raise SystemExit(1)


def _follow_with_bar(jobs: Jobs, job: Job) -> Job:
    """On a terminal: a bar of the job's progress until it ends."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as bars:
        task = bars.add_task(f"{job.kind} {job.status}", total=job.total or None)
        while job.status not in ENDED:
            time.sleep(FOLLOW_EVERY_S)
            job = jobs.get(job.job_id)
            bars.update(
                task, description=f"{job.kind} {job.status}", total=job.total or None, completed=job.done
            )
    return job


def _print(job: Job, as_json: bool, stream: bool = False) -> None:
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(job), indent=None if stream else 2))
    elif stream:
        err.print(_line(job), highlight=False, markup=False)
    else:
        click.echo(_line(job))
