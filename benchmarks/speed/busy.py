"""Search latency and CPU per query on a quiet machine and beside busy processes.

The machine a user searches on is rarely quiet: a build, a browser, another server. Here N processes
that spin on the CPU run beside the measurement (``--busy N``, repeatable values), and each mode's
p50 / p95 and the process's CPU seconds per query (every thread of it) are reported. Query vectors are
cached by a warm-up round first, as in the peers harness: the arms and the search path are measured.

    .venv/bin/python -m benchmarks.speed.busy --db /tmp/ev/scifact.db --collection eval-scifact \\
        --queries ../shared/data/scifact/queries.jsonl --busy 0 --busy 2 [--json out.json]

``RETRIEVO_QUERY_THREADS`` (default 1) is read by the engine as usual: run once with it unset and
once with e.g. ``RETRIEVO_QUERY_THREADS=2`` to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from retrievo import Config, Engine
from retrievo.evaluation.metrics import percentile

SPIN = "import time\nend = time.monotonic() + 3600\nwhile time.monotonic() < end:\n    pass\n"


@contextmanager
def busy(processes: int) -> Iterator[None]:
    """``processes`` children spinning on the CPU for as long as the block runs."""
    children = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(processes)]
    try:
        time.sleep(0.5 if children else 0)  # let them take the cores
        yield
    finally:
        for child in children:
            child.kill()
            child.wait()


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(engine: Engine, queries: list[str], mode: str, rounds: int) -> dict[str, float]:
    latencies: list[float] = []
    cpu_before, wall_before = cpu_seconds(), time.perf_counter()
    for _ in range(rounds):
        for query in queries:
            started = time.perf_counter()
            engine.search(query, mode=mode, limit=10)
            latencies.append((time.perf_counter() - started) * 1000)
    count = len(latencies)
    return {
        "p50_ms": round(percentile(latencies, 0.5), 3),
        "p95_ms": round(percentile(latencies, 0.95), 3),
        "cpu_ms_per_query": round((cpu_seconds() - cpu_before) * 1000 / count, 3),
        "wall_s": round(time.perf_counter() - wall_before, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--collection", default="default")
    parser.add_argument("--queries", type=Path, required=True, help="BEIR queries.jsonl")
    parser.add_argument("--limit-queries", type=int, default=300)
    parser.add_argument("--repeats", "--rounds", dest="rounds", type=int, default=2)
    parser.add_argument("--busy", type=int, action="append", help="Spinning processes beside (repeatable).")
    parser.add_argument("--modes", default="semantic,hybrid,keyword")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    queries = [json.loads(line)["text"] for line in args.queries.read_text().splitlines() if line.strip()]
    queries = queries[: args.limit_queries]
    results: dict[str, Any] = {
        "query_threads": os.environ.get("RETRIEVO_QUERY_THREADS", "default"),
        "cores": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
        "runs": {},
    }
    with Engine(Config(db=args.db, collection=args.collection)) as engine:
        for query in queries:  # warm-up: the model loaded, every query vector cached
            engine.search(query, mode="hybrid", limit=10)
        for load in args.busy or [0]:
            with busy(load):
                for mode in args.modes.split(","):
                    figures = measure(engine, queries, mode, args.rounds)
                    results["runs"][f"busy {load}, {mode}"] = figures
                    print(f"busy {load} {mode:9} p50 {figures['p50_ms']:7.2f} ms  p95 {figures['p95_ms']:7.2f} ms  "
                          f"CPU {figures['cpu_ms_per_query']:6.2f} ms/query", flush=True)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
