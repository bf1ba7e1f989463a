"""The MCP server (official ``mcp`` SDK v2), assembled: each toolset's module registers its tools, the
toolsets not asked for are removed, and documents are offered as resources.

Nothing but protocol goes to stdout; logs go to stderr. The engine opens the index and loads the
model lazily; ``serve`` starts the model's load once the handshake is answered.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
from collections.abc import Iterable, Sequence
from importlib.metadata import version
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.types import NotificationParams

from retrievo.engine import Engine
from retrievo.errors import DocumentNotFound, RetrievoError
from retrievo.secrets import redact
from retrievo.surfaces.mcp.admin import register_admin_tools
from retrievo.surfaces.mcp.answers import holdings
from retrievo.surfaces.mcp.code import register_code_tools
from retrievo.surfaces.mcp.docs import register_docs_tools
from retrievo.surfaces.mcp.library import register_library_tools
from retrievo.surfaces.mcp.protocol import (
    PROMPT_TOOLSETS,
    register_completions,
    register_logging,
    register_prompts,
)
from retrievo.surfaces.mcp.records import register_record_tools
from retrievo.surfaces.mcp.registry import register_registry_tools
from retrievo.surfaces.mcp.scope import (
    Scope,
)
from retrievo.surfaces.mcp.similar import register_similar_tools
from retrievo.surfaces.mcp.toolsets import Offer, parse_toolsets, toolset_of
from retrievo.surfaces.mcp.wire import RetrievoMCPServer
from retrievo.surfaces.serialize import document_uri

log = logging.getLogger("retrievo.mcp")


def build_server(
    engine: Engine,
    collections: Sequence[str] | None = None,
    allow_refresh: bool = True,
    toolsets: Iterable[str] | None = None,
    shows_store: bool = True,
    announces: bool = True,
) -> RetrievoMCPServer:
    """``collections``: the only ones any tool or resource may touch (default: all).

    ``shows_store=False`` (a server reached over the network) leaves where the index lives out of
    ``index_status``: a caller learns its collections, never the server's paths.

    ``announces=False`` (a stateless transport) declares ``listChanged: false`` to handshake-era clients.

    ``allow_refresh=False`` leaves the tools that write (``refresh_index``, ``create_baseline``,
    ``regenerate_embeddings``) out entirely. ``toolsets`` (``retrievo.surfaces.mcp.toolsets``): the
    toolsets registered (default ``auto``: all but admin); of those, only the tools whose kind of
    content a served collection holds are listed.
    """
    picked = parse_toolsets(toolsets)
    allowed = frozenset(collections) if collections else None
    offer = Offer(engine.content_kinds, allowed)

    def served() -> list[str] | None:
        existing = engine.collections()
        return [c for c in existing if allowed is None or c in allowed] if existing is not None else None

    server = RetrievoMCPServer(
        name="retrievo", version=version("retrievo"), instructions=holdings(offer.kinds(), served()),
        log_level="WARNING", announces=announces,
    )  # fmt: skip
    server.offer = offer
    server.describe_holdings = lambda kinds: holdings(kinds, served())
    default = engine.config.collection
    if allowed is not None and default not in allowed:
        default = sorted(allowed)[0]
    scope = Scope(default, allowed, engine.collections, offer.held, engine.roots, local=shows_store)

    # One module per toolset (toolsets.py names them), registered in the order tools/list shows them.
    register_docs_tools(server, engine, scope)
    register_similar_tools(server, engine, scope)
    register_code_tools(server, engine, scope)
    register_record_tools(server, engine, scope)
    register_registry_tools(server, engine, scope)
    register_library_tools(server, engine, scope)
    register_admin_tools(server, engine, scope, offer, may_write=allow_refresh, shows_store=shows_store)

    for tool in server._tool_manager.list_tools():
        if toolset_of(tool.name) not in picked:
            server.remove_tool(tool.name)
    register_prompts(server, engine, scope)
    for name, toolset in PROMPT_TOOLSETS.items():
        if toolset not in picked:
            server.remove_prompt(name)
    if not server._prompt_manager.list_prompts():  # no prompts capability with zero prompts
        for method in ("prompts/list", "prompts/get"):
            server._lowlevel_server._request_handlers.pop(method, None)
    register_completions(server, engine, scope)
    register_logging(server)

    @server.resource(
        document_uri("{document_id}"), mime_type="text/plain", description="A document's current text."
    )
    async def document_resource(document_id: str) -> str:
        return await _read_resource(engine, document_id, None, scope.allowed)

    @server.resource(
        document_uri("{document_id}", "{revision_id}"),
        mime_type="text/plain",
        description="One revision's text.",
    )
    async def revision_resource(document_id: str, revision_id: str) -> str:
        return await _read_resource(engine, document_id, revision_id, scope.allowed)

    return server


async def _read_resource(
    engine: Engine, document_id: str, revision_id: str | None, allowed: frozenset[str] | None
) -> str:
    try:
        revision = await anyio.to_thread.run_sync(
            functools.partial(engine.document, document_id, revision_id, collections=allowed)
        )
    except DocumentNotFound as exc:
        raise ResourceNotFoundError(redact(str(exc))) from exc
    except RetrievoError as exc:
        raise ResourceError(redact(str(exc))) from exc
    return revision.text


def warm_in_background(engine: Engine) -> None:
    """Load the embedding model in a daemon thread (``Engine.warm_up``)."""
    threading.Thread(target=engine.warm_up, name="retrievo-warm-up", daemon=True).start()


def _initialized(server: RetrievoMCPServer) -> Any:
    async def initialized(ctx: Any, params: NotificationParams) -> None:
        server.started()

    return initialized


def serve(
    engine: Engine,
    http: bool,
    host: str,
    port: int,
    collections: Sequence[str] | None = None,
    allow_refresh: bool = True,
    toolsets: Iterable[str] | None = None,
) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    # Over HTTP a client may be anywhere: paths below their roots, the roots by name, no store location.
    server = build_server(engine, collections, allow_refresh, toolsets, shows_store=not http)
    # The model loads once the handshake is answered (at the client's first request after it), in the
    # background: `initialize` never shares the CPU with the load (12 s on a loaded machine when they
    # ran together), and an agent's first search seldom waits for it (a search arriving sooner waits
    # for the same load, never a second one).
    server.on_first_request = lambda: warm_in_background(engine)
    server._lowlevel_server.add_notification_handler(
        "notifications/initialized", NotificationParams, _initialized(server)
    )
    if http:
        server.run("streamable-http", host=host, port=port)
    else:
        server.run("stdio")
