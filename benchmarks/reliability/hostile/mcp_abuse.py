"""MCP abuse over stdio and streamable HTTP with the official client: the server stays alive after each.

Every case must come back as a tool error (or a refused request) with a message — never an empty
"Error executing tool", never a traceback, never a secret — and a plain search must still work.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client, StdioServerParameters

from benchmarks.reliability.hostile.corpus import ROOT, write_corpus
from retrievo import Config, Engine

CASES: list[tuple[str, dict[str, Any]]] = [
    ("search", {"query": 42}),
    ("search", {"query": "x" * 20_000}),
    ("search", {"query": "leave", "limit": "five"}),  # "5" is forgiven on purpose (issue 34)
    ("search", {"query": "leave", "limit": "5" * 30}),
    ("search", {"query": "leave", "limit": True}),
    ("search", {"query": "leave", "limit": 2**70}),
    ("search", {"query": "leave", "limit": 1.5}),
    ("search", {"query": "leave", "mode": "fuzzy"}),
    ("search", {"query": "leave", "min_score": "high"}),
    ("search", {"query": "leave", "filters": "not an object"}),
    ("search", {"query": "leave", "filters": {"collection": "someone-elses"}}),
    ("search", {"query": "leave", "filters": {"path": "/" * 5000}}),
    ("search", {"query": "leave", "filters": {"metadata": {"a": {"b": {"c": [1] * 1000}}}}}),
    ("search", {"query": "leave", "filters": {"tags": ["t"] * 1000}}),
    ("search", {"query": "leave", "filters": {"date_from": "0000-99-99"}}),
    ("search", {}),
    ("get_context", {"query": "leave", "max_tokens": -1}),
    ("get_context", {"query": "leave", "max_tokens": "4e3"}),
    ("get_context", {"query": "leave", "neighbors": 10**9}),
    ("get_document", {"document_id": "../../etc/passwd"}),
    ("get_document", {"document_id": "doc_\x00"}),
    ("get_document", {"document_id": "x" * 101}),
    ("get_document", {"document_id": "doc_x", "start": 2**70}),
    ("get_document", {"document_id": "doc_x", "revision_id": "'; DROP TABLE revisions; --"}),
    ("find_similar", {"chunk_id": 2**70}),
    ("find_similar", {"chunk_id": -1}),
    ("find_similar", {"chunk_id": 1, "document_id": "doc_x"}),
    ("find_similar", {}),
    ("refresh_index", {"path": "/"}),
    ("refresh_index", {"path": "/etc/passwd"}),
    ("refresh_index", {"path": "../../.."}),
    ("refresh_index", {"path": "docs\x00/etc"}),
    ("refresh_index", {"path": "~"}),
    ("refresh_index", {"path": "x" * 5000}),
    ("refresh_index", {"path": ".", "collection": "someone-elses"}),
    ("index_status", {"collection": "x" * 1000}),
    ("find_symbol", {"pattern": ""}),
    ("find_symbol", {"pattern": "x", "limit": "0x5"}),
    ("find_symbol", {"pattern": "x", "kind": "spaceship"}),
    ("symbol_graph", {"symbol": "NoSuchSymbol"}),
    ("symbol_graph", {"symbol": "x", "depth": 99}),
    ("symbol_graph", {"symbol": "x", "direction": "sideways"}),
    ("symbol_graph", {"symbol": "x", "collection": "someone-elses"}),
    ("semanticSearch", {"query": ""}),
    ("semanticSearch", {"query": "claim", "top_k": "5.0"}),
    ("semanticSearch", {"query": "claim", "filters": {"planet": "mars"}}),
    ("semanticSearch", {"query": "claim", "read_context": {"baseline_id": 5}}),
    ("getContext", {"query": "claim", "max_tokens": -1}),
    ("getContext", {"query": "claim", "include_relationships": "yes"}),
    ("search_registry", {"query": "jira", "limit": 11}),
    ("search_registry", {"query": "jira", "entity_types": ["planet"]}),
    ("search_registry", {"query": "jira", "tags": {"not": "a list"}}),
    ("no_such_tool", {}),
]
# Tolerated by the MCP SDK, and harmless: an unknown tool argument is ignored; a POST without an
# Accept header is answered. The campaign records how they are answered rather than failing on them.
TOLERATED: list[tuple[str, dict[str, Any]]] = [("search", {"query": "leave", "unknown_argument": 1})]
RESOURCES = [
    "retrievo://document/../../etc/passwd",
    "retrievo://document/doc_missing",
    "retrievo://document/doc_x/revision/../../x",
    "file:///etc/passwd",
]


async def _alive(client: Client) -> bool:
    result = await client.call_tool("search", {"query": "annual leave", "limit": 1})
    return not result.is_error


async def _abuse(client: Client, problems: list[str]) -> int:
    done = 0
    for name, arguments in CASES:
        try:
            result = await client.call_tool(name, arguments)
            text = " ".join(getattr(c, "text", "") for c in result.content)
            if not result.is_error:
                problems.append(f"{name} {str(arguments)[:80]} was accepted")
            elif text.strip() in ("", f"Error executing tool {name}") or "Traceback" in text:
                problems.append(f"{name} {str(arguments)[:80]}: no useful message ({text[:100]!r})")
        except Exception as exc:  # a protocol-level refusal is fine; the server must survive it
            if "Traceback" in str(exc):
                problems.append(f"{name}: traceback in the error")
        if not await _alive(client):
            problems.append(f"server stopped answering after {name} {str(arguments)[:80]}")
        done += 1
    for uri in RESOURCES:
        try:
            await client.read_resource(uri)
            problems.append(f"resource {uri} was served")
        except Exception as exc:
            if "Traceback" in str(exc):
                problems.append(f"resource {uri}: traceback")
        if not await _alive(client):
            problems.append(f"server stopped answering after resource {uri}")
        done += 1
    return done


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server(db: Path, tools: str = "auto") -> Iterator[str]:
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "retrievo.surfaces.cli",
        "mcp",
        "--http",
        "--port",
        str(port),
        "--db",
        str(db),
        "--tools",
        tools,
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"the HTTP MCP server exited: {process.stderr.read() if process.stderr else ''}"
                    ) from None
                time.sleep(0.1)
        else:
            raise RuntimeError("the HTTP MCP server did not start within 60 s")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stderr:
            process.stderr.close()


def _raw_http_abuse(url: str, problems: list[str]) -> int:
    """Header and body abuse below the client: each gets a 4xx, and the server keeps serving."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}  # fmt: skip
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    cases: list[tuple[str, dict[str, str], Any]] = [
        ("foreign Origin", {**accept, "Origin": "http://evil.example"}, init),
        ("foreign Host", {**accept, "Host": "evil.example"}, init),
        ("not JSON", accept, b"{not json"),
        ("wrong content type", {**accept, "Content-Type": "text/plain"}, init),
        ("unknown session", {**accept, "mcp-session-id": "deadbeef"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        ("5 MB body", accept, b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"' + b"a" * 5_000_000 + b'"}}'),
        ("deeply nested", accept, b"[" * 100_000 + b"]" * 100_000),
    ]  # fmt: skip
    with httpx.Client(timeout=30) as http:
        for label, headers, body in cases:
            try:
                if isinstance(body, bytes):
                    response = http.post(url, headers=headers, content=body)
                else:
                    response = http.post(url, headers=headers, json=body)
                if response.status_code < 400:
                    problems.append(f"HTTP {label}: accepted with {response.status_code}")
                if "Traceback" in response.text:
                    problems.append(f"HTTP {label}: traceback in the response")
            except httpx.HTTPError as exc:
                problems.append(f"HTTP {label}: {type(exc).__name__}")
            try:
                socket.create_connection(
                    ("127.0.0.1", int(url.split(":")[2].split("/", maxsplit=1)[0])), timeout=2
                ).close()
            except OSError:
                problems.append(f"HTTP server gone after {label}")
    return len(cases)


async def _concurrent(url: str, clients: int, problems: list[str]) -> None:
    async def one(number: int) -> None:
        try:
            async with Client(url) as client:
                result = await client.call_tool("search", {"query": f"leave policy {number}", "limit": 3})
                if result.is_error:
                    problems.append(f"concurrent client {number}: {result.content}")
        except Exception as exc:
            problems.append(f"concurrent client {number}: {type(exc).__name__}: {str(exc)[:100]}")

    async with anyio.create_task_group() as group:
        for number in range(clients):
            group.start_soon(one, number)


def run(concurrent_clients: int = 100, documents: int = 50) -> dict[str, Any]:
    problems: list[str] = []
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as scratch:
        corpus = write_corpus(Path(scratch) / "corpus", documents)
        db = Path(scratch) / "m.db"
        with Engine(Config(db=db)) as engine:
            engine.index([corpus])
        stdio = StdioServerParameters(
            command=sys.executable,
            args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db), "--tools", "all"],
            cwd=str(ROOT),
        )

        async def over(target: StdioServerParameters | str, label: str) -> None:
            with anyio.fail_after(600):
                async with Client(target) as client:
                    counts[label] = await _abuse(client, problems)

        started = time.perf_counter()
        anyio.run(over, stdio, "stdio_cases")
        with http_server(db, tools="all") as url:
            anyio.run(over, url, "http_cases")
            counts["http_raw_cases"] = _raw_http_abuse(url, problems)
            concurrent_started = time.perf_counter()
            anyio.run(_concurrent, url, concurrent_clients, problems)
            counts["concurrent_clients"] = concurrent_clients
            concurrent_s = time.perf_counter() - concurrent_started
            anyio.run(over, url, "http_cases_after")
    return {**counts, "concurrent_s": round(concurrent_s, 1), "seconds": round(time.perf_counter() - started, 1),
            "problems": problems}  # fmt: skip
