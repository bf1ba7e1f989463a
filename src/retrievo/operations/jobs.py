"""Background jobs: `retrievo index --background` returns at once and a worker process does the work.

The job row lives in the index (``retrievo.store.jobs``), so any process can follow, cancel or resume
it. The worker (`retrievo job run ID`, started detached) beats a heartbeat every second, reports
``done``/``total`` (files, then chunks embedded) and stops between batches when asked to cancel, after
storing the batch it was embedding (a cancelled job keeps its work and can be resumed). A
worker that died (kill -9, a crash, a reboot) leaves its job ``running`` with a dead pid or a stale
heartbeat: the next look at the jobs marks it ``interrupted``, and `retrievo job resume ID` starts it
(or a cancelled one) again. Indexing skips unchanged files by content hash and reuses every stored vector, so a resumed
job carries on from where the last one stopped instead of starting over.

Servers sharing one PostgreSQL (``retrievo serve``, any number, on any hosts) run jobs themselves instead:
a job submitted through a server is queued for the tier (``owner`` empty) and each server's ``JobTaker``
claims work from the store (``Store.claim_job``: ``FOR UPDATE SKIP LOCKED``; one server per job). A server
killed mid-job stops beating; after ``job_stale_s`` (RETRIEVO_JOB_STALE_S, default 15) another server takes
the job over and carries on (a regeneration after its last written key, an index past the files already
stored): finished once, nothing lost. ``attempts`` says how many servers took it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from retrievo.errors import Cancelled, ConfigError, EmbedderUnavailable, RetrievoError
from retrievo.models import Job
from retrievo.secrets import redact

if TYPE_CHECKING:
    from retrievo.engine import Engine
    from retrievo.store.base import SharesEmbedding

HEARTBEAT_S = 1.0
STALE_AFTER_S = float(os.environ.get("RETRIEVO_JOB_STALE_S", "15"))
POLL_S = 1.0  # how often an idle server looks for tier jobs (a submission through it wakes it at once)
WORKER_NICE = (
    10  # how much a detached worker (`retrievo job run`; not a server's) yields to the user (os.nice)
)
LIVE = ("queued", "running", "cancelling")
ENDED = ("done", "failed", "cancelled", "interrupted")
RESUME_AFTER = "resume_after_key"
log = logging.getLogger(
    "retrievo.operations.jobs"
)  # in a running regenerate job's result: the last key written


def stale_before() -> str:
    """The heartbeat time before which a holder counts as gone (``STALE_AFTER_S`` ago), as ``now()`` writes it."""
    then = datetime.now(UTC) - timedelta(seconds=STALE_AFTER_S)
    return then.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed worker nobody reaped yet (its parent exited) is a zombie: dead all the same
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


class JobProgress:
    """The worker's IndexProgress: counts into the job row and a heartbeat thread that notices cancels."""

    def __init__(self, store: Any, job_id: str, share: tuple[str, str] | None = None) -> None:
        self.store, self.job_id = store, job_id
        # A tier job's (job id, server): its embedding is shared with the tier's other servers.
        self.share = share
        self.done, self.total = 0, 0
        self.cancelled = False
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._beating, daemon=True)
        self._beat.start()

    def _beating(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            self.store.update_job(self.job_id, heartbeat_at=now(), done=self.done, total=self.total)
            job = self.store.get_job(self.job_id)
            self.cancelled = job is not None and job.status == "cancelling"

    def stop(self) -> None:
        self._stop.set()
        self._beat.join(timeout=5)

    def _check(self) -> None:
        if self.cancelled:
            raise Cancelled("cancelled on request")

    def file_done(self, path: str) -> None:
        if self.total == 0:
            self.done += 1
        self._check()

    def embedding_started(self, total: int) -> None:
        self.done, self.total = 0, total
        self._check()

    def written_through(self, key: str, written: int) -> None:
        """Vectors up to ``key`` (work goes in key order) are stored: where a resumed job starts."""
        self.store.update_job(self.job_id, result={RESUME_AFTER: key, "written": written})

    def embedded(self, count: int) -> None:
        self.done += count
        self._check()


class Jobs:
    def __init__(self, engine: Engine, spawn: Callable[[Job], None] | None = None) -> None:
        self.engine = engine
        self._taker = _TAKERS.get(engine)  # this process serves a tier: its servers run the jobs
        self._spawn = spawn or (self._taker.wake_for if self._taker is not None else self._start_worker)

    def _store(self) -> Any:
        return self.engine.open_store(create=True)

    def submit_index(self, paths: list[str], collection: str | None = None, **options: Any) -> Job:
        """Queue an index job for ``paths`` (checked now) and start its worker; returns the queued job."""
        missing = [p for p in paths if not Path(p).exists()]
        if missing:
            raise ConfigError(f"no such file or folder: {', '.join(missing)}")
        return self._submit("index", collection, [str(Path(p).resolve()) for p in paths], options)

    def submit_refresh(self, path: str, collection: str) -> Job:
        """Queue a refresh of an indexed path (checked now against the collection's roots)."""
        return self._submit("refresh", collection, [str(self.engine.refresh_target(path, collection))], {})

    def submit_embed(self, collection: str | None = None) -> Job:
        """Queue embedding every chunk of the collection that has no vector yet."""
        return self._submit("embed", collection, [], {})

    def submit_regenerate(self, collection: str | None = None, **options: Any) -> Job:
        """Queue ``Engine.regenerate`` with these options (a model migration when ``model`` is given)."""
        if options.get("model"):
            self.engine.require_model(str(options["model"]))  # an unreachable model is refused now, not later
        return self._submit("regenerate", collection, [], options)

    def _submit(self, kind: str, collection: str | None, paths: list[str], options: dict[str, Any]) -> Job:
        parameters = {"paths": paths, "host": socket.gethostname(), **options}
        job = Job(
            job_id=f"job_{secrets.token_hex(6)}", kind=kind, collection=collection or self.engine.config.collection,
            status="queued", parameters=parameters, created_at=now(),
            owner="" if self._taker is not None else None,
        )  # fmt: skip
        self._store().save_job(job)
        self._spawn(job)
        return job

    def _start_worker(self, job: Job) -> None:
        config = self.engine.config
        environ = {**os.environ, "RETRIEVO_COLLECTION": job.collection,
                   "RETRIEVO_MAX_FILE_BYTES": str(config.max_file_bytes)}  # fmt: skip
        if config.store:
            environ["RETRIEVO_STORE"] = config.store
        else:
            environ["RETRIEVO_DB"] = str(config.db)
        log = Path(str(config.db) + f".{job.job_id}.log") if not config.store else Path(os.devnull)
        with open(log, "ab") as sink:
            subprocess.Popen(
                [sys.executable, "-m", "retrievo.surfaces.cli", "job", "run", job.job_id],
                stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=environ, start_new_session=True,
            )  # fmt: skip

    def get(self, job_id: str) -> Job:
        job = self._store().get_job(job_id)
        if job is None:
            raise ConfigError(f"no job {job_id!r}; `retrievo jobs` lists them")
        return self._settled(job)

    def list(self, limit: int = 50) -> list[Job]:
        return [self._settled(job) for job in self._store().list_jobs(limit)]

    def _settled(self, job: Job) -> Job:
        """A live job whose worker is gone becomes ``interrupted`` (and can be resumed)."""
        if job.status not in ("running", "cancelling"):
            return job
        here = job.parameters.get("host") == socket.gethostname()
        beat = datetime.fromisoformat(
            (job.heartbeat_at or job.started_at or job.created_at).replace("Z", "+00:00")
        )
        stale = datetime.now(UTC) - beat > timedelta(seconds=STALE_AFTER_S)
        if job.owner is not None and job.status == "running":
            return job  # a tier job: another server takes it over (JobTaker), it is not interrupted
        gone = here and job.pid is not None and not _alive(job.pid)
        if gone or stale:
            status = "cancelled" if job.status == "cancelling" else "interrupted"
            why = (
                f"its worker (pid {job.pid}) ended without finishing it (killed or crashed)"
                if gone
                else f"its worker stopped beating at {beat.isoformat(timespec='seconds')} (killed, crashed or "
                "its host went down)"
            )
            self._store().update_job(
                job.job_id, only_if=("running", "cancelling"), status=status, finished_at=now(),
                error=f"{why}; `retrievo job resume {job.job_id}` carries on from where it stopped",
            )  # fmt: skip
            return self._store().get_job(job.job_id) or job
        return job

    def cancel(self, job_id: str) -> Job:
        store = self._store()
        if not store.update_job(job_id, only_if=("queued",), status="cancelled", finished_at=now()):
            store.update_job(job_id, only_if=("running",), status="cancelling")
        return self.get(job_id)

    def resume(self, job_id: str) -> Job:
        job = self.get(job_id)
        if job.status not in ("interrupted", "failed", "cancelled"):
            raise ConfigError(
                f"job {job_id} is {job.status}; only interrupted, failed or cancelled jobs can be resumed"
            )
        # The record keeps its history: each earlier run (when it started and ended, how, why) in ``runs``.
        earlier = {"started_at": job.started_at, "finished_at": job.finished_at, "status": job.status,
                   "error": job.error, "done": job.done, "total": job.total}  # fmt: skip
        result = {**(job.result or {}), RUNS: [*runs_of(job), earlier]}
        self._store().update_job(
            job_id, status="queued", error=None, finished_at=None, pid=None, result=result,
            owner="" if self._taker is not None else None,
        )  # fmt: skip
        job = self.get(job_id)
        self._spawn(job)
        return job

    def run(self, job_id: str) -> Job:
        """The detached worker: take the queued job, do it, record how it ended. It runs at a lower priority
        (``WORKER_NICE``), so a search typed while the bundled model embeds in the background (the second
        stage of indexing, operations/staged.py) gets the cores first. (A server's ``JobTaker`` runs jobs
        in the server's own process, at its priority.)"""
        with contextlib.suppress(OSError, AttributeError):  # os.nice: POSIX only
            os.nice(WORKER_NICE)
        store = self._store()
        queued = store.get_job(job_id)
        started = (
            queued.started_at if queued is not None else None
        ) or now()  # a resumed job keeps its first
        if not store.update_job(
            job_id,
            only_if=("queued",),
            status="running",
            pid=os.getpid(),
            started_at=started,
            heartbeat_at=now(),
        ):
            return self.get(job_id)  # cancelled before it started, or another worker has it
        return self.execute(self.get(job_id))

    def execute(self, job: Job) -> Job:
        """Do a job this process holds (status running), recording how it ended."""
        store, job_id = self._store(), job.job_id
        progress = JobProgress(store, job_id, share=(job_id, job.owner) if job.owner else None)
        try:
            parameters = dict(job.parameters)
            parameters.pop("host", None)
            paths = parameters.pop("paths")
            report: Any
            if job.kind == "embed":
                report = self.engine.embed_missing(job.collection, progress=progress)
            elif job.kind == "regenerate":
                resumed = (job.result or {}).get(RESUME_AFTER)  # an earlier run's last written key
                report = self.engine.regenerate(
                    job.collection, progress=progress, after_key=resumed, **parameters
                )
                if report.embed_error and not report.switched and parameters.get("model"):
                    # a move that could not switch (its model would not load): failed, and resumable
                    raise EmbedderUnavailable(report.embed_error)
            elif job.kind == "refresh":
                report = self.engine.refresh(paths[0], collection=job.collection, progress=progress)
            else:
                report = self.engine.index(paths, collection=job.collection, progress=progress, **parameters)
        except Cancelled:
            progress.stop()
            store.update_job(
                job_id, status="cancelled", finished_at=now(), done=progress.done, total=progress.total
            )
        except RetrievoError as exc:
            progress.stop()
            store.update_job(job_id, status="failed", error=str(exc), finished_at=now())
        except Exception as exc:
            # A bug: the job says so (never a bare "interrupted"); the worker's log has the traceback.
            progress.stop()
            store.update_job(
                job_id, status="failed", finished_at=now(),
                error=f"internal error ({type(exc).__name__}): {redact(str(exc))[:500]}; nothing it wrote is lost",
            )  # fmt: skip
            raise
        else:
            progress.stop()
            earlier = runs_of(job)
            store.update_job(
                job_id, status="done", result={**asdict(report), **({RUNS: earlier} if earlier else {})},
                finished_at=now(), done=progress.total or progress.done, total=progress.total,
            )  # fmt: skip
        return self.get(job_id)


class JobTaker:
    """A server's share of the tier's jobs: a thread that claims one job at a time from the store and does
    it (see the module's docstring). ``start`` registers it for the engine, so jobs submitted through this
    process are queued for the tier."""

    def __init__(self, engine: Engine, poll_s: float = POLL_S) -> None:
        self.engine, self.poll_s = engine, poll_s
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, name="retrievo-jobs", daemon=True)

    def start(self) -> JobTaker:
        _TAKERS[self.engine] = self
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        _TAKERS.pop(self.engine, None)

    def wake_for(self, job: Job) -> None:  # Jobs' spawn: a job was queued through this process
        self._wake.set()

    def take_one(self) -> Job | None:
        """Claim and do one job; None when there was none."""
        job = self.engine.open_store(create=True).claim_job(self.owner, now(), stale_before())
        if job is None:
            return None
        log.info("job %s (%s) taken by %s, attempt %d", job.job_id, job.kind, self.owner, job.attempts)
        return Jobs(self.engine, spawn=lambda _: None).execute(job)

    def help_embed(self) -> int:
        """Embed open batches of other servers' jobs (``Engine._embed_shared``) until none is free or
        this server stops; how many chunks. Only a store that shares embedding work has them."""
        opened = self.engine.open_store(create=True)
        if not getattr(opened, "shares_embedding", False):
            return 0
        store = cast("SharesEmbedding", opened)
        embedded = 0
        while not self._stop.is_set():
            taken = store.work_embed_batch(self.owner, self.engine.embed_texts)
            if taken is None:
                break
            log.info("job %s: %d chunks embedded by %s", taken[0], taken[1], self.owner)
            embedded += taken[1]
        return embedded

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                done: Any = self.take_one() or self.help_embed() or None
            except RetrievoError as exc:  # the store is away: said, and tried again at the next poll
                log.warning("jobs: %s", exc)
                done = None
            if done is None:
                self._wake.wait(self.poll_s)
                self._wake.clear()


_TAKERS: weakref.WeakKeyDictionary[Engine, JobTaker] = weakref.WeakKeyDictionary()


RUNS = "runs"  # in a resumed job's result: its earlier runs, oldest first


def runs_of(job: Job) -> list[dict[str, Any]]:
    runs = (job.result or {}).get(RUNS)
    return list(runs) if isinstance(runs, list) else []


def recent_jobs(engine: Engine, limit: int = 10) -> list[Job]:
    """The newest jobs (live ones and the last that ended), for status answers."""
    return Jobs(engine).list(limit)


def submit_refresh(engine: Engine, path: str, collection: str) -> Job:
    return Jobs(engine).submit_refresh(path, collection)
