"""Plain, frozen data: what flows between ingest, store, search and the surfaces.

This module imports nothing of retrievo's own, so every layer can depend on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

JSONDict = dict[str, Any]


class Kind(StrEnum):
    """What a document is; code and record kinds are filled by later loaders."""

    DOCUMENT = "document"
    CODE = "code"
    RECORD = "record"


class SearchMode(StrEnum):
    KEYWORD = "keyword"
    SEMANTIC = "semantic"
    HYBRID = "hybrid"


@dataclass(frozen=True)
class CodeSymbolRow:
    """One symbol of a code file, as the structure index keeps it (lines 1-based, columns 0-based)."""

    name: str
    qualified_name: str
    kind: str
    visibility: str
    signature: str
    docstring: str
    line_start: int
    line_end: int
    column_start: int
    column_end: int


@dataclass(frozen=True)
class CodeEdgeRow:
    """A dependency from a symbol (or the module) to a name: imports, calls, inherits, implements, uses.

    ``target`` is the text as written; ``target_name`` its last identifier, which resolves to symbols
    of the same name inside the collection at query time (so edges into a changed file stay right).
    """

    source: str
    kind: str
    target: str
    target_name: str
    line: int
    line_text: str
    column: int = 0  # 0-based character column of ``target_name`` on its line


@dataclass(frozen=True)
class CodeStructure:
    language: str
    is_test: bool
    symbols: tuple[CodeSymbolRow, ...] = ()
    edges: tuple[CodeEdgeRow, ...] = ()


@dataclass(frozen=True)
class LoadedDocument:
    """A source's whole text after loading, before chunking.

    ``sections`` are (start, end, heading_path) spans from the loader (Markdown/HTML headings,
    PDF pages) that a chunker must not cross.
    """

    source: str
    text: str
    title: str
    kind: Kind = Kind.DOCUMENT
    media_type: str = "text/plain"
    sections: tuple[Section, ...] = ()
    metadata: JSONDict = field(default_factory=dict)
    # Code files: symbols and edges for the structure index, written with the revision (atomically).
    structure: CodeStructure | None = None


@dataclass(frozen=True)
class Section:
    """A span of a document that chunks never cross, with the words that place it."""

    start: int
    end: int
    heading_path: tuple[str, ...] = ()
    page: int | None = None
    # Code symbols: the header that places the chunk (instead of title > headings), and its metadata.
    context: str | None = None
    metadata: JSONDict = field(default_factory=dict)


@dataclass(frozen=True)
class ChunkDraft:
    """A chunk as a chunker produces it: exact offsets into the document text."""

    text: str
    start: int
    end: int
    line_start: int
    line_end: int
    context: str
    chunker: str
    chunker_version: int
    chunk_hash: str
    metadata: JSONDict = field(default_factory=dict)


@dataclass(frozen=True)
class Chunk:
    """A stored chunk of one revision of one document."""

    chunk_id: int
    document_id: str
    revision_id: str
    collection: str
    ordinal: int
    text: str
    context: str
    start: int
    end: int
    line_start: int
    line_end: int
    chunk_hash: str
    source_hash: str
    chunker: str
    chunker_version: int
    metadata: JSONDict
    path: str
    title: str
    kind: Kind
    # Read with the chunk (``Store.get_chunks``): its text is no longer its revision's at its offsets, or
    # its source hash is not its revision's; served as ``damaged``.
    drifted: bool = False
    embed_key: str = ""  # what its vector is keyed by (``Store.get_chunks``): another text's key is ``stale``


class ArmHit(NamedTuple):
    """One arm's view of one chunk: its 1-based rank and raw score in that arm. A named tuple, not a
    dataclass: an arm makes up to its depth of them per search (100 by default), and a tuple is made
    in a quarter of the time."""

    chunk_id: int
    rank: int
    score: float


@dataclass(frozen=True)
class MatchedVia:
    """How a hit that is not a direct match was reached: ``relationship`` — from the element a relationship
    question names, along a relationship; ``relationship record`` — a hit on a relationship's own record,
    answered with the element at its other end. (A direct match has none; answers say ``direct``.)"""

    via: str
    relationship: str  # the ArchiMate relationship type, lower case (realization, serving, …)
    direction: str  # out: the named element is the relationship's source; in: its target
    from_element_id: str
    from_element_name: str
    path: str  # "Named —realization→ Answer" (a chain for impact questions)
    depth: int = 1


@dataclass(frozen=True)
class Hit:
    """A fused search result."""

    chunk: Chunk
    score: float
    relevance: float
    explain: dict[str, ArmHit] | None = None
    # fresh: its vector is for exactly this text; stale: its vector was made from other words (what
    # ``regenerate --stale`` re-embeds, ``verify``'s ``embed_key``); damaged: its text no longer matches its
    # hash or its revision (``verify``; re-read it with refresh); missing: no vector for the collection's
    # model (found by keywords only). None: no semantic arm.
    embedding_status: str | None = None
    matched_via: MatchedVia | None = (
        None  # set when a relationship question reached it (search/records/relations.py)
    )
    why: tuple[
        str, ...
    ] = ()  # a code question's file evidence: "file 1", "defines X", … (search/code/intent.py)
    # The model whose vector ranked it in the dense arm, where the answer read more than one (a collection
    # moving to another model: search/migrating.py); None otherwise (the answer's ``model_id``).
    model_id: str | None = None


@dataclass(frozen=True)
class AnswerSignals:
    """What the arms saw, for relevance on the final order (search/answer/answerability.py): the dense arm's best cosine
    (None: no dense arm) and the chunks the keyword arm listed."""

    top_cosine: float | None
    keyword_ids: frozenset[int]
    keyword_ran: bool
    # the share of the query's words no passage of the collection holds (read for one or two words that are
    # not a question, unquoted, at HEAD: ``search/hybrid.py``; 0 where not read)
    missing: float = 0.0


@dataclass(frozen=True)
class SearchResult:
    query: str
    search_mode: str
    search_duration_ms: float
    hits: tuple[Hit, ...]
    degraded_reason: str | None = None
    # What the answer was read from: a baseline (None at HEAD) and the effective point in time.
    baseline_id: str | None = None
    as_of: str | None = None
    fusion: str | None = (
        None  # the fusion that merged two arms (adaptive, zscore, rrf); None: one arm answered
    )
    fusion_weights: dict[str, float] | None = None  # with explain: each arm's weight for this query
    model_id: str | None = None  # the model whose vectors the dense arm read (None: no dense arm answered)
    # Every model whose vectors the dense arm read, where more than one did (a collection moving to
    # ``model_id``, whose scale the scores are on: search/migrating.py); empty otherwise.
    models: tuple[str, ...] = ()
    coverage: float | None = None  # share of the collection's chunks the semantic arm could see (1.0: all)
    # The estimated probability that the collection answers the query (search/answer/answerability.py); None: not read.
    answerability: float | None = None
    signals: AnswerSignals | None = field(default=None, repr=False, compare=False)  # the arms' readings


@dataclass(frozen=True)
class Filters:
    """Restrictions pushed into every search arm before its top-k is taken."""

    kinds: tuple[Kind, ...] = ()
    path_glob: str | None = None
    tags: tuple[str, ...] = ()
    metadata: tuple[tuple[str, str], ...] = ()
    date_from: str | None = None
    date_to: str | None = None
    document_ids: tuple[str, ...] = ()
    exclude_document_ids: tuple[str, ...] = ()
    strategy: str | None = None  # only chunks of this chunking strategy (a source may have several)
    # Point in time (an ISO timestamp from the index's clock): only chunks valid then; None is HEAD.
    as_of: str | None = None


@dataclass(frozen=True)
class RevisionText:
    """One revision of one document, whole: what citations point into."""

    document_id: str
    revision_id: str
    collection: str
    path: str
    title: str
    kind: Kind
    text: str
    created_at: str
    is_current: bool
    valid_to: str | None = None  # when a later revision or a deletion closed it (None: still valid)
    baseline_id: str | None = None  # the point in time it was read at (see SearchResult)
    as_of: str | None = None


@dataclass(frozen=True)
class DocumentSummary:
    document_id: str
    collection: str
    path: str
    title: str
    kind: Kind
    revision_id: str
    line_count: int | None = None  # lines of the current revision's text (seed 002's files.line_count)


@dataclass(frozen=True)
class SkippedFile:
    path: str
    reason: str


@dataclass
class IndexReport:
    """What one `index` run did; mutable because it is filled in as the run goes."""

    collection: str
    files_seen: int = 0
    documents_added: int = 0
    documents_changed: int = 0
    documents_unchanged: int = 0
    documents_removed: int = 0
    chunks_written: int = 0
    chunks_embedded: int = 0
    embeddings_reused: int = 0
    embeddings_missing: int = 0
    embed_error: str | None = None
    skipped: list[SkippedFile] = field(default_factory=list)
    notes: list[str] = field(
        default_factory=list
    )  # loaded, with something to say (a registry path claimed twice)
    duration_s: float = 0.0
    lsp_edges_asked: int | None = None  # index --lsp: edges a language server was asked about …
    lsp_edges_resolved: int | None = None  # … and resolved to a symbol of the index
    lsp_warning: str | None = None
    # A tier job's embedding shared by its servers: chunks each server embedded (empty: one process).
    embedded_by: dict[str, int] = field(default_factory=dict)

    def skipped_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.skipped:
            key = item.reason.split(":", 1)[0]
            counts[key] = counts.get(key, 0) + 1
        return counts


@dataclass
class RegenerateReport:
    """What one `regenerate` run did (a model migration when ``previous_model_id`` is set)."""

    collection: str
    model_id: str
    chunks_embedded: int = 0
    chunks_rekeyed: int = 0  # --stale: chunks whose key no longer matched their text
    previous_model_id: str | None = None  # --model: the model served before the switch …
    switched: bool = False  # … and whether the switch happened
    vectors_dropped: int = 0  # --drop-old: the previous model's vectors deleted
    embed_error: str | None = None
    duration_s: float = 0.0


@dataclass(frozen=True)
class CollectionStatus:
    name: str
    documents: int
    chunks: int
    embedded: int
    missing: int
    model_id: str | None
    dimensions: int | None
    last_indexed: str | None


@dataclass(frozen=True)
class IndexStatus:
    db: str
    size_bytes: int
    collections: tuple[CollectionStatus, ...]


@dataclass(frozen=True)
class Job:
    """One background job (see ``retrievo.store.jobs``): what runs, how far it got, how it ended."""

    job_id: str
    kind: str  # index | refresh | embed
    collection: str
    status: str  # queued | running | cancelling | done | failed | cancelled | interrupted
    done: int = 0
    total: int = 0
    parameters: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: str | None = None
    pid: int | None = None
    created_at: str = ""
    started_at: str | None = None
    finished_at: str | None = None
    heartbeat_at: str | None = None
    owner: str | None = None  # a server tier's job: "" while queued, then the server that took it (host:pid)
    attempts: int = 0  # how many times a server took it (more than one: taken over from a dead server)


@dataclass(frozen=True)
class ApiKey:
    """A key for ``retrievo serve``: what it may do (``scope``) and where (``collections``; empty: all).

    The secret is never part of it: it is shown once at creation and only its hash is stored.
    """

    key_id: str
    name: str
    scope: str  # read | write | admin
    collections: tuple[str, ...]
    created_at: str
    revoked_at: str | None = None
    expires_at: str | None = None  # refused from this time on (ISO, UTC); None: never


@dataclass(frozen=True)
class Baseline:
    """A named point in a collection's history: it pins the revisions current at ``as_of``."""

    baseline_id: str
    name: str
    collection: str
    as_of: str
    note: str = ""
    revisions: int = 0  # revisions it pins (documents that existed at ``as_of``)


@dataclass(frozen=True)
class Timeline:
    """A collection's clock: when it began, its latest change, and the oldest readable point."""

    created_at: str
    last_change_at: str | None
    history_from: str | None  # `retrievo prune --before` moved this forward; earlier points are gone


@dataclass(frozen=True)
class PruneReport:
    collection: str
    before: str
    revisions: int = 0
    chunks: int = 0
    vectors: int = 0
    documents: int = 0
    kept_for_baselines: int = 0  # superseded revisions old enough to go, held by a baseline
