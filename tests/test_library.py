"""Seed 003's ``search_library`` over MCP (official client): one result per document with the seed's
fields, ``min_similarity`` on a documented scale, ``total_results`` counting every match, a cursor."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from pdf_maker import write_pdf
from retrievo import Config, Engine
from retrievo.search.documents.library import similarity
from test_mcp_agent import run, stdio


@pytest.fixture(scope="module")
def library_db(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Path:
    """A small library: a Markdown note whose title alone names Gossypium, a three-page PDF about
    cells, and two unrelated notes."""
    base = tmp_path_factory.mktemp("lib")
    folder = base / "library"
    folder.mkdir()
    (folder / "cotton.md").write_text(
        "---\ntitle: Gossypium hirsutum\n---\n\nUpland varieties grown for fibre across warm regions; "
        "breeding programmes select for staple length and drought tolerance.\n"
    )
    write_pdf(
        folder / "membranes.pdf",
        ["The cell membrane separates the interior from its surroundings.", "Transport proteins.", "Notes."],
        title="Membranes",
    )
    (folder / "trains.md").write_text("# Timetables\n\nRegional trains leave every hour from platform two.\n")
    (folder / "bread.md").write_text("# Sourdough\n\nA starter of flour and water ferments for days.\n")
    db = base / "library.db"
    with Engine(Config(db=db), embedder=minilm) as engine:
        engine.index([folder])
    return db


def test_search_library_is_hybrid_listed_by_default_and_its_fields_mean_what_they_say(
    library_db: Path,
) -> None:
    today = datetime.now(UTC).date().isoformat()

    async def library(client: Client) -> None:
        assert "search_library" in {t.name for t in (await client.list_tools()).tools}, "listed by default"

        async def ask(**arguments: Any) -> dict[str, Any]:
            answer = await client.call_tool("search_library", arguments)
            assert not answer.is_error, answer.content
            return answer.structured_content or {}

        title_word = await ask(query="Gossypium")  # in the title only; the default min_similarity 0.7
        assert [r["filename"] for r in title_word["results"]][:1] == ["cotton.md"]
        # the one word is evidence, not a certain match: above the default, below 1.0
        assert 0.7 <= title_word["results"][0]["similarity_score"] < 1.0
        assert title_word["search_mode"] == "hybrid"
        term = (await ask(query="cell"))["results"]
        assert term and term[0]["filename"] == "membranes.pdf"
        pdf = term[0]
        assert pdf["page_count"] == 3 and pdf["source_path"].endswith("membranes.pdf")
        assert "markdown_path" not in pdf, "a PDF's text is read through uri, not a file"
        note = title_word["results"][0]
        assert note["markdown_path"] == note["source_path"] == note["path"]
        assert note["processed_at"].startswith(today)
        assert (await ask(query="qzxv wplkj vvrrq"))["total_results"] == 0, "gibberish passes nothing"

        everything = await ask(query="cotton fibre and cells", min_similarity=0)
        scores = [r["similarity_score"] for r in everything["results"]]
        assert len(scores) == 4 and scores == sorted(scores, reverse=True)
        # date_from / date_to compare against processed_at (when indexed), as seed 003 says
        assert (await ask(query="cell", date_to="2024-12-31"))["total_results"] == 0
        assert (await ask(query="cell", date_from=today, date_to=today))["results"][0][
            "filename"
        ] == "membranes.pdf"
        assert (await ask(query="cell", date_from="2099-01-01"))["total_results"] == 0
        refused = await client.call_tool("search_library", {"query": "cell", "date_from": "last week"})
        assert refused.is_error and "ISO date" in refused.content[0].text  # type: ignore[union-attr]

    run(stdio(library_db), library)


def test_similarity_is_the_cosine_on_zero_to_one() -> None:
    assert similarity(1.0) == 1.0 and similarity(-1.0) == 0.0 and similarity(0.4) == 0.7
    assert similarity(1.5) == 1.0  # rounding never leaves the scale


def test_search_library_answers_documents_with_the_seeds_fields_and_pages(docs_db: tuple[Path, Path]) -> None:
    async def library(client: Client) -> None:
        assert "search_library" in {t.name for t in (await client.list_tools()).tools}
        good = await client.call_tool("search_library", {"query": "how many weeks of parental leave"})
        answer = good.structured_content or {}
        assert not good.is_error and answer["results"], "the default 0.7 keeps a good query's documents"
        top = answer["results"][0]
        assert top["filename"] == "leave-policy.md" or "parental" in top["excerpt"].lower()
        for field in (
            "document_id",
            "filename",
            "path",
            "processed_at",
            "similarity_score",
            "excerpt",
            "uri",
        ):
            assert top[field] not in (None, ""), field
        assert answer["query"] and answer["search_duration_ms"] >= 0 and answer["total_results"] >= 1

        everything = await client.call_tool(
            "search_library", {"query": "company policy for employees", "min_similarity": 0, "limit": 4}
        )
        first = everything.structured_content or {}
        documents = [r["document_id"] for r in first["results"]]
        assert len(documents) == len(set(documents)) == 4, "one result per document"
        assert first["total_results"] > 4 and first["next_cursor"], "total counts every match, not the page"
        scores = [r["similarity_score"] for r in first["results"]]
        assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
        tagged = [r for r in first["results"] if r["filename"] == "leave-policy.md"]
        assert all(r["tags"] == ["hr", "leave"] for r in tagged)

        second = await client.call_tool(
            "search_library",
            {
                "query": "company policy for employees",
                "min_similarity": 0,
                "limit": 4,
                "cursor": first["next_cursor"],
            },
        )
        following = second.structured_content or {}
        assert following["results"] and not set(documents) & {r["document_id"] for r in following["results"]}
        assert following["total_results"] == first["total_results"]
        assert following["results"][0]["similarity_score"] <= scores[-1]

        strict = await client.call_tool(
            "search_library", {"query": "company policy for employees", "min_similarity": 1}
        )
        assert not strict.is_error and (strict.structured_content or {})["total_results"] == 0
        foreign = await client.call_tool(
            "search_library", {"query": "something else", "min_similarity": 0, "cursor": first["next_cursor"]}
        )
        assert foreign.is_error and "another query" in foreign.content[0].text  # type: ignore[union-attr]
        forged = await client.call_tool("search_library", {"query": "x", "cursor": "not-a-cursor"})
        assert forged.is_error and "cursor" in forged.content[0].text  # type: ignore[union-attr]
        too_many = await client.call_tool("search_library", {"query": "x", "limit": 51})
        assert too_many.is_error and "allowed: an integer from 1 to 50" in too_many.content[0].text  # type: ignore[union-attr]

    run(stdio(docs_db[0], "--tools", "docs,library"), library)


def test_the_library_toolset_can_be_left_out(docs_db: tuple[Path, Path]) -> None:
    async def default(client: Client) -> None:
        assert "search_library" not in {t.name for t in (await client.list_tools()).tools}

    run(stdio(docs_db[0], "--tools", "docs"), default)


def test_search_grouped_by_document_counts_documents(docs_db: tuple[Path, Path]) -> None:
    async def grouped(client: Client) -> None:
        asked = {"query": "leave policy parental annual sabbatical", "limit": 5}
        passages = (await client.call_tool("search", asked)).structured_content or {}
        documents = (
            await client.call_tool("search", {**asked, "group_by": "document"})
        ).structured_content or {}
        owners = [hit["uri"].split("/")[3] for hit in documents["results"]]
        assert len(owners) == len(set(owners)) == 5, "five distinct documents, each by its best passage"
        first = passages["results"][0]
        assert (
            documents["results"][0]["uri"] == first["uri"]
            and documents["results"][0]["line_start"] == first["line_start"]
        )
        refused = await client.call_tool("search", {**asked, "group_by": "chapter"})
        assert refused.is_error and "allowed: document" in refused.content[0].text  # type: ignore[union-attr]

    run(stdio(docs_db[0]), grouped)
