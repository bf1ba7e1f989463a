"""MCP tools over the code structure index: ``find_symbol``, ``symbol_graph`` and ``locate``. They read
HEAD only (the symbol index keeps no history): a ``read_context`` naming a point in time is refused."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from retrievo.engine import Engine
from retrievo.search.code.structure import MAX_DEPTH, GraphEdge
from retrievo.store.code_index import SymbolHit
from retrievo.surfaces.mcp.calls import call
from retrievo.surfaces.mcp.schemas import (
    EdgeOut,
    FindSymbolOutput,
    LocatedFile,
    LocateOutput,
    ReadContext,
    SymbolGraphOutput,
    SymbolOut,
)
from retrievo.surfaces.mcp.scope import Collection, Scope, Shown, head_only
from retrievo.surfaces.serialize import located_to_dict


def symbol_out(symbol: SymbolHit, shown: Shown) -> SymbolOut:
    return SymbolOut(**{**dataclasses.asdict(symbol), "path": shown.path(symbol.path)})


def edge_out(edge: GraphEdge, shown: Shown) -> EdgeOut:
    data = dataclasses.asdict(edge)
    data["resolved"], data["path"] = list(edge.resolved), shown.path(edge.path)
    return EdgeOut(**data)


def register_code_tools(server: MCPServer, engine: Engine, scope: Scope) -> None:
    @server.tool(
        description="Find functions, classes … by name or glob (`*Parser`, `core.Command.*`) with path and lines."
    )
    async def find_symbol(
        pattern: Annotated[str | None, Field(min_length=1, max_length=300)] = None,
        name: Annotated[
            str | None, Field(min_length=1, max_length=300, description="Seed 002's name for pattern.")
        ] = None,
        kind: Literal[
            "function", "method", "class", "interface", "struct", "enum", "type", "namespace", "impl"
        ]
        | None = None,
        language: Annotated[str | None, Field(max_length=40)] = None,
        limit: Annotated[int, Field(strict=True, ge=1, le=100)] = 20,
        collection: Collection = None,
        read_context: ReadContext | None = None,
    ) -> FindSymbolOutput:
        head_only("find_symbol", read_context)
        if (pattern and name and pattern != name) or not (pattern or name):
            raise ToolError("give the symbol's name or glob as pattern (or as name), one of them")
        pattern = str(pattern or name)
        named = scope.check(collection)
        found = await call(
            engine.find_symbol, pattern, collection=named, kind=kind, language=language, limit=limit,
        )  # fmt: skip
        shown = await call(scope.shown, named)
        return FindSymbolOutput(
            pattern=pattern, total=len(found), symbols=[symbol_out(s, shown) for s in found]
        )

    @server.tool(
        description="What a symbol uses or what uses it, and the tests reaching it; each edge cites file:line."
    )
    async def symbol_graph(
        symbol: Annotated[
            str, Field(min_length=1, max_length=300, description="Qualified (or unique) name.")
        ],
        direction: Literal["dependencies", "dependents"] = "dependencies",
        depth: Annotated[int, Field(strict=True, ge=1, le=MAX_DEPTH)] = 1,
        limit: Annotated[int, Field(strict=True, ge=1, le=500)] = 40,
        collection: Collection = None,
        read_context: ReadContext | None = None,
    ) -> SymbolGraphOutput:
        head_only("symbol_graph", read_context)
        named = scope.check(collection)
        graph = await call(engine.symbol_graph, symbol, collection=named, direction=direction, depth=depth)
        shown = await call(scope.shown, named)
        return SymbolGraphOutput(
            symbol=symbol_out(graph.symbol, shown), direction=graph.direction, depth=graph.depth,
            edges=[edge_out(e, shown) for e in graph.edges[:limit]],
            tests=[edge_out(e, shown) for e in graph.tests[:limit]],
            total_edges=len(graph.edges), total_tests=len(graph.tests),
            truncated=graph.truncated or len(graph.edges) > limit or len(graph.tests) > limit,
        )  # fmt: skip

    @server.tool(description="Files an issue's text (bug report, traceback) is about, best first, with why.")
    async def locate(
        text: Annotated[str, Field(min_length=1, max_length=20_000)],
        limit: Annotated[int, Field(strict=True, ge=1, le=50)] = 5,
        collection: Collection = None,
        read_context: ReadContext | None = None,
    ) -> LocateOutput:
        head_only("locate", read_context)
        name = scope.check(collection)
        files = await call(engine.locate, text, collection=name, limit=limit)
        shown = await call(scope.shown, name)
        return LocateOutput(
            files=[
                LocatedFile(**{**located_to_dict(f, shown.roots), "path": shown.path(f.path)}) for f in files
            ],
            roots=shown.listed(),
        )
