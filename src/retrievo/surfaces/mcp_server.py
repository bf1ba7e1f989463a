"""The MCP server (official ``mcp`` SDK v2): tools for search, context, documents, similar chunks.

Nothing but protocol goes to stdout; logs go to stderr. The engine opens the index and loads the
model lazily, on the first tool call that needs them, so start-up is fast.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, replace
from importlib.metadata import version
from typing import Annotated, Literal

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import Field

from retrievo.engine import Engine
from retrievo.errors import RetrievoError
from retrievo.models import Filters, Kind
from retrievo.operations.jobs import recent_jobs, submit_refresh
from retrievo.search.grouping import by_file
from retrievo.search.library import first_per_document
from retrievo.secrets import redact
from retrievo.surfaces.mcp_answers import document_uri, holdings, page_of, parse_uri, search_output
from retrievo.surfaces.mcp_calls import call, search_call
from retrievo.surfaces.mcp_schemas import (
    BaselineOut,
    ContextOutput,
    ContextSource,
    DocumentOutput,
    JobOut,
    KindName,
    ReadContext,
    RefreshOutput,
    SearchFilters,
    SearchOutput,
    StatusOutput,
)
from retrievo.surfaces.mcp_scope import (
    MAX_ID,
    MAX_LIMIT,
    Detail,
    Limit,
    Line,
    Mode,
    Offset,
    Query,
    Scope,
    _query,
    point_of,
)
from retrievo.surfaces.mcp_toolsets import Offer, parse_toolsets, toolset_of
from retrievo.surfaces.mcp_wire import RetrievoMCPServer
from retrievo.surfaces.serialize import report_to_dict, status_to_dict

log = logging.getLogger("retrievo.mcp")


def build_server(
    engine: Engine,
    collections: Sequence[str] | None = None,
    allow_refresh: bool = True,
    toolsets: Iterable[str] | None = None,
) -> MCPServer:
    """``collections``: the only ones any tool or resource may touch (default: all).

    ``allow_refresh=False`` leaves the tools that write (``refresh_index``, ``create_baseline``,
    ``regenerate_embeddings``) out entirely. ``toolsets`` (``retrievo.surfaces.mcp_toolsets``): the
    toolsets registered (default ``auto``: all but admin); of those, only the tools whose kind of
    content a served collection holds are listed.
    """
    picked = parse_toolsets(toolsets)
    allowed = frozenset(collections) if collections else None
    offer = Offer(engine.content_kinds, allowed)

    def served() -> list[str] | None:
        existing = engine.collections()
        return [c for c in existing if allowed is None or c in allowed] if existing is not None else None

    server = RetrievoMCPServer(
        name="retrievo", version=version("retrievo"), instructions=holdings(offer.kinds(), served()),
        log_level="WARNING",
    )  # fmt: skip
    server.offer = offer
    server.describe_holdings = lambda kinds: holdings(kinds, served())
    default = engine.config.collection
    if allowed is not None and default not in allowed:
        default = sorted(allowed)[0]
    scope = Scope(default, allowed, engine.collections)

    @server.tool(
        description="Find passages, each with path:lines and a uri for get_document; relevance is a probability."
    )
    async def search(
        query: Query,
        limit: Limit = 10,
        mode: Mode = "hybrid",
        min_score: Annotated[float | None, Field(strict=True, ge=0, le=1)] = None,
        filters: SearchFilters | None = None,
        explain: Annotated[bool, Field(strict=True)] = False,
        read_context: ReadContext | None = None,
        detail: Detail = "brief",
        group_by: Annotated[
            Literal["document", "file"] | None, Field(description="One hit per document/file.")
        ] = None,
        fusion: Literal["adaptive", "zscore", "rrf"] | None = None,
    ) -> SearchOutput:
        def answer() -> SearchOutput:
            # In a worker thread, the scope's lookups and the excerpts too (the event loop stays free),
            # all on one look at the index (``Engine.reading``).
            with engine.reading():
                collection, parsed = scope.filters(filters)
                text = _query(query)
                result = engine.search(
                    text, collection=collection, limit=MAX_LIMIT if group_by else limit, mode=mode,
                    filters=parsed, min_score=min_score, explain=explain, fusion=fusion,
                    **point_of(read_context),
                )  # fmt: skip
                roots = engine.roots(collection)
            if group_by == "document":  # distinct documents count against limit
                result = replace(result, hits=tuple(first_per_document(result.hits, limit)))
            elif group_by == "file":  # one row per file, in the answer's order; its others named in also
                return search_output(result, query, detail, files=by_file(result.hits, limit), roots=roots)
            return search_output(result, query, detail, roots=roots)

        return await search_call(answer)

    @server.tool(description="The best passages as text with numbered citations [n], under max_tokens.")
    async def get_context(
        query: Query,
        max_tokens: Annotated[int, Field(strict=True, ge=50, le=100_000)] = 4000,
        neighbors: Annotated[int, Field(strict=True, ge=0, le=5, description="Chunks added each side.")] = 1,
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
                uri=document_uri(s.document_id, s.revision_id),
                path=s.path,
                start=s.start,
                end=s.end,
                line_start=s.line_start,
                line_end=s.line_end,
                relevance=s.relevance,
                kind=s.kind,
                chunk_type=s.chunk_type,
                token_count=s.token_count,
            )
            for s in assembled.sources
        ]
        return ContextOutput(
            query=assembled.query, text=assembled.text, tokens=assembled.tokens, max_tokens=assembled.max_tokens,
            search_mode=assembled.search_mode, sources=sources, baseline_id=assembled.baseline_id,
            as_of=assembled.as_of,
        )  # fmt: skip

    @server.tool(
        description="A document's exact text by uri (or document_id), or a character or line range; paged "
        "(next_start)."
    )
    async def get_document(
        uri: Annotated[str | None, Field(max_length=300, description="From a hit.")] = None,
        document_id: Annotated[str | None, Field(min_length=1, max_length=100)] = None,
        revision_id: Annotated[str | None, Field(max_length=100)] = None,
        start: Offset = None,
        end: Offset = None,
        line_start: Line = None,
        line_end: Line = None,
        max_chars: Annotated[int, Field(strict=True, ge=100, le=100_000)] = 20_000,
        read_context: ReadContext | None = None,
    ) -> DocumentOutput:
        if uri is not None:
            document_id, named_revision = parse_uri(uri, document_id)
            revision_id = revision_id or named_revision
        if document_id is None:
            raise ToolError("give uri (from a search hit) or document_id")
        revision = await call(
            engine.document, document_id, revision_id, collections=scope.allowed, **point_of(read_context)
        )
        return page_of(revision, start, end, line_start, line_end, max_chars)

    @server.tool(
        description="Passages in other documents most like a document (uri from a hit) or a chunk (chunk_id)."
    )
    async def find_similar(
        uri: Annotated[str | None, Field(max_length=300)] = None,
        chunk_id: Annotated[int | None, Field(strict=True, ge=1, le=MAX_ID)] = None,
        document_id: Annotated[str | None, Field(max_length=100)] = None,
        limit: Limit = 10,
        kind: Annotated[list[KindName] | None, Field(max_length=3)] = None,
        path: Annotated[str | None, Field(max_length=1000)] = None,
        read_context: ReadContext | None = None,
        detail: Detail = "brief",
    ) -> SearchOutput:
        if uri is not None:
            document_id = parse_uri(uri, document_id)[0]
        parsed = Filters(kinds=tuple(Kind(k) for k in kind or ()), path_glob=path)
        result = await call(
            engine.similar, chunk_id=chunk_id, document_id=document_id, limit=limit, filters=parsed,
            collections=scope.allowed, **point_of(read_context),
        )  # fmt: skip
        return search_output(result, "", detail)

    @server.tool(description="Collections (counts, model, last indexed), baselines to read at, recent jobs.")
    async def index_status(
        collection: Annotated[str | None, Field(max_length=200)] = None,
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
    from retrievo.surfaces.mcp_library import register_library_tools
    from retrievo.surfaces.mcp_lifecycle import register_lifecycle_tools
    from retrievo.surfaces.mcp_records import register_record_tools
    from retrievo.surfaces.mcp_registry import register_registry_tools

    register_code_tools(server, engine, scope)
    register_record_tools(server, engine, scope)
    register_registry_tools(server, engine, scope)
    register_library_tools(server, engine, scope)
    register_lifecycle_tools(server, engine, scope, may_write=allow_refresh)

    if allow_refresh:

        @server.tool(
            description="Re-index an indexed folder or file (or a path inside one) incrementally; returns what "
            "changed. Nothing outside the indexed folders can be indexed."
        )
        async def refresh_index(
            path: Annotated[str, Field(min_length=1, max_length=4096)],
            collection: Annotated[str | None, Field(max_length=200)] = None,
            background: Annotated[bool, Field(strict=True, description="Answer a job_id at once.")] = False,
        ) -> RefreshOutput:
            name = scope.check(collection)
            if background:
                job = await call(submit_refresh, engine, path, name)
                return RefreshOutput(collection=name, job_id=job.job_id, files_seen=0, documents_added=0,
                                     documents_changed=0, documents_unchanged=0, documents_removed=0, chunks_written=0,
                                     chunks_embedded=0, embeddings_missing=0, embed_error=None, skipped={},
                                     duration_s=0.0)  # fmt: skip
            report = await call(engine.refresh, path, collection=name)
            offer.forget()  # what the collections hold may have changed: the tool list is looked at again
            return RefreshOutput.model_validate(report_to_dict(report))

        @server.tool(
            description="Pin the collection's current state under a name (a baseline) to read later with "
            "read_context.baseline_id; nothing is copied."
        )
        async def create_baseline(
            name: Annotated[str, Field(min_length=1, max_length=200)],
            note: Annotated[str, Field(max_length=2000)] = "",
            collection: Annotated[str | None, Field(max_length=200)] = None,
        ) -> BaselineOut:
            baseline = await call(engine.history.create, name, scope.check(collection), note)
            return BaselineOut.model_validate(asdict(baseline))

    for tool in server._tool_manager.list_tools():
        if toolset_of(tool.name) not in picked:
            server.remove_tool(tool.name)

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


def serve(
    engine: Engine,
    http: bool,
    host: str,
    port: int,
    collections: Sequence[str] | None = None,
    allow_refresh: bool = True,
    toolsets: Iterable[str] | None = None,
) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    server = build_server(engine, collections, allow_refresh, toolsets)
    # The model loads beside the handshake, so an agent's first search is not the one that waits for it
    # (0.35-1.2 s); a search arriving sooner waits for the same load, never a second one.
    threading.Thread(target=engine.warm_up, name="retrievo-warm-up", daemon=True).start()
    if http:
        server.run("streamable-http", host=host, port=port)
    else:
        server.run("stdio")
