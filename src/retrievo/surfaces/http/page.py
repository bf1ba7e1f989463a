"""The search page: server-rendered HTML that works without JavaScript, enhanced by a little script; no build
step (files in ``static/``).

Without the script the form posts to ``/`` (the key in the body, never in the address) and the answer comes
back as a page; on a server without keys ``/?q=…`` is answered at once. With the script the same answer is
asked of ``POST /api/page/results`` with the key the person typed (kept in this tab's ``sessionStorage``
only) and swapped in. Both are rendered by ``answer_html``, from the same search the REST API runs, so the
page sees exactly what the key may see.

A citation opens ``/view``, rendered here too (``view``): at once on a server without keys; elsewhere the
view's form posts the citation with the key to ``/view``, or the script asks ``POST /api/page/document``.
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
from retrievo.surfaces.http.view import document_view, hidden_inputs, view_fields

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


async def json_fields(request: Request) -> dict[str, str] | None:
    """The script's fields: a JSON object's, each as text; None when the body is not one."""
    try:
        fields = await request.json()
    except ValueError:
        return None
    return {k: str(v) for k, v in fields.items()} if isinstance(fields, dict) else None


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
    """``shell.html`` (head, header with the key box, script) around ``index.main.html``, filled in."""
    main = Template((STATIC / f"{name}.main.html").read_text(encoding="utf-8")).substitute(
        q=esc(q), state=esc(state), state_class="warn" if warn else "", results=results,
        rendered="yes" if results or state else "",
    )  # fmt: skip
    return _shell(title, auth_required, main, "search-form")


def _shell(title: str, auth_required: bool, main: str, key_form: str) -> HTMLResponse:
    html = Template((STATIC / "shell.html").read_text(encoding="utf-8")).substitute(
        auth="required" if auth_required else "off", key_hidden="" if auth_required else "hidden", title=title,
        main=main, key_form=key_form,
    )  # fmt: skip
    return HTMLResponse(html, headers=HEADERS)


def _render_view(
    auth_required: bool, fields: Mapping[str, str], found: Mapping[str, Any] | None = None, refused: str = ""
) -> HTMLResponse:
    """``view.main.html``: the document rendered (``found``), or the form that opens it with a key."""
    shown = found if found and "document" in found else None
    error = refused or str((found or {}).get("error", ""))
    if shown is None and not error:
        error = (
            "Enter your API key above and open the document (the key goes in the form, never the address)."
        )
    main = Template((STATIC / "view.main.html").read_text(encoding="utf-8")).substitute(
        rendered="yes" if shown else "", title=esc(shown["title"] if shown else "The cited document"),
        where=shown["where"] if shown else "", state=esc(shown["state"] if shown else error),
        state_class="" if shown else "warn", fields=hidden_inputs(view_fields(fields)),
        form_hidden=" hidden" if shown or not auth_required else "", document=shown["document"] if shown else "",
    )  # fmt: skip
    return _shell("document", auth_required, main, "view-form")


def add_page_routes(
    app: FastAPI, servers: McpServers, keys: KeyRing, failures: FailureThrottle, bucket: TokenBucket
) -> None:
    auth_required = not servers.settings.no_auth

    def refusal(principal: Principal | float | str | None) -> str | None:
        """Why the page's form may not be answered (no key, throttled, over the rate, …), or None."""
        if isinstance(principal, str):
            return principal
        if principal is None:
            return UNAUTHORIZED
        if isinstance(principal, float):
            return THROTTLED.format(math.ceil(principal))
        if (wait := bucket.take(principal.key_id or "operator")) > 0:
            return RATE_LIMITED.format(math.ceil(wait))
        return None

    async def form_principal(request: Request) -> tuple[Principal | float | str | None, dict[str, str]]:
        """The caller the form's key names (read from the body, never the address; a refusal's words when
        the form is too large) and the form's other fields."""
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return "the form is too large", {}
        fields = {name: values[-1] for name, values in parse_qs(body.decode("utf-8", "replace")).items()}
        if not auth_required:
            return OPERATOR, fields
        token = fields.pop("key", "").strip()
        client = request.client.host if request.client else "-"
        return (await check_key(keys, failures, token, client) if token else None), fields

    async def page_for(principal: Principal | float | str | None, fields: Mapping[str, str]) -> HTMLResponse:
        q = fields.get("q", "")
        refused = refusal(principal)
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
        principal, fields = await form_principal(request)
        return await page_for(principal, fields)

    @app.post("/api/page/results", include_in_schema=False)
    async def results_fragment(request: Request) -> JSONResponse:
        """The script's search: the page's fields as JSON, the answer as the HTML the page shows."""
        fields = await json_fields(request)
        if fields is None:
            return JSONResponse({"error": "send the page's fields as a JSON object"}, status_code=400)
        status, found = await answer(servers, request.state.principal, fields)
        return JSONResponse(found, status_code=status)

    async def view_for(principal: Principal | float | str | None, fields: Mapping[str, str]) -> HTMLResponse:
        refused = refusal(principal)
        if refused is not None or not isinstance(principal, Principal):
            return _render_view(auth_required, fields, refused=refused or UNAUTHORIZED)
        _, found = await document_view(servers, principal, fields)
        return _render_view(auth_required, fields, found)

    @app.get("/view", include_in_schema=False)
    async def document_page(request: Request) -> HTMLResponse:
        """A citation: rendered at once on a keyless (loopback) server, else the form that asks for the key."""
        fields = dict(request.query_params.items())
        if not auth_required:
            return await view_for(OPERATOR, fields)
        return _render_view(auth_required, fields)

    @app.post("/view", include_in_schema=False)
    async def document_form(request: Request) -> HTMLResponse:
        """The view's form posted without the script: the key and the citation in the body."""
        principal, fields = await form_principal(request)
        return await view_for(principal, fields)

    @app.post("/api/page/document", include_in_schema=False)
    async def document_fragment(request: Request) -> JSONResponse:
        """The script's view: the citation as JSON, the document as the HTML the page shows."""
        fields = await json_fields(request)
        if fields is None:
            return JSONResponse({"error": "send the citation's fields as a JSON object"}, status_code=400)
        status, found = await document_view(servers, request.state.principal, fields)
        return JSONResponse(found, status_code=status)

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
