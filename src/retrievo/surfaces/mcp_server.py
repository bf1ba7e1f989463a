"""The MCP server (official ``mcp`` SDK v2): tools for search, context, documents, similar chunks.

Nothing but protocol goes to stdout; logs go to stderr. The engine opens the index and loads the
model lazily, on the first tool call that needs them, so start-up is fast.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib.metadata import version
from typing import Annotated, Any, Literal

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import Field

from retrievo.engine import Engine
from retrievo.errors import ConfigError, RetrievoError
from retrievo.jobs import recent_jobs, submit_refresh
from retrievo.models import Filters, SearchResult
from retrievo.search.highlight import highlight
from retrievo.secrets import redact
from retrievo.surfaces.filters import filters_from_mapping
from retrievo.surfaces.mcp_calls import call, search_call
from retrievo.surfaces.mcp_schemas import (
    BaselineOut,
    ContextOutput,
    ContextSource,
    DocumentOutput,
    JobOut,
    ReadContext,
    RefreshOutput,
    SearchFilters,
    SearchHit,
    SearchOutput,
    StatusOutput,
)
from retrievo.surfaces.mcp_wire import RetrievoMCPServer
from retrievo.surfaces.serialize import hit_to_dict, report_to_dict, status_to_dict

log = logging.getLogger("retrievo.mcp")
MAX_QUERY = 10_000
INSTRUCTIONS = (
    "retrievo searches the user's indexed documents. Use `search` to find passages (cite path and lines), "
    "`get_context` for answer-ready evidence under a token budget with numbered citations, `get_document` "
    "to read the exact cited span, `find_similar` for related passages elsewhere. For code: `find_symbol` "
    "looks up functions and classes by name, `symbol_graph` follows calls, imports and inheritance and "
    "names the tests that reach a symbol."
)


def document_uri(document_id: str, revision_id: str | None = None) -> str:
    base = f"retrievo://document/{document_id}"
    return f"{base}/revision/{revision_id}" if revision_id else base


class NotServed(ToolError):
    """A collection outside what this server (or the caller's key) may reach; says nothing of it."""


class NoSuchCollection(ToolError):
    """A collection this server may serve but which does not exist (yet)."""


@dataclass(frozen=True)
class Scope:
    """The collections one server may read and refresh: all (None) or an allow-list."""

    default: str
    allowed: frozenset[str] | None = None
    existing: Callable[[], list[str] | None] | None = None  # the index's collections (None: unreadable)

    def check(self, collection: str | None) -> str:
        name = collection or self.default
        if self.allowed is not None and name not in self.allowed:
            raise NotServed(
                f"collection {name!r} is not served here; this server serves: {', '.join(sorted(self.allowed))}"
            )
        existing = self.existing() if self.existing is not None else None
        if existing is not None and name not in existing:
            # Only what this server serves is named: a restricted server reveals no other collection.
            visible = [c for c in existing if self.allowed is None or c in self.allowed]
            raise NoSuchCollection(
                f"collection {name!r} does not exist; collections here: {', '.join(visible) or 'none yet'} "
                f"(a person can make it with `retrievo index PATH --collection {name}`)"
            )
        return name

    def filters(self, raw: SearchFilters | None) -> tuple[str, Filters]:
        if raw is None:
            return self.check(None), Filters()
        data = raw.model_dump(exclude_none=True)
        collection = self.check(data.pop("collection", None))
        try:
            return collection, filters_from_mapping(data)
        except ConfigError as exc:
            raise ToolError(str(exc)) from exc


def _search_output(result: SearchResult, query_for_highlight: str, detail: str = "full") -> SearchOutput:
    hits = []
    for hit in result.hits:
        data = hit_to_dict(hit)
        data.pop("chunk_hash"), data.pop("source_hash")
        if detail == "brief":  # the excerpt and the citation; the text is one get_document away
            data["text"], data["metadata"] = None, {}
        data["uri"] = document_uri(hit.chunk.document_id, hit.chunk.revision_id)
        data["excerpt"] = highlight(hit.chunk.text, query_for_highlight)
        hits.append(SearchHit.model_validate(data))
    return SearchOutput(
        query=result.query, search_mode=result.search_mode, search_duration_ms=result.search_duration_ms,
        total_results=len(hits), degraded_reason=result.degraded_reason, results=hits,
        baseline_id=result.baseline_id, as_of=result.as_of, fusion_weights=result.fusion_weights,
        coverage=result.coverage,
    )  # fmt: skip


def point_of(read_context: ReadContext | None) -> dict[str, str | None]:
    """A tool's read_context as the engine's ``baseline``/``as_of`` keywords."""
    if read_context is None:
        return {"baseline": None, "as_of": None}
    return {"baseline": read_context.baseline_id, "as_of": read_context.as_of}


def _query(query: str) -> str:
    if not query.strip():
        raise ToolError("query is empty; pass the words or question to search for")
    return query


Query = Annotated[
    str, Field(min_length=1, max_length=MAX_QUERY, description="Words or a natural-language question.")
]
Limit = Annotated[int, Field(strict=True, ge=1, le=50, description="How many results (1-50).")]
# Ids are SQLite/PostgreSQL 64-bit integers: anything larger cannot name a chunk.
MAX_ID = 2**63 - 1
Detail = Annotated[
    Literal["full", "brief"],
    Field(
        description="full: each hit's exact text and metadata; brief: excerpt and citation only (smaller)."
    ),
]
Mode = Annotated[
    Literal["hybrid", "keyword", "semantic"],
    Field(description="hybrid (BM25 + vectors, default), keyword (BM25 only) or semantic (vectors only)."),
]


def build_server(
    engine: Engine, collections: Sequence[str] | None = None, allow_refresh: bool = True
) -> MCPServer:
    """``collections``: the only ones any tool or resource may touch (default: all).

    ``allow_refresh=False`` leaves the ``refresh_index`` tool out entirely.
    """
    server = RetrievoMCPServer(
        name="retrievo", version=version("retrievo"), instructions=INSTRUCTIONS, log_level="WARNING"
    )
    allowed = frozenset(collections) if collections else None
    default = engine.config.collection
    if allowed is not None and default not in allowed:
        default = sorted(allowed)[0]

    def existing() -> list[str] | None:
        try:
            return engine._open_store(create=False).list_collections()
        except RetrievoError:
            return None  # the tool itself will say what is wrong with the index

    scope = Scope(default, allowed, existing)

    @server.tool(
        description="Find passages by meaning and keyword; returns ranked chunks with exact citations."
    )
    async def search(
        query: Query,
        limit: Limit = 10,
        mode: Mode = "hybrid",
        min_score: Annotated[
            float | None,
            Field(
                strict=True,
                ge=0,
                le=1,
                description="Drop hits whose relevance (estimated probability of being relevant) is below this.",
            ),
        ] = None,
        filters: SearchFilters | None = None,
        explain: Annotated[
            bool, Field(strict=True, description="Include each arm's rank and raw score.")
        ] = False,
        read_context: ReadContext | None = None,
        detail: Detail = "full",
    ) -> SearchOutput:
        def answer() -> SearchOutput:
            # In a worker thread, the scope's lookups and the excerpts too (the event loop stays free),
            # all on one look at the index (``Engine.reading``).
            with engine.reading():
                collection, parsed = scope.filters(filters)
                text = _query(query)
                result = engine.search(
                    text, collection=collection, limit=limit, mode=mode, filters=parsed,
                    min_score=min_score, explain=explain, **point_of(read_context),
                )  # fmt: skip
            return _search_output(result, query, detail)

        return await search_call(answer)

    @server.tool(
        description="Answer-ready evidence for a question: best passages with neighbours, merged, packed under "
        "max_tokens (never over), with numbered citations [n] and their sources."
    )
    async def get_context(
        query: Query,
        max_tokens: Annotated[
            int, Field(strict=True, ge=50, le=100_000, description="Token budget for the text.")
        ] = 4000,
        neighbors: Annotated[
            int, Field(strict=True, ge=0, le=5, description="Chunks to add on each side of a hit.")
        ] = 1,
        filters: SearchFilters | None = None,
        read_context: ReadContext | None = None,
    ) -> ContextOutput:
        collection, parsed = scope.filters(filters)
        assembled = await search_call(
            engine.context, _query(query), collection=collection, max_tokens=max_tokens, neighbors=neighbors,
            filters=parsed, **point_of(read_context),
        )  # fmt: skip
        sources = [
            ContextSource(
                n=s.n,
                chunk_ids=list(s.chunk_ids),
                document_id=s.document_id,
                uri=document_uri(s.document_id, s.revision_id),
                path=s.path,
                start=s.start,
                end=s.end,
                line_start=s.line_start,
                line_end=s.line_end,
                revision_id=s.revision_id,
                relevance=s.relevance,
            )
            for s in assembled.sources
        ]
        return ContextOutput(
            query=assembled.query, text=assembled.text, tokens=assembled.tokens, max_tokens=assembled.max_tokens,
            search_mode=assembled.search_mode, sources=sources, baseline_id=assembled.baseline_id,
            as_of=assembled.as_of,
        )  # fmt: skip

    @server.tool(
        description="Read a document's exact text (current revision, a revision_id, or the revision valid at "
        "read_context), optionally a character range start/end or a line range; long documents are paged "
        "with next_start."
    )
    async def get_document(
        document_id: Annotated[str, Field(min_length=1, max_length=100, description="From a search result.")],
        revision_id: Annotated[
            str | None, Field(max_length=100, description="A past or current revision.")
        ] = None,
        start: Annotated[
            int | None, Field(strict=True, ge=0, le=MAX_ID, description="First character offset.")
        ] = None,
        end: Annotated[
            int | None, Field(strict=True, ge=0, le=MAX_ID, description="Character offset to stop before.")
        ] = None,
        line_start: Annotated[
            int | None, Field(strict=True, ge=1, le=MAX_ID, description="First line (1-based).")
        ] = None,
        line_end: Annotated[
            int | None, Field(strict=True, ge=1, le=MAX_ID, description="Last line, inclusive.")
        ] = None,
        max_chars: Annotated[
            int, Field(strict=True, ge=100, le=100_000, description="Page size in characters.")
        ] = 20_000,
        read_context: ReadContext | None = None,
    ) -> DocumentOutput:
        revision = await call(
            engine.document, document_id, revision_id, collections=scope.allowed, **point_of(read_context)
        )
        return page_of(revision, start, end, line_start, line_end, max_chars)

    @server.tool(description="Chunks in other documents most similar to a chunk (or a whole document).")
    async def find_similar(
        chunk_id: Annotated[
            int | None, Field(strict=True, ge=1, le=MAX_ID, description="A chunk id from a search result.")
        ] = None,
        document_id: Annotated[str | None, Field(max_length=100, description="Or a whole document.")] = None,
        limit: Limit = 10,
        filters: SearchFilters | None = None,
        read_context: ReadContext | None = None,
        detail: Detail = "full",
    ) -> SearchOutput:
        _, parsed = scope.filters(filters)
        result = await call(
            engine.similar, chunk_id=chunk_id, document_id=document_id, limit=limit, filters=parsed,
            collections=scope.allowed, **point_of(read_context),
        )  # fmt: skip
        return _search_output(result, "", detail)

    @server.tool(
        description="Collections with document, chunk, embedded and missing-vector counts, model, last indexed; "
        "and the baselines (named points in time) to pass as read_context."
    )
    async def index_status(
        collection: Annotated[str | None, Field(max_length=200, description="Only this collection.")] = None,
    ) -> StatusOutput:
        state = status_to_dict(await call(engine.status))
        state["db"] = redact(state["db"])
        state["baselines"] = [asdict(b) for b in await call(engine.history.list)]
        state["jobs"] = [
            {k: v for k, v in asdict(j).items() if k in JobOut.model_fields}
            for j in await call(recent_jobs, engine)
        ]
        if allowed is not None:
            state["collections"] = [c for c in state["collections"] if c["name"] in allowed]
            state["baselines"] = [b for b in state["baselines"] if b["collection"] in allowed]
            state["jobs"] = [j for j in state["jobs"] if j["collection"] in allowed]
        if collection is not None:
            state["collections"] = [c for c in state["collections"] if c["name"] == collection]
            state["baselines"] = [b for b in state["baselines"] if b["collection"] == collection]
            state["jobs"] = [j for j in state["jobs"] if j["collection"] == collection]
            if not state["collections"]:
                raise ToolError(
                    f"collection {collection!r} does not exist; call index_status without it to list them"
                )
        return StatusOutput.model_validate(state)

    from retrievo.surfaces.mcp_code import register_code_tools
    from retrievo.surfaces.mcp_lifecycle import register_lifecycle_tools
    from retrievo.surfaces.mcp_records import register_record_tools
    from retrievo.surfaces.mcp_registry import register_registry_tools

    register_code_tools(server, engine, scope)
    register_record_tools(server, engine, scope)
    register_registry_tools(server, engine, scope)
    register_lifecycle_tools(server, engine, scope, may_write=allow_refresh)

    if allow_refresh:

        @server.tool(
            description="Re-index (incrementally) an indexed folder or file, or a path inside one (relative "
            "paths are taken inside the indexed folders); returns what changed. Nothing else can be indexed."
        )
        async def refresh_index(
            path: Annotated[
                str, Field(min_length=1, max_length=4096, description="An indexed file or folder.")
            ],
            collection: Annotated[str | None, Field(max_length=200)] = None,
            background: Annotated[
                bool,
                Field(strict=True, description="Return a job_id at once; index_status shows its progress."),
            ] = False,
        ) -> RefreshOutput:
            name = scope.check(collection)
            if background:
                job = await call(submit_refresh, engine, path, name)
                return RefreshOutput(collection=name, job_id=job.job_id, files_seen=0, documents_added=0,
                                     documents_changed=0, documents_unchanged=0, documents_removed=0, chunks_written=0,
                                     chunks_embedded=0, embeddings_missing=0, embed_error=None, skipped={},
                                     duration_s=0.0)  # fmt: skip
            report = await call(engine.refresh, path, collection=name)
            return RefreshOutput.model_validate(report_to_dict(report))

        @server.tool(
            description="Pin the collection's current revisions under a name (a baseline), so later queries can "
            "read exactly this state with read_context.baseline_id; cheap, nothing is copied."
        )
        async def create_baseline(
            name: Annotated[
                str, Field(min_length=1, max_length=200, description="A name, e.g. release-2.1.")
            ],
            note: Annotated[str, Field(max_length=2000, description="Why it was taken.")] = "",
            collection: Annotated[str | None, Field(max_length=200)] = None,
        ) -> BaselineOut:
            baseline = await call(engine.history.create, name, scope.check(collection), note)
            return BaselineOut.model_validate(asdict(baseline))

    @server.resource(
        document_uri("{document_id}"), mime_type="text/plain", description="A document's current text."
    )
    async def document_resource(document_id: str) -> str:
        return await _read_resource(engine, document_id, None, scope.allowed)

    @server.resource(
        document_uri("{document_id}", "{revision_id}"),
        mime_type="text/plain",
        description="One revision's text.",
    )
    async def revision_resource(document_id: str, revision_id: str) -> str:
        return await _read_resource(engine, document_id, revision_id, scope.allowed)

    return server


async def _read_resource(
    engine: Engine, document_id: str, revision_id: str | None, allowed: frozenset[str] | None
) -> str:
    try:
        revision = await anyio.to_thread.run_sync(
            functools.partial(engine.document, document_id, revision_id, collections=allowed)
        )
    except RetrievoError as exc:
        raise ResourceError(redact(str(exc))) from exc
    return revision.text


def page_of(
    revision: Any,
    start: int | None,
    end: int | None,
    line_start: int | None,
    line_end: int | None,
    max_chars: int,
) -> DocumentOutput:
    text: str = revision.text
    line_offsets = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    if line_start is not None or line_end is not None:
        if start is not None or end is not None:
            raise ToolError("give either start/end or line_start/line_end, not both")
        first = (line_start or 1) - 1
        last = min(line_end or len(line_offsets), len(line_offsets))
        if first >= len(line_offsets) or last <= first:
            raise ToolError(f"line range is outside the document, which has {len(line_offsets)} lines")
        start = line_offsets[first]
        end = line_offsets[last] if last < len(line_offsets) else len(text)
    begin = min(start or 0, len(text))
    stop = min(len(text) if end is None else end, len(text))
    if stop < begin:
        raise ToolError(f"end ({stop}) is before start ({begin})")
    page_end = min(stop, begin + max_chars)
    return DocumentOutput(
        document_id=revision.document_id, revision_id=revision.revision_id, is_current=revision.is_current,
        valid_from=revision.created_at, valid_to=revision.valid_to, baseline_id=revision.baseline_id,
        as_of=revision.as_of,
        collection=revision.collection, uri=document_uri(revision.document_id, revision.revision_id),
        path=revision.path, title=revision.title, kind=str(revision.kind), total_chars=len(text),
        total_lines=len(line_offsets), start=begin, end=page_end, line_start=text.count("\n", 0, begin) + 1,
        line_end=text.count("\n", 0, max(begin, page_end - 1)) + 1, text=text[begin:page_end],
        next_start=page_end if page_end < stop else None,
    )  # fmt: skip


def serve(
    engine: Engine,
    http: bool,
    host: str,
    port: int,
    collections: Sequence[str] | None = None,
    allow_refresh: bool = True,
) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    server = build_server(engine, collections, allow_refresh)
    if http:
        server.run("streamable-http", host=host, port=port)
    else:
        server.run("stdio")
