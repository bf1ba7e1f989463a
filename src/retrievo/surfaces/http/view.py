"""``/view``: one cited document, read through the ``get_document`` tool with the caller's rights and
rendered here (``document_html``), for the page without its script (a link, or a form posted with the key)
and with it (``POST /api/page/document``, swapped in) alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ToolError

from retrievo.surfaces.access import Principal
from retrievo.surfaces.http.answer_html import esc
from retrievo.surfaces.http.document_html import RENDER_LIMIT, SHOWN_AS, cited, document_html, format_of
from retrievo.surfaces.http.mcp_mount import McpServers, rights_of
from retrievo.surfaces.http.rest import status_of

FIELDS = ("document_id", "revision_id", "start", "end", "line_start", "line_end", "as")
NUMBERS = ("start", "end", "line_start", "line_end")
MAX_CHARS = 5_000_000  # read at most this much of a document (pages of 100,000 characters)


def view_fields(given: Mapping[str, str]) -> dict[str, str]:
    """The citation's fields from an address or a form, the rest left out."""
    return {name: str(given[name]).strip() for name in FIELDS if str(given.get(name) or "").strip()}


def hidden_inputs(fields: Mapping[str, str]) -> str:
    """The citation as the view form's hidden fields (posted with the key when there is no script)."""
    return "".join(f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">' for k, v in fields.items())


def _numbers(fields: Mapping[str, str]) -> dict[str, int | None] | str:
    out: dict[str, int | None] = {}
    for name in NUMBERS:
        value = fields.get(name)
        if value is not None and not value.isdigit():
            return f"{name} must be a whole number, not {value!r}"
        out[name] = int(value) if value is not None else None
    return out


async def _read(server: Any, fields: Mapping[str, str]) -> dict[str, Any]:
    """The whole revision (up to ``MAX_CHARS``), its text joined from ``get_document``'s pages."""
    arguments: dict[str, Any] = {"document_id": fields["document_id"], "max_chars": 100_000, "start": 0}
    if fields.get("revision_id"):
        arguments["revision_id"] = fields["revision_id"]
    parts: list[str] = []
    read = 0
    while True:
        result = await server.call_tool("get_document", arguments)
        page: dict[str, Any] = getattr(result, "structured_content", None) or {}
        parts.append(str(page.get("text", "")))
        read += len(parts[-1])
        if page.get("next_start") is None or read >= MAX_CHARS:
            return {**page, "text": "".join(parts)}
        arguments["start"] = page["next_start"]


def _switch(fields: Mapping[str, str], shown: str, rendered: str) -> str:
    """A link to the other way of showing this document: as rendered, or as the text indexed."""
    if rendered == "text":
        return ""
    other = {k: v for k, v in fields.items() if k != "as"}
    if shown != "text":
        other["as"] = "text"
    label = "the text as indexed" if shown != "text" else f"as {SHOWN_AS[rendered]}"
    return f' · <a href="/view?{esc(urlencode(other))}#hit">{esc(label)}</a>'


async def document_view(
    servers: McpServers, principal: Principal, given: Mapping[str, str]
) -> tuple[int, dict[str, Any]]:
    """(HTTP status, {"title", "where", "state", "document"} or {"error"}) for one cited document."""
    fields = view_fields(given)
    if not fields.get("document_id"):
        return 400, {"error": "no document named: open a citation from the results"}
    numbers = _numbers(fields)
    if isinstance(numbers, str):
        return 400, {"error": numbers}
    server = servers.rest_server(rights_of(principal, servers.settings))
    try:
        page = await _read(server, fields)
    except ToolError as exc:
        return status_of(exc), {"error": str(exc).removeprefix("Error executing tool get_document: ")}
    text, path = str(page.get("text", "")), str(page.get("path", ""))
    rendered = format_of(path)
    too_long = len(text) > RENDER_LIMIT.get(rendered, len(text))
    rendered = "text" if too_long else rendered
    shown = "text" if fields.get("as") == "text" else rendered
    cite = cited(text, numbers["start"], numbers["end"], numbers["line_start"], numbers["line_end"])
    revision = str(page.get("uri", "")).rsplit("/revision/", 1)[-1]
    where = f"{esc(path)} · revision {esc(revision)}{'' if page.get('is_current') else ' (not current)'}"
    lines = numbers["line_start"] is not None
    named = f"lines ({cite.first}–{cite.last})" if lines else f"passage (characters {cite.start}–{cite.end})"
    if shown == "text":
        state = f"The cited {named} {'are' if lines else 'is'} marked."
    else:
        state = f"Shown as {SHOWN_AS[shown]}; the blocks holding the cited {named} are marked."
    if too_long:
        state += f" Too long to render as {SHOWN_AS[format_of(path)]}: shown as its text."
    if page.get("next_start") is not None:
        state += f" Only the first {MAX_CHARS:,} characters are shown."
    return 200, {
        "title": str(page.get("title") or path),
        "where": where + _switch(fields, shown, rendered),
        "state": state,
        "document": await anyio.to_thread.run_sync(document_html, text, path, cite, shown),
    }
