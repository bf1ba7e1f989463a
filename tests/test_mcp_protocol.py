"""MCP as the spec and its conformance suite expect, through the official client (handshake era over
stdio): only capabilities that work are declared, errors carry the spec's codes, answers are not sent
twice, and the model loads after the handshake is answered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.types import LoggingMessageNotificationParams, PromptReference

from retrievo import Config, Engine


def legacy(db: Path, *options: str, env: dict[str, str] | None = None, **client: Any) -> Client:
    target = StdioServerParameters(
        command=sys.executable,
        args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db), *options],
        env={**os.environ, **(env or {})},
    )
    return Client(target, mode="legacy", **client)


def run(client: Client, test: Any) -> None:
    async def main() -> None:
        with anyio.fail_after(120):
            async with client:
                await test(client)

    anyio.run(main)


def test_the_handshake_declares_logging_completions_prompts_and_list_changes_that_work(
    docs_db: tuple[Path, Path],
) -> None:
    db, corpus = docs_db
    said: list[LoggingMessageNotificationParams] = []

    async def heard(params: LoggingMessageNotificationParams) -> None:
        said.append(params)

    async def declared(client: Client) -> None:
        capabilities = client.server_capabilities
        assert capabilities is not None and capabilities.logging is not None
        assert capabilities.completions is not None
        assert capabilities.tools is not None and capabilities.tools.list_changed
        assert capabilities.prompts is not None and capabilities.prompts.list_changed
        assert [p.name for p in (await client.list_prompts()).prompts] == [
            "ask"
        ]  # no code: no explain_symbol

        with pytest.warns(MCPDeprecationWarning):  # at protocol 2026-07-28; the suite's era has it
            await client.set_logging_level("info")
        refreshed = await client.call_tool("refresh_index", {"path": str(corpus)})
        assert not refreshed.is_error
        assert [(m.level, m.data["event"]) for m in said] == [("info", "started"), ("info", "finished")]
        with pytest.warns(MCPDeprecationWarning):
            await client.set_logging_level("error")
        await client.call_tool("verify_index", {})
        assert len(said) == 2  # below the level asked for: not sent

        done = await client.complete(
            PromptReference(type="ref/prompt", name="ask"), {"name": "collection", "value": "de"}
        )
        assert done.completion.values == ["default"]
        other = await client.complete(
            PromptReference(type="ref/prompt", name="nope"), {"name": "x", "value": ""}
        )
        assert other.completion.values == []

        asked = await client.get_prompt("ask", {"question": "who approves parental leave"})
        text = asked.messages[0].content.text  # type: ignore[union-attr]
        assert "parental leave" in text and "[1] " in text
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("test_simple_prompt")
        assert unknown.value.error.code == -32602 and "prompts here: ask" in unknown.value.error.message
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("ask", {})
        assert missing.value.error.code == -32602 and "question" in missing.value.error.message
        for uri in ("retrievo://document/doc_missing", "test://static-text"):
            with pytest.raises(MCPError) as absent:
                await client.read_resource(uri)
            assert absent.value.error.code == -32002, uri

    run(legacy(db, "--tools", "all", logging_callback=heard), declared)


def test_a_server_without_prompt_toolsets_declares_no_prompts(docs_db: tuple[Path, Path]) -> None:
    async def bare(client: Client) -> None:
        capabilities = client.server_capabilities
        assert capabilities is not None and capabilities.prompts is None
        with pytest.raises(MCPError) as refused:
            await client.list_prompts()
        assert refused.value.error.code == -32601

    run(legacy(docs_db[0], "--tools", "admin"), bare)


def test_an_answer_is_not_sent_twice(docs_db: tuple[Path, Path]) -> None:
    async def once(client: Client) -> None:
        result = await client.call_tool("search", {"query": "parental leave"})
        structured = result.structured_content
        assert structured is not None and len(structured["results"]) == 10
        text = result.content[0].text  # type: ignore[union-attr]
        data = json.dumps(structured, separators=(",", ":"), ensure_ascii=False)
        assert len(text.encode()) < 0.7 * len(data.encode())  # a short reading, not the JSON again
        for hit in structured["results"]:  # … that still cites every hit
            assert f"{hit['path']}:{hit['line_start']}-{hit['line_end']}" in text
        assert structured["results"][0]["uri"] not in text

    run(legacy(docs_db[0]), once)


def test_initialize_is_answered_before_the_model_loads(tmp_path: Path, embedding_server: Any) -> None:
    """The model's load starts at the client's first message after the handshake: before, the load
    shared the CPU with ``initialize`` (12 s on a loaded machine)."""
    from benchmarks.speed.mcp_payload import fifteen_markdown_files

    env = {
        "RETRIEVO_EMBEDDER": "ollama",
        "RETRIEVO_EMBED_URL": embedding_server.url,
        "RETRIEVO_EMBED_MODEL": "toy",
    }
    db = tmp_path / "http.db"
    with Engine(
        Config(db=db, embedder="ollama", embed_url=embedding_server.url, embed_model="toy")
    ) as engine:
        engine.index([fifteen_markdown_files(tmp_path / "md")])
    asked = len(embedding_server.requests)
    process = subprocess.Popen(
        [sys.executable, "-m", "retrievo.surfaces.cli", "mcp", "--db", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, **env},
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None

    def ask(message: dict[str, Any]) -> dict[str, Any]:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        process.stdin.flush()
        return json.loads(process.stdout.readline()) if "id" in message else {}

    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        answer = ask({"id": 1, "method": "initialize", "params": hello})
        assert answer["result"]["serverInfo"]["name"] == "retrievo"
        assert len(embedding_server.requests) == asked  # answered, and the model not asked for yet
        ask({"method": "notifications/initialized"})
        found = ask(
            {"id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "leave"}}}
        )
        assert found["result"]["structuredContent"]["search_mode"] == "hybrid"
        assert ["warm up"] in [r.get("input") for r in embedding_server.requests[asked:]]
    finally:
        process.stdin.close()
        process.wait(timeout=30)
        process.stdout.close()
