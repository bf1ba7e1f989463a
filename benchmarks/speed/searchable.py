"""How soon a repository just pointed at is searchable: `retrievo index` from a fresh index to its return,
then the first search, against an older checkout (the same commands from its ``src/``).

With stages (operations/staged.py, the default) `index` returns once every chunk has the static model's
vector; the bundled model's follow in a background job, timed here too (first run) until the collection
switches. The older checkout embeds every chunk with the bundled model before it returns. Each side runs
``--runs`` times on fresh indexes; medians.

    .venv/bin/python -m benchmarks.speed.searchable REPO [REPO ...] [--vs /tmp/old] [--runs 3] [--resident]
        [--json out.json]

With ``--resident`` this checkout's calls go through the `retrievo` script, its resident process on (a
private folder of this run): `index` starts it as it starts (and again as it ends), so that it serves the
first search; ``served_search_s`` is one more search once it listens.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.speed import startup
from benchmarks.speed.startup import timed

QUERY = "how does the router match a request to its handler"


def cli(arguments: list[str], db: Path, src: Path | None) -> tuple[float, str]:
    return timed([*arguments, "--db", str(db)], src)


def measure(repo: Path, src: Path | None, scratch: Path, run: int, follow: bool) -> dict[str, Any]:
    """One fresh index of ``repo`` and one search; with ``follow``, also until the bundled model's vectors
    are in (a staged index), else its background job is cancelled so that it does not slow the next run."""
    db = scratch / f"{repo.name}-{'vs' if src else 'here'}-{run}.db"
    if startup.RESIDENT and not src:
        startup.stop_resident()  # each run as a user's first: no resident process yet
    started = time.perf_counter()
    index_s, out = cli(["index", str(repo), "--json"], db, src)
    report = json.loads(out)
    search_s, _ = cli(["search", QUERY, "--json"], db, src)
    figures: dict[str, Any] = {"index_s": round(index_s, 2), "first_search_s": round(search_s, 2),
                               "chunks": report["chunks_written"], "searchable_s": round(index_s + search_s, 2)}  # fmt: skip
    if startup.RESIDENT and not src:  # the next search, once the process `index` started is listening
        startup.resident_ready()
        figures["served_search_s"] = round(cli(["search", QUERY, "--json"], db, src)[0], 2)
    job_id = report.get("staged_job_id")
    if job_id and not follow:
        cli(["job", "cancel", job_id], db, src)
    while job_id:  # from the start of `index` until the job has ended
        job = json.loads(cli(["job", job_id, "--json"], db, src)[1])
        if job["status"] not in ("queued", "running", "cancelling"):
            if follow:
                figures |= {
                    "transformer": job["status"],
                    "transformer_s": round(time.perf_counter() - started, 1),
                }
            gone(job.get("pid"))  # its worker has left: nothing of it runs beside the next run
            break
        time.sleep(0.5)
    return figures


def gone(pid: int | None, timeout_s: float = 60.0) -> None:
    """Wait until process ``pid`` has exited."""
    deadline = time.monotonic() + timeout_s
    while pid and time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.2)


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the runs (the first run's for what only it measured)."""
    keys = [k for k in runs[0] if isinstance(runs[0][k], float) and all(k in r for r in runs)]
    return runs[0] | {k: round(statistics.median(r[k] for r in runs), 2) for k in keys} | {"runs": len(runs)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("repos", type=Path, nargs="+")
    parser.add_argument("--vs", type=Path, help="another checkout, run from its src/")
    parser.add_argument("--runs", type=int, default=3, help="fresh indexes a side; medians reported")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--resident",
        action="store_true",
        help="this checkout through the `retrievo` script, its resident process on",
    )
    args = parser.parse_args()
    if args.resident:
        startup.RESIDENT.update(
            RETRIEVO_DAEMON="on", RETRIEVO_DAEMON_DIR=tempfile.mkdtemp(prefix="rd", dir="/tmp")
        )
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="searchable-") as scratch:
        for repo in args.repos:
            here = medians(
                [measure(repo.resolve(), None, Path(scratch), n, n == 0) for n in range(args.runs)]
            )
            row: dict[str, Any] = {"here": here}
            if args.vs:
                row["vs"] = medians(
                    [measure(repo.resolve(), args.vs, Path(scratch), n, False) for n in range(args.runs)]
                )
                row["ratio_index"] = round(row["vs"]["index_s"] / here["index_s"], 1)
                row["ratio_searchable"] = round(row["vs"]["searchable_s"] / here["searchable_s"], 1)
            results[repo.name] = row
            print(repo.name, json.dumps(row), flush=True)
    if startup.RESIDENT:
        startup.stop_resident()
    if args.json:
        meta = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "query": QUERY,
                "vs": str(args.vs) if args.vs else None, "resident": args.resident}  # fmt: skip
        args.json.write_text(json.dumps(meta | results, indent=2) + "\n")


if __name__ == "__main__":
    main()
