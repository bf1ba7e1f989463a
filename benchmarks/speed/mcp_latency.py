"""Latency of `search` and `get_context` through the real MCP client (stdio), next to direct engine calls.

.venv/bin/retrievo eval ../shared/data/scifact --db /tmp/scifact.db      # builds the index once
.venv/bin/python -m benchmarks.speed.mcp_latency --db /tmp/scifact.db --collection eval-scifact
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from benchmarks.common import p50_p95
from retrievo.config import Config
from retrievo.engine import Engine

QUERIES = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact" / "queries.jsonl"


def load_queries(count: int) -> list[str]:
    with QUERIES.open(encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle][:count]


async def through_mcp(db: Path, collection: str, queries: list[str]) -> dict[str, tuple[float, float]]:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db), "--collection", collection],
    )
    results: dict[str, tuple[float, float]] = {}
    async with Client(server) as client:
        await client.call_tool("search", {"query": "warm up the model", "limit": 1})
        for tool, arguments in (("search", {"limit": 10}), ("get_context", {"max_tokens": 2000})):
            latencies = []
            for query in queries:
                started = time.perf_counter()
                result = await client.call_tool(tool, {"query": query, **arguments})
                latencies.append((time.perf_counter() - started) * 1000)
                assert not result.is_error, result.content
            results[tool] = p50_p95(latencies)
    return results


def direct(db: Path, collection: str, queries: list[str]) -> dict[str, tuple[float, float]]:
    engine = Engine(Config(db=db, collection=collection))
    engine.search("warm up the model", limit=1)
    results = {}
    for name, call in (
        ("engine.search", lambda q: engine.search(q, limit=10)),
        ("engine.context", lambda q: engine.context(q, max_tokens=2000)),
    ):
        latencies = []
        for query in queries:
            started = time.perf_counter()
            call(query)
            latencies.append((time.perf_counter() - started) * 1000)
        results[name] = p50_p95(latencies)
    engine.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--collection", default="eval-scifact")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    queries = load_queries(args.queries)
    print(
        f"# {len(queries)} SciFact queries, {time.strftime('%Y-%m-%d')}; p50 / p95 ms (includes query embedding)"
    )
    for name, (p50, p95) in {**direct(args.db, args.collection, queries),
                             **anyio.run(through_mcp, args.db, args.collection, queries)}.items():  # fmt: skip
        print(f"{name:16s} {p50:7.1f} / {p95:7.1f}")


if __name__ == "__main__":
    main()
