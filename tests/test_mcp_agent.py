"""What an agent pays and meets (official MCP client over stdio and HTTP): a tool list that offers what
the index holds within a byte budget, brief answers by default, forgiving but safe arguments, the
server's instructions, and lexical-only hits that say their vectors are missing."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from benchmarks.speed.mcp_payload import CODE, QUESTIONS, every_kind, fifteen_markdown_files
from mcp import Client, StdioServerParameters
from mcp.shared.subscriptions import ToolsListChanged

from retrievo import Config, Engine
from retrievo.errors import ConfigError
from retrievo.surfaces.mcp.toolsets import AUTO, parse_toolsets
from retrievo.surfaces.mcp.wire import forgiving, lean

DOCS_TOOLSET = {"search", "get_context", "get_document"}
DOCS_TOOLS = DOCS_TOOLSET | {"search_library"}  # the library toolset is listed where documents are
EVERY_KIND_TOOLS = DOCS_TOOLS | {
    "find_symbol",
    "symbol_graph",
    "locate",
    "semanticSearch",
    "getContext",
    "search_registry",
}
DOCS_BUDGET, EVERY_KIND_BUDGET, BRIEF_BUDGET = 8_000, 17_000, 1_500


@pytest.fixture(scope="module")
def every_kind_db(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Path:
    base = tmp_path_factory.mktemp("k")
    corpus = fifteen_markdown_files(base / "md")
    db = base / "all.db"
    with Engine(Config(db=db), embedder=minilm) as engine:
        engine.index([corpus, *every_kind(base)])
        engine.registry.add([base / "entries"])
    return db


def stdio(db: Path, *options: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db), *options]
    )


def run(target: StdioServerParameters | str, test: Any) -> None:
    async def main() -> None:
        with anyio.fail_after(120):
            async with Client(target) as client:
                await test(client)

    anyio.run(main)


@pytest.fixture(scope="module")
def http_docs(docs_db: tuple[Path, Path]) -> Iterator[str]:
    from benchmarks.reliability.hostile.mcp_abuse import http_server

    with http_server(docs_db[0]) as url:
        yield url


def listed_bytes(tools: Any) -> int:
    """tools/list's tools as they travel: compact JSON."""
    return len(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
                          separators=(",", ":"), ensure_ascii=False).encode())  # fmt: skip


async def tool_list_within_budget(client: Client, names: set[str], budget: int) -> None:
    tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == names
    assert listed_bytes(tools) <= budget, listed_bytes(tools)
    for tool in tools:  # lean, not loose: every argument typed, outputs typed, no generated titles
        assert tool.output_schema is not None and "title" not in json.dumps(tool.input_schema)
        assert len(tool.description or "") <= 200


def test_only_documents_indexed_lists_four_tools_within_8_kb(
    docs_db: tuple[Path, Path], http_docs: str
) -> None:
    run(stdio(docs_db[0]), lambda client: tool_list_within_budget(client, DOCS_TOOLS, DOCS_BUDGET))
    run(http_docs, lambda client: tool_list_within_budget(client, DOCS_TOOLS, DOCS_BUDGET))


def test_every_kind_indexed_lists_its_tools_within_17_kb(every_kind_db: Path) -> None:
    from benchmarks.reliability.hostile.mcp_abuse import http_server

    def within(client: Client) -> Any:
        return tool_list_within_budget(client, EVERY_KIND_TOOLS, EVERY_KIND_BUDGET)

    run(stdio(every_kind_db), within)
    with http_server(every_kind_db) as url:
        run(url, within)


def test_toolsets_are_picked_at_start_and_a_bad_name_is_refused(docs_db: tuple[Path, Path]) -> None:
    async def picked(client: Client) -> None:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == DOCS_TOOLSET | {"find_similar", "index_status", "refresh_index", "create_baseline",
                                      "verify_index", "regenerate_embeddings"}  # fmt: skip
        unknown = await client.call_tool("find_symbol", {"pattern": "x"})
        assert unknown.is_error  # not registered: the code toolset is not asked for

    run(stdio(docs_db[0], "--tools", "docs,similar,admin"), picked)
    assert parse_toolsets(None) == AUTO == parse_toolsets("auto") and parse_toolsets("all") >= AUTO
    with pytest.raises(ConfigError, match="unknown toolset 'libary'; toolsets: docs"):
        parse_toolsets("docs,libary")
    from click.testing import CliRunner

    from retrievo.surfaces.cli import main

    refused = CliRunner().invoke(main, ["mcp", "--db", str(docs_db[0]), "--tools", "everything"])
    assert refused.exit_code == 1 and "unknown toolset 'everything'" in refused.output


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_kind_indexed_later_is_announced_and_listed(tmp_path: Path, minilm: Any, transport: str) -> None:
    corpus = fifteen_markdown_files(tmp_path / "md")
    db = tmp_path / "grows.db"
    with Engine(Config(db=db), embedder=minilm) as engine:
        engine.index([corpus])

    async def grows(client: Client) -> None:
        assert "find_symbol" not in {t.name for t in (await client.list_tools()).tools}
        async with client.listen(tools_list_changed=True) as events:
            (corpus / "invoices.py").write_text(CODE)
            refreshed = await client.call_tool("refresh_index", {"path": str(corpus)})
            assert not refreshed.is_error, refreshed.content
            with anyio.fail_after(30):
                event = await events.__anext__()
            assert isinstance(event, ToolsListChanged)
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"find_symbol", "symbol_graph"} <= names and "semanticSearch" not in names
        found = await client.call_tool("find_symbol", {"pattern": "total_due"})
        assert not found.is_error and found.structured_content["symbols"][0]["path"].endswith("invoices.py")  # type: ignore[index]

    if transport == "stdio":
        run(stdio(db, "--tools", "auto,admin"), grows)
        return
    from benchmarks.reliability.hostile.mcp_abuse import http_server

    with http_server(db, tools="auto,admin") as url:
        run(url, grows)


def test_brief_answers_are_small_and_full_answers_exact(docs_db: tuple[Path, Path], http_docs: str) -> None:
    async def answers(client: Client) -> None:
        for question in QUESTIONS:
            brief = await client.call_tool("search", {"query": question, "limit": 3})
            text = brief.content[0].text  # type: ignore[union-attr]
            assert len(text.encode()) <= BRIEF_BUDGET, (question, len(text.encode()))
            data = json.dumps(brief.structured_content, separators=(",", ":"))  # what Claude Code reads
            assert len(data.encode()) <= BRIEF_BUDGET, (question, len(data.encode()))
            hits = brief.structured_content["results"]  # type: ignore[index]
            assert len(hits) == 3 and all("excerpt" in h and "text" not in h and h["uri"] for h in hits)
            assert "null" not in data and "[]" not in data.replace('"results":[]', "")
        full = await client.call_tool("search", {"query": QUESTIONS[0], "limit": 3, "detail": "full"})
        for hit in full.structured_content["results"]:  # type: ignore[index]
            assert "excerpt" not in hit
            assert not Path(hit["path"]).is_absolute()  # below the indexed root, on every transport
            assert (docs_db[1] / hit["path"]).read_text()[hit["start"] : hit["end"]] == hit["text"]
            read = await client.call_tool(
                "get_document", {"uri": hit["uri"], "line_start": hit["line_start"]}
            )
            assert not read.is_error and hit["text"] in read.structured_content["text"]  # type: ignore[index]

    run(stdio(docs_db[0]), answers)
    run(http_docs, answers)


FORGIVEN = [
    ({"query": "leave", "filters": {"kind": "document"}}, None),
    ({"query": "leave", "filters": {"kind": "code"}}, None),  # as agents write it (no code here: no hits)
    ({"query": "leave", "limit": "5"}, None),
    ({"query": "leave", "mode": "KEYWORD"}, None),
    ({"query": "leave", "filters": {"kind": "DOCUMENT", "tags": "hr"}, "detail": "Full"}, None),
    ({"query": "leave", "limit": "five"}, "allowed: an integer from 1 to 50"),
    ({"query": "leave", "limit": "500"}, "allowed: an integer from 1 to 50"),
    ({"query": "leave", "mode": "fuzzy"}, "allowed: hybrid, keyword, semantic"),
    ({"query": "leave", "filters": {"kind": "codex"}}, "allowed: document, code, record"),
    (
        {"query": "leave", "limt": 3},
        "search takes: detail, explain, filters, fusion, group_by, limit, min_score, mode, query",
    ),
    ({"query": ["leave"]}, "query"),
    ({"query": "leave", "fusion": "RRF"}, None),
    ({"query": "leave", "fusion": "borda"}, "allowed: adaptive, zscore, rrf"),
]


def test_forgiving_normalises_only_what_the_schema_allows() -> None:
    from retrievo.surfaces.mcp.server import build_server

    async def schema() -> dict[str, Any]:
        tool = build_server(Engine(Config(db=Path("/nonexistent/none.db"))))._tool_manager.get_tool("search")
        assert tool is not None
        return tool.parameters

    search = anyio.run(schema)
    assert forgiving({"limit": "5", "mode": "KEYWORD", "detail": "Full"}, search) == {
        "limit": 5, "mode": "keyword", "detail": "full"
    }  # fmt: skip
    assert forgiving({"filters": {"kind": "Code", "tags": "hr"}}, search) == {
        "filters": {"kind": ["code"], "tags": ["hr"]}
    }
    assert forgiving({"min_score": " 0.25 "}, search) == {"min_score": 0.25}
    untouched = {"limit": "five", "mode": "fuzzy", "query": ["leave"], "min_score": "nan", "explain": "yes"}
    assert forgiving(untouched, search) == untouched  # left for validation to refuse


def test_forgiving_arguments_over_mcp_and_rest(docs_db: tuple[Path, Path], http_docs: str) -> None:
    async def over_mcp(client: Client) -> None:
        for arguments, refusal in FORGIVEN:
            result = await client.call_tool("search", arguments)
            text = result.content[0].text  # type: ignore[union-attr]
            if refusal is None:
                assert not result.is_error, (arguments, text)
                if arguments.get("limit") == "5":
                    assert len(result.structured_content["results"]) == 5  # type: ignore[index]
                if arguments.get("fusion") == "RRF":
                    assert result.structured_content["fusion"] == "rrf"  # type: ignore[index]
            else:
                assert result.is_error and refusal in text, (arguments, text)

    run(stdio(docs_db[0]), over_mcp)
    run(http_docs, over_mcp)
    from serving import serving

    with serving(["--db", str(docs_db[0])], "--no-auth") as server:
        for arguments, refusal in FORGIVEN:
            answer = httpx.post(f"{server.url}/api/search", json=arguments, timeout=60)
            if refusal is None:
                assert answer.status_code == 200, (arguments, answer.text)
            else:
                assert answer.status_code == 400 and refusal in answer.json()["error"], (
                    arguments,
                    answer.text,
                )


def test_initialize_says_what_the_server_holds(
    every_kind_db: Path, docs_db: tuple[Path, Path], http_docs: str
) -> None:
    async def holds(client: Client) -> None:
        said = client.instructions or ""
        assert 0 < len(said) <= 600
        for words in ("document", "code", "record", "registry", "search", "find_symbol", "semanticSearch"):
            assert words in said, (words, said)

    run(stdio(every_kind_db), holds)

    async def documents_only(client: Client) -> None:
        said = client.instructions or ""
        assert "get_context" in said and "find_symbol" not in said

    run(stdio(docs_db[0]), documents_only)
    run(http_docs, documents_only)


def test_lexical_only_hits_say_their_vectors_are_missing_and_carry_the_keyword_score(tmp_path: Path) -> None:
    corpus = fifteen_markdown_files(tmp_path / "md")
    db = tmp_path / "plain.db"
    with Engine(Config(db=db, embedder="none")) as engine:
        engine.index([corpus], embed=False)

    async def lexical(client: Client) -> None:
        for detail in ("brief", "full"):
            found = await client.call_tool(
                "search", {"query": "parental leave", "limit": 5, "detail": detail}
            )
            answer = found.structured_content or {}
            assert answer["search_mode"] == "lexical-only" and answer["results"]
            assert all(hit["embedding_status"] == "missing" for hit in answer["results"])
            scores = [hit["score"] for hit in answer["results"]]
            assert scores == sorted(scores, reverse=True) and all(score > 0 for score in scores)  # BM25

    run(stdio(db), lexical)
    from benchmarks.reliability.hostile.mcp_abuse import http_server

    with http_server(db) as url:
        run(url, lexical)


def test_lean_schemas_stay_exact() -> None:
    schema = {
        "$defs": {"F": {"properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None,
                                             "title": "A"}}, "title": "F", "type": "object"},
                  "G": {"properties": {"b": {"type": "integer"}}, "type": "object"}},
        "properties": {"f": {"anyOf": [{"$ref": "#/$defs/F"}, {"type": "null"}], "default": None},
                       "g": {"$ref": "#/$defs/G"}, "h": {"$ref": "#/$defs/G"},
                       "l": {"items": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "type": "array"}},
        "required": ["g"], "type": "object",
    }  # fmt: skip
    inputs = lean(schema)
    assert inputs["properties"]["f"] == {"properties": {"a": {"type": "string"}}, "type": "object"}
    assert inputs["$defs"] == {
        "G": {"properties": {"b": {"type": "integer"}}, "type": "object"}
    }  # shared: kept
    assert inputs["properties"]["l"]["items"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }  # items: as is
    assert inputs["required"] == ["g"] and "required" not in lean(schema, output=True)
