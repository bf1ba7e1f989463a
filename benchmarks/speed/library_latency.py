"""``search`` against ``search_library`` over MCP (official client, stdio) on one index: wall ms per call.

Seed 003 asks under 100 ms for a library search; issue 66 asks it within 2× of ``search`` on the same index.
Index any folder first, e.g. 206 SciFact abstracts as Markdown files:

    .venv/bin/python -m benchmarks.speed.library_latency --db /tmp/lib.db [--rounds 4]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

QUESTIONS = ["vitamin D deficiency and bone density", "what causes insulin resistance", "T cell activation",
             "cancer risk in smokers", "gene expression in mice"]  # fmt: skip


async def measure(db: Path, rounds: int) -> dict[str, float]:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db), "--tools", "all"]
    )
    out: dict[str, float] = {}
    async with Client(server) as client:
        for tool in ("search", "search_library"):
            await client.call_tool(tool, {"query": "warm up"})
        for tool in ("search", "search_library"):
            times = []
            for _ in range(rounds):
                for question in QUESTIONS:
                    started = time.perf_counter()
                    answer = await client.call_tool(tool, {"query": question})
                    times.append((time.perf_counter() - started) * 1000)
                    assert not answer.is_error, answer.content
            out[f"{tool}_median_ms"] = round(statistics.median(times), 1)
            out[f"{tool}_max_ms"] = round(max(times), 1)
    out["ratio"] = round(out["search_library_median_ms"] / out["search_median_ms"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    print(anyio.run(measure, args.db, args.rounds))


if __name__ == "__main__":
    main()
