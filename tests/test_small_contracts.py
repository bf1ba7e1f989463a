"""Small things a user sees (issue 47 item 7), each through the surface a user calls: seed 004's
``chunk_index``/``chunk_strategy``, whole lines when stdout and stderr share a terminal, seed 001's
``Score for`` line under ``-v``, and a setting given to the server through the MCP client's ``env``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from conftest import ROOT, SHARED_DATA
from retrievo import Config, Engine
from test_mcp import call, run_client

ARCHISURANCE = SHARED_DATA / "archimate" / "opengroup-xmlexchange" / "archisurance.xml"
REGISTRY = SHARED_DATA / "registry" / "mcp-gateway-registry" / "registry" / "servers"


def merged(*args: str) -> str:
    """The CLI's stdout and stderr as one terminal shows them."""
    done = subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", *args],
        check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    return done.stdout


def test_chunk_index_and_strategy_in_chunks_json_and_full_mcp_hits(docs_db: tuple[Path, Path]) -> None:
    db = str(docs_db[0])
    listed = json.loads(merged("docs", "--db", db, "--json"))
    document = next(d for d in listed if d["path"].endswith(".md"))
    chunks = json.loads(
        subprocess.run(
            [sys.executable, "-m", "retrievo.surfaces.cli", "chunks", document["document_id"], "--db", db, "--json"],
            check=True, capture_output=True, text=True, cwd=ROOT, timeout=120,
        ).stdout
    )  # fmt: skip
    assert [c["chunk_index"] for c in chunks] == list(range(len(chunks)))
    assert all(c["chunk_strategy"] == "markdown" for c in chunks), {c["chunk_strategy"] for c in chunks}

    async def full(client: Client) -> None:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        answer = await call(client, "search", {"query": "parental leave", "detail": "full"}, schemas)
        hit = answer["results"][0]
        assert isinstance(hit["chunk_index"], int) and hit["chunk_strategy"] == "markdown"

    run_client(
        StdioServerParameters(
            command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", db]
        ),
        full,
    )


@pytest.mark.skipif(not ARCHISURANCE.exists(), reason="../shared/data not present")
def test_elements_and_document_end_their_lines_before_the_summary(tmp_path: Path) -> None:
    shutil.copy(ARCHISURANCE, tmp_path / "archisurance.xml")
    (tmp_path / "note.md").write_text("# Note\n\nNo newline at the end of this file.")
    db = tmp_path / "m.db"
    with Engine(Config(db=db, embedder="none")) as engine:
        engine.index([tmp_path / "archisurance.xml", tmp_path / "note.md"])
        note = next(d for d in engine.documents() if d.path.endswith("note.md"))
    lines = merged("elements", "--db", str(db), "--type", "BusinessFunction").splitlines()
    assert lines[-1] == "6 element(s)" and all(line.startswith("id-") for line in lines[:-1]), lines
    shown = merged("document", note.document_id, "--db", str(db)).splitlines()
    assert shown[-2] == "No newline at the end of this file." and shown[-1].startswith("("), shown


@pytest.mark.skipif(not REGISTRY.exists(), reason="../shared/data not present")
def test_verbose_prints_seed_001s_score_line_for_every_candidate(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    merged("registry", "add", str(REGISTRY), "--db", db)
    quiet = merged("registry", "search", "current time", "--db", db)
    loud = merged("-v", "registry", "search", "current time", "--db", db)
    assert "Score for" not in quiet
    scored = [line for line in loud.splitlines() if "Score for '" in line]
    assert scored and all(
        all(
            f"{part}=" in line
            for part in ("vector", "normalized_vector", "text_boost", "boost_contrib", "final")
        )
        for line in scored
    ), scored


def test_a_setting_reaches_the_server_through_the_clients_env(docs_db: tuple[Path, Path]) -> None:
    async def small(client: Client) -> None:
        answer = await client.call_tool("search", {"query": "leave policy", "limit": 20, "detail": "full"})
        data: dict[str, Any] = answer.structured_content or {}
        assert not answer.is_error and data.get("cut") and len(json.dumps(data)) < 6_000, "the env's cap held"

    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(docs_db[0])],
        env={"RETRIEVO_MCP_MAX_BYTES": "4000"},
    )  # fmt: skip
    run_client(server, small)


def toy_env(server: Any) -> dict[str, str]:
    return {
        "RETRIEVO_EMBEDDER": "openai",
        "RETRIEVO_EMBED_URL": server.url + "/v1",
        "RETRIEVO_EMBED_MODEL": "toy",
    }


def test_retrievo_mcp_loads_the_model_at_start_not_at_the_first_search(
    tmp_path: Path, embedding_server: Any
) -> None:
    """The warm-up's query reaches the model while the client has only shaken hands (issue 47 item 8)."""
    import os
    import time

    (tmp_path / "a.md").write_text("# Pumps\n\nCooling pumps need a yearly check.\n")
    env = toy_env(embedding_server)
    done = subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", "index", str(tmp_path / "a.md"), "--db", str(tmp_path / "t.db")],
        check=False, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **env}, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    asked_before = len(embedding_server.requests)

    async def handshake_only(client: Client) -> None:
        await client.list_tools()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
            "warm up" in json.dumps(r.get("input")) for r in embedding_server.requests[asked_before:]
        ):
            time.sleep(0.05)
        assert any("warm up" in json.dumps(r.get("input")) for r in embedding_server.requests[asked_before:])

    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(tmp_path / "t.db")],
        env={**env, "PATH": os.environ.get("PATH", "")},
    )  # fmt: skip
    run_client(server, handshake_only)


def test_a_search_gives_up_on_an_unanswering_model_at_once_and_answers_by_keywords(
    tmp_path: Path, embedding_server: Any
) -> None:
    """A provider answering 503: indexing retries 4 times with backoff; a search's query tries twice
    within its budget and the answer comes by keywords (before: 4 tries, 3.5 s of backoff)."""
    import os

    from retrievo.embed.http import QUERY_BUDGET_S

    env = toy_env(embedding_server)
    (tmp_path / "a.md").write_text("# Pumps\n\nCooling pumps need a yearly check.\n")
    indexed = subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", "index", str(tmp_path / "a.md"), "--db", str(tmp_path / "k.db")],
        check=False, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **env}, timeout=120,
    )  # fmt: skip
    assert indexed.returncode == 0, indexed.stderr
    embedding_server.down = True
    before = len(embedding_server.requests)
    found = subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", "search", "cooling pumps", "--db", str(tmp_path / "k.db"), "--json"],
        check=False, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **env}, timeout=120,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert answer["results"] and answer["search_mode"] == "lexical-only", answer
    assert len(embedding_server.requests) - before <= 2 and QUERY_BUDGET_S < 1.0


def test_stale_through_the_cli_search_verify_and_regenerate(tmp_path: Path) -> None:
    """One meaning of stale on the surfaces a user calls (issue 47 item 6)."""
    import sqlite3

    shutil.copytree(ROOT / "examples" / "handbook", tmp_path / "handbook")
    db = str(tmp_path / "s.db")
    merged("index", str(tmp_path / "handbook"), "--db", db)

    def search() -> list[dict[str, Any]]:
        out = subprocess.run(
            [sys.executable, "-m", "retrievo.surfaces.cli", "search", "corporate credit card", "--db", db, "--json"],
            check=True, capture_output=True, text=True, cwd=ROOT, timeout=120,
        )  # fmt: skip
        return list(json.loads(out.stdout)["results"])

    first, other = search()[:2]
    with sqlite3.connect(db) as raw:
        raw.execute(
            "UPDATE chunks SET embed_key = (SELECT embed_key FROM chunks WHERE id = ?) WHERE id = ?",
            (other["chunk_id"], first["chunk_id"]),
        )
    assert {r["chunk_id"]: r["embedding_status"] for r in search()}[first["chunk_id"]] == "stale"
    checked = json.loads(subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", "verify", "--db", db, "--json"],
        check=False, capture_output=True, text=True, cwd=ROOT, timeout=120,
    ).stdout)  # fmt: skip
    assert checked["problems"]["embed_key"] == 1 and not checked["ok"]
    redone = json.loads(subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", "regenerate", "--stale", "--db", db, "--json"],
        check=True, capture_output=True, text=True, cwd=ROOT, timeout=120,
    ).stdout)  # fmt: skip
    assert redone["chunks_rekeyed"] == 1
    assert {r["embedding_status"] for r in search()} == {"fresh"}
