"""The engine's embedding lifecycle, mixed into ``Engine``: embed, verify, regenerate, migrate a model.

A model migration (``regenerate(model=NEW)``) never stops searches or writes: NEW is recorded as the
collection's shadow model, its vectors are made beside the old ones without the writer lock (searches
rank each chunk by the best vector it has, ``search/migrating.py``; indexing goes on), then — under the
writer lock, so nothing new slips in — the last missing vectors are made and the store switches the
served model in one transaction. An interrupted migration resumes where it stopped: made vectors are kept
by (embed_key, model).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

from retrievo.embed.base import Embedder
from retrievo.embed.pool import retired
from retrievo.engine.indexing import IndexProgress, NoProgress
from retrievo.engine.verify import FIXABLE, VerifyReport, verify
from retrievo.errors import (
    Cancelled,
    ConfigError,
    EmbedderUnavailable,
    IndexLockedError,
    ModelMismatchError,
    RetrievoError,
)
from retrievo.models import IndexReport, Kind, RegenerateReport
from retrievo.search.answer.coverage import Coverage, unavailable_reason
from retrievo.search.migrating import MigratingQuery
from retrievo.search.query import EmbedQuery
from retrievo.store.base import SharesEmbedding, Store

if TYPE_CHECKING:
    from retrievo.config import Config
    from retrievo.embed.pool import ModelPool
    from retrievo.embed.queries import QueryEmbedder

# chunks embedded and stored together, at least (more where a model keeps more in flight: ``write_slice``)
EMBED_WRITE_BATCH = 256
SHARED_BATCH = 64  # chunks a server of a tier claims at once (retrievo.store.postgres.shared_embedding)
SHARED_POLL_S = 0.2  # how often the job's server looks whether the batches others hold are done
SWITCH_WAIT_S = 600.0  # how long a migration waits for another writer before it gives up (resumable)


class EmbeddingLifecycle:
    config: Config
    _pool: ModelPool
    _coverage: Coverage

    @abstractmethod
    def _open_store(self, create: bool, collection: str | None = None) -> Store: ...

    @abstractmethod
    def _collection_store(self, collection: str | None) -> tuple[Store, str]: ...

    # Which model serves a collection ----------------------------------------------------------

    def _collection_embedder(self, store: Store, collection: str) -> Embedder | None:
        """The embedder of the collection's model (the configured one for a collection without vectors);
        None when embedding is off; ModelMismatchError when the collection's model is out of reach."""
        info = store.get_collection(collection)
        if self._pool.default is None:
            return None
        if info is None or info.model_id is None:
            return self._pool.default
        embedder = self._pool.get(info.model_id)
        if embedder is None and (moved := retired(info.model_id, collection)) is not None:
            raise ModelMismatchError(moved)
        if embedder is None:
            configured = self._pool.default.model_id
            raise ModelMismatchError(
                f"collection {collection!r} was embedded with {info.model_id} ({info.dimensions} dims), "
                f"which this configuration cannot reach (the configured embedder is {configured}). Configure "
                f"that model's provider (RETRIEVO_EMBEDDER / RETRIEVO_EMBED_URL), move the collection to "
                f"the configured model with `retrievo regenerate --model {configured} --collection "
                f"{collection}`, or index into a new collection (`--collection {collection}-new`)."
            )
        return embedder

    def _check_model(self, store: Store, collection: str) -> None:
        self._collection_embedder(store, collection)

    def _warm_queries(self, collection: str | None) -> QueryEmbedder:
        """The query embedder a search of ``collection`` uses: its model's (a collection served by the static
        model between the stages of indexing does not load the bundled one); the configured model's where
        the collection cannot be read (the search itself then says why)."""
        try:
            embedder = self._collection_embedder(*self._collection_store(collection))
        except RetrievoError:  # no index yet, no such collection, its model out of reach
            return self._pool.default_queries
        queries = self._pool.queries(embedder.model_id) if embedder is not None else None
        return queries or self._pool.default_queries

    def _query_fn(self, store: Store, collection: str) -> tuple[EmbedQuery, str | None]:
        """How to embed a query for this collection, and why the semantic arm cannot run (or None)."""
        embedder = self._collection_embedder(store, collection)
        queries = self._pool.queries(embedder.model_id) if embedder is not None else None
        cooling = queries.cooling_down if queries is not None else (lambda: None)
        reason = unavailable_reason(queries is None, store, collection, cooling)

        def embed(query: str) -> tuple[str, npt.NDArray[np.float32]]:
            assert queries is not None
            return queries.embed(query)

        shadow = self._shadow_queries(store, collection) if reason is None else None
        if shadow is not None:  # moving to another model: each chunk ranked by the best vector it has
            model, queries_new, merged = shadow
            # NEW's reader for the re-read, where NEW is loaded (a search never waits for a load)
            reread = self.config.reread_depth
            documents = self._pool.ready_reader(model, self.config.query_threads) if reread else None
            if merged or documents is not None:
                return MigratingQuery(embed, model, queries_new.embed, documents, merged), reason
        return embed, reason

    def _shadow_queries(self, store: Store, collection: str) -> tuple[str, QueryEmbedder, bool] | None:
        """The query embedder of the model ``collection`` is moving to, where this configuration reaches
        it, and whether NEW's own list is read beside the served one (not past a store's bound for reading
        NEW exactly: then only the re-read asks NEW); None when it is not moving or the model is out of
        reach (the served model answers alone)."""
        info = store.get_collection(collection)
        if info is None or info.shadow_model_id is None:
            return None
        bound = store.unserved_search_max  # a store that reads NEW exactly, up to so many chunks
        merged = bound is None or self._coverage.counts(store, collection)[0] <= bound
        queries = self._pool.queries(info.shadow_model_id)
        if queries is None or queries.cooling_down() is not None:  # failed lately: not asked each search
            return None
        return info.shadow_model_id, queries, merged

    # Embedding what is missing ----------------------------------------------------------------

    def embed_missing(
        self, collection: str | None = None, progress: IndexProgress | None = None
    ) -> IndexReport:
        """Embed every current chunk that has no vector for the collection's model yet."""
        name = collection or self.config.collection
        store = self._open_store(create=False, collection=name)
        self._check_model(store, name)
        report = IndexReport(collection=name)
        started = time.perf_counter()
        with store.writer_lock(name), store.bulk_load(name):
            self._embed_missing(store, name, report, progress or NoProgress())
        report.duration_s = time.perf_counter() - started
        return report

    def _embed_missing(
        self, store: Store, collection: str, report: IndexReport, progress: IndexProgress
    ) -> None:
        embedder = self._collection_embedder(store, collection)
        if embedder is None:
            report.embed_error = "embedder is 'none': keyword search only"
            report.embeddings_missing = report.chunks_written
            return
        share: tuple[str, str] | None = getattr(progress, "share", None)  # a tier job: (job id, server)
        shared = share is not None and getattr(store, "shares_embedding", False)
        missing = (
            0 if shared else store.count_embedding_work(collection, embedder.model_id, only_missing=True)
        )
        report.embeddings_reused = max(0, report.chunks_written - missing)
        try:
            # Recorded even when every vector is reused from the cache (nothing missing).
            info = store.get_collection(collection)
            if info is not None and info.model_id is None:
                store.set_collection_model(collection, embedder.model_id, embedder.dimensions)
            if share is not None and shared:
                self._embed_shared(
                    cast(SharesEmbedding, store), collection, embedder, report, progress, *share
                )
                return
            pages = store.embedding_work_pages(collection, embedder.model_id, only_missing=True)
            report.chunks_embedded = _embed_into(store, embedder, pages, missing, progress)
        except EmbedderUnavailable as exc:
            report.embed_error = str(exc)
            self._pool.default_queries.failed(str(exc))
        report.embeddings_missing = missing - report.chunks_embedded

    def _embed_shared(
        self, store: SharesEmbedding, collection: str, embedder: Embedder, report: IndexReport,
        progress: IndexProgress, job_id: str, owner: str,
    ) -> None:  # fmt: skip
        """A tier job's embedding: planned as batches that this server and every idle one claim
        (``JobTaker.help_embed``); returns when every batch is done. A cancel or a failure forgets the
        open batches; what was written stays."""
        planned = store.plan_embed_batches(job_id, collection, embedder.model_id, SHARED_BATCH)
        report.embeddings_reused = max(0, report.chunks_written - planned)
        progress.embedding_started(planned)
        counted, finished = 0, False
        try:
            while True:
                try:
                    taken = store.work_embed_batch(owner, self.embed_texts, job_id=job_id)
                except EmbedderUnavailable as exc:
                    report.embed_error = str(exc)
                    self._pool.default_queries.failed(str(exc))
                    break
                _, embedded, still_open = store.embed_batches_progress(job_id)
                progress.embedded(embedded - counted)  # a cancel asked for is noticed here
                counted = embedded
                if taken is None and not still_open:
                    finished = True
                    break
                if taken is None:
                    time.sleep(SHARED_POLL_S)  # other servers hold the last batches
        finally:
            if not finished:
                store.drop_embed_batches(job_id)
        report.chunks_embedded = counted
        report.embedded_by = store.embed_batches_done_by(job_id)
        report.embeddings_missing = planned - counted

    def embed_texts(self, model_id: str, texts: list[str]) -> npt.NDArray[np.float32]:
        """Document vectors of ``texts`` by the model ``model_id`` (EmbedderUnavailable when out of reach)."""
        embedder = self._pool.get(model_id)
        if embedder is None:
            raise EmbedderUnavailable(f"model {model_id} cannot be reached with this configuration")
        return embedder.embed_documents(texts)

    # Verify -----------------------------------------------------------------------------------

    def verify(self, collection: str | None = None, fix: bool = False) -> VerifyReport:
        """Check every chunk's hashes, offsets and vector and the vector side index (``retrievo.engine.verify``);
        ``fix`` re-keys and re-embeds what it can, rebuilds the side index and checks again. What cannot be
        repaired here is named in ``cannot_fix``."""
        store, name = self._collection_store(collection)
        report = verify(store, name)
        if fix and not report.ok:
            fixed: dict[str, int] = {}
            if report.problems["embed_key"]:
                fixed["embed_key"] = self._rekey(store, name)
            embeddable = self._collection_embedder(store, name) is not None
            if embeddable and (report.problems["missing_vector"] or fixed.get("embed_key")):
                fixed["missing_vector"] = self.embed_missing(name).chunks_embedded
            if report.problems["side_index"] or fixed.get("embed_key"):  # re-keyed: their vectors changed
                store.rebuild_side_index(name)
                fixed["side_index"] = report.problems["side_index"]
            report = replace(verify(store, name), fixed=fixed)
        report.cannot_fix = [kind for kind, count in report.problems.items() if count and kind not in FIXABLE]
        return report

    def _rekey(self, store: Store, name: str) -> int:
        with store.writer_lock(name):
            stale = store.stale_chunks(name)
            store.rekey_chunks(stale)
        return len(stale)

    # Regenerate and migrate -------------------------------------------------------------------

    def regenerate(
        self,
        collection: str | None = None,
        only_missing: bool = False,
        stale: bool = False,
        kinds: Sequence[Kind | str] = (),
        limit: int | None = None,
        offset: int = 0,
        model: str | None = None,
        drop_old: bool = False,
        progress: IndexProgress | None = None,
        after_key: str | None = None,
    ) -> RegenerateReport:
        """Re-embed a collection's chunks (all, ``only_missing``, ``stale`` ones, some ``kinds``, a
        ``limit``/``offset`` slice ordered by key), or with ``model`` migrate it to another model.

        Work goes in key order and each written slice is reported to ``progress.written_through``
        (when it has one): ``after_key`` resumes a re-embedding after the last key written (a job
        killed half-way embeds only the rest). A migration resumes by itself (it embeds what lacks a
        vector of the new model).
        A migration (``model`` other than the served one) covers the whole collection, history included,
        switches atomically when done and, with ``drop_old``, deletes the previous model's vectors.
        """
        store, name = self._collection_store(collection)
        progress = progress or NoProgress()
        started = time.perf_counter()
        if (limit is not None and limit < 0) or offset < 0:
            raise ConfigError("--limit and --offset must not be negative")
        info = store.get_collection(name)
        assert info is not None
        target = self._pool.require(model) if model else self._collection_embedder(store, name)
        if target is None:
            raise ConfigError("embedder is 'none': there is no model to regenerate with")
        if target.model_id != info.model_id and info.model_id is not None:
            if only_missing or stale or kinds or limit is not None or offset:
                raise ConfigError(
                    "a model migration (--model) covers the whole collection; it cannot be combined with "
                    "--only-missing, --stale, --kind, --limit or --offset"
                )
            report = self._migrate(store, name, target, info.model_id, progress)
            if drop_old:
                report.vectors_dropped = store.drop_model_vectors(info.model_id)
        else:
            report = self._re_embed(
                store, name, target, only_missing, stale, kinds, limit, offset, progress, after_key
            )
        report.duration_s = time.perf_counter() - started
        return report

    def _re_embed(
        self,
        store: Store,
        name: str,
        embedder: Embedder,
        only_missing: bool,
        stale: bool,
        kinds: Sequence[Kind | str],
        limit: int | None,
        offset: int,
        progress: IndexProgress,
        after_key: str | None = None,
    ) -> RegenerateReport:
        report = RegenerateReport(name, embedder.model_id)
        with store.writer_lock(name):
            info = store.get_collection(name)
            if info is not None and info.model_id is None:
                store.set_collection_model(name, embedder.model_id, embedder.dimensions)
            if stale:
                pairs = store.stale_chunks(name)
                store.rekey_chunks(pairs)
                report.chunks_rekeyed = len(pairs)
            # Resumed (after_key): what an earlier run wrote, keys in order, is done.
            slice_ = (name, embedder.model_id, only_missing or stale, kinds, limit, offset)
            total = store.count_embedding_work(*slice_, after_key=after_key)
            pages = store.embedding_work_pages(*slice_, after_key=after_key)
            replacing = not (only_missing or stale)
            try:
                report.chunks_embedded = _embed_into(
                    store, embedder, pages, total, progress, replace=replacing
                )
            except EmbedderUnavailable as exc:
                report.embed_error = str(exc)
            if (replacing and report.chunks_embedded) or report.chunks_rekeyed:
                # replaced vectors, or chunks that read another key's: the side index, which syncs by chunk
                # ids, must not keep the old ones
                store.rebuild_side_index(name)
        return report

    def _migrate(
        self, store: Store, name: str, target: Embedder, previous: str, progress: IndexProgress
    ) -> RegenerateReport:
        report = RegenerateReport(name, target.model_id, previous_model_id=previous)
        try:
            store.set_shadow_model(name, target.model_id, target.dimensions)  # asks an HTTP model its size
            # Without the writer lock: searches read both models and indexing goes on meanwhile.
            total = store.count_embedding_work(name, target.model_id, only_missing=True, history=True)
            work = store.embedding_work_pages(name, target.model_id, only_missing=True, history=True)
            report.chunks_embedded = _embed_into(store, target, work, total, progress)
            store.warm_side_index(name, target.model_id)
            with self._writer_when_free(store, name, progress):
                total = store.count_embedding_work(name, target.model_id, only_missing=True, history=True)
                rest = store.embedding_work_pages(name, target.model_id, only_missing=True, history=True)
                report.chunks_embedded += _embed_into(store, target, rest, total, NoProgress())
                store.switch_model(name)
                report.switched = True
        except EmbedderUnavailable as exc:
            report.embed_error = f"{exc}; the collection still serves {previous} (run again to resume)"
        return report

    @contextmanager
    def _writer_when_free(self, store: Store, name: str, progress: IndexProgress) -> Iterator[None]:
        deadline = time.monotonic() + SWITCH_WAIT_S
        while True:
            try:
                lock = store.writer_lock(name)
                lock.__enter__()
            except IndexLockedError:
                if time.monotonic() > deadline:
                    raise
                progress.embedded(0)  # a cancel asked for while waiting is noticed here
                time.sleep(0.5)
                continue
            try:
                yield
            finally:
                lock.__exit__(None, None, None)
            return

    def drop_model(self, model_id: str) -> int:
        """Delete a model's vectors (refused while a collection serves or migrates to it)."""
        store = self._open_store(create=False)
        in_use = []
        for name in store.list_collections():
            info = store.get_collection(name)
            if info is not None and model_id in (info.model_id, info.shadow_model_id):
                in_use.append(name)
        if in_use:
            raise ConfigError(f"model {model_id} is still used by collection(s) {', '.join(in_use)}")
        return store.drop_model_vectors(model_id)


def _embed_into(
    store: Store,
    embedder: Embedder,
    pages: Iterable[Sequence[tuple[str, str]]],
    total: int,
    progress: IndexProgress,
    replace: bool = False,
) -> int:
    """Embed (key, text) pairs, read a page at a time (``total`` of them), and store them in slices, so
    a crash keeps what was done and memory does not grow with the collection; how many."""
    if not total:
        return 0
    progress.embedding_started(total)
    written_through = getattr(progress, "written_through", None)  # a job keeps where to resume
    done = 0
    stop: list[Cancelled] = []

    def embedded(count: int) -> None:
        try:
            progress.embedded(count)
        except Cancelled as asked:  # a cancel stops after this batch is stored, so no vector is lost
            stop.append(asked)

    for batch in _slices(pages, lambda: write_slice(embedder)):
        vectors = embedder.embed_documents([text for _, text in batch], progress=embedded)
        store.put_embeddings(embedder.model_id, [key for key, _ in batch], vectors, replace=replace)
        done += len(batch)
        if written_through is not None:
            written_through(batch[-1][0], done)
        if stop:
            raise stop[0]
    return done


def write_slice(embedder: Embedder) -> int:
    """How many chunks indexing hands ``embedder`` at once: the batches it keeps in flight (a GPU's
    1,024 × 4), ``EMBED_WRITE_BATCH`` at least."""
    return max(EMBED_WRITE_BATCH, embedder.batch_size * embedder.parallel_batches)


def _slices(
    pages: Iterable[Sequence[tuple[str, str]]], size: Callable[[], int]
) -> Iterator[list[tuple[str, str]]]:
    """The pages' pairs in order, in slices of ``size()`` (asked anew for each: a model settles its
    batches when it loads, a GPU's 1,024 × 4 in flight), the last one shorter. A store's page is 1,024
    chunks; a slice spans pages, so a GPU gets all the batches it can keep in flight in one call."""
    held: list[tuple[str, str]] = []
    for page in pages:
        held.extend(page)
        while len(held) >= (cut := size()):
            yield held[:cut]
            held = held[cut:]
    if held:
        yield held
