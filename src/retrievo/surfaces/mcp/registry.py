"""MCP tool ``search_registry``: servers, agents and tools for a need, grouped (seed 001)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from retrievo.engine import Engine
from retrievo.engine.registry import REGISTRY_COLLECTION
from retrievo.search.records.registry import ENTITY_TYPES
from retrievo.surfaces.mcp.calls import call, search_call
from retrievo.surfaces.mcp.schemas import ReadContext, SearchRegistryOutput
from retrievo.surfaces.mcp.scope import Collection, Query, Scope, point_of
from retrievo.surfaces.serialize import registry_result_to_dict

EntityType = Literal["server", "agent", "tool"]


def register_registry_tools(server: MCPServer, engine: Engine, scope: Scope) -> None:
    @server.tool(
        description='MCP servers, A2A agents and tools for a need ("create a Jira issue"), with input schemas.'
    )
    async def search_registry(
        query: Query,
        limit: Annotated[int, Field(strict=True, ge=1, le=10, description="Per entity type.")] = 3,
        entity_types: Annotated[list[EntityType] | None, Field(max_length=3)] = None,
        tags: Annotated[list[str] | None, Field(max_length=20)] = None,
        include_disabled: Annotated[bool, Field(strict=True)] = False,
        read_context: ReadContext | None = None,
        collection: Collection = None,
    ) -> SearchRegistryOutput:
        collection = await call(scope.holding, "registry", collection, False, REGISTRY_COLLECTION)
        result = await search_call(
            engine.registry.search, query, collection=collection, limit=limit,
            types=tuple(entity_types or ENTITY_TYPES), tags=tuple(tags or ()), include_disabled=include_disabled,
            **point_of(read_context),
        )  # fmt: skip
        return SearchRegistryOutput.model_validate(registry_result_to_dict(result))
