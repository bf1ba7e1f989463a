"""Seed 003's ``search_library`` over MCP (official client): one result per document with the seed's
fields, ``min_similarity`` on a documented scale, ``total_results`` counting every match, a cursor."""

from __future__ import annotations

from pathlib import Path

from mcp import Client

from retrievo.search.library import similarity
from test_mcp_agent import run, stdio


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


def test_the_library_toolset_is_asked_for_by_name(docs_db: tuple[Path, Path]) -> None:
    async def default(client: Client) -> None:
        assert "search_library" not in {t.name for t in (await client.list_tools()).tools}

    run(stdio(docs_db[0]), default)


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
