"""Two stores on one index file in one process (indexing in stages opens a second engine beside the
caller's): opening the second must not drop the first's SQLite locks, or a connection closing in another
process deletes the WAL under the first and its later writes are lost (sqlite.org/howtocorrupt.html 2.2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from retrievo import Config, Engine


def documents(db: Path) -> int:
    shown = subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", "status", "--db", str(db), "--json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return int(json.loads(shown.stdout)["collections"][0]["documents"])


def test_a_second_store_opened_beside_the_first_loses_none_of_its_writes(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Bicycles\n\nPatch the inner tube.", encoding="utf-8")
    config = Config(db=tmp_path / "i.db", embedder="none")
    first = Engine(config)
    try:
        assert first.open_store(create=True).get_collection("default") is None  # its connections open
        with Engine(config) as second:  # opened (and closed) while the first's connections are open
            second.index([notes])
        assert documents(config.db) == 1  # another process opened and closed the file meanwhile
        (notes / "b.md").write_text("# Kettles\n\nDescale with vinegar.", encoding="utf-8")
        assert first.update_paths([notes], [notes / "b.md"]).documents_added == 1
        assert documents(config.db) == 2  # committed where every process sees it
        assert (tmp_path / "i.db-wal").exists()  # the WAL the first writes into is the file's
    finally:
        first.close()
    assert documents(config.db) == 2


def test_a_file_that_is_not_sqlite_is_refused_by_name(tmp_path: Path) -> None:
    from retrievo.errors import IndexCorruptError
    from retrievo.store.sqlite import SQLiteStore

    foreign = tmp_path / "notes.db"
    foreign.write_text("just some text, not an index", encoding="utf-8")
    try:
        SQLiteStore(foreign)
    except IndexCorruptError as exc:
        assert "not a retrievo index (not an SQLite file)" in str(exc)
    else:
        raise AssertionError("a text file was opened as an index")
    assert foreign.read_text(encoding="utf-8") == "just some text, not an index"  # left as it was
