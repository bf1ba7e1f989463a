"""Re-indexing does only the work that changed, and keeps history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from retrievo import ModelMismatchError
from retrievo.embed.http import OpenAIEmbedder


def test_unchanged_folder_embeds_nothing(make_engine: Any, handbook: Path) -> None:
    engine = make_engine()
    first = engine.index([handbook])
    again = engine.index([handbook])
    assert first.chunks_embedded > 0
    assert (again.documents_unchanged, again.chunks_written, again.chunks_embedded) == (5, 0, 0)


def test_a_changed_file_rechunks_only_itself_and_unchanged_chunks_keep_vectors(
    make_engine: Any, handbook: Path
) -> None:
    engine = make_engine()
    engine.index([handbook])
    old = engine.search("sabbatical", mode="keyword").hits[0].chunk
    policy = handbook / "leave-policy.md"
    policy.write_text(
        policy.read_text() + "\n## Jury duty\n\nJury service is paid leave for its full length.\n"
    )
    report = engine.index([handbook])
    assert (report.documents_changed, report.documents_unchanged) == (1, 4)
    assert report.chunks_embedded == 1, "only the new section needs a vector"
    assert report.embeddings_reused == report.chunks_written - 1
    new = engine.search("sabbatical", mode="keyword").hits[0].chunk
    assert new.revision_id != old.revision_id and new.text == old.text
    assert engine.search("jury service").hits[0].chunk.context == "Leave Policy > Jury duty"
    status = engine.status().collections[0]
    assert status.missing == 0 and status.documents == 5


def test_a_deleted_file_leaves_the_results(make_engine: Any, handbook: Path) -> None:
    engine = make_engine()
    engine.index([handbook])
    assert engine.search("corporate credit card").hits[0].chunk.path.endswith("expenses.md")
    (handbook / "expenses.md").unlink()
    report = engine.index([handbook])
    assert report.documents_removed == 1
    hits = engine.search("corporate credit card", limit=50).hits
    assert all(not hit.chunk.path.endswith("expenses.md") for hit in hits)
    assert engine.status().collections[0].documents == 4


def test_a_file_that_turns_bad_keeps_its_indexed_content(make_engine: Any, handbook: Path) -> None:
    engine = make_engine()
    engine.index([handbook])
    (handbook / "remote-work.txt").write_bytes(b"\xff\xfe\x00garbage" * 50)
    report = engine.index([handbook])
    assert report.skipped_by_reason() == {"binary": 1}
    assert engine.search("home-office allowance").hits[0].chunk.path.endswith("remote-work.txt")


def test_a_collection_is_served_by_its_own_model_and_an_unreachable_one_says_how_to_move(
    make_engine: Any, handbook: Path, embedding_server: Any, tmp_path: Path
) -> None:
    make_engine().index([handbook])
    other = make_engine(embedder=OpenAIEmbedder(embedding_server.url + "/v1", "toy"))
    served = other.search("annual leave days")  # the bundled model the collection was made with
    assert served.search_mode == "hybrid" and served.hits[0].chunk.path.endswith("leave-policy.md")
    make_engine(embedder=OpenAIEmbedder(embedding_server.url + "/v1", "toy")).index(
        [handbook], collection="toy"
    )
    try:
        make_engine().search("leave", collection="toy")  # openai:toy with no embedding URL configured
    except ModelMismatchError as exc:
        assert "openai:toy" in str(exc) and "all-MiniLM-L6-v2-int8" in str(exc)
        assert "retrievo regenerate --model" in str(exc) and "--collection" in str(exc)
    else:
        raise AssertionError("a model out of reach must be an error")


def test_a_collection_whose_vectors_all_come_from_the_cache_is_still_hybrid(
    make_engine: Any, handbook: Path
) -> None:
    engine = make_engine()
    engine.index([handbook], collection="first")
    second = engine.index([handbook], collection="second")
    assert second.chunks_embedded == 0 and second.embeddings_reused == second.chunks_written
    result = engine.search("parental leave", collection="second")
    assert result.search_mode == "hybrid" and engine.status().collections[1].missing == 0
