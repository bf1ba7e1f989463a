"""The CLI, run as a user runs it: a real subprocess, the real model, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "retrievo.surfaces.cli"]


def run(*args: str, db: Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RETRIEVO_DB": str(db), "COLUMNS": "250"}
    proc = subprocess.run([*CLI, *args], check=False, capture_output=True, text=True, env=env, timeout=300)
    assert (proc.returncode == 0) is ok, proc.stderr + proc.stdout
    return proc


def test_index_search_and_status_as_json(tmp_path: Path, handbook: Path) -> None:
    db = tmp_path / "cli.db"
    report = json.loads(run("index", str(handbook), "--json", db=db).stdout)
    assert report["documents_added"] == 5 and report["chunks_embedded"] == report["chunks_written"]
    found = json.loads(
        run("search", "home office allowance", "--json", "--explain", "--limit", "3", db=db).stdout
    )
    assert (
        set(found)
        == {
            "query",
            "search_mode",
            "search_duration_ms",
            "total_results",
            "results",
            "baseline_id",
            "as_of",
            "model_load_ms",
            "fusion",  # which fusion merged the arms
            "fusion_weights",  # with --explain
            "coverage",  # the share of the collection with vectors
            "answerability",  # the estimated probability that the collection answers (search/answer/answerability.py)
            "roots",  # what was indexed: each hit's path is below one of them (issue 66)
            "model_id",  # whose vectors the dense arm read (operations/staged.py: the static model, then the bundled one)
        }
    )
    assert found["search_mode"] == "hybrid" and found["total_results"] == 3
    assert found["model_id"] == "all-MiniLM-L6-v2-int8"
    assert found["model_load_ms"] > 0  # loading the model is reported apart from the search
    first = found["results"][0]
    expected = {
        "chunk_id", "document_id", "path", "title", "kind", "score", "relevance", "text", "context", "start",
        "end", "line_start", "line_end", "revision_id", "metadata", "explain",
    }  # fmt: skip
    assert expected <= set(first)
    assert first["path"] == "remote-work.txt" and found["roots"] == [str(handbook)]  # below the root
    assert (handbook / first["path"]).read_text()[first["start"] : first["end"]] == first["text"]
    state = json.loads(run("status", "--json", db=db).stdout)
    assert state["collections"][0]["chunks"] == report["chunks_written"]
    assert state["collections"][0]["model_id"] == "all-MiniLM-L6-v2-int8"


def test_status_says_which_kernels_serve_the_bundled_model_on_this_cpu(
    tmp_path: Path, handbook: Path
) -> None:
    from retrievo.embed import kernels

    db = tmp_path / "cli.db"
    run("index", str(handbook), "--no-embed", db=db)
    state = json.loads(run("status", "--json", db=db).stdout)
    chosen = kernels.choose("integer")
    assert state["embedder"]["kernels"] == chosen and state["embedder"]["setting"] == "integer"
    assert state["embedder"]["cpu"]["exact"] == kernels.cpu()["exact"] and chosen in kernels.cpu()["exact"]
    table = run("status", db=db).stdout
    assert f"all-MiniLM-L6-v2-int8 (384d) on {chosen} kernels (RETRIEVO_KERNELS=integer)" in table
    assert f"exact integer paths here: {', '.join(kernels.cpu()['exact'])}" in table
    forced = subprocess.run(
        [*CLI, "status"], check=True, capture_output=True, text=True, timeout=300,
        env={**os.environ, "RETRIEVO_DB": str(db), "RETRIEVO_KERNELS": "float"},
    )  # fmt: skip
    assert "on float kernels (RETRIEVO_KERNELS=float)" in forced.stdout
    keyword_only = subprocess.run(
        [*CLI, "status"], check=True, capture_output=True, text=True, timeout=300,
        env={**os.environ, "RETRIEVO_DB": str(db), "RETRIEVO_EMBEDDER": "none"},
    )  # fmt: skip
    assert "embedder: none (keyword search only)" in keyword_only.stdout


def test_readable_table_and_filters(tmp_path: Path, handbook: Path) -> None:
    db = tmp_path / "cli.db"
    run("index", str(handbook), "--chunker", "paragraph", "--exclude", "*.html", db=db)
    table = run("search", "stolen laptop", "--filter", "tag=security", db=db).stdout
    assert "security.md" in table and "relevance" in table
    assert "onboarding" not in run("search", "first week checklist", "--mode", "keyword", db=db).stdout
    # A threshold that leaves nothing says so, and how to see the best hits anyway.
    nothing = run("search", "stolen laptop", "--mode", "keyword", "--min-score", "1", db=db)
    assert "0 result(s)" in nothing.stdout
    assert "no hit reached --min-score 1; lower it (or leave it out)" in nothing.stderr


def test_missing_and_corrupt_index_files_are_clear_errors(tmp_path: Path) -> None:
    missing = run("search", "x", db=tmp_path / "nope.db", ok=False)
    assert "no index at" in missing.stderr and "retrievo index PATH" in missing.stderr
    assert "Traceback" not in missing.stderr
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(os.urandom(4096))
    broken = run("search", "x", db=corrupt, ok=False)
    assert "not a retrievo index" in broken.stderr and "Traceback" not in broken.stderr
    assert corrupt.stat().st_size == 4096, "a foreign file is never overwritten"
    assert "does not exist" in run("index", str(tmp_path / "absent"), db=tmp_path / "a.db", ok=False).stderr


def test_a_truncated_index_is_reported_not_crashed(tmp_path: Path, handbook: Path) -> None:
    db = tmp_path / "trunc.db"
    run("index", str(handbook), "--no-embed", db=db)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    for name in ("trunc.db-wal", "trunc.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    proc = run("search", "leave", db=db, ok=False)
    assert "error:" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("query", ['"', "NEAR(", "a:b", "*", "-", "🙂"])
def test_hostile_queries_from_the_command_line(tmp_path: Path, handbook: Path, query: str) -> None:
    db = tmp_path / "h.db"
    run("index", str(handbook), "--no-embed", db=db)
    proc = run("search", query, "--json", db=db)
    assert json.loads(proc.stdout)["search_mode"] == "lexical-only"


def test_skipped_files_are_counted_with_reasons(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nUseful text.\n")
    (folder / "junk.txt").write_bytes(b"\x00\x01\x02" * 100)
    (folder / "bad.txt").write_bytes(b"caf\xe9")
    with (folder / "big.txt").open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    proc = run("index", str(folder), "--no-embed", db=tmp_path / "m.db")
    for reason in ("binary", "undecodable", "too large"):
        assert f"skipped 1 file(s): {reason}" in proc.stdout


def test_similar_and_neighbours_commands(tmp_path: Path, handbook: Path) -> None:
    db = tmp_path / "cli.db"
    run("index", str(handbook), db=db)
    hit = json.loads(run("search", "parental leave", "--json", "--limit", "1", db=db).stdout)["results"][0]
    around = json.loads(
        run("neighbours", str(hit["chunk_id"]), "--before", "1", "--after", "1", "--json", db=db).stdout
    )
    ids = [c["chunk_id"] for c in around]
    assert (
        hit["chunk_id"] in ids
        and 2 <= len(ids) <= 3
        and {c["document_id"] for c in around} == {hit["document_id"]}
    )
    assert [c["start"] for c in around] == sorted(c["start"] for c in around)  # document order
    related = json.loads(run("similar", str(hit["chunk_id"]), "--limit", "3", "--json", db=db).stdout)
    assert related["results"] and all(r["document_id"] != hit["document_id"] for r in related["results"])
    by_doc = json.loads(run("similar", "--document", hit["document_id"], "--json", db=db).stdout)
    assert by_doc["results"] and all(r["document_id"] != hit["document_id"] for r in by_doc["results"])
    assert "give a CHUNK_ID or --document" in run("similar", db=db, ok=False).stderr
    assert "not in the index" in run("neighbours", "999999", db=db, ok=False).stderr


def test_the_lazy_command_table_is_what_the_modules_register() -> None:
    """Every command loads when used (a fast `retrievo --version`): the table naming them is exactly what
    the command modules of `surfaces/cli/` register, and help still lists every command."""
    import importlib
    import pkgutil

    from click.testing import CliRunner

    from retrievo.surfaces import cli
    from retrievo.surfaces.cli import LAZY_COMMANDS, main

    for module in pkgutil.iter_modules(cli.__path__):
        if module.name not in {"__main__", "app", "base"}:
            importlib.import_module(f"retrievo.surfaces.cli.{module.name}")
    registered = {
        name: command.callback.__module__.rsplit(".", 1)[-1]
        for name, command in main.commands.items()
        if command.callback is not None
    }
    assert registered == LAZY_COMMANDS
    listed = CliRunner().invoke(main, ["--help"]).output
    assert all(name in listed for name in LAZY_COMMANDS)


def test_version_and_help_do_not_load_the_engine() -> None:
    code = (
        "import sys; from click.testing import CliRunner; from retrievo.surfaces.cli import main; "
        "r = CliRunner().invoke(main, ['--version']); assert r.exit_code == 0, r.output; "
        "assert 'retrievo.engine' not in sys.modules and 'numpy' not in sys.modules, sorted(sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
