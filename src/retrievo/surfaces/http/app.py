"""The ASGI app of ``retrievo serve``: REST under ``/api``, MCP at ``/mcp``, the search page at ``/``."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict
from importlib.metadata import version

import anyio
import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.errors import RetrievoError
from retrievo.operations.jobs import JobTaker
from retrievo.secrets import redact
from retrievo.surfaces.access import SCOPES, FailureThrottle, KeyRing, Principal, SharedRate, TokenBucket
from retrievo.surfaces.http import page
from retrievo.surfaces.http import settings as serve_settings
from retrievo.surfaces.http.embeddings import add_embedding_routes
from retrievo.surfaces.http.gate import Gate
from retrievo.surfaces.http.mcp_mount import McpServers, Rights, rights_of
from retrievo.surfaces.http.positions import Positions
from retrievo.surfaces.http.rest import add_tool_routes, arguments_of, call_tool, error, install_openapi
from retrievo.surfaces.http.settings import ServeSettings

log = logging.getLogger("retrievo.http")
DESCRIPTION = (
    "Hybrid retrieval over the indexed documents, code, records and registry. Every MCP tool has a REST "
    "twin here, `POST /api/<tool>`, taking the tool's arguments and answering the same JSON. Send "
    "`Authorization: Bearer <key>` (keys: `retrievo keys create`)."
)


class McpEndpoint:
    """``/mcp``: hands the request to the MCP server built for the caller's rights."""

    def __init__(self, servers: McpServers) -> None:
        self.servers = servers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal: Principal = scope["state"]["principal"]
        await self.servers.handle(principal, scope, receive, send)


def build_app(engine: Engine, settings: ServeSettings, keys: KeyRing | None = None) -> FastAPI:
    keys = keys or KeyRing(lambda: engine.open_store(create=True))
    servers = McpServers(engine, settings)
    bucket = TokenBucket(settings.rate, settings.burst)  # per key; shared by the tier on PostgreSQL
    failures = FailureThrottle()  # failed logins, per key id and per client: the API's, MCP's and the page's

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # On PostgreSQL the servers are a tier: each takes jobs from the store (retrievo.operations.jobs.JobTaker) and
        # shares each key's rate with the others (retrievo.surfaces.access.SharedRate).
        taker = JobTaker(engine).start() if engine.config.store else None
        shared = (
            SharedRate(bucket, lambda: engine.open_store(create=True), taker.owner).start()
            if taker is not None
            else None
        )
        async with anyio.create_task_group() as tasks:
            servers.start(tasks)
            yield
            tasks.cancel_scope.cancel()
        if taker is not None:
            taker.stop()
        if shared is not None:
            shared.stop()
        log.info(json.dumps({"event": "stopped", "detail": "requests in flight finished"}))

    app = FastAPI(
        title="retrievo", version=version("retrievo"), description=DESCRIPTION, lifespan=lifespan,
        docs_url="/api/docs", redoc_url=None, openapi_url="/api/openapi.json",
    )  # fmt: skip
    app.state.max_body_bytes = (
        settings.max_body_bytes
    )  # the REST routes' limit, as /mcp's (rest.arguments_of)
    add_tool_routes(app, servers, servers.rest_server((frozenset(settings.collections) or None, True)))

    @app.get("/healthz", tags=["operations"], summary="The process is up.")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["operations"], summary="The index can be read.")
    async def readyz() -> JSONResponse:
        try:
            await anyio.to_thread.run_sync(lambda: engine.open_store().list_collections())
        except RetrievoError as exc:
            log.warning("not ready: %s", redact(str(exc)))
            return JSONResponse({"status": "not ready"}, status_code=503)
        return JSONResponse({"status": "ready"})

    @app.get("/api/status", tags=["tools"], summary="index_status (GET form).")
    async def status(request: Request) -> Response:
        # The REST server has every toolset, whatever MCP's `tools` offers: index_status is always here.
        server = servers.rest_server(_rights(request, servers))
        return await call_tool(server, "index_status", {})

    @app.get("/api/keys", tags=["keys"], summary="Keys, without secrets (admin).")
    async def list_keys(request: Request) -> JSONResponse:
        if not request.state.principal.may("admin"):
            return error(403, "listing keys needs an admin key")
        found = await anyio.to_thread.run_sync(keys.list)
        return JSONResponse({"keys": [asdict(key) for key in found]})

    @app.post("/api/keys", tags=["keys"], summary="Create a key; its secret is in `key`, shown once (admin).")
    async def create_key(request: Request) -> JSONResponse:
        if not request.state.principal.may("admin"):
            return error(403, "creating keys needs an admin key")
        body = await arguments_of(request)
        if isinstance(body, JSONResponse):
            return body
        name, scope, collections = body.get("name"), body.get("scope", "read"), body.get("collections", [])
        expires = body.get("expires")
        if (
            not isinstance(name, str)
            or scope not in SCOPES
            or not isinstance(collections, list)
            or not all(isinstance(c, str) for c in collections)
            or not isinstance(expires, str | None)
        ):
            return error(
                400,
                f"send {{name: str, scope: {'|'.join(SCOPES)}, collections: [str], expires: 30d|ISO time}}",
            )
        try:
            key, token = await anyio.to_thread.run_sync(keys.create, name, scope, tuple(collections), expires)
        except RetrievoError as exc:
            return error(400, str(exc))
        return JSONResponse({**asdict(key), "key": token}, status_code=201)

    @app.delete("/api/keys/{key_id}", tags=["keys"], summary="Revoke a key by id or name (admin).")
    async def revoke_key(request: Request, key_id: str) -> JSONResponse:
        if not request.state.principal.may("admin"):
            return error(403, "revoking keys needs an admin key")
        try:
            key = await anyio.to_thread.run_sync(keys.revoke, key_id)
        except RetrievoError as exc:
            return error(404, str(exc))
        return JSONResponse(asdict(key))

    add_embedding_routes(app, engine)
    app.router.routes.append(Route("/mcp", McpEndpoint(servers), methods=["GET", "POST", "DELETE"]))
    page.add_page_routes(app, servers, keys, failures, bucket)
    install_openapi(app)
    app.add_middleware(Gate, keys=keys, settings=settings, bucket=bucket, failures=failures)
    if engine.config.read_stores:  # read replicas: positions in headers (surfaces/http/positions.py)
        app.add_middleware(Positions, position=engine.position)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=list(settings.cors_origins), allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["authorization", "content-type", "mcp-protocol-version", "mcp-session-id"],
        )  # fmt: skip
    return app


def _rights(request: Request, servers: McpServers) -> Rights:
    return rights_of(request.state.principal, servers.settings)


def configure_logging() -> None:
    """Warnings of everything, and one JSON line per request, on stderr."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    log.setLevel(logging.INFO)


def from_environment() -> FastAPI:
    """The app for ``uvicorn --factory`` with several workers: engine and serve settings from the environment."""
    configure_logging()
    engine = Engine(Config.from_env())
    engine.warm_up()  # each worker loads the default collection's model before it takes requests, as one process does
    return build_app(engine, serve_settings.load(None, {}))
