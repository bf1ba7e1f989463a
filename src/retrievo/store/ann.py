"""Approximate nearest neighbours for large collections: a usearch HNSW index beside the store.

Below ``ANN_MIN_VECTORS`` vectors exact search is as fast and exact, so it is used instead. Above it,
an HNSW graph (cosine, float16) is kept per (collection, model) in ``<prefix><collection id>-<model
hash>.usearch`` — beside the SQLite file (``<index file>.ann-``), or in the cache folder for a
PostgreSQL database — synced to the collection's current chunks whenever the store's generation
changed: new chunks are added, superseded ones removed, nothing is rebuilt from scratch. The store's
tables stay the source of truth; a ``VectorSource`` reads them (``sqlite/ann_source.py``,
``postgres/vector_source.py``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from retrievo.errors import VectorIndexUnavailable
from retrievo.store.files import Generation, fsync_file

log = logging.getLogger(__name__)

ANN_MIN_VECTORS = 30_000  # exact p50 <= 3 ms below it, 2 cores (benchmarks/speed/ann_threshold.py)
# HNSW ef while building. usearch's default, 128, took 727 s of a 1M sync on 2 cores (synthetic vectors,
# 2026-11-24). 32 was chosen then on synthetic low-rank vectors (recall@10 0.985 at 1M), but a model's
# vectors of real text need more (2026-11-29, docs/scale.md, benchmarks/speed/ann_real.py): 74,869 distinct
# texts (static model) 0.957 with 32, 0.986 with 64, 0.991 with 128 at ef 160; a million near-duplicate
# abstracts 0.558 / 0.716 at ef 373, the graph built in 44 / 73 s.
EXPANSION_ADD = 64
# HNSW ef at query time, by the graph's size: a bigger graph needs a wider search for the same recall.
EXPANSION_SEARCH = 160  # up to EXPANSION_SEARCH_FROM vectors
EXPANSION_SEARCH_FROM = 100_000
EXPANSION_SEARCH_PER_DOUBLING = 64  # 224 at 200k, 373 at 1M
ADD_BATCH = 20_000  # under SQLite's 32,766 bound parameters

SIDE_INDEX_AGREEMENT = 0.99  # cosine between a side-index vector (float16 HNSW) and the table's


def expansion_search(size: int) -> int:
    """The HNSW search effort (ef) for a graph of ``size`` vectors."""
    if size <= EXPANSION_SEARCH_FROM:
        return EXPANSION_SEARCH
    return round(EXPANSION_SEARCH + EXPANSION_SEARCH_PER_DOUBLING * math.log2(size / EXPANSION_SEARCH_FROM))


class VectorSource(Protocol):
    """The store's current vectors, read on a connection (``db``) the caller holds."""

    def connect(self) -> Any:
        """A connection of its own (closed with ``.close()``), for a rebuild in the background."""

    def generation(self, db: Any, collection_id: int) -> Generation:
        """Changes whenever a chunk or a vector of the collection does."""

    def dimensions(self, db: Any, collection_id: int, model_id: str) -> int: ...

    def current_ids(self, db: Any, collection_id: int, model_id: str) -> npt.NDArray[np.int64]:
        """The current chunks that have a vector of this model."""

    def vectors(
        self, db: Any, model_id: str, dimensions: int, ids: list[int]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(ids, vectors) of those of ``ids`` that have one."""


@dataclass
class _Entry:
    generation: Generation
    index: Any
    path: Path
    view: bool = False  # memory-mapped from the file, read-only: loaded whole before a change


class AnnIndexes:
    """One HNSW index per (collection, model), loaded lazily and kept in step with the store."""

    def __init__(self, prefix: str, source: VectorSource, inline_max: int | None = None) -> None:
        """``inline_max``: a search that finds more changed vectors than this starts a sync in the
        background and raises VectorIndexUnavailable meanwhile (for a store that can answer without the
        index); None: every change is synced before the search that sees it."""
        self._prefix = prefix  # the files are <prefix><collection id>-<model hash>.usearch
        self._source = source
        self._inline_max = inline_max
        self._lock = threading.Lock()
        self._entries: dict[tuple[int, str], _Entry] = {}
        self._rebuilding: set[tuple[int, str]] = set()
        self.rebuild_thread: threading.Thread | None = None

    def search(
        self,
        db: Any,
        collection_id: int,
        model_id: str,
        generation: Generation,
        query: npt.NDArray[np.float32],
        limit: int,
    ) -> list[tuple[int, float]]:
        with self._lock:
            entry = self._synced(db, collection_id, model_id, generation, background=True)
            if len(entry.index) == 0:
                return []
            matches = entry.index.search(query.astype(np.float32), min(limit, len(entry.index)))
            return [
                (int(key), 1.0 - float(distance))
                for key, distance in zip(matches.keys, matches.distances, strict=True)
            ]

    def _synced(
        self, db: Any, collection_id: int, model_id: str, generation: Generation, background: bool = False
    ) -> _Entry:
        key = (collection_id, model_id)
        entry = self._entries.get(key)
        if entry is not None and entry.generation == generation:
            return entry
        if key in self._rebuilding:
            raise VectorIndexUnavailable(
                "the vector side index is being rebuilt (unreadable, or far behind the vectors); "
                "keyword results only until it is done"
            )
        path = self._path(collection_id, model_id)
        if entry is None or entry.view:
            try:
                entry = _restore(path, generation)
            except _TornFile as exc:
                log.warning("vector index %s is unreadable (%s); rebuilding it in the background", path, exc)
                self._start_rebuild(key, path)
                raise VectorIndexUnavailable(
                    f"the vector index beside the index file was unreadable ({exc}) and is being rebuilt; "
                    "keyword results only until it is done"
                ) from exc
            if entry is not None and entry.generation == generation:
                self._entries[key] = entry
                return entry
            if entry is None:
                index = _new_index(self._source.dimensions(db, collection_id, model_id))
                entry = _Entry(-1, index, path)
        current = self._source.current_ids(db, collection_id, model_id)
        if background and self._inline_max is not None and _change(entry.index, current) > self._inline_max:
            self._start_rebuild(key, path)
            raise VectorIndexUnavailable("the vector side index is being built; the store answers meanwhile")
        _sync(self._source, db, entry.index, collection_id, model_id, current)
        entry.generation = generation
        _save(entry.index, path, generation, model_id)
        self._entries[key] = entry
        return entry

    def synced_index(self, db: Any, collection_id: int, model_id: str, generation: Generation) -> Any:
        """The (collection, model) HNSW index brought up to date with the table, built if there is none."""
        with self._lock:
            return self._synced(db, collection_id, model_id, generation).index

    def has_file(self, collection_id: int, model_id: str) -> bool:
        return self._path(collection_id, model_id).exists()

    def forget(self, collection_id: int | None = None, model_id: str | None = None) -> None:
        """Drop the loaded indexes and files of a collection and/or a model (they are rebuilt on demand)."""
        digest = hashlib.sha256(model_id.encode()).hexdigest()[:8] if model_id is not None else "*"
        prefix = Path(self._prefix)
        pattern = f"{prefix.name}{'*' if collection_id is None else collection_id}-{digest}.*"
        with self._lock:
            for key in list(self._entries):
                if collection_id in (None, key[0]) and model_id in (None, key[1]):
                    del self._entries[key]
            for path in prefix.parent.glob(pattern):
                path.unlink(missing_ok=True)

    def _path(self, collection_id: int, model_id: str) -> Path:
        digest = hashlib.sha256(model_id.encode()).hexdigest()[:8]
        return Path(f"{self._prefix}{collection_id}-{digest}.usearch")

    def _start_rebuild(self, key: tuple[int, str], path: Path) -> None:
        """Rebuild from the store's vectors, on a connection of its own, then swap it in."""
        self._rebuilding.add(key)
        collection_id, model_id = key

        def rebuild() -> None:
            try:
                db = self._source.connect()
                try:
                    # The generation first: the rows read after it are as new or newer.
                    generation = self._source.generation(db, collection_id)
                    index = _new_index(self._source.dimensions(db, collection_id, model_id))
                    _sync(
                        self._source, db, index, collection_id, model_id,
                        self._source.current_ids(db, collection_id, model_id),
                    )  # fmt: skip
                finally:
                    db.close()
                _save(index, path, generation, model_id)
                with self._lock:
                    self._entries[key] = _Entry(generation, index, path)
            except Exception:
                log.exception("rebuilding the vector index %s failed; it will be tried again", path)
            finally:
                with self._lock:
                    self._rebuilding.discard(key)

        self.rebuild_thread = threading.Thread(target=rebuild, name="retrievo-ann-rebuild", daemon=True)
        self.rebuild_thread.start()


class _TornFile(Exception):
    pass


def _new_index(dims: int) -> Any:
    # onnxruntime must be loaded before usearch: the other order crashes the process (a clash of
    # native libraries between usearch 2.26/numkong and onnxruntime 1.31, reproduced here).
    import onnxruntime  # noqa: F401
    from usearch.index import Index

    return Index(
        ndim=dims, metric="cos", dtype="f16", expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH
    )


def _restore(path: Path, generation: Generation) -> _Entry | None:
    """The saved index, None when there is none; _TornFile if unreadable (usearch checks the header
    and the size). In step with ``generation``: memory-mapped (a view: only the pages searches touch
    are read, 2.1 → 1.3 GB peak at 1M chunks); stale: loaded whole, generation -1, to be synced."""
    import onnxruntime  # noqa: F401
    from usearch.index import Index

    meta = path.with_suffix(".json")
    if not (path.exists() and meta.exists()):
        return None
    try:
        in_step = json.loads(meta.read_text()).get("generation") == generation
        index = Index.restore(str(path), view=in_step)
    except (ValueError, RuntimeError, OSError) as exc:
        raise _TornFile(f"{type(exc).__name__}: {exc}") from exc
    if index is None:
        raise _TornFile("usearch could not read it")
    # Not kept in the saved file. usearch has a setter its type hints do not show.
    index.expansion_search = expansion_search(len(index))  # type: ignore[misc]
    if not in_step:
        index.expansion_add = EXPANSION_ADD  # type: ignore[misc]
    return _Entry(generation if in_step else -1, index, path, view=in_step)


def _save(index: Any, path: Path, generation: Generation, model_id: str) -> None:
    """Atomically: a kill at any moment leaves the old file or the new one, never a torn one; the
    graph and its generation are written under a lock on the file, so two processes saving at once
    cannot leave one's graph labelled with the other's generation."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_suffix(".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        temporary = path.with_name(path.name + ".tmp")
        index.save(str(temporary))
        fsync_file(temporary)
        os.replace(temporary, path)
        meta = path.with_suffix(".json")
        temporary_meta = meta.with_name(meta.name + ".tmp")
        temporary_meta.write_text(json.dumps({"generation": generation, "model_id": model_id}))
        fsync_file(temporary_meta)
        os.replace(temporary_meta, meta)


def _held(index: Any) -> npt.NDArray[np.int64]:
    return np.asarray(index.keys, dtype=np.int64) if len(index) else np.zeros(0, dtype=np.int64)


def _change(index: Any, current: npt.NDArray[np.int64]) -> int:
    held = _held(index)
    return len(np.setdiff1d(current, held, assume_unique=True)) + len(
        np.setdiff1d(held, current, assume_unique=True)
    )


def _sync(
    source: VectorSource,
    db: Any,
    index: Any,
    collection_id: int,
    model_id: str,
    current: npt.NDArray[np.int64],
) -> None:
    held = _held(index)
    gone = np.setdiff1d(held, current, assume_unique=True)
    if len(gone):
        index.remove(gone)
    new = np.setdiff1d(current, held, assume_unique=True)
    for begin in range(0, len(new), ADD_BATCH):
        ids, vectors = source.vectors(
            db, model_id, index.ndim, [int(i) for i in new[begin : begin + ADD_BATCH]]
        )
        if len(ids):
            index.add(ids, vectors)
    index.expansion_search = expansion_search(len(index))  # the graph's size may have changed


def disagreements(held: Any, ids: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> list[str]:
    """Where a synced HNSW index disagrees with the table's current ``ids`` and their ``vectors``:
    chunks it lacks or holds in excess, vectors that differ (for ``retrievo verify``)."""
    keys = set(_held(held).tolist())
    table = dict(zip(ids.tolist(), range(len(ids)), strict=True))
    problems: list[str] = []
    missing, extra = set(table) - keys, keys - set(table)
    if missing:
        problems.append(f"{len(missing)} chunks with vectors are missing from the vector side index")
    if extra:
        problems.append(f"the vector side index holds {len(extra)} chunks that are not current")
    shared = sorted(set(table) & keys)
    if shared:
        ours = vectors[[table[i] for i in shared]]
        theirs = np.vstack([np.asarray(held.get(i), dtype=np.float32) for i in shared])
        cosine = np.sum(ours * theirs, axis=1) / (
            np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1) + 1e-9
        )
        differ = int(np.sum(cosine < SIDE_INDEX_AGREEMENT))
        if differ:
            problems.append(f"{differ} vectors in the side index differ from the table's")
    return problems
