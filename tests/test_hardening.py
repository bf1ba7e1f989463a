"""Regression tests for what the hostile campaign found (issue 9); each reproduced the defect first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrievo import Config, Engine
from retrievo.errors import SourceError
from retrievo.models import Filters, LoadedDocument
from retrievo.search.query import MAX_EMBED_QUERY_CHARS, clean_query, read_query
from retrievo.secrets import redact
from retrievo.store.sqlite import SQLiteStore
from retrievo.store.sqlite import searching as sqlite_search

# 1. refresh_index may only re-read what was chosen --------------------------------------------------


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    (root / "private").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide\n\nPublic guide about annual leave.\n")
    (root / "private" / "keys.md").write_text("# Keys\n\nThe secret token is XYZZY-42.\n")
    return root


def test_refresh_refuses_a_parent_of_an_indexed_folder(nested: Path, tmp_path: Path) -> None:
    with Engine(Config(db=tmp_path / "i.db", embedder="none")) as engine:
        engine.index([nested / "docs"])
        for outside in (nested, nested / "private", nested / "private" / "keys.md", Path("/tmp")):
            with pytest.raises(SourceError, match="only indexed paths can be refreshed"):
                engine.refresh(outside)
        assert not engine.search("XYZZY", mode="keyword").hits, "the secret was indexed"


def test_refresh_resolves_relative_paths_inside_the_roots_never_the_working_directory(
    nested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(nested / "docs")
    with Engine(Config(db=tmp_path / "i.db", embedder="none")) as engine:
        engine.index([nested / "docs"])
        for escape in ("..", "../..", "../private", "../private/keys.md"):
            with pytest.raises(SourceError, match="not inside a folder or file indexed"):
                engine.refresh(escape)
        (nested / "docs" / "guide.md").write_text("# Guide\n\nPublic guide about sabbaticals.\n")
        report = engine.refresh("guide.md")
        assert report.documents_changed == 1
        assert engine.search("sabbaticals", mode="keyword").hits
        assert engine.refresh(".").documents_unchanged == 1
        assert not engine.search("XYZZY", mode="keyword").hits


def test_refresh_rejects_a_nul_byte_with_a_clear_error(nested: Path, tmp_path: Path) -> None:
    with Engine(Config(db=tmp_path / "i.db", embedder="none")) as engine:
        engine.index([nested / "docs"])
        with pytest.raises(SourceError, match="NUL byte"):
            engine.refresh(f"{nested}/docs\x00/etc")


def test_roots_travel_with_a_migrated_collection(nested: Path, tmp_path: Path) -> None:
    from retrievo.store.transfer import move

    with Engine(Config(db=tmp_path / "a.db", embedder="none")) as engine:
        engine.index([nested / "docs"])
    source = SQLiteStore(tmp_path / "a.db")
    target = SQLiteStore(tmp_path / "b.db", create=True)
    move(source, target)
    assert target.roots("default") == [str((nested / "docs").resolve())]
    source.close(), target.close()


# 2. per-file OS errors are skips, never an aborted run ------------------------------------------------


def test_a_symlink_loop_and_a_dangling_link_are_skipped_with_their_reasons(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").symlink_to(folder / "b.md")
    (folder / "b.md").symlink_to(folder / "a.md")
    (folder / "dangling.md").symlink_to(folder / "nowhere.md")
    (folder / "z.md").write_text("# Zebra\n\nStriped animals after the broken links.\n")
    with Engine(Config(db=tmp_path / "i.db", embedder="none")) as engine:
        report = engine.index([folder])
        reasons = {Path(s.path).name: s.reason for s in report.skipped}
        assert reasons["a.md"].startswith("symlink loop") and reasons["b.md"].startswith("symlink loop")
        assert reasons["dangling.md"].startswith("dangling symlink")
        assert report.documents_added == 1 and engine.search("zebra", mode="keyword").hits


# 3. a torn ANN side file -------------------------------------------------------------------------------


def test_a_torn_ann_file_degrades_to_keywords_out_loud_then_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_ann import DIMS, MODEL, _write

    monkeypatch.setattr(sqlite_search, "ANN_MIN_VECTORS", 500)
    rng = np.random.default_rng(1)
    store = SQLiteStore(tmp_path / "ann.db", create=True)
    store.ensure_collection("c")
    store.set_collection_model("c", MODEL, DIMS)
    vectors = _write(store, "a", 800, rng)
    assert store.vector_search("c", MODEL, vectors[0], Filters(), 5)[0].score > 0.99
    store.close()
    (saved,) = tmp_path.glob("ann.db.ann-*.usearch")
    assert not list(tmp_path.glob("*.tmp")), "the save leaves no temporary file behind"
    saved.write_bytes(saved.read_bytes()[: saved.stat().st_size // 3])  # a kill mid-save, before the fix

    from retrievo.search.hybrid import SearchOptions, run_search

    store = SQLiteStore(tmp_path / "ann.db")

    def embed(_: str) -> tuple[str, Any]:
        return MODEL, vectors[0]

    degraded = run_search(store, "c", read_query("chunk words"), SearchOptions(), embed)
    assert degraded.search_mode == "lexical-only"
    assert degraded.degraded_reason and "being rebuilt" in degraded.degraded_reason
    assert degraded.hits, "keyword results meanwhile"
    thread = store._ann.rebuild_thread
    assert thread is not None
    thread.join(timeout=60)
    healed = run_search(store, "c", read_query("chunk words"), SearchOptions(), embed)
    assert healed.search_mode == "hybrid" and healed.degraded_reason is None
    assert store.vector_search("c", MODEL, vectors[0], Filters(), 5)[0].score > 0.99
    store.close()


# 4. queries that crashed -------------------------------------------------------------------------------


def test_hostile_queries_in_every_mode_on_a_pruning_sized_index(tmp_path: Path, minilm: Any) -> None:
    documents = [
        LoadedDocument(
            source=f"/doc/{i}", text=f"Note {i} about leave policy and 中文 text {i % 7}", title=f"n{i}"
        )
        for i in range(1100)  # over PRUNE_MIN_ROWS: the keyword arm reads document frequencies
    ]
    with Engine(Config(db=tmp_path / "q.db"), embedder=minilm) as engine:
        engine.add_documents(documents, embed=False)
        engine.embed_missing()
        for query in ("中" * 20_000, "leave \ud800", "\udfff" * 50, "a\x00b leave", "x" * 9_999):
            for mode in ("keyword", "semantic", "hybrid"):
                result = engine.search(query, mode=mode, limit=3)
                assert result.search_mode in (mode, "lexical-only")
                result.query.encode("utf-8")  # every answer can be written as JSON/UTF-8


def test_the_dense_arm_reads_a_capped_prefix_of_long_queries(tmp_path: Path, minilm: Any) -> None:
    seen: list[str] = []

    class Recording(type(minilm)):  # type: ignore[misc]
        def embed_query(self, text: str) -> Any:
            seen.append(text)
            return super().embed_query(text)

    with Engine(Config(db=tmp_path / "q.db"), embedder=Recording()) as engine:
        engine.add_documents([LoadedDocument(source="/a", text="annual leave policy", title="a")])
        engine.search("leave " * 3000, mode="semantic")
    assert len(seen) == 1 and len(seen[0]) == MAX_EMBED_QUERY_CHARS
    assert clean_query("ok\ud800\x00") == "ok\ufffd "


# 5. secrets ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://host.invalid/db?password=hunter2secret&user=u",
        "postgresql://u:hunter2secret@[::1:1/x",
        "postgresql://u:hunter2secret@host.invalid:1/db",
    ],
)
def test_store_urls_never_print_their_password(url: str, tmp_path: Path) -> None:
    for command in (["status"], ["status", "--json"], ["search", "x"]):
        done = subprocess.run(
            [sys.executable, "-m", "retrievo.surfaces.cli", *command, "--store", url],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "PGCONNECT_TIMEOUT": "2"},
        )  # fmt: skip
        output = done.stdout + done.stderr
        assert done.returncode == 1 and "error:" in output, output
        assert "hunter2secret" not in output and "Traceback" not in output, output
    assert "hunter2secret" not in repr(Config(store=url))


def test_redact_covers_every_form() -> None:
    for text in (
        "postgresql://u:pw%40x@h/db",
        "postgresql://h/db?sslpassword=pw%40x",
        "host=h password=pw%40x user=u",
        "password='pw%40x' host=h",
    ):
        assert "pw%40x" not in redact(text), text


# 8. NUL bytes ---------------------------------------------------------------------------------------------


def test_a_nul_after_the_first_8_kb_is_skipped_like_one_before_it(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "late.txt").write_bytes(b"plain words " * 1000 + b"\x00 tail")
    (folder / "early.txt").write_bytes(b"\x00" + b"plain words " * 10)
    with Engine(Config(db=tmp_path / "i.db", embedder="none")) as engine:
        report = engine.index([folder])
    reasons = sorted(s.reason for s in report.skipped)
    assert len(reasons) == 2 and all(r.startswith("binary: contains a NUL byte") for r in reasons)
