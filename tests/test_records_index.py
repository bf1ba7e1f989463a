"""Models indexed as records: one per element, cited by id, changes propagate, bad models lose nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import SHARED_DATA
from retrievo import Config, Engine
from retrievo.surfaces.filters import filters_from_pairs

ARCHISURANCE = SHARED_DATA / "archimate" / "opengroup-xmlexchange" / "archisurance.xml"
pytestmark = pytest.mark.skipif(not ARCHISURANCE.exists(), reason="../shared/data not present")


@pytest.fixture
def model(tmp_path: Path) -> Path:
    target = tmp_path / "models" / "archisurance.xml"
    target.parent.mkdir()
    shutil.copy(ARCHISURANCE, target)
    return target


def test_every_element_is_a_record_found_through_its_relationships(model: Path, tmp_path: Path) -> None:
    with Engine(Config(db=tmp_path / "r.db", embedder="none")) as engine:
        report = engine.index([model.parent])
        # 120 elements and 178 relationships, each relationship a record of its own too
        assert report.documents_added == 298 and report.chunks_written == 298
        hits = engine.search("claim registration", mode="keyword", limit=5).hits
        titles = [h.chunk.title for h in hits]
        assert {"Register", "Handle Claim"} & set(titles), titles
        register = next(h.chunk for h in hits if h.chunk.title in ("Register", "Handle Claim"))
        assert register.kind == "record" and register.path.startswith(str(model) + "#id-")
        assert (
            register.metadata["layer"] == "business"
            and register.metadata["element_type"] == "BusinessProcess"
        )
        business = filters_from_pairs(["kind=record", "layer=application"])
        assert all(
            h.chunk.metadata["layer"] == "application" for h in engine.search("claim", filters=business).hits
        )


def test_a_rename_rechunks_the_element_and_its_neighbours_only(model: Path, tmp_path: Path) -> None:
    with Engine(Config(db=tmp_path / "r.db", embedder="none")) as engine:
        engine.index([model])
        text = model.read_text()
        model.write_text(text.replace(">Register<", ">Register Claim<", 1))
        report = engine.index([model])
        # Register and its six neighbours (accesses ×2, realizes, triggers, triggered by, served by ×2 → 7 others),
        # and the records of those seven relationships
        assert 9 <= report.documents_changed <= 16 and report.documents_unchanged >= 280
        assert report.documents_added == 0 and report.documents_removed == 0
        assert engine.search('"Register Claim"', mode="keyword").hits
        model.write_text(
            text.replace(
                '<element identifier="id-1544" xsi:type="BusinessInterface">\n      <name xml:lang="en">mail</name>\n    </element>',
                "",
            )
        )
        removed = engine.index([model])
        assert removed.documents_removed == 3, "mail, and the records of its two relationships"


def test_a_broken_or_hostile_model_is_skipped_and_keeps_what_was_indexed(model: Path, tmp_path: Path) -> None:
    with Engine(Config(db=tmp_path / "r.db", embedder="none")) as engine:
        engine.index([model.parent])
        model.write_bytes(model.read_bytes()[:5000])  # truncated
        report = engine.index([model.parent])
        assert report.documents_removed == 0 and "malformed XML" in report.skipped[0].reason
        model.write_bytes(
            b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            b'<model xmlns="http://www.opengroup.org/xsd/archimate/3.0/"><name>&x;</name></model>'
        )
        report = engine.index([model.parent])
        assert report.documents_removed == 0 and "refused XML" in report.skipped[0].reason
        assert engine.status().collections[0].documents == 298


def test_cli_elements_and_relations(model: Path, tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    db = tmp_path / "cli.db"
    run = [sys.executable, "-m", "retrievo.surfaces.cli"]
    subprocess.run(
        [*run, "index", str(model), "--db", str(db), "--no-embed"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    listed = subprocess.run([*run, "elements", "--db", str(db), "--type", "BusinessProcess", "--json"],
                            check=True, capture_output=True, text=True, timeout=120)  # fmt: skip
    processes = json.loads(listed.stdout)
    assert processes and all(p["element_type"] == "BusinessProcess" for p in processes)
    register = next(p for p in processes if p["name"] == "Register")
    shown = subprocess.run([*run, "relations", register["element_id"], "--db", str(db)],
                           check=True, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert "realizes Claim Registration Service (BusinessService)" in shown.stdout
    assert "is triggered by Damage Occured (BusinessEvent)" in shown.stdout


def test_a_200_mb_model_is_refused_before_it_is_read(model: Path, tmp_path: Path) -> None:
    with Engine(Config(db=tmp_path / "big.db", embedder="none")) as engine:
        engine.index([model.parent])
        with model.open("r+b") as handle:
            handle.truncate(200 * 1024 * 1024)  # sparse: 200 MB without writing them
        report = engine.index([model.parent])
        assert report.skipped[0].reason.startswith("too large") and report.documents_removed == 0
        assert engine.status().collections[0].documents == 298
