"""Files read, parsed and chunked in worker processes, one per core, while the caller writes.

``prepare`` is what one file needs before it can be written — load it (``loaders.load_file``: skipped,
unchanged or loaded), hash its text, cut its chunks — and needs nothing but the file and the hashes
already indexed for it, so it runs anywhere. ``PreparePool`` runs it in ``spawn``-ed worker processes
(never forked: the caller holds database connections and threads), in the order the files were given,
at most ``IN_FLIGHT`` per worker ahead of the caller. On 2 cores the write of one group of files then
overlaps the reading and chunking of the next. A pool that cannot start (a sandbox without
semaphores) prepares in the caller's process instead; the results are the same. A worker that dies (killed,
or crashed by a parser) breaks the pool: a fresh one reads the files that were in flight again, one at a
time, and a file whose reader dies while it is read alone is skipped with that reason; the run goes on.
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing
import os
import sys
import threading
import time
import types
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from retrievo.ingest.chunkers import chunk_document
from retrievo.ingest.loaders import Skip, Unchanged, load_file
from retrievo.models import ChunkDraft, LoadedDocument
from retrievo.text.hashing import sha256_text

log = logging.getLogger(__name__)
IN_FLIGHT = 16  # files per worker submitted ahead of the one the caller waits for
# Files prepared in the caller's process before a pool is started: a small run (a test, a watch update,
# a handful of notes) never pays for starting workers (~0.5 s each on 2 cores).
SERIAL_FIRST = 256
PARENT_CHECK_S = 0.5  # how often a worker looks whether its indexer is still there


@dataclass(frozen=True)
class FileJob:
    path: Path
    max_bytes: int
    explicit: bool
    known_hash: str | None
    known_file_hash: str | None
    chunker: str
    root: Path | None = None  # the indexed folder (or file) holding it: what its context names it from


@dataclass
class Prepared:
    """A file ready to write: what loading it gave, and for a loaded one its text's hash and chunks."""

    path: Path
    outcome: LoadedDocument | Skip | Unchanged
    source_hash: str | None = None
    drafts: list[ChunkDraft] = field(default_factory=list)
    modified: str | None = None  # the file's modification time (ISO, UTC)


def prepare(job: FileJob) -> Prepared:
    loaded = load_file(job.path, job.max_bytes, job.explicit, job.known_hash, job.known_file_hash,
                       below_root(job.path, job.root))  # fmt: skip
    if not isinstance(loaded, LoadedDocument):
        return Prepared(job.path, loaded)
    drafts = chunk_document(loaded, job.chunker)
    return Prepared(job.path, loaded, sha256_text(loaded.text), drafts, modified_time(job.path))


def below_root(path: Path, root: Path | None) -> str | None:
    """``path`` relative to the indexed ``root`` (a file root: its own name); None when no root holds it."""
    if root is None:
        return None
    if path == root:
        return path.name
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def modified_time(path: Path) -> str | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat()
    except OSError:
        return None


def _outlive_no_parent(parent: int) -> None:
    """In a worker: leave as soon as the indexer that started it is gone (killed with SIGKILL, it cannot
    say so; a worker blocked on its task queue would otherwise wait for ever, holding the indexer's
    output pipes open)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(0)

    threading.Thread(target=watch, name="retrievo-parent-watch", daemon=True).start()


def _started(workers: int) -> ProcessPoolExecutor:
    """A pool of ``spawn``-ed workers, all started now with ``__main__`` hidden from them.

    A spawned worker normally re-runs the parent's main script (as ``__mp_main__``) before it works:
    a script that calls ``Engine.index`` at its top level, unguarded, would run again in every worker.
    Ours need only retrievo, so while they start (spawn starts them all at the first task) ``__main__``
    is an empty module and they import nothing of the caller's. A worker is started per task submitted
    while none is idle, so ``workers`` short sleeps submitted at once start every one of them here.
    """
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_outlive_no_parent,
        initargs=(os.getpid(),),
    )
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        for started in [pool.submit(time.sleep, 0.05) for _ in range(workers)]:
            started.result()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        if main is not None:
            sys.modules["__main__"] = main
    return pool


class PreparePool:
    """``prepare`` over many files in worker processes, results in the order given (see the module)."""

    def __init__(self, workers: int | None = None, serial_first: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.serial_first = SERIAL_FIRST if serial_first is None else serial_first
        self._pool: ProcessPoolExecutor | None = None
        self._failed = False
        self._lost = False  # a worker died: the pool is broken and takes no more work

    def _executor(self) -> ProcessPoolExecutor | None:
        if self._pool is None and not self._failed:
            try:
                self._pool = _started(self.workers)
            except (OSError, NotImplementedError, RuntimeError) as exc:  # no semaphores, no processes
                log.warning("files are read in this process (no worker pool: %s)", exc)
                self._failed = True
        return self._pool

    def map(self, jobs: Iterable[FileJob]) -> Iterator[Prepared]:
        given = iter(jobs)
        for count, job in enumerate(given, start=1):
            yield prepare(job)
            if count >= self.serial_first:
                break
        following = next(given, None)
        if following is None:  # all read here: a small run starts no workers
            return
        given = itertools.chain([following], given)
        pool = self._executor() if self.workers > 1 else None
        if pool is None:
            yield from (prepare(job) for job in given)
            return
        pending: deque[tuple[FileJob, Future[Prepared]]] = deque()
        ahead = self.workers * IN_FLIGHT
        for job in given:
            pending.append((job, self._submit(job)))
            if len(pending) >= ahead:
                yield self._take(pending)
        while pending:
            yield self._take(pending)

    def _submit(self, job: FileJob) -> Future[Prepared]:
        if self._pool is not None and not self._lost:
            try:
                return self._pool.submit(prepare, job)
            except BrokenProcessPool:
                self._lost = True
        return self._done(self._alone(job, suspect=False))

    def _take(self, pending: deque[tuple[FileJob, Future[Prepared]]]) -> Prepared:
        """The first pending file's result; if its pool broke, every file in flight read again, one at a time."""
        job, future = pending.popleft()
        try:
            return future.result()
        except BrokenProcessPool as exc:
            self._lost = True
            log.warning(
                "a reader process was lost (%s); the %d files in flight are read again", exc, len(pending) + 1
            )
        lost = [job, *(j for j, _ in pending)]
        pending.clear()
        results = [self._alone(j, suspect=True) for j in lost]
        pending.extend((j, self._done(r)) for j, r in zip(lost[1:], results[1:], strict=True))
        return results[0]

    def _alone(self, job: FileJob, suspect: bool) -> Prepared:
        """``job`` in a fresh pool with nothing else in flight; skipped if its reader dies reading it, twice."""
        for _ in range(2):
            if self._lost and self._pool is not None:  # a broken pool takes no more work: a fresh one
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool, self._lost = None, False
            pool = self._executor()
            if pool is None and suspect:  # in flight when a reader died, it may have killed it: not read here
                return Prepared(job.path, Skip("its reader process was lost and no other could be started"))
            if pool is None:
                return prepare(job)
            try:
                return pool.submit(prepare, job).result()
            except BrokenProcessPool:
                self._lost = True
        return Prepared(job.path, Skip("its reader process died while reading it, twice: not read"))

    @staticmethod
    def _done(result: Prepared) -> Future[Prepared]:
        future: Future[Prepared] = Future()
        future.set_result(result)
        return future

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> PreparePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
