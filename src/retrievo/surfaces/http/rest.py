"""The REST twins of the MCP tools: ``POST /api/<tool>`` takes the tool's arguments as a JSON object and
answers the tool's structured JSON, through the very same tool function (same validation, same limits,
same confinement). The OpenAPI schema is generated from the tools' own JSON schemas.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import TextContent

from retrievo.errors import (
    AccessDenied,
    CollectionNotFound,
    DocumentNotFound,
    IndexLockedError,
    IndexMissingError,
    StoreUnavailableError,
)
from retrievo.surfaces.access import Principal
from retrievo.surfaces.http.mcp_mount import McpServers, rights_of
from retrievo.surfaces.mcp import NoSuchCollection, NotServed, without_titles

log = logging.getLogger("retrievo.http")


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def status_of(exc: BaseException) -> int:
    """The HTTP status for a tool's error, from the first error in its chain that says one."""
    chain: BaseException | None = exc
    while chain is not None:
        if isinstance(chain, NotServed | AccessDenied):
            return 403
        if isinstance(chain, NoSuchCollection | DocumentNotFound | CollectionNotFound | IndexMissingError):
            return 404
        if isinstance(chain, StoreUnavailableError | IndexLockedError):
            return 503
        chain = chain.__cause__
    return 400


async def call_tool(server: MCPServer, name: str, arguments: dict[str, Any]) -> Response:
    try:
        result = await server.call_tool(name, arguments)
    except UnexpectedToolError:
        log.exception("unexpected error in REST call of %s", name)
        return error(
            500, "internal error; the server's log has the details. What the call wrote before it stopped is "
            "kept, never half-written: /api/status and /api/verify_index say what the index holds",
        )  # fmt: skip
    except ToolError as exc:
        return error(status_of(exc), str(exc).removeprefix(f"Error executing tool {name}: "))
    data = getattr(result, "structured_content", None)
    if data is None:  # every retrievo tool answers structured JSON
        return error(500, f"{name} gave no structured answer")
    content = getattr(result, "content", [])
    if len(content) == 1 and isinstance(content[0], TextContent):  # ``fit``: the structured JSON, compact
        return Response(content[0].text, media_type="application/json")
    return JSONResponse(data)


MAX_DEPTH = 32  # a tool's arguments nest a few levels (filters); deeper is refused, never recursed into


async def arguments_of(request: Request) -> dict[str, Any] | JSONResponse:
    """The body's JSON object; 413 past the server's body limit (read no further), 400 for what is not a
    JSON object or nests deeper than ``MAX_DEPTH``, as ``/mcp`` answers."""
    limit: int = getattr(request.app.state, "max_body_bytes", 1_000_000)
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            return error(413, f"the request body is over the server's limit of {limit:,} bytes; send less")
        parts.append(part)
    body = b"".join(parts)
    if not body.strip():
        return {}
    try:
        data = json.loads(body)
    except RecursionError:
        return error(400, f"the request body nests deeper than {MAX_DEPTH} levels")
    except (ValueError, UnicodeDecodeError):
        return error(400, "the request body is not valid JSON; send the tool's arguments as a JSON object")
    if not isinstance(data, dict):
        return error(400, "the request body must be a JSON object of the tool's arguments")
    if _depth(data) > MAX_DEPTH:
        return error(400, f"the request body nests deeper than {MAX_DEPTH} levels")
    return data


def _depth(value: Any) -> int:
    """How deep ``value`` nests (a scalar 0), walked without recursion and no further than MAX_DEPTH + 1."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if not isinstance(item, dict | list):
            continue
        deepest = max(deepest, level)
        if level <= MAX_DEPTH:
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def add_tool_routes(app: FastAPI, servers: McpServers, reference: MCPServer) -> None:
    """One ``POST /api/<tool>`` per tool of ``reference`` (the server with every tool)."""
    for tool in reference._tool_manager.list_tools():
        name = tool.name

        async def endpoint(request: Request, name: str = name) -> Response:
            principal: Principal = request.state.principal
            server = servers.rest_server(rights_of(principal, servers.settings))
            if server._tool_manager.get_tool(name) is None:
                return error(403, f"this key's rights ({principal.scope}) do not include {name}")
            arguments = await arguments_of(request)
            if isinstance(arguments, JSONResponse):
                return arguments
            if servers.settings.log_queries and isinstance(arguments.get("query"), str):
                log.info(
                    json.dumps(
                        {"event": "query", "tool": name, "key": principal.name, "query": arguments["query"]}
                    )
                )
            return await call_tool(server, name, arguments)

        output = tool.output_schema
        app.add_api_route(
            f"/api/{name}",
            endpoint,
            methods=["POST"],
            name=name,
            summary=name,
            description=tool.description,
            tags=["tools"],
            response_class=JSONResponse,
            openapi_extra={
                "requestBody": {
                    "required": False,
                    "content": {"application/json": {"schema": without_titles(tool.parameters)}},
                },
                "responses": {
                    "200": {
                        "description": "The tool's structured answer (the same JSON as over MCP).",
                        "content": {"application/json": {"schema": without_titles(output) if output else {}}},
                    },
                    "400": {"description": "Invalid arguments or a request the index cannot answer."},
                    "401": {"description": "No valid API key."},
                    "403": {"description": "Outside this key's collections or rights."},
                    "404": {"description": "No such document or collection among those this key may reach."},
                    "429": {"description": "This key's rate limit; retry after the Retry-After seconds."},
                },
            },
        )


def _hoist(node: Any, defs: dict[str, Any]) -> Any:
    """Move JSON-schema ``$defs`` into OpenAPI components, rewriting their references."""
    if isinstance(node, dict):
        for key, value in (node.pop("$defs", None) or {}).items():
            defs[key] = _hoist(value, defs)
        return {
            key: (
                value.replace("#/$defs/", "#/components/schemas/")
                if key == "$ref" and isinstance(value, str)
                else _hoist(value, defs)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_hoist(item, defs) for item in node]
    return node


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            defs: dict[str, Any] = {}
            schema = _hoist(schema, defs)
            schema.setdefault("components", {}).setdefault("schemas", {}).update(defs)
            schema["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            schema["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
