"""Input and output models of the MCP tools: their JSON schemas are what agents read."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ReadContext(BaseModel):
    """Point-in-time read context (seed 000 §5.2): one of baseline_id or as_of; neither means HEAD."""

    model_config = ConfigDict(extra="forbid", strict=True)

    baseline_id: str | None = Field(
        None, max_length=200, description="Read the collection as pinned by this baseline (its id or name)."
    )
    as_of: str | None = Field(
        None,
        max_length=40,
        description="Read the collection as it was at this ISO time (UTC unless an offset is given).",
    )


class PointFields(BaseModel):
    """Which point in time an answer was read at: cite it to get the same evidence again."""

    baseline_id: str | None = Field(
        None, description="The baseline read (null at HEAD or for a plain as_of)."
    )
    as_of: str | None = Field(
        None, description="Effective point in time (UTC); at HEAD the collection's latest change."
    )


class SearchFilters(BaseModel):
    """Restrict results; every field is optional and all given fields must hold."""

    model_config = ConfigDict(extra="forbid", strict=True)

    collection: str | None = Field(
        None, max_length=200, description="Collection to search (default: the server's)."
    )
    kind: list[Literal["document", "code", "record"]] | None = Field(
        None, max_length=3, description="Document kinds."
    )
    path: str | None = Field(
        None,
        max_length=1000,
        description="Glob on the absolute file path; a relative glob like 'docs/*.md' matches at any depth.",
    )
    tags: list[str] | None = Field(None, max_length=20, description="Front-matter tags; all must be present.")
    strategy: Literal["sentence", "paragraph", "markdown", "code", "whole", "semantic"] | None = Field(
        None, description="Only chunks of this chunking strategy (when sources were chunked several ways)."
    )
    metadata: dict[str, str] | None = Field(
        None, description="Chunk or document metadata equality, e.g. {'page': '3'}."
    )
    layer: str | None = Field(
        None,
        max_length=40,
        description="Records: ArchiMate layer (strategy, business, application, technology, …).",
    )
    element_type: str | None = Field(
        None, max_length=100, description="Records: element type, e.g. BusinessProcess."
    )
    capability: str | None = Field(
        None, max_length=300, description="Records: the capability the element belongs to."
    )
    date_from: str | None = Field(None, max_length=40, description="ISO date: file modified on or after.")
    date_to: str | None = Field(None, max_length=40, description="ISO date: file modified on or before.")


class ArmScore(BaseModel):
    rank: int = Field(description="1-based rank in this arm.")
    score: float = Field(description="Raw arm score: BM25 for keyword, cosine for semantic.")


class SearchHit(BaseModel):
    chunk_id: int
    document_id: str
    collection: str
    uri: str = Field(description="Resource URI of the cited revision of the document.")
    path: str = Field(description="Absolute path of the source file.")
    title: str
    kind: str
    score: float = Field(
        description="The fused score the results are ordered by; comparable only within one answer. z-score "
        "fusion (default): the weighted mean of each arm's standardised score (weights per query, see "
        "fusion_weights); RRF: sum of weight/(60 + rank) over the arms."
    )
    relevance: float = Field(
        ge=0,
        le=1,
        description="Estimated probability that this hit is relevant, calibrated on judged data: of hits with "
        "relevance 0.7, about 7 in 10 are relevant. Comparable across queries; min_score filters on it.",
    )
    excerpt: str = Field(description="Part of the text around the match, matched words in **bold**.")
    text: str | None = Field(
        description="The chunk's exact text: document_text[start:end] (null with detail='brief')."
    )
    context: str = Field(description="Title and heading path that place the chunk.")
    start: int
    end: int
    line_start: int
    line_end: int
    revision_id: str = Field(description="The revision the chunk belongs to: cite it.")
    metadata: dict[str, Any]
    explain: dict[str, ArmScore] | None = None
    embedding_status: Literal["fresh", "stale", "missing"] | None = Field(
        default=None,
        description="fresh: its vector is for exactly this text; stale: the stored text no longer matches its "
        "hash (run `retrievo verify`); missing: no vector yet, found by keywords only. Null in keyword mode.",
    )


class SearchOutput(PointFields):
    query: str
    search_mode: str = Field(
        description="hybrid | keyword | semantic | lexical-only (embedder unavailable); hybrid-partial or "
        "semantic-partial when only part of the collection has vectors (see coverage)."
    )
    search_duration_ms: float
    total_results: int
    degraded_reason: str | None = None
    cut: str | None = Field(
        default=None, description="Said when results were left out to keep the answer small."
    )
    coverage: float | None = Field(
        default=None,
        description="Share of the collection's chunks that have vectors (1.0: all). Below 1 the semantic arm saw "
        "only part of the collection: search_mode ends in -partial and degraded_reason says what to run.",
    )
    fusion_weights: dict[str, float] | None = Field(
        default=None, description="With explain: each arm's weight in this query's fusion (keyword is 1)."
    )
    results: list[SearchHit]


class ContextSource(BaseModel):
    n: int = Field(description="The citation number used as [n] in the text.")
    chunk_ids: list[int]
    document_id: str
    uri: str
    path: str
    start: int
    end: int
    line_start: int
    line_end: int
    revision_id: str
    relevance: float


class ContextOutput(PointFields):
    query: str
    text: str = Field(description="Evidence blocks, each headed '[n] title — path:lines'.")
    tokens: int = Field(description="Tokens in text (bundled WordPiece tokenizer); never above max_tokens.")
    max_tokens: int
    search_mode: str
    sources: list[ContextSource]


class DocumentOutput(PointFields):
    document_id: str
    revision_id: str
    is_current: bool
    valid_from: str = Field(description="When this revision was indexed (UTC).")
    valid_to: str | None = Field(
        description="When a later revision or a deletion replaced it (null: current)."
    )
    collection: str
    uri: str
    path: str
    title: str
    kind: str
    total_chars: int
    total_lines: int
    start: int
    end: int
    line_start: int
    line_end: int
    text: str = Field(description="Exactly document_text[start:end] of this revision.")
    next_start: int | None = Field(description="Pass as 'start' to read the next page; null at the end.")


class CollectionOutput(BaseModel):
    name: str
    documents: int
    chunks: int
    embedded: int
    missing: int
    model_id: str | None
    dimensions: int | None
    last_indexed: str | None


class BaselineOut(BaseModel):
    baseline_id: str
    name: str
    collection: str
    as_of: str = Field(description="The point in time it pins (UTC).")
    note: str
    revisions: int = Field(description="Revisions it pins.")


class JobOut(BaseModel):
    job_id: str
    kind: str
    collection: str
    status: str = Field(description="queued | running | cancelling | done | failed | cancelled | interrupted")
    done: int = Field(description="Files read, then chunks embedded, so far.")
    total: int = Field(description="Chunks to embed once known (0 before).")
    error: str | None = None
    created_at: str
    finished_at: str | None = None


class StatusOutput(BaseModel):
    db: str
    size_bytes: int
    collections: list[CollectionOutput]
    baselines: list[BaselineOut] = Field(
        description="Named points in time to pass as read_context.baseline_id."
    )
    jobs: list[JobOut] = Field(
        default_factory=list, description="Background jobs still going, and the last few that ended."
    )


class RefreshOutput(BaseModel):
    collection: str
    job_id: str | None = Field(
        default=None, description="With background: the job doing the work (follow it in index_status)."
    )
    files_seen: int
    documents_added: int
    documents_changed: int
    documents_unchanged: int
    documents_removed: int
    chunks_written: int
    chunks_embedded: int
    embeddings_missing: int
    embed_error: str | None
    skipped: dict[str, int]
    duration_s: float


class SymbolOut(BaseModel):
    name: str
    qualified_name: str = Field(
        description="Module (file stem), enclosing classes, name: e.g. core.Command.main."
    )
    kind: str = Field(description="function, method, class, interface, struct, enum, type, namespace, impl.")
    visibility: str
    signature: str
    docstring: str = Field(description="First line of the docstring or of the comment above the symbol.")
    language: str
    is_test: bool
    document_id: str
    path: str
    line_start: int
    line_end: int
    column_start: int
    column_end: int
    citation: str = Field(description="path:line_start-line_end")


class FindSymbolOutput(BaseModel):
    pattern: str
    total: int
    symbols: list[SymbolOut]


class EdgeOut(BaseModel):
    source: str = Field(description="Qualified name of the symbol (or module) the edge starts from.")
    kind: str = Field(description="imports, calls, inherits, implements or uses.")
    target: str = Field(description="The target as written in the source.")
    resolved: list[str] = Field(description="Symbols of the index it resolves to (empty: outside the index).")
    path: str
    line: int
    line_text: str
    depth: int
    is_test: bool
    citation: str = Field(description="path:line")


class SymbolGraphOutput(BaseModel):
    symbol: SymbolOut
    direction: str = Field(description="dependencies (what it uses) or dependents (what uses it).")
    depth: int
    edges: list[EdgeOut]
    tests: list[EdgeOut] = Field(description="Test code that reaches the symbol, nearest first.")
    truncated: bool


class RecordFilters(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    layer: str | None = Field(
        None, max_length=40, description="strategy, business, application, technology, …"
    )
    element_type: str | None = Field(None, max_length=100, description="e.g. BusinessProcess.")
    capability: str | None = Field(None, max_length=300, description="The capability the element belongs to.")


class ElementResult(BaseModel):
    element_id: str = Field(description="The element's id exactly as the model file has it.")
    element_name: str
    element_type: str
    layer: str
    score: float = Field(description="Relevance in [0, 1].")
    context: str = Field(description="The contextual chunk that matched.")
    revision_id: str = Field(description="Revision of the element at query time.")
    baseline_id: str | None = Field(description="Baseline if queried against one (null at HEAD).")
    as_of: str | None = Field(description="Effective timestamp of the result (UTC).")
    document_id: str
    uri: str


class SemanticSearchOutput(BaseModel):
    query: str
    search_mode: str
    baseline_id: str | None = Field(None, description="The baseline read (null at HEAD).")
    as_of: str | None = Field(None, description="Effective point in time (UTC).")
    cut: str | None = Field(
        default=None, description="Said when results were left out to keep the answer small."
    )
    results: list[ElementResult]


class RecordSourceOut(BaseModel):
    n: int
    element_id: str
    element_name: str
    relevance: float
    revision_id: str
    expansion_of: int | None = Field(
        description="For one-hop expansions: the [n] of the element it neighbours."
    )


class GetContextOutput(BaseModel):
    query: str
    context: str = Field(
        description="Assembled context: blocks headed '[n] name (type, layer) — element id'."
    )
    tokens: int
    max_tokens: int
    search_mode: str
    baseline_id: str | None
    as_of: str | None
    sources: list[RecordSourceOut]


class MatchingTool(BaseModel):
    name: str
    description: str


class RegistryServerOut(BaseModel):
    name: str
    path: str
    description: str
    tags: list[str]
    is_enabled: bool | None = None
    relevance_score: float
    matching_tools: list[MatchingTool] = Field(
        description="This server's tools that mention a query keyword."
    )


class RegistryAgentOut(BaseModel):
    name: str
    path: str
    description: str
    tags: list[str]
    capabilities: list[str]
    skills: list[str | None]
    relevance_score: float


class RegistryToolOut(BaseModel):
    name: str
    description: str
    server_path: str
    server_name: str
    inputSchema: dict[str, Any] = Field(description="The tool's full input schema.")  # noqa: N815 - the MCP name
    relevance_score: float


class SearchRegistryOutput(PointFields):
    query: str
    search_mode: str = Field(description="hybrid, or lexical-only when the embedding model is unavailable.")
    profile: str
    degraded_reason: str | None
    servers: list[RegistryServerOut]
    agents: list[RegistryAgentOut]
    tools: list[RegistryToolOut]
