"""An agent's first search against the next ones, over MCP (the official client, stdio), process start
excluded: with the bundled model (loaded in the background while the client shakes hands), and with an
embedding service that answers every request 503 (the search falls back to keywords).

    .venv/bin/python -m benchmarks.speed.first_call --db /tmp/h.db [--runs 5] [--pause 1.0] [--json out.json]

The index (``--db``) should exist, made with the bundled model: `retrievo index examples/handbook --db /tmp/h.db`.
``--pause``: seconds between the handshake and the first search (an agent reads the tool list first).
The 503 case indexes the handbook through a loopback OpenAI-shaped service (``benchmarks.common.FakeEmbeddings``),
then has it answer every request 503.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchmarks.common import FakeEmbeddings
from retrievo import Config, Engine

ROOT = Path(__file__).resolve().parents[2]


async def one_run(db: Path, pause: float, env: dict[str, str]) -> tuple[float, float]:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db)],
        env={"PATH": os.environ.get("PATH", ""), **env},
    )  # fmt: skip
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        await asyncio.sleep(pause)
        times = []
        for query in ("how many weeks of parental leave", "who approves expenses"):
            started = time.perf_counter()
            await session.call_tool("search", {"query": query})
            times.append(time.perf_counter() - started)
    return times[0], times[1]


def measure(db: Path, runs: int, pause: float, env: dict[str, str]) -> dict[str, float]:
    pairs = [asyncio.run(one_run(db, pause, env)) for _ in range(runs)]
    return {
        "first_search_median_ms": round(statistics.median(p[0] for p in pairs) * 1000, 1),
        "first_search_max_ms": round(max(p[0] for p in pairs) * 1000, 1),
        "next_search_median_ms": round(statistics.median(p[1] for p in pairs) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pause", type=float, default=1.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    out: dict[str, Any] = {"runs": args.runs, "pause_s": args.pause}
    out["bundled_model"] = measure(args.db, args.runs, args.pause, {})
    service = FakeEmbeddings(dims=64)
    env = {"RETRIEVO_EMBEDDER": "openai", "RETRIEVO_EMBED_MODEL": "toy", "RETRIEVO_EMBED_URL": service.url}
    os.environ.update(env)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "k.db"
        with Engine(Config.from_env(db=db)) as engine:
            engine.index([ROOT / "examples" / "handbook"])  # embedded while the service answers …
        service.down = True  # … then it answers every request 503
        out["service_down_503"] = measure(db, args.runs, 0.0, env)  # the warm-up meets the failure first
        fallback, modes = [], set()
        for _ in range(args.runs):  # a process that did not warm up: its first search meets the failure
            with Engine(Config.from_env(db=db)) as engine:
                started = time.perf_counter()
                modes.add(engine.search("parental leave weeks").search_mode)
                fallback.append(time.perf_counter() - started)
        out["service_down_503"]["cold_first_search_median_ms"] = round(statistics.median(fallback) * 1000, 1)
        out["service_down_503"]["cold_first_search_modes"] = sorted(modes)
    service.close()
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
