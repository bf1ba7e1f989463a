"""The search page: server-rendered HTML that works without JavaScript, enhanced by a little script; no build
step (files in ``static/``).

Without the script the form posts to ``/`` (the key in the body, never in the address) and the answer comes
back as a page; on a server without keys ``/?q=…`` is answered at once. With the script the same answer is
asked of ``POST /api/page/results`` with the key the person typed (kept in this tab's ``sessionStorage``
only) and swapped in. Both are rendered by ``answer_html``, from the same search the REST API runs, so the
page sees exactly what the key may see.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from string import Template
from typing import Any
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from mcp.server.mcpserver.exceptions import ToolError
from starlette.staticfiles import StaticFiles

from retrievo.surfaces.access import FailureThrottle, KeyRing, Principal, TokenBucket
from retrievo.surfaces.http.answer_html import esc, results_html, state_of
from retrievo.surfaces.http.gate import OPERATOR, RATE_LIMITED, THROTTLED, UNAUTHORIZED, check_key
from retrievo.surfaces.http.mcp_mount import McpServers, rights_of
from retrievo.surfaces.http.rest import status_of

STATIC = Path(__file__).resolve().parent / "static"
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
MAX_FORM_BYTES = 64 * 1024
FILTERS = ("collection", "path", "date_from", "date_to")


def search_arguments(fields: Mapping[str, str]) -> dict[str, Any]:
    """The page's fields (form or script) as the search tool's arguments: ten files, full passages."""
    value = {name: str(fields.get(name) or "").strip() for name in fields}
    filters: dict[str, Any] = {name: value[name] for name in FILTERS if value.get(name)}
    if value.get("kind"):
        filters["kind"] = [value["kind"]]
    tags = [t.strip() for t in value.get("tags", "").split(",") if t.strip()]
    if tags:
        filters["tags"] = tags
    metadata = {name: value[name] for name in ("layer", "element_type") if value.get(name)}
    if metadata:
        filters["metadata"] = metadata
    return {
        "query": value.get("q", ""), "limit": 10, "mode": value.get("mode") or "hybrid", "filters": filters,
        "explain": value.get("explain") in ("on", "true", "1"), "detail": "full", "group_by": "file",
    }  # fmt: skip


async def answer(
    servers: McpServers, principal: Principal, fields: Mapping[str, str]
) -> tuple[int, dict[str, Any]]:
    """(HTTP status, {"html", "state", "warn"} or {"error"}) for one search from the page."""
    arguments = search_arguments(fields)
    if not arguments["query"]:
        return 400, {"error": "type a question or some words to search for"}
    server = servers.rest_server(rights_of(principal, servers.settings))
    try:
        result = await server.call_tool("search", arguments)
    except ToolError as exc:
        return status_of(exc), {"error": str(exc).removeprefix("Error executing tool search: ")}
    data: dict[str, Any] = getattr(result, "structured_content", None) or {}
    state, warn = state_of(data)
    return 200, {
        "html": results_html(data, arguments["query"], arguments["explain"]),
        "state": state,
        "warn": warn,
    }


def _render(
    name: str,
    title: str,
    auth_required: bool,
    q: str = "",
    state: str = "",
    warn: bool = False,
    results: str = "",
) -> HTMLResponse:
    """``shell.html`` (head, header with the key box, script) around ``<name>.main.html``, filled in."""
    shell = Template((STATIC / "shell.html").read_text(encoding="utf-8"))
    main = Template((STATIC / f"{name}.main.html").read_text(encoding="utf-8")).substitute(
        q=esc(q), state=esc(state), state_class="warn" if warn else "", results=results,
        rendered="yes" if results or state else "",
    )  # fmt: skip
    html = shell.substitute(
        auth="required" if auth_required else "off", key_hidden="" if auth_required else "hidden", title=title,
        main=main,
    )  # fmt: skip
    return HTMLResponse(html, headers=HEADERS)


def add_page_routes(
    app: FastAPI, servers: McpServers, keys: KeyRing, failures: FailureThrottle, bucket: TokenBucket
) -> None:
    auth_required = not servers.settings.no_auth

    async def page_for(principal: Principal | float | None, fields: Mapping[str, str]) -> HTMLResponse:
        q = fields.get("q", "")
        refused = None
        if principal is None:
            refused = UNAUTHORIZED
        elif isinstance(principal, float):
            refused = THROTTLED.format(math.ceil(principal))
        elif (wait := bucket.take(principal.key_id or "operator")) > 0:
            refused = RATE_LIMITED.format(math.ceil(wait))
        if refused is not None or not isinstance(principal, Principal):
            return _render("index", "search", auth_required, q, refused or UNAUTHORIZED, True)
        status, found = await answer(servers, principal, fields)
        if status != 200:
            return _render("index", "search", auth_required, q, found["error"], True)
        return _render("index", "search", auth_required, q, found["state"], found["warn"], found["html"])

    @app.get("/", include_in_schema=False)
    async def search_page(request: Request) -> HTMLResponse:
        fields = {name: value for name, value in request.query_params.items()}
        if fields.get("q", "").strip() and not auth_required:  # a keyless (loopback) server answers at once
            return await page_for(OPERATOR, fields)
        return _render("index", "search", auth_required, fields.get("q", ""))

    @app.post("/", include_in_schema=False)
    async def search_form(request: Request) -> HTMLResponse:
        """The form posted without the script: the key in the body, the answer as a page."""
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return _render("index", "search", auth_required, "", "the form is too large", True)
        fields = {name: values[-1] for name, values in parse_qs(body.decode("utf-8", "replace")).items()}
        if not auth_required:
            return await page_for(OPERATOR, fields)
        token = fields.pop("key", "").strip()
        client = request.client.host if request.client else "-"
        principal = await check_key(keys, failures, token, client) if token else None
        return await page_for(principal, fields)

    @app.post("/api/page/results", include_in_schema=False)
    async def results_fragment(request: Request) -> JSONResponse:
        """The script's search: the page's fields as JSON, the answer as the HTML the page shows."""
        try:
            fields = await request.json()
        except ValueError:
            fields = None
        if not isinstance(fields, dict):
            return JSONResponse({"error": "send the page's fields as a JSON object"}, status_code=400)
        status, found = await answer(servers, request.state.principal, {k: str(v) for k, v in fields.items()})
        return JSONResponse(found, status_code=status)

    @app.get("/view", include_in_schema=False)
    async def document_page() -> HTMLResponse:
        return _render("view", "document", auth_required)

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
