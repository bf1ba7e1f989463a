"""Model migration without downtime: a 100k-chunk collection moved to another model while queries run.

The collection is built as in `speed/query.py` (synthetic chunks, 384-dim vectors of the "old" model);
the new model is an OpenAI-compatible server on a thread (`common.FakeEmbeddings`, 128 dims), so the
run measures the migration's mechanics — shadow vectors, the atomic switch, the side index — not a
model's speed. One thread searches (hybrid, limit 10) before, throughout and after `regenerate
--model`; every search must succeed and stay hybrid.

    .venv/bin/python -m benchmarks.scale.migration --size 100000 [--store postgresql://…]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import FakeEmbeddings, emit, low_rank, p50_p95, synthetic_texts, timed
from benchmarks.speed.query import FixedQueryEmbedder, build, config_for
from retrievo.engine import Engine

QUERY_WORDS = list(synthetic_texts(500, seed=3, words=4))


def searching(
    engine: Engine, stop: threading.Event, out: dict[str, list[float]], failures: list[str]
) -> None:
    n = 0
    while not stop.is_set():
        query = QUERY_WORDS[n % len(QUERY_WORDS)]
        n += 1
        try:
            result, ms = timed(lambda query=query: engine.search(query, limit=10))
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
            continue
        if not result.hits or not result.search_mode.startswith("hybrid"):
            failures.append(f"{result.search_mode}: {len(result.hits)} hits ({result.degraded_reason})")
        out["latencies"].append(ms)


def phase(engine: Engine, seconds: float) -> tuple[list[float], list[str]]:
    stop, out, failures = threading.Event(), {"latencies": []}, []  # type: ignore[var-annotated]
    thread = threading.Thread(target=searching, args=(engine, stop, out, failures))
    thread.start()
    time.sleep(seconds)
    stop.set()
    thread.join()
    return out["latencies"], failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--store", help="postgresql:// URL of an empty database")
    parser.add_argument("--phase-s", type=float, default=20.0, help="Seconds of queries before and after.")
    parser.add_argument("--out", type=Path, help="Write the results as JSON here.")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="retrievo-migration-"))
    config = config_for(folder / "index.db", args.store)
    build_s = build(config, args.size)
    fake = FakeEmbeddings(dims=128)
    config = config.__class__(**{**config.__dict__, "embed_url": fake.url})
    server = Engine(config, embedder=FixedQueryEmbedder(low_rank(64, 384, seed=9)))  # a serving process
    server.search("warm up", limit=10)
    before, before_failures = phase(server, args.phase_s)
    stop, during, failures = threading.Event(), {"latencies": []}, []  # type: ignore[var-annotated]
    thread = threading.Thread(target=searching, args=(server, stop, during, failures))
    thread.start()
    # The migration runs as `retrievo regenerate` would: in a process of its own.
    environ = {**os.environ, "RETRIEVO_COLLECTION": "bench", "RETRIEVO_EMBED_URL": fake.url}
    environ.update({"RETRIEVO_STORE": args.store} if args.store else {"RETRIEVO_DB": str(config.db)})
    command = [sys.executable, "-m", "retrievo.surfaces.cli", "regenerate", "--model", "openai:bench-128"]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--drop-old", "--json"], env=environ, capture_output=True, text=True, check=False
    )
    migration_s = time.perf_counter() - started
    stop.set()
    thread.join()
    if done.returncode != 0:
        raise SystemExit(f"the migration failed: {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    after, after_failures = phase(server, args.phase_s)
    verified = subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", "verify", "--json"], env=environ, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    verify_ok = verified.returncode == 0
    results = {
        "machine": f"{platform.machine()}, {platform.processor() or '?'}, Python {sys.version.split()[0]}",
        "date": time.strftime("%Y-%m-%d"), "store": "PostgreSQL" if args.store else "SQLite",
        "size": args.size, "build_s": round(build_s, 1), "migration_s": round(migration_s, 1),
        "chunks_embedded": report["chunks_embedded"], "switched": report["switched"],
        "vectors_dropped": report["vectors_dropped"], "verify_ok": verify_ok,
        "queries": {"before": len(before), "during": len(during["latencies"]), "after": len(after)},
        "p50_p95_ms": {
            "before": p50_p95(before), "during": p50_p95(during["latencies"]), "after": p50_p95(after),
        },
        "failed_queries": len(before_failures) + len(failures) + len(after_failures),
        "failures": (before_failures + failures + after_failures)[:10],
    }  # fmt: skip
    emit(results, args.out)
    fake.close()


if __name__ == "__main__":
    main()
