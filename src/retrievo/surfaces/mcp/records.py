"""The seed's two tools for typed models (seed 000 §5): ``semanticSearch`` and ``getContext``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from retrievo.engine import Engine
from retrievo.models import Filters, Kind
from retrievo.search.records.elements import FACETS, RecordContext, element_hit, element_scores, facet_values
from retrievo.surfaces.mcp.calls import call, search_call
from retrievo.surfaces.mcp.schemas import (
    ElementResult,
    GetContextOutput,
    ReadContext,
    RecordFilters,
    RecordSourceOut,
    SemanticSearchOutput,
)
from retrievo.surfaces.mcp.scope import Collection, Collections, Query, Scope, point_of
from retrievo.surfaces.serialize import document_uri, matched_via_of

T = TypeVar("T")
MAX_DEPTH = 110  # elements asked of the search for top_k 50


def _filters(raw: RecordFilters | None) -> Filters:
    metadata = tuple((k, str(v)) for k, v in (raw.model_dump(exclude_none=True) if raw else {}).items())
    return Filters(kinds=(Kind.RECORD,), metadata=metadata)


def checked_filters(
    engine: Engine, collection: str | None, raw: RecordFilters | None
) -> RecordFilters | None:
    """``raw`` with its layer and element type as the model spells them (any case given); a value the
    model does not have is refused with those it has, not answered with nothing."""
    asked = {facet: getattr(raw, facet) for facet in FACETS if raw is not None and getattr(raw, facet)}
    if raw is None or not asked:
        return raw
    known: dict[str, list[str]] = {facet: [] for facet in FACETS}
    for one in (collection or "").split(",") if collection else [None]:  # several: what any of them has
        store, name = engine.collection_store(one.strip() if one else None)
        for facet, values in facet_values(store, name).items():
            known[facet] = sorted({*known[facet], *values})
    fixed: dict[str, str] = {}
    for facet, value in asked.items():
        match = next((v for v in known[facet] if v.casefold() == value.casefold()), None)
        if match is None:
            allowed = ", ".join(known[facet]) or "none: the collection holds no model elements"
            raise ToolError(f"filters.{facet} {value!r} is not in the indexed models; allowed: {allowed}")
        fixed[facet] = match
    return raw.model_copy(update=fixed)


async def facet_checked(
    engine: Engine,
    collection: str | None,
    filters: RecordFilters | None,
    answer: Callable[[RecordFilters | None], Awaitable[T]],
    empty: Callable[[T], bool],
) -> T:
    """``answer(filters)``; only when it is empty are the filters checked (``checked_filters`` reads
    every element) and, spelt in another case, asked again."""
    first = await answer(filters)
    if filters is None or not empty(first):
        return first
    fixed = await search_call(checked_filters, engine, collection, filters)
    return first if fixed == filters else await answer(fixed)


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
            float,
            Field(
                strict=True,
                ge=0,
                le=1,
                description="Answer relevance (0-1) under which nothing is returned.",
            ),
        ] = 0.5,
        read_context: ReadContext | None = None,
        filters: RecordFilters | None = None,
        collection: Collections = None,
    ) -> SemanticSearchOutput:
        collection = await call(scope.holding, "record", collection)
        return await facet_checked(
            engine, collection, filters, lambda f: elements(query, collection, top_k, min_score, read_context, f),
            lambda answer: not answer.results,
        )  # fmt: skip

    async def elements(
        query: str,
        collection: str | None,
        top_k: int,
        min_score: float,
        read_context: ReadContext | None,
        filters: RecordFilters | None,
    ) -> SemanticSearchOutput:
        # min_score applies to the answer: its answerability (search/answer/answerability.py), what the first element's
        # relevance is capped at; an answer comes whole, up to top_k (before: each element's own relevance
        # was cut at 0.5, and 16 of 16 questions over Archisurance answered one element).
        # Asked deeper than top_k: relationship answers reaching one element collapse into it.
        result = await search_call(
            engine.search, query, collection=collection, limit=min(MAX_DEPTH, 2 * top_k + 10),
            filters=_filters(filters), explain=True, **point_of(read_context),
        )  # fmt: skip
        results: list[ElementResult] = []
        answer = result.answerability
        for hit, score in zip(result.hits, element_scores(result.hits), strict=True):
            if (score if answer is None else answer) < min_score or len(results) == top_k:
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
                    collection=hit.chunk.collection,
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
        collection: Collection = None,
    ) -> GetContextOutput:
        collection = await call(scope.holding, "record", collection, False)

        async def context(f: RecordFilters | None) -> RecordContext:
            return await search_call(
                engine.record_context, query, collection=collection, max_tokens=max_tokens,
                include_relationships=include_relationships, filters=_filters(f), **point_of(read_context),
            )  # fmt: skip

        assembled = await facet_checked(engine, collection, filters, context, lambda found: not found.sources)
        return GetContextOutput(
            query=assembled.query, context=assembled.text, tokens=assembled.tokens, max_tokens=assembled.max_tokens,
            search_mode=assembled.search_mode, baseline_id=assembled.baseline_id, as_of=assembled.as_of,
            sources=[RecordSourceOut(n=s.n, element_id=s.element_id, element_name=s.element_name,
                                     relevance=s.relevance, revision_id=s.revision_id, expansion_of=s.expansion_of)
                     for s in assembled.sources],
        )  # fmt: skip
