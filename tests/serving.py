"""A real ``retrievo serve`` in a subprocess (uvicorn on a free port) for the server and page tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import free_port, wait_healthy

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", *args],
        check=False, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **(env or {})},
        timeout=120,
    )  # fmt: skip


def create_key(where: list[str], name: str, scope: str = "read", *collections: str) -> str:
    options = [option for c in collections for option in ("--collection", c)]
    done = cli("keys", "create", "--name", name, "--scope", scope, *options, *where)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith("rtv_") and "\n" not in token
    return token


@dataclass
class Server:
    url: str
    process: subprocess.Popen[str]
    log: Path

    def logs(self) -> str:
        return self.log.read_text(encoding="utf-8")


@contextmanager
def serving(where: list[str], *options: str, env: dict[str, str] | None = None) -> Iterator[Server]:
    port = free_port()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"retrievo-serve-{port}.log"
    with log.open("w", encoding="utf-8") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "retrievo.surfaces.cli", "serve", "--port", str(port), *where, *options],
            stdout=sink, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env={**os.environ, **(env or {})},
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, 90, lambda: log.read_text(encoding="utf-8"))
        yield Server(url, process, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.unlink(missing_ok=True)


async def job_over_mcp(client: Any, job_id: str, timeout_s: float = 240) -> dict[str, Any]:
    """Poll ``index_status`` over an MCP client until the job ends; its last state."""
    import time

    import anyio

    deadline = time.monotonic() + timeout_s
    while True:
        status = await client.call_tool("index_status", {})
        assert status.structured_content is not None
        jobs = {j["job_id"]: j for j in status.structured_content["jobs"]}
        if jobs[job_id]["status"] in ("done", "failed", "interrupted"):
            return dict(jobs[job_id])
        assert time.monotonic() < deadline, jobs[job_id]
        await anyio.sleep(0.5)
