"""The MCP server driven by the SDK's real client over stdio (a subprocess) and streamable HTTP (a port)."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from retrievo import Config, Engine

# Every toolset (``--tools all``) over an index of documents only: the code, records and registry
# tools are not offered until such content is indexed (tests/test_mcp_agent.py).
TOOLS = {
    "search", "get_context", "get_document", "find_similar", "index_status", "refresh_index", "create_baseline",
    "verify_index", "regenerate_embeddings", "search_library",
}  # fmt: skip
DEFAULT_TOOLS = {"search", "get_context", "get_document"}
ClientTest = Callable[[Client], Awaitable[None]]


@pytest.fixture(scope="module")
def indexed_db(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> tuple[Path, Path]:
    import shutil

    from conftest import HANDBOOK

    base = tmp_path_factory.mktemp("mcp")
    corpus = base / "handbook"
    shutil.copytree(HANDBOOK, corpus)
    db = base / "mcp.db"
    with Engine(Config(db=db), embedder=minilm) as engine:
        engine.index([corpus])
    return db, corpus


def _stdio(db: Path, tools: str = "all") -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db), "--tools", tools]
    )


@pytest.fixture(scope="module")
def http_url(indexed_db: tuple[Path, Path]) -> Iterator[str]:
    from benchmarks.reliability.hostile.mcp_abuse import http_server

    with http_server(indexed_db[0], tools="all") as url:
        yield url


def run_client(target: StdioServerParameters | str, test: ClientTest) -> None:
    async def main() -> None:
        with anyio.fail_after(120):
            async with Client(target) as client:
                await test(client)

    anyio.run(main)


async def call(
    client: Client, name: str, arguments: dict[str, Any], schemas: dict[str, Any]
) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    structured = result.structured_content
    assert structured is not None
    jsonschema.validate(structured, schemas[name])
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith(f"{name}:") and text != json.dumps(
        structured
    )  # a short reading, not the JSON again
    return structured


async def exercise_every_tool(client: Client, corpus: Path) -> None:
    listed = (await client.list_tools()).tools
    assert {tool.name for tool in listed} == TOOLS
    schemas = {}
    for tool in listed:
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.output_schema is not None, f"{tool.name} has no outputSchema"
        schemas[tool.name] = tool.output_schema
    search_props = next(t for t in listed if t.name == "search").input_schema["properties"]
    assert search_props["limit"]["maximum"] == 50 and "maxLength" not in search_props["query"]
    too_long = await client.call_tool("search", {"query": "x" * 10_001})  # the cap, said by the refusal
    assert too_long.is_error and "10000" in too_long.content[0].text  # type: ignore[union-attr]

    question = {"query": "who approves parental leave", "limit": 3, "explain": True}
    brief = (await call(client, "search", question, schemas))["results"][0]
    found = await call(client, "search", {**question, "detail": "full"}, schemas)
    top = found["results"][0]
    assert found["search_mode"] == "hybrid" and "Parental leave" in top["context"]
    assert "**" in brief["excerpt"] and "text" not in brief and set(top["explain"]) == {"keyword", "semantic"}
    # paths below the root (issue 66); the root where it is over stdio, by its folder name over HTTP
    (root,) = found["roots"]
    assert not Path(top["path"]).is_absolute() and root in (str(corpus), corpus.name)
    shown = (corpus / top["path"]).read_text()[top["start"] : top["end"]]
    assert shown == top["text"] and "excerpt" not in top
    assert brief["uri"] == top["uri"] and brief["line_start"] == top["line_start"]

    verified = await call(client, "verify_index", {}, schemas)
    assert verified["ok"] and verified["current_chunks"] > 0 and set(verified["problems"]) >= {"side_index"}

    context = await call(client, "get_context", {"query": "lost laptop", "max_tokens": 200}, schemas)
    assert 0 < context["tokens"] <= 200 and context["text"].startswith("[1] ")
    source = context["sources"][0]
    document = await call(
        client,
        "get_document",
        {"uri": source["uri"], "start": source["start"], "end": source["end"]},
        schemas,
    )
    assert document["text"] in context["text"] and document["uri"] == source["uri"]
    resource = await client.read_resource(source["uri"])
    full = resource.contents[0].text  # type: ignore[union-attr]
    assert full[source["start"] : source["end"]] == document["text"]

    document_id = top["uri"].split("/")[3]
    paged = await call(client, "get_document", {"document_id": document_id, "max_chars": 100}, schemas)
    assert len(paged["text"]) == 100 and paged["next_start"] == 100
    lines = await call(client, "get_document", {"uri": top["uri"], "line_start": 2, "line_end": 3}, schemas)
    assert lines["line_start"] == 2 and lines["text"].count("\n") == 2

    similar = await call(client, "find_similar", {"chunk_id": top["chunk_id"], "limit": 3}, schemas)
    assert similar["results"] and all(r["uri"].split("/")[3] != document_id for r in similar["results"])

    status = await call(client, "index_status", {}, schemas)
    assert status["collections"][0]["documents"] == 5 and status["collections"][0]["missing"] == 0

    refreshed = await call(client, "refresh_index", {"path": str(corpus)}, schemas)
    assert refreshed["documents_unchanged"] == 5 and refreshed["chunks_embedded"] == 0


def test_every_tool_over_stdio(indexed_db: tuple[Path, Path]) -> None:
    db, corpus = indexed_db
    run_client(_stdio(db), lambda client: exercise_every_tool(client, corpus))


def test_every_tool_over_streamable_http(indexed_db: tuple[Path, Path], http_url: str) -> None:
    run_client(http_url, lambda client: exercise_every_tool(client, indexed_db[1]))


HOSTILE_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("search", {"query": 42}, "query"),
    ("search", {"query": "x" * 20_000}, "query"),
    ("search", {"query": "leave", "limit": -1}, "limit"),
    ("search", {"query": "leave", "limit": 51}, "limit"),
    ("search", {"query": "   "}, "query is empty"),
    ("search", {"query": "leave", "filters": {"colour": "red"}}, "colour"),
    (
        "search",
        {"query": "leave", "filters": {"collection": "nope"}},
        "retrievo index PATH --collection nope",
    ),
    ("search", {"query": "leave", "filters": {"date_from": "yesterday"}}, "ISO date"),
    ("search", {"query": "leave", "mode": "fuzzy"}, "mode"),
    ("get_context", {"query": "leave", "max_tokens": 0}, "max_tokens"),
    ("get_document", {"document_id": "doc_missing"}, "not in the index"),
    ("get_document", {"document_id": "x", "start": -5}, "start"),
    ("find_similar", {}, "exactly one of chunk_id or document_id"),
    ("find_similar", {"chunk_id": 999_999}, "not in the index"),
    ("refresh_index", {"path": "/etc"}, "only indexed paths can be refreshed"),
    ("index_status", {"collection": "nope"}, "does not exist"),
]


def test_hostile_arguments_are_tool_errors_and_the_server_keeps_serving(
    indexed_db: tuple[Path, Path],
) -> None:
    async def hostile(client: Client) -> None:
        for name, arguments, expected in HOSTILE_CALLS:
            result = await client.call_tool(name, arguments)
            text = result.content[0].text  # type: ignore[union-attr]
            assert result.is_error, (name, arguments)
            assert expected in text, (name, arguments, text)
            assert "Traceback" not in text
        for query in ['"', "NEAR(a b)", "title:*", "(AND OR NOT)", "'; DROP TABLE chunks; --", "🙂"]:
            result = await client.call_tool("search", {"query": query})
            assert not result.is_error, (query, result.content)
        assert not (await client.call_tool("search", {"query": "sabbatical"})).is_error

    run_client(_stdio(indexed_db[0]), hostile)


def test_a_missing_index_stops_the_server_at_start_with_what_to_do(tmp_path: Path) -> None:
    """A client shows a server that failed to start: one that answered ``initialize`` and failed at the
    first call read as connected (Claude Code showed "Connected" for a wrong --db)."""
    import subprocess

    absent = tmp_path / "absent.db"
    started = subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", "mcp", "--db", str(absent)],
        input="", capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert started.returncode == 1 and started.stdout == ""  # nothing on the protocol's stream
    assert f"no index at {absent}" in started.stderr and "retrievo index PATH" in started.stderr
    assert not absent.exists()

    async def refused(client: Client) -> None:
        await client.list_tools()

    with pytest.raises(ExceptionGroup, match="unhandled errors"):  # the official client: the server is gone
        run_client(_stdio(absent, tools="auto"), refused)
