"""Registry search on the real registry data: grouped results, upserts, per-entry errors, lexical-only."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from conftest import SHARED_DATA
from retrievo import Config, Engine
from retrievo.embed.local import MiniLMEmbedder
from retrievo.errors import EmbedderUnavailable
from retrievo.search.records.registry import capped
from test_mcp import call, run_client

REGISTRY = SHARED_DATA / "registry"
pytestmark = pytest.mark.skipif(not REGISTRY.exists(), reason="../shared/data not present")


class Breakable(MiniLMEmbedder):
    """The real model, with a switch that makes it fail as an unreachable model would."""

    broken = False

    def embed_batch(self, texts: Any) -> Any:
        if self.broken:
            raise EmbedderUnavailable("the model is down (test switch)")
        return super().embed_batch(texts)

    def embed_query_batch(self, texts: Any) -> Any:
        if self.broken:
            raise EmbedderUnavailable("the model is down (test switch)")
        return super().embed_query_batch(texts)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("registry") / "reg.db"
    with Engine(Config(db=db)) as engine:
        report = engine.registry.add([REGISTRY])
        assert report.documents_added > 550
        reasons = [s.reason for s in report.skipped]
        assert any("neither an MCP server nor an A2A agent card" in r for r in reasons)
    return db


def test_grouped_results_for_a_server_and_a_tool_level_question(loaded: Path) -> None:
    with Engine(Config(db=loaded)) as engine:
        docs = engine.registry.search("context7 docs")
        assert docs.search_mode == "hybrid" and "Context7 MCP Server" in [
            h.meta["name"] for h in docs.servers
        ]
        assert all(0 <= h.relevance <= 1 for h in [*docs.servers, *docs.agents, *docs.tools])
        jira = engine.registry.search("create a Jira issue")
        tools = {h.meta["name"]: h for h in jira.tools}
        assert "jira_create_issue" in tools and tools["jira_create_issue"].meta["server_path"] == "/atlassian"
        assert "properties" in tools["jira_create_issue"].meta["input_schema"]
        assert jira.servers[0].meta["name"] == "Atlassian"
        assert "jira_create_issue" in [t["name"] for t in jira.servers[0].matching_tools]
        flights = engine.registry.search("book a flight", types=("agent",), limit=2)
        assert not flights.servers and flights.agents and "Flight" in flights.agents[0].meta["name"]
        hybrid = engine.registry.search("create a Jira issue", profile="hybrid")
        assert hybrid.profile == "hybrid" and hybrid.tools


def test_lexical_only_when_the_model_breaks_and_back_when_it_returns(loaded: Path) -> None:
    embedder = Breakable()
    with Engine(Config(db=loaded), embedder=embedder, retry_embedder_after_s=0) as engine:
        embedder.broken = True
        down = engine.registry.search("create a Jira issue")
        assert down.search_mode == "lexical-only" and down.degraded_reason and "down" in down.degraded_reason
        top = down.tools[0]
        assert top.relevance == pytest.approx(capped(top.raw), abs=1e-3) and top.relevance < 1.0
        assert "jira" in top.meta["name"]
        embedder.broken = False
        assert engine.registry.search("create a Jira issue").search_mode == "hybrid"


def test_upsert_removal_disabled_entries_and_per_entry_errors(tmp_path: Path) -> None:
    folder = tmp_path / "entries"
    folder.mkdir()
    server = {"server_name": "Weather", "path": "/weather", "description": "Forecasts", "tags": ["weather"],
              "tool_list": [{"name": "forecast", "description": "Daily forecast", "schema": {"type": "object"}},
                            {"name": "alerts", "description": "Storm alerts", "schema": {"type": "object"}}]}  # fmt: skip
    (folder / "weather.json").write_text(json.dumps(server))
    (folder / "hidden.json").write_text(json.dumps({"server_name": "Hidden", "path": "/hidden", "is_enabled": False,
                                                    "description": "weather archive"}))  # fmt: skip
    (folder / "zz-bad.json").write_text(json.dumps([
        {"description": "no name at all", "tool_list": []},
        {"server_name": "Broken schema", "path": "/broken", "tool_list": [{"name": "t", "schema": "{not json"}]},
        {"server_name": "Huge", "path": "/huge", "description": "x" * 5_000_000},
        {"server_name": "Weather again", "path": "/weather"},
    ]))  # fmt: skip
    (folder / "notjson.json").write_text("{")
    with Engine(Config(db=tmp_path / "r.db", embedder="none")) as engine:
        report = engine.registry.add([folder])
        reasons = " | ".join(s.reason for s in report.skipped)
        assert "server has no name" in reasons and "input schema that is not JSON" in reasons
        assert "not JSON" in reasons and "duplicate" not in reasons
        assert report.notes == [f"server path /weather is in 2 entries: kept {folder / 'weather.json'} (2 tools); "
                                f"also in {folder / 'zz-bad.json'} (0 tools)"]  # fmt: skip
        assert "description of 5,000,000 characters cut to 20,000" in reasons
        names = {e["name"] for e in engine.registry.entries()}
        assert {"Weather", "Hidden", "Huge", "Broken schema"} <= names
        assert all(len(h.meta["description"]) <= 20_000 for h in engine.registry.search("huge").servers)
        assert [h.meta["name"] for h in engine.registry.search("weather").servers] == ["Weather"]
        assert "Hidden" in [
            h.meta["name"] for h in engine.registry.search("weather", include_disabled=True).servers
        ]
        server["tool_list"] = server["tool_list"][:1]  # type: ignore[index]
        (folder / "weather.json").write_text(json.dumps(server))
        again = engine.registry.add([folder / "weather.json"])
        assert (
            again.documents_removed == 1 and not engine.registry.search("storm alerts", types=("tool",)).tools
        )
        assert engine.registry.remove("/weather") == 2
        assert "Weather" not in {e["name"] for e in engine.registry.entries()}


def test_search_registry_over_mcp(loaded: Path) -> None:
    async def registry(client: Client) -> None:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        result = await call(client, "search_registry", {"query": "create a Jira issue", "limit": 3}, schemas)
        assert result["servers"][0]["server_name"] == "Atlassian" and result["tools"]
        assert any(t["tool_name"] == "jira_create_issue" and t["inputSchema"] for t in result["tools"])
        assert "jira_create_issue" in [t["tool_name"] for t in result["servers"][0]["matching_tools"]]
        context7 = await call(client, "search_registry", {"query": "context7 docs"}, schemas)
        assert "Context7 MCP Server" in [s["server_name"] for s in context7["servers"]]
        flights = await call(client, "search_registry", {"query": "book a flight", "limit": 5}, schemas)
        names = [a["name"] for a in flights["agents"]]
        assert names.count("Flight Booking Agent") == 1 and len(names) == len(set(names)), names
        booking = next(a for a in flights["agents"] if a["name"] == "Flight Booking Agent")
        assert len(booking["also_at"]) == 2 and booking["path"] not in booking["also_at"]

    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(loaded)]
    )
    run_client(server, registry)


def test_a_path_several_files_claim_loses_no_tool_and_a_re_add_changes_nothing(tmp_path: Path) -> None:
    import sqlite3

    from serving import cli

    db = str(tmp_path / "reg.db")
    first = cli("registry", "add", str(REGISTRY), "--db", db, "--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    # cli/examples/currenttime*.json (no tools) sort before registry/servers/currenttime.json (one tool)
    note = next(n for n in report["notes"] if n.startswith("server path /currenttime/ is in 3 entries"))
    assert "kept " in note and "registry/servers/currenttime.json (1 tool)" in note
    assert not any("duplicate path" in e for e in report["errors"])
    listed = json.loads(cli("registry", "list", "--db", db, "--json").stdout)
    assert [e["tools"] for e in listed if e["path"] == "/currenttime/"] == [1]
    found = json.loads(cli("registry", "search", "current time in a timezone", "--db", db, "--json").stdout)
    assert any(t["server_path"] == "/currenttime/" for t in found["tools"]), "the tool has its server"
    table = cli("registry", "search", "current time in a timezone", "--db", db).stdout
    tools = table.split("tools:\n", 1)[1].splitlines()
    first = next(t for t in found["tools"] if t["server_path"] == "/currenttime/")
    assert any(
        line.split()[1] == first["tool_name"] and f"on {first['server_name']} at /currenttime/" in line
        for line in tools
    ), "a tool row is labelled with the tool's name, then its server's"

    def revisions() -> int:
        with sqlite3.connect(db) as connection:
            return int(connection.execute("SELECT count(*) FROM revisions").fetchone()[0])

    before = revisions()
    again = json.loads(cli("registry", "add", str(REGISTRY), "--db", db, "--json").stdout)
    assert (again["added"], again["changed"], again["removed"]) == (0, 0, 0)
    assert again["unchanged"] == report["added"] and revisions() == before
    text = cli("registry", "list", "--db", db)
    assert "Flight Booking Agent  (5 skills)" in text.stdout and "(1 tool)" in text.stdout


def test_a_tool_named_exactly_as_asked_comes_first_and_a_path_finds_its_entry(loaded: Path) -> None:
    """`registry search` (CLI, JSON): "create a Jira issue" puts ``jira_create_issue`` ahead of
    ``jira_create_issue_link`` and ``jira_batch_create_issues``; a path's word ("mcpgw") finds the entry at
    ``/mcpgw/`` with the model and without it (neither arm reads paths; the seed's boost weighs them most)."""
    from serving import cli

    found = json.loads(cli("registry", "search", "create a Jira issue", "--type", "tool", "--db", str(loaded),
                           "--json").stdout)  # fmt: skip
    assert found["tools"][0]["tool_name"] == "jira_create_issue", [t["tool_name"] for t in found["tools"]]
    assert found["tools"][0]["relevance_score"] > found["tools"][1]["relevance_score"]
    by_path = json.loads(cli("registry", "search", "mcpgw", "--db", str(loaded), "--json").stdout)
    assert by_path["servers"][0]["path"] == "/mcpgw/"
    with Engine(Config(db=loaded, embedder="none")) as engine:
        lexical = engine.registry.search("mcpgw")
    assert lexical.search_mode == "lexical-only" and lexical.servers[0].meta["path"] == "/mcpgw/"
    # and its tools, with the model as without it (issue 66: none were found with the model off)
    assert by_path["tools"] and all(t["server_path"] == "/mcpgw/" for t in by_path["tools"])
    assert lexical.tools and all(t.meta["server_path"] == "/mcpgw/" for t in lexical.tools), lexical.tools
