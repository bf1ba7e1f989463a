"""Keep an index current while files change: watchfiles events → ``Engine.update_paths`` → embeddings.

Batches are debounced (watchfiles' ``debounce``), unchanged content is skipped by hash, deletions and
renames (a delete plus an add) leave search, .gitignore and always-skipped folders are respected, and the
index's own files are never watched. Keyword search sees an edit as soon as its batch is written;
embeddings follow in the same pass, so hybrid catches up a moment later.

One watcher per collection and roots, whatever the host: the watch holds a lease in the store (a ``watch``
row of the jobs table, its owner beating every second). A second `retrievo watch` of the same roots is
refused while the first lives, and takes over once it has stopped beating for ``STALE_AFTER_S``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from retrievo.engine import Engine
from retrievo.errors import ConfigError, EmbedderUnavailable, RetrievoError
from retrievo.ingest.sources import ALWAYS_SKIPPED_DIRS
from retrievo.models import IndexReport, Job
from retrievo.operations.jobs import HEARTBEAT_S, STALE_AFTER_S, now, stale_before
from retrievo.store.base import Store

log = logging.getLogger(__name__)
DEBOUNCE_MS = 200


@dataclass(frozen=True)
class Update:
    """One applied batch: what changed, and how long until keyword search saw it (and vectors)."""

    paths: tuple[str, ...]
    report: IndexReport
    keyword_ms: float
    embedded_ms: float | None


class Watcher:
    def __init__(
        self,
        engine: Engine,
        paths: Sequence[str | Path],
        collection: str | None = None,
        embed: bool = True,
        on_update: Callable[[Update], None] | None = None,
        debounce_ms: int = DEBOUNCE_MS,
    ) -> None:
        self.engine = engine
        self.roots = [Path(p).expanduser().resolve() for p in paths]
        self.collection = collection or engine.config.collection
        self.embed = embed
        self.on_update = on_update
        self.debounce_ms = debounce_ms
        index_file = str(engine.config.db) if engine.config.store is None else None
        self._own_prefix = index_file
        self.ready = threading.Event()  # set once the file-system watches are in place

    def _wanted(self, _change: object, path: str) -> bool:
        if self._own_prefix and path.startswith(self._own_prefix):
            return False  # the index file, its WAL, lock and vector side files
        return not any(part in ALWAYS_SKIPPED_DIRS for part in Path(path).parts)

    def apply(self, paths: Sequence[str]) -> Update:
        started = time.perf_counter()
        report = self.engine.update_paths(self.roots, paths, self.collection, embed=False)
        keyword_ms = (time.perf_counter() - started) * 1000
        embedded_ms = None
        if self.embed and report.chunks_written:
            try:
                self.engine.embed_missing(self.collection)
                embedded_ms = (time.perf_counter() - started) * 1000
            except EmbedderUnavailable as exc:
                log.warning("watch: embeddings deferred (%s); keyword search is current", exc)
        update = Update(
            tuple(paths), report, round(keyword_ms, 1), None if embedded_ms is None else round(embedded_ms, 1)
        )
        if self.on_update is not None:
            self.on_update(update)
        return update

    def lease(self) -> WatchLease:
        """This watch's lease in the store (``take`` it before watching)."""
        return WatchLease(self.engine, self.collection, [str(r) for r in self.roots])

    def run(self, stop: threading.Event | None = None) -> None:
        """Block, applying batches, until ``stop`` is set (or Ctrl-C); ConfigError when another process
        watches the same roots of the collection."""
        with self.lease().held():
            self._watch(stop)

    def _watch(self, stop: threading.Event | None) -> None:
        import watchfiles

        for changes in watchfiles.watch(
            *self.roots, watch_filter=self._wanted, debounce=self.debounce_ms, step=50, stop_event=stop,
            raise_interrupt=False, yield_on_timeout=True, rust_timeout=200,
        ):  # fmt: skip
            self.ready.set()  # the first (empty) batch comes once the watches are armed
            if not changes:
                continue
            try:
                self.apply(sorted({path for _, path in changes}))
            except RetrievoError as exc:
                log.warning("watch: %s", exc)

    def start(self) -> tuple[threading.Thread, threading.Event]:
        """Run in a daemon thread; set the returned event to stop it."""
        stop = threading.Event()
        thread = threading.Thread(target=self.run, args=(stop,), name="retrievo-watch", daemon=True)
        thread.start()
        return thread, stop


class WatchLease:
    """The store's record that one process watches ``roots`` of ``collection`` (see the module's docstring)."""

    def __init__(self, engine: Engine, collection: str, roots: list[str]) -> None:
        self.engine, self.collection, self.roots = engine, collection, sorted(roots)
        digest = hashlib.sha256("\n".join([collection, *self.roots]).encode()).hexdigest()[:16]
        self.lease_id = f"watch_{digest}"
        self.owner = f"{socket.gethostname()}:{os.getpid()}"

    @contextmanager
    def held(self) -> Iterator[None]:
        store = self.engine.open_store(create=True)
        self.take(store)
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(HEARTBEAT_S):
                store.update_job(self.lease_id, heartbeat_at=now())

        beating = threading.Thread(target=beat, name="retrievo-watch-lease", daemon=True)
        beating.start()
        try:
            yield
        finally:
            stop.set()
            beating.join(timeout=5)
            store.update_job(self.lease_id, only_if=("running",), status="done", finished_at=now())

    def take(self, store: Store) -> None:
        if store.get_job(self.lease_id) is None:
            with suppress(ConfigError):  # another process made it meanwhile: the compare-and-set decides
                store.save_job(Job(job_id=self.lease_id, kind="watch", collection=self.collection, status="done",
                                   parameters={"paths": self.roots}, created_at=now(), owner=""))  # fmt: skip
        if not store.take_lease(self.lease_id, self.owner, now(), stale_before()):
            holder = store.get_job(self.lease_id)
            raise ConfigError(
                f"{', '.join(self.roots)} in collection {self.collection!r} is watched already by "
                f"{holder.owner if holder else 'another process'}; one watcher per folder (it takes over "
                f"{STALE_AFTER_S:.0f} s after the other stops)"
            )
