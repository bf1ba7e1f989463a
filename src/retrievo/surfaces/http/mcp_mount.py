"""MCP over streamable HTTP at ``/mcp``, one MCP server per set of rights.

A caller's rights (the collections it may reach, whether it may write) pick an MCP server built for
exactly those rights, so ``tools/list`` shows only what the key may call and every tool and resource
is confined the way ``retrievo mcp --collection`` confines them. Servers are stateless (each request
stands alone, so any worker can answer it and each one is authenticated) and answer in JSON.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from retrievo.engine import Engine
from retrievo.surfaces.access import Principal
from retrievo.surfaces.http import mcp_direct
from retrievo.surfaces.http.mcp_direct import DirectCalls
from retrievo.surfaces.http.settings import ServeSettings, is_loopback
from retrievo.surfaces.mcp import build_server

Rights = tuple[frozenset[str] | None, bool]


def rights_of(principal: Principal, settings: ServeSettings) -> Rights:
    served = frozenset(settings.collections) or None
    return principal.within(served), settings.allow_refresh and principal.may("write")


def security_for(settings: ServeSettings) -> TransportSecuritySettings:
    """DNS-rebinding protection on loopback (a browser page must not reach a keyless local server)."""
    if is_loopback(settings.host):
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "testserver"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


class McpServers:
    """The MCP servers by rights, created on first use and run for the app's lifetime."""

    def __init__(self, engine: Engine, settings: ServeSettings) -> None:
        self.engine = engine
        self.settings = settings
        # by rights: the server, its SDK transport, its direct path for stateless calls
        self._servers: dict[Rights, tuple[MCPServer, StreamableHTTPSessionManager, DirectCalls]] = {}
        self._rest: dict[Rights, MCPServer] = {}  # by rights: the server REST calls (every toolset)
        self._lock = anyio.Lock()
        self._tasks: TaskGroup | None = None

    def start(self, tasks: TaskGroup) -> None:
        self._tasks = tasks

    def rest_server(self, rights: Rights) -> MCPServer:
        """The server REST calls for these rights: every toolset (an HTTP route costs an agent nothing)."""
        if rights not in self._rest:
            collections = sorted(rights[0]) if rights[0] is not None else None
            self._rest[rights] = build_server(
                self.engine, collections, allow_refresh=rights[1], toolsets=["all"], shows_store=False
            )
        return self._rest[rights]

    def server(self, rights: Rights) -> MCPServer:
        """The MCP server for these rights (built now if new; its HTTP side starts on first request),
        with the toolsets of the settings."""
        if rights not in self._servers:
            collections: Sequence[str] | None = sorted(rights[0]) if rights[0] is not None else None
            server = build_server(
                self.engine,
                collections,
                allow_refresh=rights[1],
                toolsets=self.settings.tools,
                shows_store=False,
                announces=False,  # stateless: no channel a list change could be sent on
            )
            security = security_for(self.settings)
            manager = StreamableHTTPSessionManager(
                app=server._lowlevel_server,
                stateless=True,
                json_response=True,
                security_settings=security,
                max_request_body_size=self.settings.max_body_bytes,
            )
            self._servers[rights] = (server, manager, DirectCalls(server, security))
        return self._servers[rights][0]

    async def _run(self, manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]) -> None:
        async with manager.run():
            task_status.started()
            await anyio.sleep_forever()

    async def handle(self, principal: Principal, scope: Scope, receive: Receive, send: Send) -> None:
        rights = rights_of(principal, self.settings)
        async with self._lock:
            known = rights in self._servers
            self.server(rights)
            _, manager, direct = self._servers[rights]
            if not known or not manager._has_started:
                if self._tasks is None:
                    raise RuntimeError("the MCP endpoint runs inside the app's lifespan")
                await self._tasks.start(self._run, manager)
        if mcp_direct.eligible(scope):  # a stateless tools/call: answered without the SDK's runner
            messages, body = await mcp_direct.read_body(receive, self.settings.max_body_bytes)
            if body is not None and await direct.answer(body, scope, receive, send):
                return
            receive = mcp_direct.replaying(messages, receive)
        await manager.handle_request(scope, receive, send)
