"""How long a one-off CLI command takes, process start included, and against an older checkout.

Each command runs RUNS times in a fresh process (after one untimed run, so the files are in the page
cache, as they are on a machine that uses the tool); the median and the fastest are reported. With
``--vs SRC`` the same commands also run from another checkout's ``src/`` (``git worktree add /tmp/old
5bd51cc``) over its own index (``--vs-db``, made by that checkout), in turn with this one's (A B A B …),
and each pair's ratio is reported too: a drifting machine moves both.

    .venv/bin/python -m benchmarks.speed.startup --db /tmp/h.db [--vs /tmp/old --vs-db /tmp/old.db]
        [--query "..."] [--runs 10] [--json out.json]

With ``--resident`` this checkout's calls go through the `retrievo` script with its resident process on
(``surfaces/cli/resident.py``; a private socket folder of this run): the untimed first run of each command
starts it, and the timed runs are served by it — what a user's second and later calls cost. The other
checkout's calls run in their own process, as they always did.

The index (``--db``) should exist: e.g. `retrievo index examples/handbook --db /tmp/h.db`. The prepared
model graph (``embed/prepared.py``) is read from ``RETRIEVO_CACHE_DIR``; the untimed first run makes it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from retrievo.surfaces.cli.resident import QUICK

CLI = [sys.executable, "-m", "retrievo.surfaces.cli"]


def commands(db: Path, query: str) -> dict[str, list[str]]:
    where = ["--db", str(db)]
    return {
        "retrievo --version": ["--version"],
        "retrievo --help": ["--help"],
        "status": ["status", *where],
        "search, keyword": ["search", query, "--mode", "keyword", *where],
        "search, hybrid (loads the model)": ["search", query, *where],
    }


SCRIPT = [str(Path(sys.executable).parent / "retrievo")]
RESIDENT: dict[str, str] = {}  # the resident process's settings, when --resident


def timed(arguments: list[str], src: Path | None) -> tuple[float, str]:
    """One CLI call in a fresh process (from ``src``'s checkout when given): its wall seconds and output."""
    env = dict(os.environ) | ({"PYTHONPATH": str(src / "src")} if src else {})
    command = CLI
    if RESIDENT and not src:
        env, command = env | RESIDENT, SCRIPT
    started = time.perf_counter()
    done = subprocess.run([*command, *arguments], capture_output=True, text=True, check=True, env=env)
    return time.perf_counter() - started, done.stdout


def run(arguments: list[str], src: Path | None) -> float:
    return timed(arguments, src)[0]


def stop_resident() -> None:
    from retrievo.surfaces.cli.resident import ask

    place = Path(RESIDENT["RETRIEVO_DAEMON_DIR"])
    for path in place.glob("*.sock"):
        ask(str(path), "stop")
    deadline = time.monotonic() + 30  # gone, and its lock released: the next one may start
    while any(place.glob("*.sock*")) and time.monotonic() < deadline:
        time.sleep(0.1)


def resident_ready() -> None:
    """Waits until the resident process started by the untimed run answers."""
    from retrievo.surfaces.cli.resident import ask

    place = Path(RESIDENT["RETRIEVO_DAEMON_DIR"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(ask(str(path), "ping") for path in place.glob("*.sock")):
            return
        time.sleep(0.1)
    raise SystemExit(f"no resident process answered in {place}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--vs", type=Path, help="another checkout, run from its src/")
    parser.add_argument("--vs-db", type=Path, help="that checkout's index (default: --db)")
    parser.add_argument("--query", default="parental leave")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--resident", action="store_true", help="this checkout's calls served by its resident process"
    )
    args = parser.parse_args()
    if args.resident:
        import tempfile

        RESIDENT.update(RETRIEVO_DAEMON="on", RETRIEVO_DAEMON_DIR=tempfile.mkdtemp(prefix="rd", dir="/tmp"))
    ours, theirs = commands(args.db, args.query), commands(args.vs_db or args.db, args.query)
    results: dict[str, dict[str, float]] = {}
    for name, arguments in ours.items():
        run(arguments, None)
        if RESIDENT and arguments[0] in QUICK:
            resident_ready()
        if args.vs:
            run(theirs[name], args.vs)
        a, b = [], []
        for _ in range(args.runs):
            a.append(run(arguments, None))
            if args.vs:
                b.append(run(theirs[name], args.vs))
        figures = {"median_s": round(statistics.median(a), 3), "fastest_s": round(min(a), 3)}
        if b:
            figures |= {"vs_median_s": round(statistics.median(b), 3),
                        "ratio_median": round(statistics.median(x / y for x, y in zip(a, b, strict=True)), 3)}  # fmt: skip
        results[name] = figures
        shown = f"{name:34} median {figures['median_s']:.3f} s, fastest {figures['fastest_s']:.3f} s"
        if b:
            shown += f"; vs {figures['vs_median_s']:.3f} s, ratio {figures['ratio_median']:.2f}"
        print(shown, flush=True)
    if RESIDENT:
        stop_resident()
    if args.json:
        meta = {"date": time.strftime("%Y-%m-%d"), "runs": args.runs, "query": args.query,
                "vs": str(args.vs) if args.vs else None, "cpus": os.cpu_count(), "resident": args.resident}  # fmt: skip
        args.json.write_text(json.dumps(meta | results, indent=2) + "\n")


if __name__ == "__main__":
    main()
