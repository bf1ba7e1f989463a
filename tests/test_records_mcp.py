"""The seed's semanticSearch and getContext over MCP (official client, stdio and HTTP), on Archisurance."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from conftest import SHARED_DATA
from retrievo import Config, Engine
from test_mcp import call, run_client

ARCHISURANCE = SHARED_DATA / "archimate" / "opengroup-xmlexchange" / "archisurance.xml"
pytestmark = pytest.mark.skipif(not ARCHISURANCE.exists(), reason="../shared/data not present")


@pytest.fixture(scope="module")
def model_db(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Path:
    base = tmp_path_factory.mktemp("records")
    shutil.copy(ARCHISURANCE, base / "archisurance.xml")
    db = base / "r.db"
    with Engine(Config(db=db), embedder=minilm) as engine:
        engine.index([base / "archisurance.xml"])
    return db


async def _seed_tools(client: Client) -> None:
    schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
    found = await call(
        client,
        "semanticSearch",
        {"query": "what handles claim registration?", "top_k": 5, "min_score": 0.0},
        schemas,
    )
    names = [r["element_name"] for r in found["results"]]
    assert {"Register", "Handle Claim"} & set(names[:3]), names
    first = found["results"][0]
    assert first["element_id"].startswith("id-") and first["revision_id"].startswith("rev_")
    # seed 000's citations: baseline_id present and null at HEAD, in the answer and in each result
    assert found["baseline_id"] is None and first["baseline_id"] is None and first["as_of"] == found["as_of"]
    filled = await call(
        client, "semanticSearch", {"query": "customer", "top_k": 10, "min_score": 0.0}, schemas
    )
    assert len(filled["results"]) == 10, "relationship answers collapsing into one element do not under-fill"
    scores = [r["score"] for r in filled["results"]]
    assert scores == sorted(scores, reverse=True)
    for bad, allowed in (({"layer": "bussiness"}, "application, business"),
                         ({"element_type": "BusinesProcess"}, "BusinessProcess")):  # fmt: skip
        refused = await client.call_tool("semanticSearch", {"query": "claim", "filters": bad})
        text = refused.content[0].text  # type: ignore[union-attr]
        assert refused.is_error and "is not in the indexed models; allowed:" in text and allowed in text, text
    # at its default min_score: a word in another form, a question, a description in other words, a
    # relationship question, a filtered word (issue 55), all answered; a word the model lacks is not
    for query in ("servers", "which servers exist?", "paying out money to customers after an accident",
                  "what is the firewall connected to"):  # fmt: skip
        answered = await call(client, "semanticSearch", {"query": query}, schemas)
        assert answered["results"], query
    filtered = await call(
        client, "semanticSearch", {"query": "claim", "filters": {"element_type": "BusinessProcess"}}, schemas
    )
    assert filtered["results"] and all(r["element_type"] == "BusinessProcess" for r in filtered["results"])
    assert not (await call(client, "semanticSearch", {"query": "xylophone"}, schemas))["results"]
    # issue 66: at its defaults an own-model question is answered with the ranked list (before: one element,
    # every other one below 0.5), an element's exact name reads strong (before: 0.5), nonsense gets nothing
    for query in ("what realizes the claim registration service?", "who handles claims", "customer file"):
        listed = (await call(client, "semanticSearch", {"query": query}, schemas))["results"]
        assert len(listed) == 10, (query, listed)
    named = (await call(client, "semanticSearch", {"query": "Claim Registration Service"}, schemas))[
        "results"
    ]
    assert named[0]["element_name"] == "Claim Registration Service" and named[0]["score"] >= 0.7, named[0]
    nonsense = await call(client, "getContext", {"query": "zzqx flibbertigibbet"}, schemas)
    assert nonsense["sources"] == [] and nonsense["tokens"] == 0, nonsense
    anycase = await call(
        client, "semanticSearch", {"query": "claim", "filters": {"layer": "Business"}}, schemas
    )
    assert anycase["results"] and all(r["layer"] == "business" for r in anycase["results"])
    scoped = await call(
        client, "semanticSearch",
        {"query": "claim", "min_score": 0.0, "filters": {"layer": "application"}, "read_context": {"as_of": first["as_of"]}},
        schemas,
    )  # fmt: skip
    assert scoped["results"] and all(r["layer"] == "application" for r in scoped["results"])
    assert scoped["as_of"] == first["as_of"] and scoped["results"][0]["as_of"] == first["as_of"]
    before = await client.call_tool(
        "semanticSearch", {"query": "claim", "read_context": {"as_of": "2001-01-01T00:00:00Z"}}
    )
    assert before.is_error and "did not exist" in before.content[0].text  # type: ignore[union-attr]
    context = await call(
        client, "getContext", {"query": "what handles claim registration?", "max_tokens": 600}, schemas
    )
    assert 0 < context["tokens"] <= 600 and context["context"].startswith("[1] ")
    assert context["baseline_id"] is None and context["as_of"]
    assert any(s.get("expansion_of") is not None for s in context["sources"]), "one-hop neighbours are added"
    bare = await call(
        client,
        "getContext",
        {"query": "claim registration", "max_tokens": 600, "include_relationships": False},
        schemas,
    )
    assert all(s.get("expansion_of") is None for s in bare["sources"])
    general = await call(
        client,
        "search",
        {"query": "claim", "filters": {"metadata": {"element_type": "BusinessProcess"}}, "detail": "full"},
        schemas,
    )
    assert general["results"] and all(
        r["metadata"]["element_type"] == "BusinessProcess" for r in general["results"]
    )


def test_seed_tools_over_stdio(model_db: Path) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(model_db)]
    )
    run_client(server, _seed_tools)


def test_seed_tools_over_streamable_http(model_db: Path) -> None:
    from benchmarks.reliability.hostile.mcp_abuse import http_server

    with http_server(model_db) as url:
        run_client(url, _seed_tools)
