"""Files read and chunked in worker processes (ingest/prepare.py) index exactly what the caller's own
process would: same chunks, same skips with the same reasons, unchanged files found unchanged."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.ingest import prepare as prepare_module
from retrievo.ingest.prepare import FileJob, PreparePool, prepare
from retrievo.models import LoadedDocument


def _corpus(folder: Path, notes: int) -> Path:
    folder.mkdir(parents=True)
    for n in range(notes):
        (folder / f"note-{n:03d}.md").write_text(
            f"# Note {n}\n\n## Leave\n\nParental leave rule {n} is requested in the portal.\n\n"
            f"## Travel\n\nTravel expense {n} needs a receipt.\n",
            encoding="utf-8",
        )
    (folder / "code.py").write_text("def parse(argv):\n    return argv[1:]\n\n\nclass Runner:\n    pass\n")
    (folder / "binary.md").write_bytes(b"# x\n\x00\x01")
    (folder / "latin.txt").write_bytes(b"caf\xe9 au lait")
    (folder / "deep.ipynb").write_text('{"cells": ' + "[" * 5000 + "]" * 5000 + "}")
    return folder


def _chunks(db: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT d.source, c.context, c.text FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.superseded_at IS NULL ORDER BY d.source, c.ordinal"
        ).fetchall()
    return [(Path(source).name, context, text) for source, context, text in rows]


def _index(db: Path, folder: Path) -> dict[str, object]:
    with Engine(Config(db=db, embedder="none")) as engine:
        report = engine.index([folder])
    return {"chunks": report.chunks_written, "added": report.documents_added, "changed": report.documents_changed,
            "unchanged": report.documents_unchanged, "seen": report.files_seen,
            "skipped": sorted((Path(s.path).name, s.reason) for s in report.skipped)}  # fmt: skip


def test_workers_index_what_the_callers_process_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _corpus(tmp_path / "docs", 40)
    monkeypatch.setattr(prepare_module, "SERIAL_FIRST", 10_000)  # every file in this process
    alone = _index(tmp_path / "alone.db", folder)
    monkeypatch.setattr(prepare_module, "SERIAL_FIRST", 5)  # a pool of workers from the sixth file on
    pooled = _index(tmp_path / "pooled.db", folder)
    assert pooled == alone
    assert (
        alone["added"] == 41 and alone["chunks"] == 40 * 2 + 2
    )  # two sections a note; a function and a class
    reasons = dict(alone["skipped"])  # type: ignore[arg-type]
    assert set(reasons) == {"binary.md", "latin.txt", "deep.ipynb"} and "NUL" in reasons["binary.md"]
    assert _chunks(tmp_path / "pooled.db") == _chunks(tmp_path / "alone.db")
    (folder / "note-007.md").write_text("# Note 7\n\nRewritten.\n", encoding="utf-8")
    again = _index(tmp_path / "pooled.db", folder)  # a second run: states read per group, by the workers
    assert again["changed"] == 1 and again["unchanged"] == 40 and again["chunks"] == 1


def test_the_pool_keeps_the_order_given_and_runs_in_other_processes(tmp_path: Path) -> None:
    folder = _corpus(tmp_path / "docs", 30)
    jobs = [FileJob(path, 10_000_000, False, None, None, "auto") for path in sorted(folder.iterdir())]
    with PreparePool(workers=2, serial_first=3) as pool:
        results = []
        for prepared in pool.map(jobs):
            results.append(prepared)
        assert pool._pool is not None  # workers were started past the first three files
    assert [p.path for p in results] == [job.path for job in jobs]
    serial = [prepare(job) for job in jobs]
    assert [json.dumps([d.text for d in p.drafts]) for p in results] == [
        json.dumps([d.text for d in p.drafts]) for p in serial
    ]
    assert sum(isinstance(p.outcome, LoadedDocument) for p in results) == 31


def test_a_run_no_longer_than_the_serial_files_starts_no_workers(tmp_path: Path) -> None:
    """A small repository (fewer files than are read in the caller's process first) never waits for
    worker processes to start: 0.27 s of a 1.6 s `index` of a 75-file repository."""
    folder = _corpus(tmp_path / "docs", 4)
    jobs = [FileJob(path, 10_000_000, False, None, None, "auto") for path in sorted(folder.iterdir())]
    for serial_first in (len(jobs), len(jobs) + 1):  # exactly as many, and more
        with PreparePool(workers=2, serial_first=serial_first) as pool:
            results = list(pool.map(jobs))
            assert pool._pool is None
        assert [p.path for p in results] == [job.path for job in jobs]
        assert sum(isinstance(p.outcome, LoadedDocument) for p in results) == 5
    with PreparePool(workers=2, serial_first=len(jobs) - 1) as pool:  # one file more: the pool reads it
        assert [p.path for p in pool.map(jobs)] == [job.path for job in jobs]
        assert pool._pool is not None


def test_workers_leave_when_their_indexer_is_killed(tmp_path: Path) -> None:
    """SIGKILL gives the indexer no chance to stop its workers: they notice it is gone and leave, so no
    process lingers holding its pipes (a caller reading its output would wait for ever)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    folder = _corpus(tmp_path / "docs", 12)
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from retrievo.ingest.prepare import FileJob, PreparePool\n"
        f"jobs = [FileJob(p, 10**7, False, None, None, 'auto') for p in sorted(Path({str(folder)!r}).iterdir())]\n"
        "pool = PreparePool(workers=2, serial_first=0)\n"
        "list(pool.map(jobs))\n"
        "print(' '.join(str(pid) for pid in pool._pool._processes), flush=True)\n"
        "time.sleep(60)\n"
    )
    indexer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert indexer.stdout is not None
    workers = [int(pid) for pid in indexer.stdout.readline().split()]
    assert len(workers) == 2
    indexer.send_signal(signal.SIGKILL)
    indexer.wait()
    indexer.stdout.close()
    deadline = time.monotonic() + 10
    alive = workers
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in workers if _running(pid)]
    assert not alive, f"workers {alive} outlived their indexer"
    assert os.getpid() not in workers


def _running(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().split()[2] != "Z"  # a zombie has left; its reaper is init
    except OSError:
        return False


def test_a_reader_process_killed_mid_run_costs_no_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """kill -9 of one reader worker ended a run with BrokenProcessPool: the files in flight are read again
    in a fresh pool, in the order given, and the run goes on."""
    import logging
    import os
    import signal

    folder = _corpus(tmp_path / "docs", 200)
    jobs = [FileJob(path, 10_000_000, False, None, None, "auto") for path in sorted(folder.iterdir())]
    results = []
    with caplog.at_level(logging.WARNING, logger="retrievo.ingest.prepare"), PreparePool(2, 0) as pool:
        for prepared in pool.map(jobs):
            results.append(prepared)
            if len(results) == 2:  # the first is read in this process, the rest in the pool
                assert pool._pool is not None
                victim = next(iter(pool._pool._processes))
                os.kill(victim, signal.SIGKILL)
        assert pool._pool is not None and victim not in pool._pool._processes  # a fresh pool went on
    assert "a reader process was lost" in caplog.text
    assert [p.path for p in results] == [job.path for job in jobs]
    serial = [prepare(job) for job in jobs]
    assert [[d.text for d in p.drafts] for p in results] == [[d.text for d in p.drafts] for p in serial]
    assert sum(isinstance(p.outcome, LoadedDocument) for p in results) == 201
