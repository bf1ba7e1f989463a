"""``tools/call`` and ``tools/list`` over stateless MCP (protocol 2026-07-28, JSON answers), answered
without the SDK's per-request machinery.

The SDK serves each such POST through a per-request runner: envelope models, a middleware chain, the
result validated against the protocol's schema and dumped twice, then ``json.dumps`` — about 1.5 ms of
server CPU a call more than REST (measured 2026-11-24, 2 cores), a sixth of a search. Here the same
request passes the SDK's own checks (transport security, the Accept header, the JSON-RPC envelope,
duplicated routing headers, the modern-protocol validation ladder, the call's parameters), the tool
runs through the SDK's own ``_handle_call_tool`` (its errors become ``isError`` answers there, logged
as the SDK logs them), and the answer is written in one serialisation. The tool list (47 kB, 2.8 ms
through the SDK; every client asks for it) is serialised once per set of tools.

Anything else goes to the SDK unchanged, so every refusal is the SDK's: another method or protocol
version, other params (a cursor, a task, a multi-round-trip's ``requestState``), a tool taking the MCP
context or declaring ``x-mcp-header`` parameters, a request any check would refuse. The runner's
middleware (OpenTelemetry spans, request state) does not run for the calls answered here.

``tests/test_mcp_direct.py`` holds this to the SDK: for answers, tool errors and declined requests
alike, the status and JSON equal what the SDK's own path writes.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core
from mcp.server.mcpserver import MCPServer
from mcp.server.runner import modern_error_data
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult
from mcp_types import JSONRPCRequest
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from retrievo.surfaces.mcp import Offered, registered

SERVER_INFO = "io.modelcontextprotocol/serverInfo"
_VERSION = MCP_PROTOCOL_VERSION_HEADER.lower().encode("ascii")
_METHOD = b"mcp-method"
_PARAM = b"mcp-param"
_SESSION = b"mcp-session-id"
PLAIN = {
    "tools/call": {"name", "arguments", "_meta"},
    "tools/list": {"_meta"},
}  # methods, params answered here
_METHODS = tuple(method.encode() for method in PLAIN)  # as the Mcp-Method header names them


def eligible(scope: Scope) -> bool:
    """Whether the request's line and headers say: a stateless call this module may answer."""
    if scope.get("method") != "POST":
        return False
    version = method = None
    for name, value in scope["headers"]:
        if name == _VERSION:
            version = value
        elif name == _METHOD:
            method = value
        elif name.startswith(_PARAM) or name == _SESSION:
            return False
    return (
        method in _METHODS and version is not None and version.decode("latin-1") in MODERN_PROTOCOL_VERSIONS
    )


async def read_body(receive: Receive, limit: int) -> tuple[list[Message], bytes | None]:
    """The request's messages as received and its body; the body is None past ``limit`` bytes or when the
    client went away (the messages then go to the SDK, which answers as it does)."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        size += len(message.get("body", b""))
        if size > limit:
            return messages, None
        if not message.get("more_body", False):
            return messages, b"".join(m.get("body", b"") for m in messages)


def replaying(messages: list[Message], receive: Receive) -> Receive:
    """``receive`` that first gives back the messages already read."""
    pending = list(messages)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


class DirectCalls:
    """The direct ``tools/call`` path of one MCP server (one set of rights)."""

    def __init__(self, server: MCPServer, security: TransportSecuritySettings) -> None:
        self.server = server
        self.security = TransportSecurityMiddleware(security)
        self._direct: dict[str, tuple[Any, bool]] = {}  # name -> (the tool looked at, its verdict)
        self._tools: tuple[Offered, str, bytes] | None = None  # tools offered, version, answer

    def _takes(self, name: str) -> bool:
        """Whether tool ``name`` exists and runs without the MCP context or ``Mcp-Param`` headers."""
        tool = self.server._tool_manager.get_tool(name)
        if tool is None:
            return False
        cached = self._direct.get(name)
        if cached is None or cached[0] is not tool:  # new, or registered again
            cached = self._direct[name] = (
                tool,
                tool.context_kwarg is None and "x-mcp-header" not in json.dumps(tool.parameters),
            )
        return cached[1]

    async def answer(self, body: bytes, scope: Scope, receive: Receive, send: Send) -> bool:
        """Answer the call and say True; False (nothing sent) where the SDK must answer it."""
        request = Request(scope, receive)
        if await self.security.validate_request(request, is_post=True) is not None:
            return False
        if not check_accept_headers(request)[0]:
            return False
        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError):
            return False
        if not isinstance(decoded, dict) or "id" not in decoded or decoded.get("method") not in PLAIN:
            return False
        raw = decoded.get("params")
        if raw is not None and (not isinstance(raw, dict) or set(raw) - PLAIN[decoded["method"]]):
            return False  # a cursor, a task, a multi-round-trip's requestState or inputResponses: the SDK's
        try:
            call = JSONRPCRequest.model_validate(decoded)
            params = (
                CallToolRequestParams.model_validate(call.params or {}, by_name=False)
                if call.method == "tools/call"
                else None
            )
        except ValidationError:
            return False
        if find_duplicated_routing_header(request.headers.items()) is not None:
            return False
        verdict = classify_inbound_request(decoded, headers=dict(request.headers))
        if not isinstance(verdict, InboundModernRoute):
            return False
        if params is None:  # tools/list: every tool, in one page
            await self._write(call.id, await self._listed(verdict.protocol_version), scope, receive, send)
        elif self._takes(params.name):
            await self._write(call.id, await self._result(params), scope, receive, send)
        else:
            return False
        return True

    async def _listed(self, version: str) -> bytes:
        """The serialised ``tools/list`` answer, made again only when the registered tools change."""
        now = registered(self.server)
        if self._tools is None or self._tools[:2] != (now, version):
            answer = ListToolsResult(tools=await self.server.list_tools()).model_dump(
                mode="json", by_alias=True, exclude_none=True
            )
            self._tools = (now, version, pydantic_core.to_json(self._stamped(answer)))
        return self._tools[2]

    def _stamped(self, answer: dict[str, Any]) -> dict[str, Any]:
        """``answer`` as the SDK completes a 2026-era result: its type, and the server's identity."""
        answer["resultType"] = "complete"
        answer["_meta"] = {SERVER_INFO: self.server._lowlevel_server.server_info_stamp}
        return answer

    async def _result(self, params: CallToolRequestParams) -> bytes | MCPError:
        try:
            result = await self.server._handle_call_tool(None, params)  # type: ignore[arg-type]
        except MCPError as exc:
            return exc
        if not isinstance(result, CallToolResult):  # pragma: no cover - retrievo's tools answer at once
            raise TypeError(f"{params.name} gave {type(result).__name__}, not a CallToolResult")
        structured = result.structured_content
        answer: dict[str, Any] = result.model_copy(update={"structured_content": None}).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        if structured is not None:
            answer["structuredContent"] = structured
        return pydantic_core.to_json(self._stamped(answer))

    async def _write(
        self, request_id: Any, result: bytes | MCPError, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """The JSON-RPC answer: ``result`` (serialised) or the error as the SDK maps it."""
        status, start = 200, b'{"jsonrpc":"2.0","id":' + pydantic_core.to_json(request_id)
        if isinstance(result, MCPError):
            error = modern_error_data(result)
            status = ERROR_CODE_HTTP_STATUS.get(error.code, 200)
            body = (
                start
                + b',"error":'
                + pydantic_core.to_json(error.model_dump(mode="json", by_alias=True, exclude_none=True))
                + b"}"
            )
        else:
            body = start + b',"result":' + result + b"}"
        headers = [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
