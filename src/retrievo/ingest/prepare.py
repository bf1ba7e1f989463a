"""Files read, parsed and chunked in worker processes, one per core, while the caller writes.

``prepare`` is what one file needs before it can be written — load it (``loaders.load_file``: skipped,
unchanged or loaded), hash its text, cut its chunks — and needs nothing but the file and the hashes
already indexed for it, so it runs anywhere. ``PreparePool`` runs it in ``spawn``-ed worker processes
(never forked: the caller holds database connections and threads), in the order the files were given,
at most ``IN_FLIGHT`` per worker ahead of the caller. On 2 cores the write of one group of files then
overlaps the reading and chunking of the next. A pool that cannot start (a sandbox without
semaphores) prepares in the caller's process instead; the results are the same.
"""

from __future__ import annotations

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


@dataclass
class Prepared:
    """A file ready to write: what loading it gave, and for a loaded one its text's hash and chunks."""

    path: Path
    outcome: LoadedDocument | Skip | Unchanged
    source_hash: str | None = None
    drafts: list[ChunkDraft] = field(default_factory=list)
    modified: str | None = None  # the file's modification time (ISO, UTC)


def prepare(job: FileJob) -> Prepared:
    loaded = load_file(job.path, job.max_bytes, job.explicit, job.known_hash, job.known_file_hash)
    if not isinstance(loaded, LoadedDocument):
        return Prepared(job.path, loaded)
    drafts = chunk_document(loaded, job.chunker)
    return Prepared(job.path, loaded, sha256_text(loaded.text), drafts, modified_time(job.path))


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
        pool = self._executor() if self.workers > 1 else None
        if pool is None:
            yield from (prepare(job) for job in given)
            return
        pending: deque[Future[Prepared]] = deque()
        ahead = self.workers * IN_FLIGHT
        for job in given:
            pending.append(pool.submit(prepare, job))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> PreparePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
