"""Keep an index current while files change: watchfiles events → ``Engine.update_paths`` → embeddings.

Batches are debounced (watchfiles' ``debounce``), unchanged content is skipped by hash, deletions and
renames (a delete plus an add) leave search, .gitignore and always-skipped folders are respected, and the
index's own files are never watched. Keyword search sees an edit as soon as its batch is written;
embeddings follow in the same pass, so hybrid catches up a moment later.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from retrievo.engine import Engine
from retrievo.errors import EmbedderUnavailable, RetrievoError
from retrievo.ingest.sources import ALWAYS_SKIPPED_DIRS
from retrievo.models import IndexReport

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

    def run(self, stop: threading.Event | None = None) -> None:
        """Block, applying batches, until ``stop`` is set (or Ctrl-C)."""
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
