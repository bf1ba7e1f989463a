"""The ``similar`` toolset: ``find_similar``, the passages in other documents most like a document or a chunk."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from retrievo.engine import Engine
from retrievo.models import Filters, Kind
from retrievo.surfaces.mcp.answers import parse_uri, search_output
from retrievo.surfaces.mcp.calls import call
from retrievo.surfaces.mcp.schemas import KindName, ReadContext, SearchOutput
from retrievo.surfaces.mcp.scope import MAX_ID, Collection, Detail, Limit, Scope, point_of


def register_similar_tools(server: MCPServer, engine: Engine, scope: Scope) -> None:
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
        collection: Collection = None,
    ) -> SearchOutput:
        if uri is not None:
            document_id = parse_uri(uri, document_id)[0]
        parsed = Filters(kinds=tuple(Kind(k) for k in kind or ()), path_glob=path)
        named = scope.check(collection) if collection is not None else None
        result = await call(
            engine.similar, chunk_id=chunk_id, document_id=document_id, limit=limit, filters=parsed,
            collections=scope.allowed, collection=named, **point_of(read_context),
        )  # fmt: skip
        held = ",".join(sorted({hit.chunk.collection for hit in result.hits})) or named
        return search_output(result, "", detail, shown=await call(scope.shown, held))
