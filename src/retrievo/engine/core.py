"""The facade every surface calls: index(), search(), status()."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from retrievo.config import Config
from retrievo.embed.base import Embedder
from retrievo.embed.factory import make_embedder
from retrievo.embed.pool import ModelPool
from retrievo.embed.tokens import TokenCounter
from retrievo.engine.code import CodeQueries
from retrievo.engine.doors import Doors
from retrievo.engine.embedding import EmbeddingLifecycle
from retrievo.engine.history import History
from retrievo.engine.indexing import IndexProgress, NoProgress, index_root, ingest_documents, update_paths
from retrievo.engine.library import LibraryQueries
from retrievo.engine.routes import Routes
from retrievo.engine.similar import SimilarQueries
from retrievo.errors import (
    CollectionNotFound,
    ConfigError,
    DocumentNotFound,
    RetrievoError,
    SourceError,
)
from retrievo.ingest.chunkers import ChunkerName, parse_strategies
from retrievo.ingest.roots import checked_path, resolve_inside_roots
from retrievo.models import (
    Chunk,
    DocumentSummary,
    Filters,
    IndexReport,
    Kind,
    LoadedDocument,
    RevisionText,
    SearchMode,
    SearchResult,
    SkippedFile,
)
from retrievo.search.answer.answerability import READ, settle
from retrievo.search.answer.coverage import Coverage
from retrievo.search.code.intent import CodeQuestions
from retrievo.search.code.topics import CodeTopics
from retrievo.search.context import AssembledContext, CodeBudget, assemble
from retrievo.search.documents.similar import check_scope
from retrievo.search.fusion import FUSIONS
from retrievo.search.hybrid import SearchOptions, run_search
from retrievo.search.query import read_query
from retrievo.search.records.elements import RecordContext, record_context
from retrievo.search.records.relations import RelationAnswers
from retrievo.search.rerank import make_reranker
from retrievo.search.rescore import RESCORE_DEPTH, Rescorer, Scope, cut
from retrievo.search.rewrite import QueryRewriter
from retrievo.store.base import Store
from retrievo.store.read_point import resolve

if TYPE_CHECKING:
    from retrievo.engine.registry import Registry

log = logging.getLogger(__name__)


DOCUMENTS_PAGE = 1000  # documents read at a time by Engine.documents


class Engine(Routes, CodeQueries, SimilarQueries, LibraryQueries, EmbeddingLifecycle, Doors):
    def __init__(
        self,
        config: Config,
        store: Store | None = None,
        embedder: Embedder | None = None,
        retry_embedder_after_s: float = 30.0,
    ) -> None:
        self.config = config
        self._store = store
        self._embedder = embedder if embedder is not None else make_embedder(config)
        self._pool = ModelPool(config, self._embedder, retry_embedder_after_s)
        self._lock = threading.Lock()
        self._tokens = TokenCounter()
        self._rewriter = (
            QueryRewriter(config.rewrite_url, config.rewrite_model or "gpt-4o-mini", config.rewrite_api_key)
            if config.rewrite_url
            else None
        )
        self._coverage = Coverage()
        self._reranker = make_reranker(config)
        self._rescorers: tuple[Rescorer, ...] = (RelationAnswers(),) + (
            (CodeQuestions(), CodeTopics()) if config.code_ranking == "on" else ()
        )

    # Lifecycle --------------------------------------------------------------------------------

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        self._close_routes()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> Embedder | None:
        return self._embedder

    @property
    def history(self) -> History:
        """Baselines, retention and read contexts (``retrievo.engine.history``)."""
        return History(self)

    @property
    def registry(self) -> Registry:
        """MCP servers, A2A agents and tools: add, remove, entries, search (``retrievo.engine.registry``)."""
        from retrievo.engine.registry import Registry

        return Registry(self)

    # Indexing ---------------------------------------------------------------------------------

    def index(
        self,
        paths: Sequence[str | Path],
        collection: str | None = None,
        chunker: str = ChunkerName.AUTO,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        embed: bool = True,
        force: bool = False,
        progress: IndexProgress | None = None,
        lsp: bool = False,
    ) -> IndexReport:
        """Index files and folders; unchanged files are skipped by hash, removed files leave search.

        Each path is recorded as a root of the collection: the only places ``refresh`` may re-read.
        ``lsp``: ask language servers (jedi-language-server for Python) where ambiguous calls go.
        """
        return self._index_paths(
            paths, collection, chunker, include, exclude, embed, force, progress, True, lsp
        )

    def _index_paths(
        self,
        paths: Sequence[str | Path],
        collection: str | None,
        chunker: str,
        include: Sequence[str],
        exclude: Sequence[str],
        embed: bool,
        force: bool,
        progress: IndexProgress | None,
        record_roots: bool,
        lsp: bool = False,
    ) -> IndexReport:
        parse_strategies(chunker)  # an unknown name is an error before anything is read
        name = collection or self.config.collection
        progress = progress or NoProgress()
        roots = [checked_path(p) for p in paths]
        for root in roots:
            if not root.exists():
                raise SourceError(f"path {str(root)!r} does not exist; check the spelling")
        with self._indexing(name, embed, progress) as (store, report):
            for root in roots:
                if record_roots:
                    store.add_root(name, str(root))
                index_root(store, report, root, name, chunker, include, exclude, force, progress,
                           self.config.max_file_bytes)  # fmt: skip
            if lsp:
                from retrievo.engine.lsp_refine import refine_into_report

                refine_into_report(store, report, name, roots)
        return report

    @contextmanager
    def _indexing(
        self, name: str, embed: bool, progress: IndexProgress
    ) -> Iterator[tuple[Store, IndexReport]]:
        """One write session: the collection's writer lock held, then embedding, then the timestamp."""
        store = self._open_store(create=True, collection=name)
        store.ensure_collection(name)
        self._check_model(store, name)
        report = IndexReport(collection=name)
        started = time.perf_counter()
        with store.writer_lock(name), store.bulk_load(name):
            yield store, report
            if embed:
                self._embed_missing(store, name, report, progress)
            store.mark_indexed(name)
            stage = getattr(progress, "stage", None)  # optional: a progress that names the last step
            if stage is not None:
                stage("building the side indexes")
            store.sync_search_indexes(name)  # the side indexes now, not at the first search
        report.duration_s = time.perf_counter() - started

    def add_documents(
        self,
        documents: Iterable[LoadedDocument],
        collection: str | None = None,
        chunker: str = ChunkerName.AUTO,
        embed: bool = True,
        progress: IndexProgress | None = None,
    ) -> IndexReport:
        """Index in-memory documents (records, corpora); ``source`` is their identity for re-indexing."""
        name = collection or self.config.collection
        progress = progress or NoProgress()
        with self._indexing(name, embed, progress) as (store, report):

            def with_text() -> Iterator[LoadedDocument]:
                for document in documents:
                    report.files_seen += 1
                    if document.text.strip():
                        yield document
                    else:
                        report.skipped.append(SkippedFile(document.source, "empty: document has no text"))

            ingest_documents(store, report, with_text(), name, chunker, False, None, progress.file_done)
        return report

    def update_paths(
        self,
        roots: Sequence[str | Path],
        changed: Sequence[str | Path],
        collection: str | None = None,
        embed: bool = True,
    ) -> IndexReport:
        """Re-read only ``changed`` paths (added, edited, deleted, renamed) under ``roots``: what a watcher calls.

        Unchanged content is skipped by hash; a deleted file or folder leaves search; paths outside the
        roots, ignored by .gitignore or always skipped (.git, node_modules …) are left alone.
        """
        name = collection or self.config.collection
        resolved_roots = [checked_path(r) for r in roots]
        with self._indexing(name, embed, NoProgress()) as (store, report):
            update_paths(
                store, report, resolved_roots, [Path(p) for p in changed], name, self.config.max_file_bytes
            )
        return report

    # Search -----------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        collection: str | None = None,
        limit: int = 10,
        mode: SearchMode | str = SearchMode.HYBRID,
        filters: Filters | None = None,
        min_score: float | None = None,
        explain: bool = False,
        baseline: str | None = None,
        as_of: str | None = None,
        fusion: str | None = None,
    ) -> SearchResult:
        """``baseline`` (id or name) or ``as_of`` (ISO time): search the collection as it was then.

        ``fusion`` (adaptive, zscore, rrf): how a hybrid search merges its arms, this once (default: the
        config's); the answer's ``fusion`` names the one used.
        """
        if fusion is not None and fusion not in FUSIONS:
            raise ConfigError(f"unknown fusion {fusion!r}; choose {', '.join(FUSIONS)}")
        with self.reading():
            if "," not in (wanted := self.searched(collection)):  # else several (engine/routes.py)
                return self._search(query, wanted, limit, mode, filters, min_score, explain, baseline, as_of,
                                    fusion)  # fmt: skip
        return self.search_collections(query, [c.strip() for c in wanted.split(",")], limit, mode=mode,
                                       filters=filters, min_score=min_score, explain=explain, baseline=baseline,
                                       as_of=as_of, fusion=fusion)  # fmt: skip

    @contextmanager
    def reading(self) -> Iterator[None]:
        """This thread's reads inside share one look at the index (``Store.reading``): a search's."""
        try:
            store: Store | None = self._open_store(create=False)
        except RetrievoError:
            store = None  # the reads inside say what is wrong
        with store.reading() if store is not None else nullcontext():
            yield

    def _search(
        self,
        query: str,
        collection: str | None,
        limit: int,
        mode: SearchMode | str,
        filters: Filters | None,
        min_score: float | None,
        explain: bool,
        baseline: str | None,
        as_of: str | None,
        fusion: str | None = None,
    ) -> SearchResult:
        store, name = self._collection_store(collection)
        filters = filters or Filters()
        point = resolve(store, name, baseline, as_of or filters.as_of)
        options = SearchOptions(
            mode=SearchMode(mode),
            limit=limit,
            filters=replace(filters, as_of=point.filter_as_of),
            min_score=min_score,
            explain=explain,
            k=self.config.rrf_k,
            fusion=fusion or self.config.fusion,
            reranker=self._reranker,
            rerank_depth=self.config.rerank_depth,
            reread_depth=self.config.reread_depth,
            threads=self.config.query_threads,
        )
        if self._rewriter is not None and options.mode == SearchMode.HYBRID:
            rewritten = self._rewriter.rewrite(query)
            options = replace(options, entities=rewritten.entities, expansions=rewritten.rephrasings)
        read = read_query(query)  # the query's one reading, handed to every arm, re-scorer and the answer
        embed_query, unavailable = self._query_fn(store, name)
        held = store.content_kinds().get(name, frozenset())
        wanted = [
            (r, reading) for r in self._rescorers if (reading := r.wants(read, filters, held)) is not None
        ]
        # Re-scorers (deepen: RESCORE_DEPTH) and the relevance on the final order (search/answer/) read the answer
        # unthresholded; limit and min_score apply after them (relevance falls: a prefix is kept).
        depth = RESCORE_DEPTH if any(reading.deepen for _, reading in wanted) else READ
        options = replace(options, limit=max(limit, depth), min_score=None)
        result = run_search(store, name, read, options, embed_query, unavailable)
        dense = not unavailable and options.mode != SearchMode.KEYWORD  # keyword asked: no vectors, anywhere
        scope = Scope(read, store, name, point.filter_as_of, embed_query if dense else None)
        for rescorer, reading in wanted:
            result = rescorer.rescore(scope, reading, result)
        result = cut(settle(result, read), limit, min_score)
        if point.filter_as_of is None:  # at HEAD: say how much of the collection the dense arm saw
            result = self._coverage.apply(store, name, result)
        return replace(result, baseline_id=point.baseline_id, as_of=point.as_of)

    def position(self) -> str | None:
        """How far the store's writes have reached (with read replicas: pass it back to read them)."""
        return self._open_store(create=False).position()

    def warm_up(self, collection: str | None = None) -> float:
        """Load the model that embeds ``collection``'s queries now; the milliseconds it took."""
        return self._warm_queries(collection).warm_up()

    # Reading: context, documents, similar chunks -----------------------------------------------

    def context(
        self,
        query: str,
        collection: str | None = None,
        max_tokens: int = 4000,
        neighbors: int = 1,
        filters: Filters | None = None,
        limit: int = 20,
        baseline: str | None = None,
        as_of: str | None = None,
    ) -> AssembledContext:
        """Hybrid search, then the best evidence packed under ``max_tokens`` with numbered citations."""
        if max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1, got {max_tokens}")
        if collection and "," in collection:
            raise ConfigError("context reads one collection; search several with search (collection 'a,b')")
        result = self.search(query, collection, limit, filters=filters, baseline=baseline, as_of=as_of)
        store, result = self.one_store(result, collection)  # engine/routes.py
        # Code answers follow seed 002's budget manager (CodeBudget.for_code: tokens kept free, a penalty
        # per repeated file, a floor); docs beside code take at most half of the rest, so a code question's
        # answer carries code.
        code = any(hit.chunk.kind == Kind.CODE for hit in result.hits)
        budget = CodeBudget.for_code(max_tokens) if code else None
        assembled = assemble(
            store, query, result.hits, result.search_mode, max_tokens, neighbors, self._tokens.count, budget
        )
        return replace(assembled, baseline_id=result.baseline_id, as_of=result.as_of)

    def record_context(
        self,
        query: str,
        collection: str | None = None,
        max_tokens: int = 4000,
        include_relationships: bool = True,
        filters: Filters | None = None,
        baseline: str | None = None,
        as_of: str | None = None,
    ) -> RecordContext:
        """The seed's getContext: the best model elements, then their one-hop neighbours, under the budget."""
        scoped = replace(filters or Filters(), kinds=(Kind.RECORD,))
        result = self.search(query, collection, 20, filters=scoped, baseline=baseline, as_of=as_of)
        store, name = self._collection_store(collection)
        return record_context(store, result, name, max_tokens, include_relationships, self._tokens.count)

    def document(
        self,
        document_id: str,
        revision_id: str | None = None,
        collections: Collection[str] | None = None,
        baseline: str | None = None,
        as_of: str | None = None,
    ) -> RevisionText:
        """A revision's text: by id, or the one valid at a baseline or ``as_of`` (the current one by default).

        ``collections`` (an allow-list) hides every document outside it.
        """
        store = self._store_of_document(document_id)
        revision = store.revision_text(document_id, revision_id)
        check_scope(revision.collection, collections, f"document {document_id!r}")
        point = resolve(store, revision.collection, baseline, as_of)
        if point.filter_as_of is not None and revision_id is None:
            at = store.revision_at(document_id, point.filter_as_of)
            if at is None:
                raise DocumentNotFound(f"document {document_id!r} did not exist at {point.as_of}")
            revision = store.revision_text(document_id, at)
        return replace(revision, baseline_id=point.baseline_id, as_of=point.as_of)

    def documents(
        self, collection: str | None = None, limit: int | None = None, offset: int = 0
    ) -> list[DocumentSummary]:
        """Current documents ordered by path: every one (read a page at a time), or ``limit`` from ``offset``."""
        if (limit is not None and limit < 1) or offset < 0:
            raise ConfigError("limit must be 1 or more and offset 0 or more")
        store = self._open_store(create=False, collection=collection)
        found: list[DocumentSummary] = []
        while limit is None or len(found) < limit:
            want = DOCUMENTS_PAGE if limit is None else min(DOCUMENTS_PAGE, limit - len(found))
            page = store.list_documents(collection, want, offset + len(found))
            found += page
            if len(page) < want:
                break
        return found

    def chunks(self, document_id: str) -> list[Chunk]:
        """A document's current chunks, in order (DocumentNotFound for an unknown id)."""
        store = self._store_of_document(document_id)
        store.revision_text(document_id)  # raises DocumentNotFound
        found = store.get_chunks(ids := store.current_chunk_ids(document_id))
        return [found[i] for i in ids if i in found]

    def delete_collection(self, collection: str) -> int:
        """Remove a collection with all its documents, history and baselines; returns how many documents."""
        store, name = self._collection_store(collection)
        with store.writer_lock(name):
            return store.delete_collection(name)

    def rename_collection(self, collection: str, new_name: str) -> None:
        """Rename a collection; document ids (and so citations) stay the same."""
        if not new_name.strip() or len(new_name) > 200:
            raise ConfigError(f"a collection name must be 1–200 characters, got {new_name!r}")
        store, name = self._collection_store(collection)
        with store.writer_lock(name):
            store.rename_collection(name, new_name.strip())

    def refresh(
        self, path: str | Path, collection: str | None = None, progress: IndexProgress | None = None
    ) -> IndexReport:
        """Re-index (incrementally) an indexed root, or a file or folder inside one — nothing else.

        A relative path is taken relative to the collection's roots, never the working directory.
        """
        name = collection or self.config.collection
        target = self.refresh_target(path, name)
        return self._index_paths(
            [target], name, ChunkerName.AUTO, (), (), True, False, progress, record_roots=False
        )

    def refresh_target(self, path: str | Path, name: str) -> Path:
        """The indexed path ``path`` names in collection ``name``; SourceError for anything else."""
        store = self._open_store(create=False, collection=name)
        if store.get_collection(name) is None:
            raise CollectionNotFound(
                f"collection {name!r} does not exist; run `retrievo index PATH --collection {name}` first"
            )
        target = resolve_inside_roots(path, [Path(r) for r in store.roots(name)])
        if target is None and Path(str(path)).is_absolute():
            # Indexes made before roots were recorded: an exactly indexed file may still be refreshed.
            exact = checked_path(path)
            target = exact if store.document_state(name, str(exact)) is not None else None
        if target is None:
            raise SourceError(
                f"{str(path)!r} is not inside a folder or file indexed in collection {name!r}; only indexed "
                f"paths can be refreshed (a person can add one with `retrievo index PATH --collection {name}`)"
            )
        return target

    def _collection_store(self, collection: str | None) -> tuple[Store, str]:
        name = collection or self.config.collection
        store = self._open_store(create=False, collection=name)
        if store.get_collection(name) is None:
            known = ", ".join(self.collections() or []) or "none yet"
            raise CollectionNotFound(
                f"collection {name!r} does not exist (collections: {known}); "
                f"index into it with `retrievo index PATH --collection {name}`"
            )
        return store, name
