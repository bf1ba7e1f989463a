"""One bad file never stops a run: files nested deeper than the parsers go (a 2 KB JSON model or notebook
1,100 levels deep, an ArchiMate XML 100,000 elements deep) are each skipped with their reason while the
good file beside them is indexed — through `retrievo index` and `retrievo registry add`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import SHARED_DATA

CLI = [sys.executable, "-m", "retrievo.surfaces.cli"]
DEPTH = 1100
EXCHANGE = "http://www.opengroup.org/xsd/archimate/3.0/"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, check=False)


def hostile_folder(root: Path) -> Path:
    root.mkdir()
    (root / "good.md").write_text("# Parental leave\n\nRequest parental leave from your manager.\n")
    (root / "deep-model.json").write_text('{"elements": ' + "[" * DEPTH + "]" * DEPTH + "}")
    notebook = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    deep = '{"a": ' * DEPTH + "1" + "}" * DEPTH
    (root / "deep.ipynb").write_text(json.dumps(notebook).replace('"metadata": {}', f'"metadata": {deep}'))
    (root / "deep.xml").write_text(
        f'<?xml version="1.0"?><model xmlns="{EXCHANGE}">' + "<a>" * 100_000 + "</a>" * 100_000 + "</model>"
    )
    return root


def test_index_finishes_with_the_good_file_and_one_skip_line_per_hostile_file(tmp_path: Path) -> None:
    folder = hostile_folder(tmp_path / "docs")
    db = str(tmp_path / "index.db")
    done = run("index", str(folder), "--db", db, "--no-embed", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert report["documents_added"] == 1
    reasons = {Path(s["path"]).name: s["reason"] for s in report["skipped_files"]}
    assert reasons["deep-model.json"].startswith("nested too deeply")
    assert reasons["deep.ipynb"].startswith("nested too deeply")
    assert reasons["deep.xml"].startswith("no elements")
    assert len(reasons) == 3
    table = run("index", str(folder), "--db", db, "--no-embed", "--force")
    assert table.returncode == 0, table.stderr[-2000:]
    for name in ("deep-model.json", "deep.ipynb", "deep.xml"):
        assert sum(f"{name} —" in line for line in table.stdout.splitlines()) == 1, table.stdout
    found = run("search", "parental leave", "--db", db, "--mode", "keyword", "--json")
    assert [Path(h["path"]).name for h in json.loads(found.stdout)["results"]] == ["good.md"]


def test_registry_add_refuses_a_file_nested_too_deeply_and_loads_the_good_one(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text('{"mcpServers": ' + '{"a": ' * DEPTH + "1" + "}" * DEPTH + "}")
    real = (
        SHARED_DATA / "registry" / "mcp-gateway-registry" / "cli" / "examples" / "minimal-server-config.json"
    )
    (tmp_path / "weather.json").write_bytes(real.read_bytes())
    done = run("registry", "add", str(tmp_path / "deep.json"), str(tmp_path / "weather.json"),
               "--db", str(tmp_path / "index.db"), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert len(report["errors"]) == 1
    assert report["errors"][0].startswith(f"{tmp_path / 'deep.json'}: nested too deeply")
    assert report["added"] >= 1


def test_a_refresh_over_mcp_skips_the_hostile_file_and_says_what_changed(tmp_path: Path) -> None:
    """The server's refresh_index (foreground) over a folder where a hostile file appeared: an answer, not
    "internal error", naming the file skipped and what was added; the index verifies clean."""
    import anyio
    from mcp import Client, StdioServerParameters

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Leave\n\nRequest leave from your manager.\n")
    db = tmp_path / "index.db"
    assert run("index", str(folder), "--db", str(db), "--no-embed").returncode == 0
    hostile_folder(tmp_path / "more")
    for name in ("deep-model.json", "deep.ipynb"):
        (folder / name).write_bytes((tmp_path / "more" / name).read_bytes())
    (folder / "new.md").write_text("# Travel\n\nBook trains through the travel desk.\n")

    async def refresh() -> dict[str, object]:
        target = StdioServerParameters(
            command=sys.executable,
            args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db), "--tools", "all"],
            env={"RETRIEVO_EMBEDDER": "none"},
        )
        with anyio.fail_after(120):
            async with Client(target) as client:
                answer = await client.call_tool("refresh_index", {"path": str(folder)})
                assert not answer.is_error, answer.content
                assert answer.structured_content is not None
                return dict(answer.structured_content)

    report = anyio.run(refresh)
    assert report["documents_added"] == 1 and report["documents_unchanged"] == 1
    assert report["skipped"] == {"nested too deeply": 2}, report["skipped"]
    verified = run("verify", "--db", str(db), "--json")
    assert json.loads(verified.stdout)["ok"], verified.stdout
