"""The MCP server touches only what was indexed, only in the collections it serves (issue 9, 6-7)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from retrievo import Config, Engine
from test_mcp import run_client


@pytest.fixture(scope="module")
def two_tenants(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("tenants")
    for name, text in (
        ("alpha", "Alpha tenant notes on annual leave."),
        ("beta", "Beta secret: ZORBLAX budget."),
    ):
        (base / name / "docs").mkdir(parents=True)
        (base / name / "docs" / f"{name}.md").write_text(f"# {name}\n\n{text}\n")
    (base / "alpha" / "private.md").write_text("# Private\n\nThe alpha password is QUUXPASS.\n")
    db = base / "t.db"
    with Engine(Config(db=db), embedder=minilm) as engine:
        engine.index([base / "alpha" / "docs"], collection="alpha")
        engine.index([base / "beta" / "docs"], collection="beta")
    return db, base


def _server(db: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db), "--tools", "all", *extra],
    )


async def _error(client: Client, name: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error, (name, arguments, result.structured_content)
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert text.strip() != f"Error executing tool {name}" and "Traceback" not in text
    return text


def test_a_scoped_server_never_reaches_another_collection(two_tenants: tuple[Path, Path]) -> None:
    db, _ = two_tenants
    with Engine(Config(db=db, collection="beta", embedder="none")) as engine:
        beta_hit = engine.search("ZORBLAX", mode="keyword").hits[0]

    async def scoped(client: Client) -> None:
        found = await client.call_tool("search", {"query": "annual leave"})
        assert not found.is_error and found.structured_content is not None
        assert {r["collection"] for r in found.structured_content["results"]} == {"alpha"}
        assert "not served here" in await _error(
            client, "search", {"query": "ZORBLAX", "filters": {"collection": "beta"}}
        )
        assert "not served here" in await _error(
            client, "get_context", {"query": "ZORBLAX", "filters": {"collection": "beta"}}
        )
        assert "not in the index" in await _error(
            client, "get_document", {"document_id": beta_hit.chunk.document_id}
        )
        assert "not in the index" in await _error(
            client, "find_similar", {"chunk_id": beta_hit.chunk.chunk_id}
        )
        assert "not in the index" in await _error(
            client, "find_similar", {"document_id": beta_hit.chunk.document_id}
        )
        assert "not served here" in await _error(
            client, "refresh_index", {"path": "docs", "collection": "beta"}
        )
        status = await client.call_tool("index_status", {})
        assert status.structured_content is not None
        assert [c["name"] for c in status.structured_content["collections"]] == ["alpha"]
        with pytest.raises(Exception, match="not in the index"):
            await client.read_resource(f"retrievo://document/{beta_hit.chunk.document_id}")

    run_client(_server(db, "--collection", "alpha"), scoped)


def test_strict_arguments_and_errors_that_say_something(two_tenants: tuple[Path, Path]) -> None:
    db, base = two_tenants

    async def strict(client: Client) -> None:
        assert "limit" in await _error(client, "search", {"query": "leave", "limit": "five"})
        assert "limit" in await _error(client, "search", {"query": "leave", "limit": True})
        assert "explain" in await _error(client, "search", {"query": "leave", "explain": "yes"})
        assert "chunk_id" in await _error(client, "find_similar", {"chunk_id": 2**70})
        assert "NUL byte" in await _error(
            client, "refresh_index", {"path": f"{base}/alpha/docs\x00x", "collection": "alpha"}
        )
        for outside in (str(base / "alpha"), "..", "../private.md", "/"):
            text = await _error(client, "refresh_index", {"path": outside, "collection": "alpha"})
            assert "only indexed paths can be refreshed" in text
        leaked = await client.call_tool(
            "search", {"query": "QUUXPASS", "filters": {"collection": "alpha"}, "detail": "full"}
        )
        assert leaked.structured_content is not None
        assert not any("QUUXPASS" in r["text"] for r in leaked.structured_content["results"])
        refreshed = await client.call_tool("refresh_index", {"path": "docs", "collection": "alpha"})
        assert not refreshed.is_error and refreshed.structured_content is not None
        assert refreshed.structured_content["documents_unchanged"] == 1

    run_client(_server(db), strict)


def test_no_refresh_leaves_the_tool_out(two_tenants: tuple[Path, Path]) -> None:
    async def listed(client: Client) -> None:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "refresh_index" not in names and "regenerate_embeddings" not in names and "search" in names

    run_client(_server(two_tenants[0], "--no-refresh"), listed)
