"""How long a one-off command takes, process start included: `retrievo --version` and one-off searches.

Each command runs RUNS times in a fresh process (after one untimed run, so the files are in the page
cache, as they are on a machine that uses the tool); the median and the fastest are reported.

    .venv/bin/python -m benchmarks.speed.startup --db /tmp/h.db [--runs 10] [--json out.json]

The index (``--db``) should exist: e.g. `retrievo index examples/handbook --db /tmp/h.db`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from pathlib import Path

RETRIEVO = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "retrievo"


def timed(command: list[str], runs: int) -> dict[str, float]:
    subprocess.run(command, capture_output=True, check=True)
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        seconds.append(time.perf_counter() - started)
    return {"median_s": round(statistics.median(seconds), 3), "fastest_s": round(min(seconds), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    where = ["--db", str(args.db)]
    commands = {
        "retrievo --version": [str(RETRIEVO), "--version"],
        "retrievo --help": [str(RETRIEVO), "--help"],
        "search, keyword": [str(RETRIEVO), "search", "parental leave", "--mode", "keyword", *where],
        "search, hybrid (loads the model)": [str(RETRIEVO), "search", "parental leave", *where],
    }
    results = {name: timed(command, args.runs) for name, command in commands.items()}
    for name, figures in results.items():
        print(f"{name:34} median {figures['median_s']:.3f} s, fastest {figures['fastest_s']:.3f} s")
    if args.json:
        args.json.write_text(
            json.dumps({"date": time.strftime("%Y-%m-%d"), "runs": args.runs, **results}, indent=2)
        )


if __name__ == "__main__":
    main()
