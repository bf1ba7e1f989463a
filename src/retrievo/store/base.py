"""The Store protocol: everything the engine needs from persistence, nothing more.

Contract (every implementation, checked by one behaviour suite):
- Every read and write names a collection; nothing crosses collections.
- ``write_revision`` is atomic: after a crash the document has its old revision or its new one.
- A new revision supersedes the old one's chunks (kept for point-in-time reads): HEAD searches see
  current chunks; a search with ``Filters.as_of`` sees exactly the chunks valid at that time.
- Change stamps are strictly increasing per collection; a baseline pins a stamp, never copies rows.
- Embeddings are keyed by (embed_key, model_id): identical text is embedded once per model.
- Search arms apply filters before taking their top ``limit`` and return 1-based ranks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from retrievo.models import (
    ApiKey,
    ArmHit,
    Baseline,
    Chunk,
    ChunkDraft,
    DocumentSummary,
    Filters,
    IndexStatus,
    Job,
    Kind,
    LoadedDocument,
    PruneReport,
    RevisionText,
    Timeline,
)
from retrievo.store.code_index import CodeIndex
from retrievo.store.transfer import Record

# A position a read must see (``Store.position()`` of an earlier write; read-your-writes with replicas),
# set for one request by the surface that received it (the ``X-Retrievo-After`` header).
read_after: ContextVar[str | None] = ContextVar("retrievo_read_after", default=None)


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    model_id: str | None
    dimensions: int | None
    shadow_model_id: str | None = None  # a model being migrated to (``retrievo regenerate --model``)
    shadow_dimensions: int | None = None


@dataclass(frozen=True)
class DocumentState:
    document_id: str
    source_hash: str
    revision_id: str
    file_hash: str | None = None  # SHA-256 of the file's bytes when its loader records it (PDFs)


@dataclass(frozen=True)
class NewRevision:
    """A document's next revision as the store writes it: its text's hash and its chunks."""

    document: LoadedDocument
    source_hash: str
    drafts: Sequence[ChunkDraft]
    modified_at: str | None = None


class Store(Protocol):
    path: str

    def position(self) -> str | None:
        """Where the store's writes have reached (PostgreSQL: the primary's WAL position); a read that
        passes it back in ``read_after`` sees them, replicas or not. None: every read sees every write."""
        return None

    def reading(self) -> AbstractContextManager[None]:
        """One search's reads on this thread: they may share one look at what has changed (a store that
        does so answers the collections' lookups from memory meanwhile); a commit on this thread ends
        the sharing. Results are the same with or without it."""
        ...

    def get_collection(self, name: str) -> CollectionInfo | None: ...

    def ensure_collection(self, name: str) -> CollectionInfo: ...

    def set_collection_model(self, name: str, model_id: str, dimensions: int) -> None: ...

    def delete_collection(self, name: str) -> int:
        """Remove a collection and everything in it (history, baselines, roots); returns its documents."""
        ...

    def rename_collection(self, name: str, new_name: str) -> None:
        """Document ids do not change, so citations taken before the rename stay valid."""
        ...

    def document_state(self, collection: str, source: str) -> DocumentState | None: ...

    def document_states(self, collection: str, sources: Sequence[str]) -> dict[str, DocumentState]:
        """``document_state`` of each source that has one, in one query (a bulk load's group)."""
        ...

    def write_revision(
        self,
        collection: str,
        document: LoadedDocument,
        source_hash: str,
        drafts: Sequence[ChunkDraft],
        modified_at: str | None,
    ) -> DocumentState: ...

    def write_revisions(self, collection: str, revisions: Sequence[NewRevision]) -> list[DocumentState]:
        """``write_revision`` for each, in order (a source given twice: the second supersedes the first),
        in one transaction: a bulk load's documents a batch at a time."""
        ...

    def sources_under(self, collection: str, prefix: str) -> list[str]:
        """Current sources equal to ``prefix``, inside it as a folder (``prefix/…``) or in it as a model
        file (``prefix#element``)."""
        ...

    def sources_containing(self, collection: str, words: Sequence[str], limit: int) -> list[tuple[str, str]]:
        """(source, document id) of up to ``limit`` current whole documents (no ``#``: not a model's element,
        not a server's tool) whose source holds one of ``words`` (any case), by source: a registry server or
        agent found by its path, which neither arm indexes."""
        ...

    def remove_sources(self, collection: str, sources: Sequence[str]) -> int: ...

    def add_root(self, collection: str, path: str) -> None:
        """Record a folder or file the user chose to index (idempotent)."""
        ...

    def code_index(self) -> CodeIndex:
        """Reads of the code structure index (symbols, edges), written by ``write_revision``."""
        ...

    def resolve_code_edges(self, resolutions: Sequence[tuple[int, str]]) -> None:
        """Record (edge id, qualified name) answers of a language server; they win over name matching."""
        ...

    def filter_chunk_ids(self, collection: str, chunk_ids: Sequence[int], filters: Filters) -> set[int]:
        """Which of these current chunks of the collection pass ``filters``."""
        ...

    def list_records(self, collection: str) -> list[tuple[str, str, str, dict[str, object]]]:
        """Every current record (model element): (document id, source, title, metadata)."""
        ...

    def roots(self, collection: str) -> list[str]:
        """The recorded roots of a collection: the only paths a refresh may re-read."""
        ...

    # Point in time (``retrievo.store.history``): a ``Filters.as_of`` given to the search arms and to
    # ``filter_chunk_ids`` reads the chunks valid then instead of the current ones.

    def timeline(self, collection: str) -> Timeline: ...

    def create_baseline(self, collection: str, name: str, note: str = "") -> Baseline:
        """Pin the collection's current revisions under a name: one row, stamped by the store's clock."""
        ...

    def baselines(
        self, collection: str | None = None, name_or_id: str | None = None, counted: bool = True
    ) -> list[Baseline]:
        """Oldest first; ``counted=False`` leaves ``revisions`` at 0 (no scan: what a query's lookup needs)."""
        ...

    def delete_baseline(self, baseline_id: str) -> None: ...

    def revision_at(self, document_id: str, point: str) -> str | None:
        """The document's revision valid at ``point`` (None: it did not exist then)."""
        ...

    def prune(self, collection: str, before: str) -> PruneReport:
        """Delete superseded revisions closed by ``before`` that no baseline holds (chunks, vectors too)."""
        ...

    # Embeddings and their lifecycle (``retrievo.store.embeddings``) ---------------------------------

    def missing_embeddings(self, collection: str, model_id: str) -> list[tuple[str, str]]: ...

    def embedding_work(
        self,
        collection: str,
        model_id: str,
        only_missing: bool = False,
        kinds: Sequence[Kind | str] = (),
        limit: int | None = None,
        offset: int = 0,
        history: bool = False,
    ) -> list[tuple[str, str]]:
        """(embed_key, model input) of the collection's chunks, each key once, ordered by key."""
        ...

    def embedding_work_pages(
        self,
        collection: str,
        model_id: str,
        only_missing: bool = False,
        kinds: Sequence[Kind | str] = (),
        limit: int | None = None,
        offset: int = 0,
        history: bool = False,
        page: int = 1024,
        after_key: str | None = None,
    ) -> Iterator[list[tuple[str, str]]]:
        """``embedding_work`` a page at a time (memory stays flat however large the collection)."""
        ...

    def count_embedding_work(
        self,
        collection: str,
        model_id: str,
        only_missing: bool = False,
        kinds: Sequence[Kind | str] = (),
        limit: int | None = None,
        offset: int = 0,
        history: bool = False,
        after_key: str | None = None,
    ) -> int:
        """How many inputs ``embedding_work_pages`` would give."""
        ...

    def put_embeddings(
        self, model_id: str, keys: Sequence[str], vectors: npt.NDArray[np.float32], replace: bool = False
    ) -> None:
        """Store vectors; ``replace`` overwrites vectors already stored for those keys."""
        ...

    def stale_chunks(self, collection: str) -> list[tuple[int, str]]:
        """Current chunks whose embed_key is not the hash of their text: (chunk id, the right key)."""
        ...

    def rekey_chunks(self, pairs: Sequence[tuple[int, str]]) -> None: ...

    def set_shadow_model(self, name: str, model_id: str | None, dimensions: int | None) -> None:
        """Record (or clear, with None) the model a collection is migrating to."""
        ...

    def shadow_missing(self, collection: str, model_id: str) -> int: ...

    def switch_model(self, name: str) -> CollectionInfo:
        """Atomically serve the shadow model; ConfigError while any chunk lacks its vector."""
        ...

    def drop_model_vectors(self, model_id: str) -> int:
        """Delete a model's vectors unless a collection serves it or migrates to it; how many went."""
        ...

    def side_index_problems(self, collection: str) -> list[str]:
        """Where the store's vector side index disagrees with the embeddings table (empty: agrees)."""
        ...

    def rebuild_side_index(self, collection: str) -> None: ...

    def warm_side_index(self, collection: str, model_id: str) -> None:
        """Prepare a model's vector side index ahead of a switch (where the store keeps one per model)."""
        ...

    def sync_search_indexes(self, collection: str) -> None:
        """Bring the indexes kept beside the store's tables in step now (at the end of indexing), so that
        no search pays for it; nothing where the store keeps none."""
        ...

    def keyword_search(self, collection: str, query: str, filters: Filters, limit: int) -> list[ArmHit]: ...

    def vector_search(
        self, collection: str, model_id: str, vector: npt.NDArray[np.float32], filters: Filters, limit: int
    ) -> list[ArmHit]:
        """The chunks nearest ``vector`` among those with a ``model_id`` vector: the served model's, or
        another's (a model the collection is moving to, read exactly where no side index keeps it)."""
        ...

    # The most current chunks of a collection for which ``vector_search`` reads a model other than the
    # served one (None: any number); above, it returns nothing for that model.
    unserved_search_max: int | None

    def chunks_with_vector(self, chunk_ids: Sequence[int], model_id: str) -> frozenset[int]:
        """Those of ``chunk_ids`` that have a ``model_id`` vector."""
        ...

    def get_chunks(self, chunk_ids: Sequence[int]) -> dict[int, Chunk]: ...

    def chunks_holding(
        self, collection: str, words: Sequence[str], filters: Filters, limit: int
    ) -> list[int]:
        """Up to ``limit`` current chunks (any order) whose keyword text holds every one of ``words``, each
        matched as the keyword arm indexes it (stemmed). Nothing at a point in time. (``held_words`` on
        SQLite and the battery's unanswerable queries read it.)"""
        ...

    def held_words(self, collection: str, words: Sequence[str]) -> frozenset[str]:
        """Those of ``words`` (as typed) that some current chunk of the collection holds, each matched as
        the keyword arm indexes it (stemmed, any case): what a query asks that the collection lacks."""
        ...

    def chunks_with_phrase(self, collection: str, phrase: str, filters: Filters, limit: int) -> list[int]:
        """Up to ``limit`` current chunks (any order) holding ``phrase``'s words in a run within one of the
        columns keyword search reads (context, text, the identifiers' words), by word position, each word
        matched as the keyword arm indexes it (stemmed, any case): FTS5's phrase query on SQLite; on
        PostgreSQL the chunks holding its rarest stems, their tokens' positions checked (at most 2,000
        read). Nothing at a point in time."""
        ...

    def mark_indexed(self, collection: str) -> None: ...

    def writer_lock(self, collection: str) -> AbstractContextManager[None]:
        """Held while indexing: a second writer of the same collection gets IndexLockedError at once."""
        ...

    def bulk_load(self, collection: str) -> AbstractContextManager[None]:
        """Around a large load: the store may build its vector index once at the end, not row by row."""
        ...

    def list_collections(self) -> list[str]: ...

    def revision_text(self, document_id: str, revision_id: str | None = None) -> RevisionText: ...

    def chunk_ids_of_revision(self, revision_id: str, chunker: str | None = None) -> list[int]:
        """In order; with ``chunker``, only that strategy's chunks (a source may be chunked several ways)."""
        ...

    def current_chunk_ids(self, document_id: str) -> list[int]: ...

    def chunk_vectors(
        self, chunk_ids: Sequence[int], model_id: str, dimensions: int
    ) -> dict[int, npt.NDArray[np.float32]]:
        """Each chunk's stored vector of ``model_id``, by chunk id, read in one query; a chunk with none
        (not embedded by that model yet, or no such chunk) is left out."""
        ...

    def list_documents(
        self, collection: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[DocumentSummary]:
        """Current documents ordered by path (then id), ``limit`` of them from ``offset``."""
        ...

    def dump(self, collection: str) -> Iterator[Record]:
        """Every row of a collection in a store-neutral shape (see ``retrievo.store.transfer``)."""
        ...

    def restore(self, records: Iterable[Record]) -> None:
        """Write a dumped collection, ids kept, in one transaction."""
        ...

    def coverage(self, collection: str) -> tuple[int, int]:
        """(current chunks, those with a vector for the collection's model); (0, 0) for no collection."""
        ...

    def status(self) -> IndexStatus: ...

    def revision_times(self, revision_ids: Sequence[str]) -> dict[str, str]:
        """When each revision was written (UTC ISO), in one query; unknown ids are absent."""
        ...

    def content_kinds(self, fresh: bool = False) -> dict[str, frozenset[str]]:
        """Each collection's kinds of content now: "document", "code", "record" (typed models) and
        "registry" (registry entries); collections without documents are absent. ``fresh``: read now,
        never remembered (a store may remember it briefly)."""
        ...

    # API keys for ``retrievo serve`` (``retrievo.store.keys``) --------------------------------------

    def save_key(self, key: ApiKey, secret_hash: str) -> None:
        """A new key; ConfigError when an active key already has its name."""
        ...

    def api_keys(self, include_revoked: bool = False) -> list[ApiKey]: ...

    def key_secret(self, key_id: str) -> tuple[ApiKey, str] | None: ...

    def revoke_key(self, key_id_or_name: str, at: str) -> ApiKey: ...

    def record_usage(self, server: str, second: int, used: dict[str, int]) -> None:
        """A server's requests per API key in one second (a rate limit shared by servers)."""
        ...

    def usage_since(self, second: int, excluding: str) -> dict[str, int]:
        """Requests per API key since ``second`` through the other servers."""
        ...

    # Background jobs (``retrievo.store.jobs``) -----------------------------------------------------

    def save_job(self, job: Job) -> None: ...

    def update_job(self, job_id: str, only_if: Sequence[str] = (), **fields: Any) -> bool:
        """Set fields; with ``only_if``, only while the status is one of those. True when a row changed."""
        ...

    def claim_job(self, owner: str, at: str, stale_before: str) -> Job | None:
        """Take one server-tier job for ``owner``: the oldest queued, or one whose owner stopped beating
        before ``stale_before``; each job to exactly one caller (``retrievo.store.jobs``)."""
        ...

    def take_lease(self, lease_id: str, owner: str, at: str, stale_before: str) -> bool:
        """Hold a lease row (``retrievo.store.jobs``) unless another live holder beats it."""
        ...

    def get_job(self, job_id: str) -> Job | None: ...

    def list_jobs(self, limit: int = 50) -> list[Job]: ...

    def close(self) -> None: ...


class SharesEmbedding(Protocol):
    """A store whose servers share one job's embedding (PostgreSQL: ``store.postgres.shared_embedding``);
    a store has it when its ``shares_embedding`` is true."""

    shares_embedding: bool

    def plan_embed_batches(self, job_id: str, collection: str, model_id: str, size: int) -> int:
        """Plan what lacks a vector as the job's batches of ``size`` keys; how many chunks."""
        ...

    def work_embed_batch(
        self,
        owner: str,
        embed: Callable[[str, list[str]], npt.NDArray[np.float32]],
        job_id: str | None = None,
    ) -> tuple[str, int] | None:
        """Claim one open batch, embed, write and close it in one transaction; None when none is free."""
        ...

    def embed_batches_progress(self, job_id: str) -> tuple[int, int, int]:
        """(chunks planned, chunks embedded, batches open) of a job."""
        ...

    def embed_batches_done_by(self, job_id: str) -> dict[str, int]: ...

    def drop_embed_batches(self, job_id: str) -> None: ...
