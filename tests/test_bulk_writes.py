"""Bulk loads on SQLite write in batches (store/sqlite/writing.py): faster, and still nothing lost."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from retrievo.engine.indexing import ingest_document
from retrievo.ingest.chunkers import chunk_document
from retrievo.models import Filters, IndexReport, LoadedDocument
from retrievo.store.sqlite import writing
from retrievo.store.sqlite.store import SQLiteStore
from retrievo.text.hashing import sha256_text


def _document(n: int) -> LoadedDocument:
    return LoadedDocument(
        source=f"mem://doc-{n}", text=f"Document {n} is about topic{n} and cells.", title=f"d{n}"
    )


def _write(store: SQLiteStore, n: int) -> None:
    ingest_document(store, IndexReport(collection="c"), _document(n), "c", "whole", False, None)


def _committed(path: Path) -> list[str]:
    """What another connection sees: only committed documents."""
    with sqlite3.connect(path) as db:
        return sorted(row[0] for row in db.execute("SELECT source FROM documents"))


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    opened = SQLiteStore(tmp_path / "i.db", create=True)
    opened.ensure_collection("c")
    return opened


def test_a_bulk_load_commits_in_batches_and_everything_on_leaving(
    store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writing, "BATCH_S", 3600.0)  # one batch for the whole load
    generation = store.generation()
    with store.bulk_load("c"):
        for n in range(20):
            _write(store, n)
        assert _committed(tmp_path / "i.db") == []  # not yet committed: one transaction, not 20
        assert store.document_state("c", "mem://doc-7") is not None  # the writer sees its own batch
    assert len(_committed(tmp_path / "i.db")) == 20
    assert store.generation() > generation
    hits = store.keyword_search("c", "topic7", Filters(), 5)
    assert store.get_chunks([hits[0].chunk_id])[hits[0].chunk_id].path == "mem://doc-7"


def test_batches_commit_as_time_passes(
    store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writing, "BATCH_S", 0.0)  # every write commits its batch
    with store.bulk_load("c"):
        for n in range(3):
            _write(store, n)
            assert len(_committed(tmp_path / "i.db")) == n + 1


def test_a_failed_write_rolls_back_only_its_uncommitted_batch(
    store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store.bulk_load("c"):
        _write(store, 0)
    monkeypatch.setattr(writing, "BATCH_S", 3600.0)
    broken = _document(99)
    with pytest.raises(sqlite3.IntegrityError), store.bulk_load("c"):
        _write(store, 1)
        drafts = chunk_document(broken, "whole")
        with store._transaction(batch=True) as db:  # a write that fails half-way
            db.execute("INSERT INTO collections (name, created_at) VALUES ('c', 'now')")
        store.write_revision("c", broken, sha256_text(broken.text), drafts, None)
    # The committed document stays; the failed batch is gone as a whole (the next run writes doc-1 again).
    assert _committed(tmp_path / "i.db") == ["mem://doc-0"]
    with store.bulk_load("c"):
        _write(store, 1)
    assert _committed(tmp_path / "i.db") == ["mem://doc-0", "mem://doc-1"]


def test_an_error_between_writes_keeps_what_was_written(store: SQLiteStore, tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), store.bulk_load("c"):
        _write(store, 0)
        _write(store, 1)
        raise KeyboardInterrupt
    assert _committed(tmp_path / "i.db") == ["mem://doc-0", "mem://doc-1"]


def test_another_thread_writes_after_the_open_batch_commits(
    store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writing, "BATCH_S", 3600.0)
    done = threading.Event()

    def other() -> None:
        store.add_root("c", "/elsewhere")  # a plain write from another thread: waits for the batch
        done.set()

    with store.bulk_load("c"):
        _write(store, 0)
        thread = threading.Thread(target=other)
        thread.start()
        assert not done.wait(0.3)
        _write(store, 1)
    thread.join(10)
    assert done.is_set()
    assert store.roots("c") == ["/elsewhere"]
    assert _committed(tmp_path / "i.db") == ["mem://doc-0", "mem://doc-1"]


def test_a_plain_write_inside_a_bulk_load_commits_the_batch_first(
    store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writing, "BATCH_S", 3600.0)
    with store.bulk_load("c"):
        _write(store, 0)
        store.mark_indexed("c")
        assert _committed(tmp_path / "i.db") == ["mem://doc-0"]


def test_a_group_with_repeated_sources_and_held_ids_writes_each_in_order(store: SQLiteStore) -> None:
    """One ``write_revisions`` group: a source twice (the second is its next revision), a source the
    collection holds (a new revision), and a source whose first-choice id another collection's document
    holds (a salted id) — the same outcome as writing them one by one."""
    from retrievo.store.base import NewRevision
    from retrievo.store.ids import document_id

    def revision(source: str, text: str) -> NewRevision:
        loaded = LoadedDocument(source=source, text=text, title="")
        return NewRevision(loaded, sha256_text(text), chunk_document(loaded, "whole"), None)

    store.write_revisions("c", [revision("mem://x", "renamed away")])
    store.rename_collection("c", "other")  # keeps its documents' ids: c's first choice for mem://x is held
    store.ensure_collection("c")
    store.write_revisions("c", [revision("mem://old", "first text")])
    states = store.write_revisions(
        "c",
        [
            revision("mem://a", "a one"),
            revision("mem://old", "second text"),
            revision("mem://x", "x one"),
            revision("mem://a", "a two"),
            revision("mem://b", "b one"),
        ],
    )
    assert len(states) == 5
    assert states[0].document_id == states[3].document_id, "the repeated source is one document"
    assert states[2].document_id != document_id("c", "mem://x"), "a held id is not taken over"
    assert len({s.document_id for s in states}) == 4
    rows = store._read(
        """SELECT d.source, r.number, r.text FROM documents d JOIN revisions r ON r.document_id = d.id
           WHERE d.collection_id = ? ORDER BY d.source, r.number""",
        (store._collection_id("c"),),
    )
    assert [tuple(row) for row in rows] == [
        ("mem://a", 1, "a one"), ("mem://a", 2, "a two"), ("mem://b", 1, "b one"),
        ("mem://old", 1, "first text"), ("mem://old", 2, "second text"), ("mem://x", 1, "x one"),
    ]  # fmt: skip
    current = {hit.chunk_id for hit in store.keyword_search("c", "two", Filters(), 10)}
    assert len(current) == 1 and not store.keyword_search("c", "first", Filters(), 10)


def test_fts5_writes_its_pending_terms_in_16_mb_pieces_on_new_and_migrated_indexes(tmp_path: Path) -> None:
    """m008: FTS5's ``hashsize`` (a bulk load's pending terms before a segment is written) is 16 MB, in
    the table's own config: a new index has it, and an index made before the migration gets it."""
    path = tmp_path / "h.db"
    SQLiteStore(path, create=True).close()

    def hashsize() -> int | None:
        with sqlite3.connect(path) as db:
            row = db.execute("SELECT v FROM chunks_fts_config WHERE k = 'hashsize'").fetchone()
        return None if row is None else int(row[0])

    assert hashsize() == 16 * 1024 * 1024
    with sqlite3.connect(path) as db:  # as an index made before m008
        db.execute("DELETE FROM chunks_fts_config WHERE k = 'hashsize'")
        db.execute("DELETE FROM migrations WHERE name = 'm008_fts_hashsize'")
    assert hashsize() is None
    SQLiteStore(path).close()
    assert hashsize() == 16 * 1024 * 1024
