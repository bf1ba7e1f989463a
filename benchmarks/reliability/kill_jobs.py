"""kill -9, ten times, during a background index job and during a model migration job: nothing lost.

Each round waits until the job has made progress since the last round, kills its worker with SIGKILL,
waits until the job reads ``interrupted`` and resumes it. At the end the job must be ``done``, every
document indexed once, every chunk embedded, and `retrievo verify` clean. The migration's new model is
`common.FakeEmbeddings` (an OpenAI-compatible server on a thread, slowed so the job can be caught).

    .venv/bin/python -m benchmarks.reliability.kill_jobs [--files 400] [--kills 10] [--store postgresql://…]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import FakeEmbeddings, emit, write_notes


def cli(environ: dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", *args], env=environ, capture_output=True, text=True,
        check=False, timeout=600,
    )  # fmt: skip
    if done.returncode not in (0, 1):
        raise SystemExit(f"retrievo {' '.join(args)} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout) if done.stdout.strip().startswith("{") else done.stdout


def job(environ: dict[str, str], job_id: str) -> dict[str, Any]:
    return dict(cli(environ, "job", job_id, "--json"))


def until(environ: dict[str, str], job_id: str, test: Any, timeout_s: float = 600) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        state = job(environ, job_id)
        if test(state):
            return state
        if time.monotonic() > deadline:
            raise SystemExit(f"job {job_id} never got there: {state}")
        time.sleep(0.2)


def progressed_since(last: int) -> Any:
    def test(j: dict[str, Any]) -> bool:
        running = j["status"] == "running" and j["pid"] and j["total"] > 0 and j["done"] > 0
        return j["status"] in ("done", "failed") or bool(running and j["done"] != last)

    return test


def kill_rounds(environ: dict[str, str], job_id: str, kills: int) -> dict[str, Any]:
    last, killed = -1, 0
    for _ in range(kills):
        state = until(environ, job_id, progressed_since(last))
        if state["status"] != "running":
            break
        last = state["done"]
        os.kill(state["pid"], signal.SIGKILL)
        killed += 1
        after = until(environ, job_id, lambda j: j["status"] in ("interrupted", "done"), timeout_s=60)
        if after["status"] == "done":
            killed -= 1  # it had finished just before the signal
            break
        cli(environ, "job", "resume", job_id)
    final = until(environ, job_id, lambda j: j["status"] in ("done", "failed", "cancelled"))
    return {"kills": killed, "status": final["status"], "result": final.get("result")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--store", help="postgresql:// URL of an empty database")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="retrievo-kill-"))
    docs = write_notes(folder / "docs", args.files)
    fake = FakeEmbeddings(dims=96, delay_s=1.0)
    environ = {**os.environ, "RETRIEVO_EMBED_URL": fake.url}
    environ.update(
        {"RETRIEVO_STORE": args.store} if args.store else {"RETRIEVO_DB": str(folder / "index.db")}
    )
    results: dict[str, Any] = {"store": "PostgreSQL" if args.store else "SQLite", "files": args.files}
    started = time.perf_counter()
    index_job = cli(environ, "index", str(docs), "--background", "--json")["job_id"]
    results["index"] = kill_rounds(environ, index_job, args.kills)
    results["index"]["seconds"] = round(time.perf_counter() - started, 1)
    status = cli(environ, "status", "--json")["collections"][0]
    results["index"]["documents"], results["index"]["missing"] = status["documents"], status["missing"]
    started = time.perf_counter()
    migration_job = cli(environ, "regenerate", "--model", "openai:fake-96", "--background", "--json")[
        "job_id"
    ]
    results["migration"] = kill_rounds(environ, migration_job, args.kills)
    results["migration"]["seconds"] = round(time.perf_counter() - started, 1)
    status = cli(environ, "status", "--json")["collections"][0]
    results["migration"]["model_id"], results["migration"]["missing"] = status["model_id"], status["missing"]
    verified = cli(environ, "verify", "--json")
    results["verify_ok"] = verified["ok"]
    results["problems"] = {k: v for k, v in verified["problems"].items() if v}
    emit(results, args.out)
    fake.close()


if __name__ == "__main__":
    main()
