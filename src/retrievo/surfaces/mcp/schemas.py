"""Input and output models of the MCP tools: their JSON schemas are what agents read."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ReadContext(BaseModel):
    # No docstring: it would be the schema's description in every tool that takes it (tools/list bytes).
    model_config = ConfigDict(extra="forbid", strict=True)

    baseline_id: str | None = Field(None, max_length=200)
    as_of: str | None = Field(None, max_length=40)


NULL_KEPT = "x-null-kept"  # an answer field sent as null rather than left out (wire.kept_nulls)


def cited_baseline() -> Any:
    """Seed 000's ``baseline_id`` citation: always in the answer, null at HEAD."""
    return Field(None, description="The baseline read (null at HEAD).", json_schema_extra={NULL_KEPT: True})


class PointFields(BaseModel):
    """Which point in time an answer was read at: cite it to get the same evidence again."""

    baseline_id: str | None = None
    as_of: str | None = None


KindName = Literal["document", "code", "record"]


class SearchFilters(BaseModel):
    # All given fields must hold. (No docstring: it would be repeated in every tool's schema.)
    model_config = ConfigDict(extra="forbid", strict=True)

    collection: str | None = Field(None, max_length=200)
    kind: list[KindName] | None = Field(None, max_length=3)
    path: str | None = Field(None, max_length=1000, description="Glob, e.g. docs/*.md")
    tags: list[str] | None = Field(None, max_length=20)
    metadata: dict[str, str] | None = Field(None, description="e.g. {layer: business}")
    date_from: str | None = Field(None, max_length=40, description="ISO date")
    date_to: str | None = Field(None, max_length=40)


class ArmScore(BaseModel):
    rank: int = Field(description="1-based rank in this arm.")
    score: float = Field(description="Raw arm score: BM25 for keyword, cosine for semantic.")


class SearchHit(BaseModel):
    """One passage. Brief: ``excerpt`` and the citation; full: the exact ``text`` and where it lies."""

    uri: str = Field(description="The cited revision; get_document(uri=...) reads it.")
    collection: str
    path: str
    line_start: int
    line_end: int
    context: str = Field(description="Title and heading path.")
    score: float = Field(description="What results are ordered by (the keyword score when lexical-only).")
    relevance: float = Field(ge=0, le=1, description="Its own probability; falls down the list.")
    excerpt: str | None = None
    chunk_id: int | None = None
    chunk_index: int | None = None
    chunk_strategy: str | None = None
    text: str | None = Field(None, description="Exactly document_text[start:end].")
    start: int | None = None
    end: int | None = None
    kind: str | None = None
    title: str | None = None  # full: a code hit's symbol · kind · language (brief: in context)
    metadata: dict[str, Any] | None = None
    explain: dict[str, ArmScore] | None = None
    embedding_status: Literal["fresh", "stale", "damaged", "missing"] | None = None
    matched_via: dict[str, Any] | None = None  # records: direct, or the relationship that reached it
    also: list[str] | None = None  # group_by file: the file's other passages


class SearchOutput(PointFields):
    query: str
    search_mode: str
    search_duration_ms: float
    total_results: int
    degraded_reason: str | None = None
    cut: str | None = None
    coverage: float | None = None
    fusion: str | None = None
    fusion_weights: dict[str, float] | None = None
    answerability: float | None = None  # how likely the collection answers at all (< 0.4: no answer)
    roots: list[str] | None = None  # what was indexed: paths are shown relative to these
    results: list[SearchHit]


class ContextSource(BaseModel):
    n: int = Field(description="The citation number used as [n] in the text.")
    chunk_ids: list[int]
    uri: str
    path: str
    start: int
    end: int
    line_start: int
    line_end: int
    relevance: float
    kind: str
    chunk_type: str = Field(description="symbol, code, documentation or record")
    token_count: int


class ContextOutput(PointFields):
    query: str
    text: str = Field(description="Evidence blocks, each headed '[n] title — path:lines'.")
    tokens: int = Field(description="Tokens in text (bundled WordPiece tokenizer); never above max_tokens.")
    max_tokens: int
    search_mode: str
    sources: list[ContextSource]


class DocumentOutput(PointFields):
    uri: str = Field(description="retrievo://document/ID/revision/REV")
    is_current: bool
    valid_from: str = Field(description="When this revision was indexed (UTC).")
    valid_to: str | None = Field(
        description="When a later revision or a deletion replaced it (null: current)."
    )
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
    path: str
    line_start: int
    line_end: int


class FindSymbolOutput(BaseModel):
    pattern: str
    total: int
    symbols: list[SymbolOut]
    baseline_id: str | None = cited_baseline()


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


class SymbolGraphOutput(BaseModel):
    symbol: SymbolOut
    direction: str = Field(description="dependencies (what it uses) or dependents (what uses it).")
    depth: int
    edges: list[EdgeOut]
    tests: list[EdgeOut] = Field(description="Test code that reaches the symbol, nearest first.")
    total_edges: int
    total_tests: int
    truncated: bool = Field(description="More edges or tests than listed: raise limit or narrow the symbol.")
    baseline_id: str | None = cited_baseline()


class LocatedFile(BaseModel):
    path: str  # relative to roots
    score: float = Field(description="0-1 on every query: its evidence over the most a file can show.")
    role: str = Field(description="source, test, docs, changelog or other.")
    why: list[str] = Field(description="The evidence: words, symbols it defines, traceback frames.")
    symbols: list[str] = Field(description="Its best passages: symbol (or 'passage') and lines.")
    uri: str


class LocateOutput(BaseModel):
    files: list[LocatedFile]
    roots: list[str] | None = None  # what was indexed: paths are shown relative to these
    baseline_id: str | None = cited_baseline()


class RecordFilters(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    layer: str | None = Field(None, max_length=40, description="e.g. business")
    element_type: str | None = Field(None, max_length=100, description="e.g. BusinessProcess")
    capability: str | None = Field(None, max_length=300)


class ElementResult(BaseModel):
    element_id: str = Field(description="The element's id exactly as the model file has it.")
    element_name: str
    element_type: str
    layer: str
    score: float = Field(
        description="The relevance on the final order (0-1, never rising down the list): what min_score keeps."
    )
    relevance: float = Field(description="Calibrated probability of being relevant.")
    context: str = Field(description="The contextual chunk that matched.")
    revision_id: str = Field(description="Revision of the element at query time.")
    baseline_id: str | None = cited_baseline()
    as_of: str | None = Field(description="Effective timestamp of the result (UTC).")
    document_id: str
    collection: str
    uri: str
    matched_via: dict[str, Any] | None = Field(
        None,
        description="via: direct, relationship (from the element named; type, direction, path) or relationship record.",
    )


class SemanticSearchOutput(BaseModel):
    query: str
    search_mode: str
    baseline_id: str | None = cited_baseline()
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
    baseline_id: str | None = cited_baseline()
    as_of: str | None
    sources: list[RecordSourceOut]


class MatchingTool(BaseModel):
    tool_name: str
    description: str


class RegistryServerOut(BaseModel):
    server_name: str
    path: str
    description: str
    tags: list[str]
    is_enabled: bool | None = None
    relevance_score: float
    matching_tools: list[MatchingTool] = Field(
        description="This server's tools that mention a query keyword."
    )
    also_at: list[str] | None = Field(None, description="Its other paths (one entry per server).")


class RegistryAgentOut(BaseModel):
    name: str
    path: str
    description: str
    tags: list[str]
    capabilities: list[str]
    skills: list[str]
    relevance_score: float
    also_at: list[str] | None = None


class RegistryToolOut(BaseModel):
    tool_name: str
    description: str
    server_path: str
    server_name: str
    inputSchema: dict[str, Any] = Field(description="The tool's full input schema.")  # noqa: N815 - the MCP name
    relevance_score: float


class SearchRegistryOutput(PointFields):
    query: str
    search_mode: str = Field(description="hybrid, or lexical-only when the embedding model is unavailable.")
    profile: str
    degraded_reason: str | None = None
    servers: list[RegistryServerOut]
    agents: list[RegistryAgentOut]
    tools: list[RegistryToolOut]


class LibraryDocument(BaseModel):
    """One document of seed 003's library search: its best passage as the excerpt."""

    document_id: str
    filename: str
    source_path: str = Field(description="The indexed file.")
    path: str
    markdown_path: str | None = Field(
        None, description="The file itself when it is Markdown; other formats' text: read uri."
    )
    uri: str
    collection: str
    page_count: int | None = Field(None, description="PDFs: pages in the file.")
    processed_at: str = Field(description="When indexed (UTC); date_from/date_to compare against it.")
    similarity_score: float = Field(ge=0, le=1)
    excerpt: str
    tags: list[str] | None = None


class LibraryOutput(PointFields):
    query: str
    total_results: int = Field(description="Every document above min_similarity, not only this page.")
    search_duration_ms: float
    search_mode: str
    degraded_reason: str | None = None
    next_cursor: str | None = Field(None, description="Pass as cursor for the next page.")
    results: list[LibraryDocument]
