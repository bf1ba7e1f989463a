"""Registry search behaves the same on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def test_registry_contract(make_engine: Any, tmp_path: Path) -> None:
    folder = tmp_path / "entries"
    folder.mkdir()
    (folder / "servers.json").write_text(json.dumps([
        {"server_name": "Atlas Tickets", "path": "/tickets", "description": "Issue tracking", "tags": ["jira"],
         "tool_list": [{"name": "create_ticket", "description": "Create a new ticket", "schema": {"type": "object"}},
                       {"name": "close_ticket", "description": "Close a ticket", "schema": {"type": "object"}}]},
        {"server_name": "Clock", "path": "/clock", "description": "Current time in any timezone", "tags": ["time"],
         "tool_list": [{"name": "now", "description": "The time now", "schema": {"type": "object"}}]},
    ]))  # fmt: skip
    (folder / "agent.json").write_text(json.dumps(
        {"name": "Trip Planner", "description": "Plans journeys", "url": "https://trip.example/a2a",
         "capabilities": {"streaming": True}, "skills": [{"id": "plan", "name": "Plan a trip", "description": "Routes"}]}
    ))  # fmt: skip
    engine = make_engine()
    report = engine.registry.add([folder])
    assert report.documents_added == 6 and not report.skipped
    result = engine.registry.search("create a ticket")
    assert result.search_mode == "hybrid"
    assert (
        result.servers[0].meta["name"] == "Atlas Tickets" and result.tools[0].meta["name"] == "create_ticket"
    )
    assert result.tools[0].meta["input_schema"] == {"type": "object"}
    assert engine.registry.search("plan a journey").agents[0].meta["name"] == "Trip Planner"
    assert {e["name"] for e in engine.registry.entries()} == {"Atlas Tickets", "Clock", "Trip Planner"}
    assert engine.registry.remove("/tickets") == 3
    left = engine.registry.search("create a ticket", types=("tool",)).tools
    assert "create_ticket" not in {h.meta["name"] for h in left}
