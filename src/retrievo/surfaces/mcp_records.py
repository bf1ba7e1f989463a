"""The seed's two tools for typed models (seed 000 §5): ``semanticSearch`` and ``getContext``."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from retrievo.engine import Engine
from retrievo.models import Filters, Kind
from retrievo.search.records import element_hit, similarity_scores
from retrievo.surfaces.mcp_answers import document_uri
from retrievo.surfaces.mcp_calls import search_call
from retrievo.surfaces.mcp_schemas import (
    ElementResult,
    GetContextOutput,
    ReadContext,
    RecordFilters,
    RecordSourceOut,
    SemanticSearchOutput,
)
from retrievo.surfaces.mcp_scope import Query, Scope, point_of
from retrievo.surfaces.serialize import matched_via_of


def _filters(raw: RecordFilters | None) -> Filters:
    metadata = tuple((k, str(v)) for k, v in (raw.model_dump(exclude_none=True) if raw else {}).items())
    return Filters(kinds=(Kind.RECORD,), metadata=metadata)


def register_record_tools(server: MCPServer, engine: Engine, scope: Scope) -> None:
    @server.tool(
        name="semanticSearch",
        description="Find elements of the indexed models (ArchiMate, typed graphs) for a question; each cites "
        "element_id and revision_id.",
    )
    async def semantic_search(
        query: Query,
        top_k: Annotated[int, Field(strict=True, ge=1, le=50)] = 10,
        min_score: Annotated[
            float, Field(strict=True, ge=0, le=1, description="On score: 0.5 is a cosine of 0.")
        ] = 0.5,
        read_context: ReadContext | None = None,
        filters: RecordFilters | None = None,
    ) -> SemanticSearchOutput:
        # min_score applies to the similarity score (seed 000's scale), not to the calibrated relevance
        result = await search_call(
            engine.search, query, collection=scope.check(None), limit=top_k, filters=_filters(filters),
            explain=True, **point_of(read_context),
        )  # fmt: skip
        results = []
        for hit, score in zip(result.hits, similarity_scores(result.hits), strict=True):
            if score < min_score:
                break
            element = element_hit(hit)
            results.append(
                ElementResult(
                    element_id=element.element_id,
                    element_name=element.element_name,
                    element_type=element.element_type,
                    layer=element.layer,
                    score=score,
                    relevance=element.score,
                    context=element.context,
                    revision_id=element.revision_id,
                    baseline_id=result.baseline_id,
                    as_of=result.as_of,
                    document_id=element.document_id,
                    uri=document_uri(element.document_id, element.revision_id),
                    matched_via=matched_via_of(hit),
                )
            )
        return SemanticSearchOutput(
            query=result.query, search_mode=result.search_mode, baseline_id=result.baseline_id,
            as_of=result.as_of, results=results,
        )  # fmt: skip

    @server.tool(
        name="getContext",
        description="The best model elements, then their neighbours, under max_tokens.",
    )
    async def get_context(
        query: Query,
        max_tokens: Annotated[int, Field(strict=True, ge=50, le=100_000)] = 4000,
        include_relationships: Annotated[
            bool, Field(strict=True, description="Add one-hop neighbours.")
        ] = True,
        read_context: ReadContext | None = None,
        filters: RecordFilters | None = None,
    ) -> GetContextOutput:
        assembled = await search_call(
            engine.record_context, query, collection=scope.check(None), max_tokens=max_tokens,
            include_relationships=include_relationships, filters=_filters(filters), **point_of(read_context),
        )  # fmt: skip
        return GetContextOutput(
            query=assembled.query, context=assembled.text, tokens=assembled.tokens, max_tokens=assembled.max_tokens,
            search_mode=assembled.search_mode, baseline_id=assembled.baseline_id, as_of=assembled.as_of,
            sources=[RecordSourceOut(n=s.n, element_id=s.element_id, element_name=s.element_name,
                                     relevance=s.relevance, revision_id=s.revision_id, expansion_of=s.expansion_of)
                     for s in assembled.sources],
        )  # fmt: skip
