"""Done-when of point-in-time reads, through the official MCP client over stdio, on both stores.

Index a folder, create a baseline over MCP, edit and delete files, refresh over MCP: a search with the
baseline returns the old passages with their old revision_id and exact text, HEAD returns the new
ones, and a prune keeps the baseline intact. Also the CLI's baseline commands and JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from retrievo.surfaces.cli import main
from test_mcp import call, run_client

OLD = "Refunds are paid within 30 days to the original card."
NEW = "Refunds are paid within 5 days, by bank transfer only."
GONE = "Travel expenses need a receipt above 25 euros."


def _corpus(tmp_path: Path) -> Path:
    docs = tmp_path / "policies"
    docs.mkdir()
    (docs / "refunds.md").write_text(f"# Refunds\n\n{OLD}\n")
    (docs / "travel.md").write_text(f"# Travel\n\n{GONE}\n")
    return docs


def _server_args(make_engine: Any, tmp_path: Path) -> tuple[list[str], Any]:
    engine = make_engine()
    target = ["--store", engine.config.store] if engine.config.store else ["--db", str(engine.config.db)]
    return target, engine


def test_baseline_over_mcp_on_both_stores(make_engine: Any, tmp_path: Path) -> None:
    target, engine = _server_args(make_engine, tmp_path)
    docs = _corpus(tmp_path)
    engine.index([docs])
    engine.close()
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--tools", "all", *target]
    )

    async def scenario(client: Client) -> None:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        made = await call(
            client, "create_baseline", {"name": "audit-2026", "note": "before the change"}, schemas
        )
        question = {"query": "how fast are refunds paid", "detail": "full"}
        before = await call(client, "search", question, schemas)
        assert "baseline_id" not in before and before["results"][0]["text"].endswith(OLD)
        old_hit = before["results"][0]
        (docs / "refunds.md").write_text(f"# Refunds\n\n{NEW}\n")
        (docs / "travel.md").unlink()
        await call(client, "refresh_index", {"path": str(docs)}, schemas)

        head = await call(client, "search", question, schemas)
        assert "baseline_id" not in head and head["as_of"] > made["as_of"]
        assert head["results"][0]["text"].endswith(NEW)
        assert head["results"][0]["uri"] != old_hit["uri"]
        assert all(GONE not in r["text"] for r in head["results"])

        pinned_args = {**question, "read_context": {"baseline_id": "audit-2026"}}
        pinned = await call(client, "search", pinned_args, schemas)
        assert pinned["baseline_id"] == made["baseline_id"] and pinned["as_of"] == made["as_of"]
        first = pinned["results"][0]
        assert first["uri"] == old_hit["uri"] and first["text"] == old_hit["text"]
        assert any(GONE in r["text"] for r in pinned["results"]), "the deleted file is there at the baseline"
        # The cited revision's exact text, by resource and by get_document at the baseline.
        resource = await client.read_resource(first["uri"])
        text = resource.contents[0].text  # type: ignore[union-attr]
        assert text[first["start"] : first["end"]] == first["text"]
        document = await call(
            client, "get_document",
            {"document_id": first["uri"].split("/")[3], "read_context": {"baseline_id": made["baseline_id"]}},
            schemas,
        )  # fmt: skip
        assert document["uri"] == first["uri"] and not document["is_current"]
        assert document["valid_to"] is not None and document["baseline_id"] == made["baseline_id"]
        context = await call(
            client, "get_context", {"query": "refunds", "max_tokens": 200, **{"read_context": {"as_of": made["as_of"]}}},
            schemas,
        )  # fmt: skip
        assert OLD in context["text"] and context["as_of"] == made["as_of"]
        assert context["sources"][0]["uri"] == old_hit["uri"]
        status = await call(client, "index_status", {}, schemas)
        assert [b["name"] for b in status["baselines"]] == ["audit-2026"]
        bad = await client.call_tool("search", {"query": "refunds", "read_context": {"baseline_id": "nope"}})
        assert bad.is_error and "audit-2026" in bad.content[0].text  # type: ignore[union-attr]
        both = await client.call_tool(
            "search",
            {"query": "refunds", "read_context": {"baseline_id": "audit-2026", "as_of": made["as_of"]}},
        )
        assert both.is_error and "not both" in both.content[0].text  # type: ignore[union-attr]

    run_client(server, scenario)

    # Prune everything superseded: the baseline's revisions stay, and so does what it answers.
    pruned = CliRunner().invoke(main, ["prune", "--before", "2999-01-01", "--json", *target])
    assert pruned.exit_code == 0, pruned.output
    assert json.loads(pruned.output)["kept_for_baselines"] == 2

    async def after_prune(client: Client) -> None:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        pinned = await call(
            client,
            "search",
            {"query": "refunds paid", "read_context": {"baseline_id": "audit-2026"}, "detail": "full"},
            schemas,
        )
        assert pinned["results"][0]["text"].endswith(OLD)

    run_client(server, after_prune)


def test_baseline_cli_commands(tmp_path: Path) -> None:
    docs = _corpus(tmp_path)
    db = ["--db", str(tmp_path / "i.db")]
    runner = CliRunner()
    env = {"RETRIEVO_EMBEDDER": "none"}
    assert runner.invoke(main, ["index", str(docs), *db], env=env).exit_code == 0
    made = runner.invoke(main, ["baseline", "create", "v1", "--note", "first", "--json", *db], env=env)
    assert made.exit_code == 0, made.output
    baseline = json.loads(made.output)
    assert baseline["baseline_id"].startswith("bl_") and baseline["revisions"] == 2
    (docs / "refunds.md").write_text(f"# Refunds\n\n{NEW}\n")
    assert runner.invoke(main, ["index", str(docs), *db], env=env).exit_code == 0
    found = runner.invoke(main, ["search", "refunds", "--baseline", "v1", "--json", *db], env=env)
    data = json.loads(found.output)
    assert data["baseline_id"] == baseline["baseline_id"] and data["results"][0]["text"].endswith(OLD)
    at = runner.invoke(main, ["search", "refunds", "--as-of", baseline["as_of"], "--json", *db], env=env)
    assert json.loads(at.output)["results"][0]["text"].endswith(OLD)
    document_id = data["results"][0]["document_id"]
    shown = runner.invoke(main, ["document", document_id, "--baseline", "v1", *db], env=env)
    assert OLD in shown.output
    listed = runner.invoke(main, ["baseline", "list", "--json", *db], env=env)
    assert [b["name"] for b in json.loads(listed.output)] == ["v1"]
    assert (
        json.loads(runner.invoke(main, ["baseline", "show", "v1", "--json", *db], env=env).output)["note"]
        == "first"
    )
    missing = runner.invoke(main, ["search", "refunds", "--baseline", "v2", *db], env=env)
    assert missing.exit_code == 1 and "no baseline 'v2'" in missing.output
    deleted = runner.invoke(main, ["baseline", "delete", "v1", *db], env=env)
    assert deleted.exit_code == 0 and "deleted baseline 'v1'" in deleted.output
    pruned = runner.invoke(main, ["prune", "--before", "2999-01-01", "--json", *db], env=env)
    assert json.loads(pruned.output)["revisions"] == 1
