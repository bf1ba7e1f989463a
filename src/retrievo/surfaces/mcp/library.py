"""MCP tool ``search_library`` (seed 003): documents ranked by similarity, one per document, paged."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from retrievo.engine import Engine
from retrievo.engine.library import LibraryResult
from retrievo.search.answer.highlight import highlight
from retrievo.search.query import read_query
from retrievo.surfaces.mcp.answers import BRIEF_EXCERPT
from retrievo.surfaces.mcp.calls import call, search_call
from retrievo.surfaces.mcp.schemas import LibraryDocument, LibraryOutput, ReadContext
from retrievo.surfaces.mcp.scope import Collections, Query, Scope, Shown, point_of
from retrievo.surfaces.serialize import document_uri

MAX_OFFSET = 10_000
MARKDOWN = frozenset({".md", ".markdown"})  # a file that is its own Markdown (seed 003's markdown_path)


def _fingerprint(arguments: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(arguments, sort_keys=True).encode()).hexdigest()[:12]


def make_cursor(offset: int, arguments: dict[str, Any]) -> str:
    """An opaque cursor: where the next page starts, for exactly these arguments."""
    raw = json.dumps({"o": offset, "f": _fingerprint(arguments)}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(cursor: str, arguments: dict[str, Any]) -> int:
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset, fingerprint = int(data["o"]), str(data["f"])
    except (ValueError, KeyError, TypeError):
        raise ToolError("cursor is not one this tool gave; ask again without it") from None
    if fingerprint != _fingerprint(arguments) or not 0 <= offset <= MAX_OFFSET:
        raise ToolError("this cursor belongs to another query or filters; ask again without it") from None
    return offset


def library_output(result: LibraryResult, cursor: str | None, shown: Shown | None = None) -> LibraryOutput:
    documents = []
    for entry in result.entries:
        chunk = entry.document.best.chunk
        path = shown.path(chunk.path) if shown else chunk.path
        pages = chunk.metadata.get("pages")
        tags = chunk.metadata.get("tags")
        documents.append(
            LibraryDocument(
                document_id=chunk.document_id,
                filename=Path(chunk.path).name,
                source_path=path,
                path=path,
                markdown_path=path if Path(chunk.path).suffix.lower() in MARKDOWN else None,
                uri=document_uri(chunk.document_id, chunk.revision_id),
                collection=chunk.collection,
                page_count=pages if isinstance(pages, int) else None,
                processed_at=entry.processed_at,
                similarity_score=entry.document.similarity,
                excerpt=highlight(chunk.text, read_query(result.query), BRIEF_EXCERPT),
                tags=[str(t) for t in tags] if isinstance(tags, list) and tags else None,
            )
        )
    return LibraryOutput(
        query=result.query, total_results=result.total_results, search_duration_ms=result.search_duration_ms,
        search_mode=result.search_mode, degraded_reason=result.degraded_reason, next_cursor=cursor,
        results=documents, baseline_id=result.baseline_id, as_of=result.as_of,
    )  # fmt: skip


def register_library_tools(server: MCPServer, engine: Engine, scope: Scope) -> None:
    @server.tool(
        description="Documents (one each, best passage as excerpt) by meaning and keywords; "
        "similarity_score in [0, 1]; paged by cursor."
    )
    async def search_library(
        query: Query,
        limit: Annotated[int, Field(strict=True, ge=1, le=50)] = 10,
        min_similarity: Annotated[float, Field(strict=True, ge=0, le=1)] = 0.7,
        tags: Annotated[list[str] | None, Field(max_length=20)] = None,
        date_from: Annotated[str | None, Field(max_length=40, description="ISO date")] = None,
        date_to: Annotated[str | None, Field(max_length=40)] = None,
        cursor: Annotated[str | None, Field(max_length=200)] = None,
        read_context: ReadContext | None = None,
        collection: Collections = None,
    ) -> LibraryOutput:
        asked = {"query": query, "min_similarity": min_similarity, "tags": tags, "date_from": date_from,
                 "date_to": date_to, "read_context": read_context.model_dump() if read_context else None,
                 "collection": collection}  # fmt: skip
        offset = read_cursor(cursor, asked) if cursor else 0
        name = await call(scope.holding, "document", collection)
        result = await search_call(
            engine.library, query, collection=name, limit=limit, min_similarity=min_similarity,
            tags=tuple(tags or ()), date_from=date_from, date_to=date_to, offset=offset, **point_of(read_context),
        )  # fmt: skip
        following = make_cursor(result.next_offset, asked) if result.next_offset is not None else None
        return library_output(result, following, await call(scope.shown, name))
