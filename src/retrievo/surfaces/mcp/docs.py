"""The ``docs`` toolset: ``search`` (passages for a question), ``get_context`` (the best passages packed under
a token budget, with numbered citations) and ``get_document`` (a document's exact text, paged)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from retrievo.engine import Engine
from retrievo.search.documents.library import first_per_document
from retrievo.search.grouping import by_file
from retrievo.surfaces.mcp.answers import page_of, parse_uri, search_output
from retrievo.surfaces.mcp.calls import call, search_call
from retrievo.surfaces.mcp.schemas import (
    ContextOutput,
    ContextSource,
    DocumentOutput,
    ReadContext,
    SearchFilters,
    SearchOutput,
)
from retrievo.surfaces.mcp.scope import (
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
from retrievo.surfaces.serialize import document_uri


def register_docs_tools(server: MCPServer, engine: Engine, scope: Scope) -> None:
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
                shown = scope.shown(collection)
            if group_by == "document":  # distinct documents count against limit
                result = replace(result, hits=tuple(first_per_document(result.hits, limit)))
            elif group_by == "file":  # one row per file, in the answer's order; its others named in also
                return search_output(result, query, detail, files=by_file(result.hits, limit), shown=shown)
            return search_output(result, query, detail, shown=shown)

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
        shown = await call(scope.shown, collection)
        sources = [
            ContextSource(
                n=s.n,
                chunk_ids=list(s.chunk_ids),
                uri=document_uri(s.document_id, s.revision_id),
                path=shown.path(s.path),
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
            query=assembled.query, text=shown.text(assembled.text, (s.path for s in assembled.sources)), tokens=assembled.tokens, max_tokens=assembled.max_tokens,
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
        shown = await call(scope.shown, revision.collection)
        return page_of(revision, start, end, line_start, line_end, max_chars, shown)
