"""`retrievo verify`: hashes, offsets and vectors checked on both stores; --fix re-embeds what it can."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from retrievo.models import LoadedDocument


def test_a_clean_index_passes_and_missing_vectors_are_fixed(make_engine: Any, handbook: Path) -> None:
    engine = make_engine()
    engine.index([handbook])
    clean = engine.verify()
    assert clean.ok and clean.chunks == clean.current_chunks == clean.vectors > 0 and clean.cannot_fix == []
    text = (handbook / "leave-policy.md").read_text(encoding="utf-8")
    engine.add_documents(
        [LoadedDocument(source="/elsewhere/leave.md", text=text + "\nExtra.", title="L")], embed=False
    )
    partial = engine.verify()
    assert not partial.ok and partial.problems["missing_vector"] > 0
    assert partial.problems["chunk_hash"] == partial.problems["offsets"] == 0
    assert "/elsewhere/leave.md" in partial.examples["missing_vector"][0]
    fixed = engine.verify(fix=True)
    assert fixed.ok and fixed.fixed["missing_vector"] > 0


def test_damage_is_found_named_and_not_silently_fixed(handbook: Path, minilm: Any, tmp_path: Path) -> None:
    from retrievo import Config, Engine

    db = tmp_path / "i.db"
    with Engine(Config(db=db), embedder=minilm) as engine:
        engine.index([handbook])
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE chunks SET text = 'tampered' WHERE id = (SELECT min(id) FROM chunks)")
        raw.execute("UPDATE revisions SET text = text || '!' WHERE id = (SELECT max(id) FROM revisions)")
    command = [sys.executable, "-m", "retrievo.surfaces.cli", "verify", "--db", str(db), "--json", "--fix"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert not report["ok"] and report["problems"]["chunk_hash"] == 1
    assert report["problems"]["offsets"] >= 1 and report["problems"]["source_hash"] >= 1
    assert {"chunk_hash", "offsets", "source_hash"} <= set(report["cannot_fix"])
    assert all(
        example.startswith(("chunk", "revision"))
        for examples in report["examples"].values()
        for example in examples
    )
