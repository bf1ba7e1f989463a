"""Background jobs for real: a detached worker process, progress in the index, kill -9, resume, cancel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import write_notes

from retrievo.operations.jobs import WORKER_NICE
from serving import job_over_mcp

ROOT = Path(__file__).resolve().parent.parent


def cli(db: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", *args, "--db", str(db)],
        capture_output=True, text=True, cwd=ROOT, check=False, timeout=300, env={**os.environ, **(env or {})},
    )  # fmt: skip


def stalled(server: Any) -> dict[str, str]:
    """Jobs embed through the fake HTTP provider, which answers one batch and holds the next until
    ``server.released`` is set: a job is mid-way for as long as the test needs, however fast the machine."""
    server.stall_after = server.batches + 1
    return {
        "RETRIEVO_EMBEDDER": "openai",
        "RETRIEVO_EMBED_URL": server.url + "/v1",
        "RETRIEVO_EMBED_MODEL": "toy",
    }


def job_of(db: Path, job_id: str) -> dict[str, Any]:
    done = cli(db, "job", job_id, "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def wait_for(db: Path, job_id: str, test: Any, timeout_s: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        job = job_of(db, job_id)
        if test(job):
            return job
        assert time.monotonic() < deadline, f"job never got there: {job}"
        time.sleep(0.5)


def test_a_background_index_returns_at_once_and_reports_progress(tmp_path: Path) -> None:
    db, docs = tmp_path / "i.db", write_notes(tmp_path / "docs", 12)
    started = time.monotonic()
    submitted = cli(db, "index", str(docs), "--background", "--json")
    assert submitted.returncode == 0, submitted.stderr
    assert time.monotonic() - started < 30  # the command does not wait for the embedding
    job_id = json.loads(submitted.stdout)["job_id"]
    job = wait_for(db, job_id, lambda j: j["status"] in ("done", "failed"))
    assert job["status"] == "done" and job["result"]["documents_added"] == 12
    assert job["total"] > 0 and job["done"] == job["total"]
    listed = json.loads(cli(db, "jobs", "--json").stdout)["jobs"]
    assert [j["job_id"] for j in listed] == [job_id]


def test_kill_9_mid_job_then_resume_loses_nothing(tmp_path: Path, embedding_server: Any) -> None:
    db, docs = tmp_path / "i.db", write_notes(tmp_path / "docs", 160)
    env = stalled(embedding_server)
    job_id = json.loads(cli(db, "index", str(docs), "--background", "--json", env=env).stdout)["job_id"]
    running = wait_for(db, job_id, lambda j: j["status"] == "running" and j["total"] > 0 and j["done"] > 0)
    assert os.getpriority(os.PRIO_PROCESS, running["pid"]) >= WORKER_NICE  # it yields to the user's commands
    os.kill(running["pid"], signal.SIGKILL)
    interrupted = wait_for(db, job_id, lambda j: j["status"] != "running", timeout_s=30)
    assert interrupted["status"] == "interrupted" and interrupted["done"] < interrupted["total"]
    assert f"pid {running['pid']}" in interrupted["error"] and "job resume" in interrupted["error"], (
        "with why"
    )
    embedding_server.released.set()
    resumed = cli(db, "job", "resume", job_id, "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    done = wait_for(db, job_id, lambda j: j["status"] in ("done", "failed", "interrupted"))
    assert done["status"] == "done", done
    # The record keeps its first run: when it started, and how and why it ended.
    assert done["started_at"] == running["started_at"] and done["error"] is None
    (first,) = done["result"]["runs"]
    assert first["status"] == "interrupted" and first["started_at"] == running["started_at"]
    assert first["error"] == interrupted["error"] and first["done"] == interrupted["done"]
    # Nothing lost, nothing twice: every file once, every chunk with its vector, every check clean.
    report = json.loads(cli(db, "verify", "--json", env=env).stdout)
    assert report["ok"] and report["problems"]["missing_vector"] == 0
    status = json.loads(cli(db, "status", "--json", env=env).stdout)["collections"][0]
    assert status["documents"] == 160 and status["missing"] == 0


def test_cancel_stops_a_running_job_which_keeps_its_vectors_and_resumes(
    tmp_path: Path, embedding_server: Any
) -> None:
    db, docs = tmp_path / "i.db", write_notes(tmp_path / "docs", 160)
    env = stalled(embedding_server)
    job_id = json.loads(cli(db, "index", str(docs), "--background", "--json", env=env).stdout)["job_id"]
    wait_for(db, job_id, lambda j: j["status"] == "running" and j["done"] > 0)
    assert cli(db, "job", "cancel", job_id).returncode == 0
    # The worker notices a cancel at its heartbeat: after two more beats it has, then it may go on.
    beats = {job_of(db, job_id)["heartbeat_at"]}
    wait_for(db, job_id, lambda j: beats.add(j["heartbeat_at"]) or len(beats) > 2, timeout_s=60)
    embedding_server.released.set()  # the job takes its next step and stops there
    ended = wait_for(db, job_id, lambda j: j["status"] in ("cancelled", "done", "failed"), timeout_s=60)
    assert ended["status"] == "cancelled" and 0 < ended["done"] < ended["total"]
    kept = json.loads(cli(db, "status", "--json", env=env).stdout)["collections"][0]
    assert kept["embedded"] >= ended["done"] > 0, "the vectors written before the cancel stay"
    resumed = cli(db, "job", "resume", job_id, "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    done = wait_for(db, job_id, lambda j: j["status"] in ("done", "failed", "interrupted"))
    assert done["status"] == "done", done
    status = json.loads(cli(db, "status", "--json", env=env).stdout)["collections"][0]
    assert status["documents"] == 160 and status["missing"] == 0
    assert json.loads(cli(db, "verify", "--json", env=env).stdout)["ok"]
    assert "only interrupted, failed or cancelled" in cli(db, "job", "resume", job_id).stderr
    assert "no job" in cli(db, "job", "job_nope").stderr


def test_mcp_refresh_in_the_background_and_jobs_in_index_status(tmp_path: Path) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    db, docs = tmp_path / "i.db", write_notes(tmp_path / "docs", 6)
    assert cli(db, "index", str(docs)).returncode == 0
    (docs / "note-new.md").write_text("# New\n\nA lighthouse keeper's log, freshly written.\n")
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db), "--tools", "all"],
        cwd=str(ROOT),
    )

    async def main() -> tuple[dict[str, Any], dict[str, Any], str]:
        async with Client(server) as client:
            started = await client.call_tool("refresh_index", {"path": str(docs), "background": True})
            assert started.structured_content is not None, started.content
            finished = await job_over_mcp(client, started.structured_content["job_id"])
            outside = await client.call_tool("refresh_index", {"path": "/etc", "background": True})
            return started.structured_content, finished, outside.content[0].text  # type: ignore[union-attr]

    started, finished, outside = anyio.run(main)
    assert started["job_id"].startswith("job_") and finished["status"] == "done"
    assert job_of(db, started["job_id"])["result"]["documents_added"] == 1
    assert "not inside a folder or file indexed" in outside  # refused at once, no job made


def test_embedding_in_the_background_after_a_no_embed_index(tmp_path: Path) -> None:
    db, docs = tmp_path / "i.db", write_notes(tmp_path / "docs", 10)
    assert cli(db, "index", str(docs), "--no-embed").returncode == 0
    assert json.loads(cli(db, "status", "--json").stdout)["collections"][0]["missing"] > 0
    submitted = cli(db, "embed", "--background", "--json")
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["job_id"]
    job = wait_for(db, job_id, lambda j: j["status"] in ("done", "failed"))
    assert (
        job["status"] == "done"
        and job["kind"] == "embed"
        and job["result"]["chunks_embedded"] == job["total"] > 0
    )
    assert json.loads(cli(db, "verify", "--json").stdout)["ok"]
