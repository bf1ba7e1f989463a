"""MCP tools over the code structure index: ``find_symbol`` and ``symbol_graph``."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from retrievo.engine import Engine
from retrievo.search.structure import MAX_DEPTH, GraphEdge
from retrievo.store.code_index import SymbolHit
from retrievo.surfaces.mcp_calls import call
from retrievo.surfaces.mcp_schemas import EdgeOut, FindSymbolOutput, ReadContext, SymbolGraphOutput, SymbolOut
from retrievo.surfaces.mcp_server import Scope

HEAD_ONLY = (
    "the code structure index (symbols and their edges) is kept for the current revision only; to read "
    "past code, call search with the same read_context"
)


def head_only(read_context: ReadContext | None) -> None:
    if read_context is not None and (read_context.baseline_id or read_context.as_of):
        raise ToolError(HEAD_ONLY)


Collection = Annotated[str | None, Field(max_length=200, description="Collection (default: the server's).")]


def symbol_out(symbol: SymbolHit) -> SymbolOut:
    return SymbolOut(
        **dataclasses.asdict(symbol), citation=f"{symbol.path}:{symbol.line_start}-{symbol.line_end}"
    )


def edge_out(edge: GraphEdge) -> EdgeOut:
    data = dataclasses.asdict(edge)
    data["resolved"] = list(edge.resolved)
    return EdgeOut(**data, citation=f"{edge.path}:{edge.line}")


def register_code_tools(server: MCPServer, engine: Engine, scope: Scope) -> None:
    @server.tool(
        description="Find code symbols (functions, methods, classes …) by name, qualified name or glob "
        "(`parse_args`, `*Parser`, `core.Command.*`); exact names first, with file:line citations."
    )
    async def find_symbol(
        pattern: Annotated[str, Field(min_length=1, max_length=300, description="A name or a glob.")],
        kind: Annotated[
            Literal["function", "method", "class", "interface", "struct", "enum", "type", "namespace", "impl"]
            | None,
            Field(description="Only this kind."),
        ] = None,
        language: Annotated[str | None, Field(max_length=40, description="e.g. python, go, rust.")] = None,
        limit: Annotated[int, Field(strict=True, ge=1, le=100, description="How many (1-100).")] = 20,
        collection: Collection = None,
        read_context: ReadContext | None = None,
    ) -> FindSymbolOutput:
        head_only(read_context)
        found = await call(
            engine.find_symbol, pattern, collection=scope.check(collection), kind=kind, language=language,
            limit=limit,
        )  # fmt: skip
        return FindSymbolOutput(pattern=pattern, total=len(found), symbols=[symbol_out(s) for s in found])

    @server.tool(
        description="A symbol's dependencies (what it imports, calls, inherits, implements, uses) or dependents "
        "(what uses it), to a depth, with the tests that exercise it; every edge cites file:line."
    )
    async def symbol_graph(
        symbol: Annotated[
            str, Field(min_length=1, max_length=300, description="A qualified name (or a unique name).")
        ],
        direction: Annotated[
            Literal["dependencies", "dependents"], Field(description="What it uses, or what uses it.")
        ] = "dependencies",
        depth: Annotated[int, Field(strict=True, ge=1, le=MAX_DEPTH, description="Levels to follow.")] = 1,
        collection: Collection = None,
        read_context: ReadContext | None = None,
    ) -> SymbolGraphOutput:
        head_only(read_context)
        graph = await call(
            engine.symbol_graph, symbol, collection=scope.check(collection), direction=direction, depth=depth
        )
        return SymbolGraphOutput(
            symbol=symbol_out(graph.symbol), direction=graph.direction, depth=graph.depth,
            edges=[edge_out(e) for e in graph.edges], tests=[edge_out(e) for e in graph.tests],
            truncated=graph.truncated,
        )  # fmt: skip
