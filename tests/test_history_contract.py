"""Point-in-time reads, on both stores: validity, baselines, as_of on every read, citations, prune."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from retrievo.errors import DocumentNotFound, PointInTimeError
from retrievo.models import Filters


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "fox.md").write_text("# Fox\n\nThe quick brown fox jumps over the lazy dog near the river.\n")
    (docs / "vacuum.md").write_text("# Vacuum\n\nPostgres vacuum tuning keeps large tables healthy.\n")
    return docs


def _edit(docs: Path) -> None:
    (docs / "fox.md").write_text("# Fox\n\nA slow green turtle crawls under the garden fence.\n")
    (docs / "vacuum.md").unlink()


def test_baseline_pins_old_revisions_on_both_arms(make_engine: Any, tmp_path: Path) -> None:
    engine = make_engine()
    docs = _folder(tmp_path)
    engine.index([docs])
    baseline = engine.history.create("v1", note="before the edit")
    old_fox = engine.search("brown fox", limit=1).hits[0].chunk
    _edit(docs)
    engine.index([docs])

    for mode in ("keyword", "semantic", "hybrid"):
        head = engine.search("brown fox jumps", mode=mode, limit=5)
        assert head.baseline_id is None and head.as_of is not None
        assert all("brown fox" not in hit.chunk.text for hit in head.hits)
        pinned = engine.search("brown fox jumps", mode=mode, limit=5, baseline="v1")
        assert pinned.baseline_id == baseline.baseline_id and pinned.as_of == baseline.as_of
        assert pinned.hits[0].chunk.revision_id == old_fox.revision_id
        assert pinned.hits[0].chunk.text == old_fox.text
        # The deleted file is still there at the baseline, gone at HEAD.
        vacuum_then = engine.search("vacuum tuning", mode=mode, limit=5, baseline=baseline.baseline_id)
        assert any(h.chunk.path.endswith("vacuum.md") for h in vacuum_then.hits)
        assert not any(
            h.chunk.path.endswith("vacuum.md") for h in engine.search("vacuum tuning", mode=mode).hits
        )
    turtle = engine.search("green turtle", mode="keyword", baseline="v1")
    assert turtle.hits == ()
    # The exact text of a cited passage is the old revision's text at the cited offsets.
    revision = engine.document(old_fox.document_id, baseline="v1")
    assert revision.revision_id == old_fox.revision_id and revision.baseline_id == baseline.baseline_id
    assert revision.text[old_fox.start : old_fox.end] == old_fox.text
    assert revision.valid_to is not None and not revision.is_current
    assert engine.document(old_fox.document_id).revision_id != old_fox.revision_id


def test_as_of_equals_baseline_and_time_errors(make_engine: Any, tmp_path: Path) -> None:
    engine = make_engine()
    docs = _folder(tmp_path)
    engine.index([docs])
    baseline = engine.history.create("v1")
    _edit(docs)
    engine.index([docs])
    by_time = engine.search("vacuum tuning", mode="keyword", as_of=baseline.as_of)
    by_name = engine.search("vacuum tuning", mode="keyword", baseline="v1")
    assert [h.chunk.chunk_id for h in by_time.hits] == [h.chunk.chunk_id for h in by_name.hits]
    assert by_time.baseline_id is None and by_time.as_of == baseline.as_of
    with pytest.raises(PointInTimeError, match="not both"):
        engine.search("fox", baseline="v1", as_of=baseline.as_of)
    with pytest.raises(PointInTimeError, match=r"no baseline 'v9'.*v1"):
        engine.search("fox", baseline="v9")
    with pytest.raises(PointInTimeError, match="did not exist"):
        engine.search("fox", as_of="1999-01-01")
    with pytest.raises(PointInTimeError, match="ISO date"):
        engine.search("fox", as_of="yesterday")
    # A document made after the point is not there then.
    (docs / "new.md").write_text("# New\n\nA brand new page about kites.\n")
    engine.index([docs])
    kite = engine.search("kites", mode="keyword").hits[0].chunk
    with pytest.raises(DocumentNotFound, match="did not exist"):
        engine.document(kite.document_id, baseline="v1")


def test_stamps_strictly_increase_and_baselines_list(make_engine: Any, tmp_path: Path) -> None:
    engine = make_engine()
    docs = _folder(tmp_path)
    engine.index([docs])
    first = engine.history.create("a")
    second = engine.history.create("b", note="n")
    assert first.as_of < second.as_of
    assert [b.name for b in engine.history.list()] == ["a", "b"]
    assert engine.history.get("b").note == "n" and engine.history.get(second.baseline_id).name == "b"
    assert first.revisions == 2
    with pytest.raises(Exception, match="already has a baseline named 'a'"):
        engine.history.create("a")
    engine.history.delete("a")
    assert [b.name for b in engine.history.list()] == ["b"]
    timeline = engine._open_store(False).timeline("default")
    assert timeline.last_change_at == second.as_of


def test_prune_keeps_baselines_and_frees_the_rest(make_engine: Any, tmp_path: Path) -> None:
    engine = make_engine()
    docs = _folder(tmp_path)
    engine.index([docs])
    engine.history.create("v1")
    for text in ("second version about owls", "third version about herons"):
        (docs / "fox.md").write_text(f"# Fox\n\nA {text}.\n")
        engine.index([docs])
    middle = engine.search("owls", mode="keyword").hits  # gone at HEAD already
    assert middle == ()
    report = engine.history.prune("2999-01-01")
    # Held by v1: the first fox and the vacuum page; the owls revision was held by nothing.
    assert report.revisions == 1 and report.chunks >= 1 and report.kept_for_baselines == 1
    assert report.vectors >= 1
    pinned = engine.search("brown fox", mode="hybrid", baseline="v1")
    assert "brown fox" in pinned.hits[0].chunk.text
    assert engine.search("herons", mode="keyword").hits
    timeline = engine._open_store(False).timeline("default")
    with pytest.raises(PointInTimeError, match="pruned"):
        engine.search("owls", as_of=timeline.created_at)
    # Nothing more to free on a second run.
    assert engine.history.prune("2999-01-01").revisions == 0


def test_context_similar_and_filters_at_a_point(make_engine: Any, tmp_path: Path) -> None:
    engine = make_engine()
    docs = _folder(tmp_path)
    engine.index([docs])
    engine.history.create("v1")
    _edit(docs)
    engine.index([docs])
    context = engine.context("brown fox", baseline="v1", max_tokens=300)
    assert "brown fox" in context.text and context.baseline_id is not None
    assert all(source.revision_id for source in context.sources)
    fox_id = engine.search("fox", mode="keyword", baseline="v1").hits[0].chunk.document_id
    similar = engine.similar(document_id=fox_id, baseline="v1")
    assert similar.baseline_id is not None
    assert [h.chunk.path for h in similar.hits] and all("fox" not in h.chunk.path for h in similar.hits)
    only_vacuum = engine.search(
        "tables", mode="keyword", baseline="v1", filters=Filters(path_glob="*vacuum.md")
    )
    assert [h.chunk.path.endswith("vacuum.md") for h in only_vacuum.hits] == [True]


def test_history_and_baselines_travel_with_migrate(tmp_path: Path, postgres_url: str) -> None:
    from retrievo import Config, Engine
    from retrievo.store.postgres.store import PostgresStore
    from retrievo.store.sqlite import SQLiteStore
    from retrievo.store.transfer import move

    docs = _folder(tmp_path)
    with Engine(Config(db=tmp_path / "a.db", embedder="none")) as engine:
        engine.index([docs])
        made = engine.history.create("v1")
        _edit(docs)
        engine.index([docs])
    source, target = SQLiteStore(tmp_path / "a.db"), PostgresStore(postgres_url, create=True)
    move(source, target)
    source.close(), target.close()
    back = tmp_path / "back.db"
    source, target = PostgresStore(postgres_url), SQLiteStore(back, create=True)
    move(source, target)
    source.close(), target.close()
    for settings in ({"store": postgres_url}, {"db": back}):
        with Engine(Config(embedder="none", **settings)) as engine:  # type: ignore[arg-type]
            assert [b.baseline_id for b in engine.history.list()] == [made.baseline_id]
            pinned = engine.search("vacuum tuning", baseline="v1")
            assert pinned.hits and pinned.hits[0].chunk.path.endswith("vacuum.md")
            assert engine.search("vacuum tuning").hits == ()
            assert engine.search("turtle", as_of=made.as_of).hits == ()
