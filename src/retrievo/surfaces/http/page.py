"""The search page: server-rendered HTML, a little JavaScript, no build step (files in ``static/``).

The HTML holds no data: the script asks the REST API with the key the person typed (kept in this tab's
``sessionStorage`` only), so the page sees exactly what the key may see.
"""

from __future__ import annotations

from pathlib import Path
from string import Template

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parent / "static"
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _render(name: str, title: str, auth_required: bool) -> HTMLResponse:
    """``shell.html`` (head, header with the key box, script) around ``<name>.main.html``."""
    shell = Template((STATIC / "shell.html").read_text(encoding="utf-8"))
    main = (STATIC / f"{name}.main.html").read_text(encoding="utf-8")
    html = shell.substitute(auth="required" if auth_required else "off", title=title, main=main)
    return HTMLResponse(html, headers=HEADERS)


def add_page_routes(app: FastAPI, auth_required: bool) -> None:
    @app.get("/", include_in_schema=False)
    async def search_page() -> HTMLResponse:
        return _render("index", "search", auth_required)

    @app.get("/view", include_in_schema=False)
    async def document_page() -> HTMLResponse:
        return _render("view", "document", auth_required)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
