"""The direct ``tools/call`` / ``tools/list`` path of MCP over HTTP (surfaces/http/mcp_direct.py) held to
the SDK: every request below gets the same status and the same JSON whether the direct path answers it
or the SDK does (the real app, index and model; the SDK path taken by turning the direct one off)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any

import anyio
import httpx
import pytest
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field

from retrievo import Config, Engine
from retrievo.surfaces.access import KeyRing
from retrievo.surfaces.http import mcp_direct
from retrievo.surfaces.http import settings as serve_settings
from retrievo.surfaces.http.app import build_app
from retrievo.surfaces.mcp.wire import RetrievoMCPServer

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Iterator[Engine]:
    from conftest import HANDBOOK

    base = tmp_path_factory.mktemp("direct")
    hr, it = base / "hr", base / "it"
    hr.mkdir(), it.mkdir()
    for name in ("leave-policy.md", "expenses.md"):
        shutil.copy(HANDBOOK / name, hr / name)
    shutil.copy(HANDBOOK / "security.md", it / "security.md")
    with Engine(Config(db=base / "direct.db", collection="hr"), embedder=minilm) as engine:
        engine.index([hr])
        engine.index([it], collection="it")
        yield engine


def request(
    method: str, params: dict[str, Any], *, name: str | None = None, request_id: Any = 1, **headers: str
) -> dict[str, Any]:
    """A request as the official client sends it (headers overridable; a header set to "" is left out)."""
    sent = {"accept": "application/json, text/event-stream", "content-type": "application/json",
            "mcp-protocol-version": VERSION, "mcp-method": method, **({"mcp-name": name} if name else {})}  # fmt: skip
    sent.update({key.replace("_", "-"): value for key, value in headers.items()})
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": META}}
    return {"headers": {k: v for k, v in sent.items() if v}, "content": json.dumps(body).encode()}


def call(tool: str, arguments: Any, request_id: Any = 1, **headers: str) -> dict[str, Any]:
    return request(
        "tools/call", {"name": tool, "arguments": arguments}, name=tool, request_id=request_id, **headers
    )


def normal(value: Any) -> Any:
    """JSON with the one field that differs between two runs (a search's duration) left out, and a text
    holding JSON read as JSON."""
    if isinstance(value, dict):
        return {key: normal(item) for key, item in value.items() if key != "search_duration_ms"}
    if isinstance(value, list):
        return [normal(item) for item in value]
    if isinstance(value, str) and value.startswith("{"):
        try:
            return normal(json.loads(value))
        except ValueError:
            return value
    return value


class Both:
    """A fresh app; each request sent with the direct path on, then off (the SDK answers)."""

    def __init__(self, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
        settings = serve_settings.load(
            None, {"rate": 1e9, "burst": 1e9, "max_body_bytes": 4000, "tools": ("all",)}
        )
        self.app = build_app(engine, settings)
        self.monkeypatch = monkeypatch
        self.direct_answers: list[bool] = []
        answer = mcp_direct.DirectCalls.answer

        async def counted(calls: mcp_direct.DirectCalls, *args: Any) -> bool:
            answered = await answer(calls, *args)
            self.direct_answers.append(answered)
            return answered

        monkeypatch.setattr(mcp_direct.DirectCalls, "answer", counted)

    def send(self, *requests: tuple[dict[str, Any], str]) -> list[tuple[tuple[int, Any], tuple[int, Any]]]:
        """For each (request, key): (status, JSON) from the direct path and from the SDK."""

        async def main() -> list[tuple[tuple[int, Any], tuple[int, Any]]]:
            pairs = []
            async with self.app.router.lifespan_context(self.app):
                transport = httpx.ASGITransport(app=self.app)
                async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
                    for sent, key in requests:
                        headers = {**sent["headers"], "authorization": f"Bearer {key}"}
                        answers = []
                        for direct in (True, False):
                            with self.monkeypatch.context() as patch:
                                if not direct:
                                    patch.setattr(mcp_direct, "eligible", lambda scope: False)
                                got = await client.post("/mcp", content=sent["content"], headers=headers)
                            json_answer = got.headers.get("content-type") == "application/json"
                            answers.append((got.status_code, normal(got.json()) if json_answer else got.text))
                        pairs.append((answers[0], answers[1]))
            return pairs

        return anyio.run(main)


@pytest.fixture
def both(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Both:
    return Both(engine, monkeypatch)


@pytest.fixture(scope="module")
def keys(engine: Engine) -> dict[str, str]:
    ring = KeyRing(lambda: engine._open_store(create=True))
    return {
        "all": ring.create("direct-all", "admin")[1],
        "hr": ring.create("direct-hr", "read", ("hr",))[1],
    }


ANSWERED_DIRECTLY = {
    "search": call("search", {"query": "parental leave weeks", "limit": 3}),
    "search, string id": call("search", {"query": "expenses receipts"}, request_id="req-7"),
    "a tool error (limit 0)": call("search", {"query": "leave", "limit": 0}),
    "an unknown argument": call("search", {"query": "leave", "bogus": 1}),
    "a missing document": call("get_document", {"document_id": "no-such-document"}),
    "another tool": call("index_status", {}),
    "get_context": call("get_context", {"query": "expenses", "max_tokens": 300}),
    "tools/list": request("tools/list", {}),
}
ANSWERED_BY_THE_SDK = {
    "an unknown tool": call("no_such_tool", {}),
    "tools/list with a cursor": request("tools/list", {"cursor": "abc"}),
    "Mcp-Name not the body's tool": {
        **call("search", {"query": "leave"}),
        **{"headers": {**call("search", {"query": "leave"})["headers"], "mcp-name": "get_document"}},
    },
    "no JSON in the Accept header": call("search", {"query": "leave"}, accept="text/event-stream"),
    "a text/plain body": call("search", {"query": "leave"}, content_type="text/plain"),
    "a body that is not JSON": {"headers": call("search", {})["headers"], "content": b"{not json"},
    "a batch": {"headers": call("search", {})["headers"], "content": b"[]"},
    "a handshake-era version in the header": call(
        "search", {"query": "leave"}, mcp_protocol_version="2025-11-25"
    ),
    "no Mcp-Method header": call("search", {"query": "leave"}, mcp_method=""),
    "a body over the limit": call("search", {"query": "leave " * 1000}),
    "arguments not an object": call("search", ["leave"]),
    "a foreign Host": call("search", {"query": "leave"}, host="evil.example"),
    "a forged requestState": request(
        "tools/call", {"name": "search", "arguments": {"query": "x"}, "requestState": "forged"}, name="search"
    ),
    "a task": request(
        "tools/call", {"name": "search", "arguments": {"query": "x"}, "task": {}}, name="search"
    ),
}
NOT_ERRORS = {
    "tools/list with a cursor",
    "a handshake-era version in the header",
    "a task",
}  # the SDK answers them


@pytest.mark.parametrize("case", list(ANSWERED_DIRECTLY))
def test_direct_answers_equal_the_sdks(both: Both, keys: dict[str, str], case: str) -> None:
    [(direct, sdk)] = both.send((ANSWERED_DIRECTLY[case], keys["all"]))
    assert both.direct_answers == [True]  # the direct path answered the first, not the second
    assert direct == sdk
    assert direct[0] == 200 and "result" in direct[1]


@pytest.mark.parametrize("case", list(ANSWERED_BY_THE_SDK))
def test_what_the_direct_path_declines_the_sdk_answers(both: Both, keys: dict[str, str], case: str) -> None:
    [(direct, sdk)] = both.send((ANSWERED_BY_THE_SDK[case], keys["all"]))
    assert True not in both.direct_answers
    assert direct == sdk
    refused = direct[0] != 200 or "error" in direct[1] or bool(direct[1]["result"].get("isError"))
    assert refused is (case not in NOT_ERRORS)


def test_a_keys_rights_hold_on_the_direct_path(both: Both, keys: dict[str, str]) -> None:
    """The hr key's server: its tool list, its collections only, and no write tools; the full key's
    list (the other server's) has them."""
    listed, found, refused, everything = both.send(
        (request("tools/list", {}), keys["hr"]),
        (call("search", {"query": "password security", "limit": 5}), keys["hr"]),
        (call("refresh_index", {}), keys["hr"]),
        (request("tools/list", {}), keys["all"]),
    )
    for direct, sdk in (listed, found, refused, everything):
        assert direct == sdk
    names = {tool["name"] for tool in listed[0][1]["result"]["tools"]}
    assert "search" in names and "refresh_index" not in names
    assert "refresh_index" in {tool["name"] for tool in everything[0][1]["result"]["tools"]}
    hits = found[0][1]["result"]["structuredContent"]["results"]
    assert hits and {hit["collection"] for hit in hits} == {"hr"}
    # a remote key: paths below the root, the root by its folder name, nothing of where the server keeps it
    answer = found[0][1]["result"]["structuredContent"]
    assert not any(Path(p).is_absolute() for p in [*(h["path"] for h in hits), *answer.get("roots", [])])
    assert refused[0][1]["result"]["isError"]
    assert both.direct_answers == [True, True, False, True]
    stamp = found[0][1]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert stamp == {"name": "retrievo", "version": version("retrievo")}


def test_a_client_gone_before_its_body_loses_nothing() -> None:
    """The body read stops at a disconnect and the messages go on to the SDK as they came."""
    messages = [{"type": "http.request", "body": b"{", "more_body": True}, {"type": "http.disconnect"}]
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    async def main() -> None:
        read, body = await mcp_direct.read_body(receive, 1000)
        assert body is None and read == messages
        replay = mcp_direct.replaying(read, receive)
        assert [await replay(), await replay()] == messages

    anyio.run(main)


def test_eligible_needs_post_a_modern_version_and_a_direct_method() -> None:
    def scope(method: str = "POST", **headers: str) -> dict[str, Any]:
        base = {"mcp-protocol-version": VERSION, "mcp-method": "tools/call", **headers}
        return {"method": method, "headers": [(k.encode(), v.encode()) for k, v in base.items() if v]}

    assert mcp_direct.eligible(scope())
    assert mcp_direct.eligible(scope(**{"mcp-method": "tools/list"}))
    assert not mcp_direct.eligible(scope("GET"))
    assert not mcp_direct.eligible(scope(**{"mcp-method": "resources/read"}))
    assert not mcp_direct.eligible(scope(**{"mcp-protocol-version": "2025-11-25"}))
    assert not mcp_direct.eligible(scope(**{"mcp-protocol-version": ""}))
    assert not mcp_direct.eligible(scope(**{"mcp-param-query": "x"}))
    assert not mcp_direct.eligible(scope(**{"mcp-session-id": "abc"}))


def test_tools_taking_the_mcp_context_or_header_parameters_go_to_the_sdk() -> None:
    server = RetrievoMCPServer(name="t")

    @server.tool()
    async def plain(text: str) -> str:
        return text

    @server.tool()
    async def reporting(text: str, ctx: Context) -> str:
        return text

    @server.tool()
    async def routed(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        return region

    calls = mcp_direct.DirectCalls(server, TransportSecuritySettings())
    assert [calls._takes(name) for name in ("plain", "reporting", "routed", "absent")] == [
        True,
        False,
        False,
        False,
    ]


def test_an_mcp_error_is_written_as_the_sdk_writes_it() -> None:
    """A tool raising MCPError (none of retrievo's does): the same status and body as the SDK's writer."""
    from mcp.server import _streamable_http_modern as sdk
    from mcp.server.runner import modern_error_data
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS, JSONRPCError

    error = MCPError(code=INVALID_PARAMS, message="no such thing", data={"why": "absent"})
    calls = mcp_direct.DirectCalls(RetrievoMCPServer(name="t"), TransportSecuritySettings())

    async def written(write: Any) -> tuple[int, Any]:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        await write({"type": "http", "headers": []}, receive, send)
        return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))

    async def main() -> None:
        ours = await written(lambda *asgi: calls._write("r1", error, *asgi))
        theirs = await written(
            lambda *asgi: sdk._write(
                JSONRPCError(jsonrpc="2.0", id="r1", error=modern_error_data(error)), *asgi
            )
        )
        assert ours == theirs and ours[0] != 200

    anyio.run(main)
