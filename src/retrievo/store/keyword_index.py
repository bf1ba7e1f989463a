"""The keyword arm's fast path: a tantivy index beside the store, kept in step with its keyword tables.

SQLite keeps one beside its file for every collection (source: ``sqlite/keyword_tokens.py``); PostgreSQL
one per collection in a local cache folder (source: ``postgres/keyword_source.py``), the same code.

FTS5 scores every row that holds any query term, so on a large index its latency is the number of
matching rows. tantivy (the engine inside LanceDB's full-text search) keeps impact-ordered postings
with per-block maxima and skips the blocks that cannot reach the top k (block-max WAND).

Same ranking as FTS5: ``keyword_ranking.py``.

The tables stay the source of truth: the side index is only used when it is in step with the table's
generation and the search has no filter (filters and point-in-time reads go to the tables). When it is
missing or unreadable it is rebuilt from the table in a background thread while the tables answer; a
small change (``INLINE_SYNC_ROWS``) is applied before the search that first sees it; after indexing,
the sync at the load's end adds what it wrote in one commit (one segment). Crash safety: the meta file
naming the generation is removed before a change and written (atomically) after tantivy's commit, so a
kill at any moment leaves a consistent pair or no meta — which means "rebuild".
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import shutil
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from retrievo.store.files import Generation, fsync_file
from retrievo.store.keyword_ranking import ranked

log = logging.getLogger(__name__)

# Below this many current chunks FTS5 alone is about as fast (a few ms), and no side files are made.
KEYWORD_INDEX_MIN_ROWS = 2_000
INLINE_SYNC_ROWS = 20_000  # a larger change is applied in the background while FTS5 answers
BATCH = 2_000
# At a sync, the rows to tokenize are split over the cores, at least this many a piece: each piece is
# read on a connection of its own (the SQL outside the GIL; PostgreSQL's in its own processes).
PIECE_MIN = 400
WRITER_HEAP = 128_000_000
FORMAT = 1


class KeywordSource(Protocol):
    """Where a side index reads the rows it holds: the store's tables, on connections of its own."""

    def connect(self) -> Any:
        """A new connection (autocommit: each read its own snapshot); the caller closes it."""
        ...

    def generation(self, db: Any) -> Generation: ...

    def current_ids(self, db: Any) -> npt.NDArray[np.int64]:
        """The ids of the current chunks the index must hold, sorted."""
        ...

    def token_rows(self, db: Any, ids: npt.NDArray[np.int64]) -> list[tuple[int, int, str]]:
        """(chunk id, collection id, the chunk's keyword tokens joined by spaces) of each id that exists."""
        ...


@dataclass
class _Loaded:
    generation: Generation
    index: Any
    held: npt.NDArray[np.int64]  # chunk ids in the index, sorted


class KeywordIndex:
    """One tantivy index at ``base`` (files ``base.kw``, ``base.kw.json``, ``base.kw.ids.npy``) holding
    the current chunks its source names."""

    def __init__(self, base: str, source: KeywordSource) -> None:
        self._source = source
        self._dir, self._meta, self._ids = side_files(base)
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None
        self._syncing = False
        self.sync_thread: threading.Thread | None = None

    # Search -------------------------------------------------------------------------------------

    def search(
        self,
        db: Any,
        generation: Generation,
        collection_id: int | None,
        terms: list[str],
        limit: int,
    ) -> list[tuple[int, float]] | None:
        """Best-first (chunk id, FTS5-equivalent BM25 score); None when the index is not in step yet.

        ``collection_id`` None: the index holds only this collection, no restriction is needed.
        """
        loaded = self._ready(db, generation)
        if loaded is None:
            return None
        try:
            return ranked(loaded.index, collection_id, terms, limit)
        except BaseException as exc:
            if not _unreadable(exc):
                raise
            log.warning("keyword side index %s failed (%s); rebuilding it, FTS5 answers", self._dir, exc)
            with self._lock:
                self._meta.unlink(missing_ok=True)
                self._loaded = None
            return None

    # Keeping in step ------------------------------------------------------------------------------

    def ensure(self, db: Any, generation: Generation) -> None:
        """Bring the side index in step now, in this thread, however large the change (after indexing)."""
        self.wait()
        self._ready(db, generation, background=False)

    def _ready(self, db: Any, generation: Generation, background: bool = True) -> _Loaded | None:
        with self._lock:
            loaded = self._loaded
            if loaded is not None and loaded.generation == generation:
                return loaded
            if self._syncing:
                return None
            if loaded is None or self._saved_generation() == generation:
                loaded = self._open_saved()
                self._loaded = loaded
                if loaded is not None and loaded.generation == generation:
                    return loaded
            current = self._source.current_ids(db)
            held = loaded.held if loaded is not None else np.zeros(0, dtype=np.int64)
            change = len(np.setdiff1d(current, held, assume_unique=True)) + len(
                np.setdiff1d(held, current, assume_unique=True)
            )
            if change <= INLINE_SYNC_ROWS or not background:
                try:
                    index = loaded.index if loaded is not None else self._fresh()
                    self._loaded = self._sync(db, index, held, current, generation)
                except (ValueError, RuntimeError, OSError) as exc:
                    # Another process holds tantivy's writer lock (it is syncing too): FTS5 answers.
                    log.info("keyword side index not synced now (%s); FTS5 answers", exc)
                    return None
                return self._loaded
            self._start_background(rebuild=loaded is None)
            return None

    def _start_background(self, rebuild: bool) -> None:
        self._syncing = True

        def work() -> None:
            db = self._source.connect()
            try:
                generation = self._source.generation(db)  # first: rows read later are as new or newer
                with self._lock:
                    loaded = None if rebuild else self._loaded
                if loaded is None:
                    index, held = self._fresh(), np.zeros(0, dtype=np.int64)
                else:
                    index, held = loaded.index, loaded.held
                synced = self._sync(db, index, held, self._source.current_ids(db), generation)
                with self._lock:
                    self._loaded = synced
            except Exception:
                log.exception("building the keyword side index %s failed; FTS5 answers meanwhile", self._dir)
            finally:
                db.close()
                with self._lock:
                    self._syncing = False

        self.sync_thread = threading.Thread(target=work, name="retrievo-keyword-index", daemon=True)
        self.sync_thread.start()

    def _sync(
        self,
        db: Any,
        index: Any,
        held: npt.NDArray[np.int64],
        current: npt.NDArray[np.int64],
        generation: Generation,
    ) -> _Loaded:
        import tantivy

        gone = np.setdiff1d(held, current, assume_unique=True)
        new = np.setdiff1d(current, held, assume_unique=True)
        if len(gone) or len(new) or not self._meta.exists():
            self._meta.unlink(missing_ok=True)  # from here until the commit is recorded: "rebuild"
            writer = index.writer(WRITER_HEAP, 1)
            try:
                for begin in range(0, len(gone), BATCH):
                    # (delete_documents_by_term does not match u64 terms in tantivy-py 0.27: by query it is)
                    ids = [int(i) for i in gone[begin : begin + BATCH]]
                    writer.delete_documents_by_query(tantivy.Query.term_set_query(index.schema, "id", ids))
                for chunk_id, collection_id, body in itertools.chain.from_iterable(self._tokenized(new)):
                    document = tantivy.Document()
                    document.add_unsigned("id", chunk_id)
                    document.add_unsigned("col", collection_id)
                    document.add_text("body", body)
                    writer.add_document(document)
                writer.commit()
                writer.wait_merging_threads()
            except BaseException:
                writer.rollback()
                raise
            index.reload()
            self._save(current, generation)
        return _Loaded(generation, index, current)

    def _tokenized(self, ids: npt.NDArray[np.int64]) -> Iterator[list[tuple[int, int, str]]]:
        """Token rows of ``ids`` in order: a piece a core side by side, each on a connection of its own."""
        if not len(ids):
            return
        workers = min(os.cpu_count() or 1, max(1, len(ids) // PIECE_MIN))
        count = max(workers, math.ceil(len(ids) / BATCH))  # pieces of equal size, none over BATCH
        pieces = [piece for piece in np.array_split(ids, count) if len(piece)]

        def rows(piece: npt.NDArray[np.int64]) -> list[tuple[int, int, str]]:
            db = self._source.connect()
            try:
                return self._source.token_rows(db, piece)
            finally:
                db.close()

        with ThreadPoolExecutor(workers, thread_name_prefix="retrievo-keyword-tokens") as pool:
            for begin in range(0, len(pieces), workers):  # one piece a core in memory at a time
                yield from pool.map(rows, pieces[begin : begin + workers])

    def _fresh(self) -> Any:
        import tantivy

        shutil.rmtree(self._dir, ignore_errors=True)
        self._dir.mkdir(parents=True)
        builder = tantivy.SchemaBuilder()
        builder.add_unsigned_field("id", indexed=True, fast=True)
        builder.add_unsigned_field("col", indexed=True)
        builder.add_text_field("body", tokenizer_name="whitespace", index_option="freq")
        return tantivy.Index(builder.build(), path=str(self._dir))

    def _saved_generation(self) -> Generation | None:
        try:
            saved = json.loads(self._meta.read_text())
        except (OSError, ValueError):
            return None
        generation = saved.get("generation") if saved.get("format") == FORMAT else None
        return generation if isinstance(generation, int | str) else None

    def _open_saved(self) -> _Loaded | None:
        """The index on disk with its ids, when its meta says it is whole; None means rebuild."""
        import tantivy

        generation = self._saved_generation()
        if generation is None:
            return None
        try:
            index = tantivy.Index.open(str(self._dir))
            held = np.load(self._ids)
            if int(index.searcher().num_docs) != len(held):
                raise ValueError(f"{index.searcher().num_docs} documents, {len(held)} ids")
        except BaseException as exc:  # a torn segment can make tantivy panic (a BaseException in Python)
            if not _unreadable(exc):
                raise
            log.warning("keyword side index %s is unreadable (%s); rebuilding it", self._dir, exc)
            return None
        return _Loaded(generation, index, np.asarray(held, dtype=np.int64))

    def _save(self, held: npt.NDArray[np.int64], generation: Generation) -> None:
        temporary = self._ids.with_name(self._ids.name + ".tmp.npy")
        np.save(temporary, held)
        fsync_file(temporary)
        os.replace(temporary, self._ids)
        temporary_meta = self._meta.with_name(self._meta.name + ".tmp")
        temporary_meta.write_text(
            json.dumps({"format": FORMAT, "generation": generation, "documents": len(held)})
        )
        fsync_file(temporary_meta)
        os.replace(temporary_meta, self._meta)

    def close(self) -> None:
        """Let go of the loaded index (its memory maps); a background build is waited for first."""
        self.wait()
        with self._lock:
            self._loaded = None

    def forget(self) -> None:
        """Drop the side index (files and memory); it is rebuilt from the table when next needed."""
        with self._lock:
            self._loaded = None
            remove_files(self._dir, self._meta, self._ids)

    def wait(self) -> None:
        """Block until a background build started here is done (tests, benchmarks, `warm`)."""
        thread = self.sync_thread
        if thread is not None:
            thread.join()


def side_files(base: str) -> tuple[Path, Path, Path]:
    """The index folder, its meta file and its ids file for an index at ``base``."""
    return Path(f"{base}.kw"), Path(f"{base}.kw.json"), Path(f"{base}.kw.ids.npy")


def remove_files(folder: Path, meta: Path, ids: Path) -> None:
    """Meta first: a kill midway leaves files without meta, which read as "rebuild"."""
    meta.unlink(missing_ok=True)
    ids.unlink(missing_ok=True)
    shutil.rmtree(folder, ignore_errors=True)


def _unreadable(exc: BaseException) -> bool:
    """A damaged side index: tantivy's errors, and its panics (pyo3's PanicException)."""
    return isinstance(exc, (ValueError, RuntimeError, OSError)) or type(exc).__name__ == "PanicException"
