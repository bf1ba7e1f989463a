"""Every MCP tool that reads takes `collection`, and the tools over one kind of content find the collections
that hold it: over an index with a `models` and a `docs` collection and no `default` one, `semanticSearch`,
`getContext` and `search_library` answer without being told where (before: "collection 'default' does not
exist"), and answer from the collection named; `find_similar` and `retrievo similar -c` honour the
collection named or say where the chunk is."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from conftest import HANDBOOK, SHARED_DATA
from retrievo import CollectionNotFound, Config, Engine
from retrievo.embed.local import MiniLMEmbedder
from test_mcp import call, run_client

ARCHISURANCE = SHARED_DATA / "archimate" / "opengroup-xmlexchange" / "archisurance.xml"


@pytest.fixture(scope="module")
def two_collections(tmp_path_factory: pytest.TempPathFactory, minilm: MiniLMEmbedder) -> Path:
    base = tmp_path_factory.mktemp("two")
    (base / "models").mkdir()
    shutil.copy(ARCHISURANCE, base / "models" / "archisurance.xml")
    (base / "docs").mkdir()
    for name in ("leave-policy.md", "expenses.md", "security.md"):
        shutil.copy(HANDBOOK / name, base / "docs" / name)
    db = base / "two.db"
    with Engine(Config(db=db, collection="models"), embedder=minilm) as engine:
        engine.index([base / "models"])
        engine.index([base / "docs"], collection="docs")
        assert sorted(engine.collections() or []) == ["docs", "models"]
    return db


def test_the_tools_over_one_kind_find_its_collections_and_honour_the_one_named(two_collections: Path) -> None:
    async def ask(client: Client) -> None:
        listed = (await client.list_tools()).tools
        schemas = {t.name: t.output_schema for t in listed}
        for tool in listed:
            if tool.name != "get_document":  # a document is named by its id, unique across collections
                assert "collection" in json.dumps(tool.input_schema), f"{tool.name} takes no collection"
        semantic = next(t for t in listed if t.name == "semanticSearch")
        said = semantic.input_schema["properties"]["min_score"]["description"]
        assert "cosine" not in said and "relevance" in said, said  # what min_score reads, said as it is
        found: dict[str, Any] = await call(client, "semanticSearch", {"query": "customer"}, schemas)
        assert found["results"], "answered from the collection holding the model"
        context = await call(client, "getContext", {"query": "insurance claim"}, schemas)
        assert context["sources"]
        named = await call(client, "semanticSearch", {"query": "customer", "collection": "models"}, schemas)
        assert [r["element_id"] for r in named["results"]] == [r["element_id"] for r in found["results"]]
        library = await call(
            client, "search_library", {"query": "parental leave", "min_similarity": 0}, schemas
        )
        assert library["results"] and all(r["collection"] == "docs" for r in library["results"])
        hit = (await call(client, "search", {"query": "parental leave", "filters": {"collection": "docs"}},
                          schemas))["results"][0]  # fmt: skip
        unnamed = await call(client, "search", {"query": "parental leave"}, schemas)  # no `default` here
        assert unnamed["results"][0]["uri"] == hit["uri"]
        same = await call(client, "find_similar", {"uri": hit["uri"], "collection": "docs"}, schemas)
        assert same["results"]
        elsewhere = await client.call_tool("find_similar", {"uri": hit["uri"], "collection": "models"})
        assert elsewhere.is_error
        assert "is in collection 'docs', not 'models'" in elsewhere.content[0].text  # type: ignore[union-attr]

    run_client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(two_collections), "--tools", "all"],
        ),
        ask,
    )


def test_similar_on_the_cli_honours_the_collection_named(two_collections: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "retrievo.surfaces.cli", *args, "--db", str(two_collections)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    hit = json.loads(cli("search", "parental leave", "-c", "docs", "--json").stdout)["results"][0]
    same = cli("similar", str(hit["chunk_id"]), "-c", "docs", "--json")
    assert same.returncode == 0 and json.loads(same.stdout)["results"], same.stderr
    refused = cli("similar", str(hit["chunk_id"]), "-c", "models")
    assert refused.returncode == 1
    assert f"chunk {hit['chunk_id']} is in collection 'docs', not 'models'" in refused.stderr


@pytest.fixture(scope="module")
def several(tmp_path_factory: pytest.TempPathFactory, minilm: MiniLMEmbedder) -> Path:
    """Two document collections and two model collections, none named `default`."""
    base = tmp_path_factory.mktemp("several")
    for name, files in (("alpha", ("leave-policy.md", "expenses.md")), ("beta", ("security.md",))):
        (base / name).mkdir()
        for file in files:
            shutil.copy(HANDBOOK / file, base / name / file)
    for name in ("north", "south"):
        (base / name).mkdir()
        shutil.copy(ARCHISURANCE, base / name / "archisurance.xml")
    db = base / "several.db"
    with Engine(Config(db=db, collection="alpha"), embedder=minilm) as engine:
        for name in ("alpha", "beta", "north", "south"):
            engine.index([base / name], collection=name)
    return db


def test_several_collections_are_read_together_and_every_hit_says_its_own(several: Path) -> None:
    """search_library over two document collections (before: "collection 'alpha,beta' does not exist",
    named or not), semanticSearch over two model collections, and search: each hit names its collection."""

    async def ask(client: Client) -> None:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        question = {"query": "leave expenses security passwords", "min_similarity": 0}
        unnamed = await call(client, "search_library", question, schemas)
        named = await call(client, "search_library", {**question, "collection": "alpha,beta"}, schemas)
        assert [r["uri"] for r in named["results"]] == [r["uri"] for r in unnamed["results"]]
        assert {r["collection"] for r in unnamed["results"]} == {"alpha", "beta"}
        assert all(r["source_path"].startswith(f"{r['collection']}/") for r in unnamed["results"])
        alone = await call(client, "search_library", {**question, "collection": "beta"}, schemas)
        assert {r["collection"] for r in alone["results"]} == {"beta"}
        elements = await call(client, "semanticSearch", {"query": "customer", "min_score": 0}, schemas)
        assert {r["collection"] for r in elements["results"]} == {"north", "south"}
        hits = await call(client, "search", {"query": "parental leave", "filters": {"collection": "alpha,beta"}},
                          schemas)  # fmt: skip
        assert hits["results"] and all(r["collection"] in ("alpha", "beta") for r in hits["results"])

    run_client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(several), "--tools", "all"],
        ),
        ask,
    )


def test_the_python_api_with_no_collection_named_reads_those_holding_documents(
    two_collections: Path, minilm: MiniLMEmbedder
) -> None:
    """No `default` collection (before: "collection 'default' does not exist"): `search` and `library`
    read the collections holding documents or code; a default configured by name is kept as named."""
    with Engine(Config(db=two_collections), embedder=minilm) as engine:
        found = engine.search("parental leave")
        assert found.hits and {h.chunk.collection for h in found.hits} == {"docs"}
        assert engine.library("parental leave", min_similarity=0).entries
    named = Engine(Config(db=two_collections, collection="elsewhere"), embedder=minilm)
    with named, pytest.raises(CollectionNotFound):
        named.search("parental leave")
