"""`retrievo serve` under load, keys on: 100 concurrent REST clients and 100 concurrent MCP clients
(the official SDK client over streamable HTTP) searching a 100k-chunk index, query embedding included;
and what authentication costs per request.

    .venv/bin/python benchmarks/bench_serve.py --size 100000 --keep /tmp/bench-serve [--workers 2]

The index is bench_query's synthetic one (60-word chunks, low-rank vectors) labelled with the bundled
model's id, so the server embeds each query with the real model. The rate limit is raised out of the
way; everything else is the default server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
from bench_query import build
from common import free_port, synthetic_texts, wait_healthy
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from realistic import realistic_queries, realistic_texts

from retrievo.access import KeyRing
from retrievo.config import Config
from retrievo.embed.local import MODEL_ID
from retrievo.store.factory import open_store

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def server(config: Config, *options: str) -> Iterator[str]:
    port = free_port()
    where = ["--store", config.store] if config.store else ["--db", str(config.db)]
    command = [sys.executable, "-m", "retrievo.surfaces.cli", "serve", "--port", str(port), "--collection",
               "bench", "--rate", "1000000", "--burst", "1000000", *where, *options]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, 120)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def summary(latencies: list[float], errors: int, wall: float) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "calls": len(latencies) + errors, "errors": errors, "mean_ms": round(statistics.fmean(ordered), 1),
        "p50_ms": round(ordered[len(ordered) // 2], 1), "p95_ms": round(ordered[int(len(ordered) * 0.95)], 1),
        "max_ms": round(ordered[-1], 1), "calls_per_s": round((len(latencies) + errors) / wall, 1),
    }  # fmt: skip


async def rest_load(
    url: str, key: str, queries: list[str], clients: int, per_client: int
) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}, limits=limits,
                                 timeout=120) as http:  # fmt: skip

        async def one_client(number: int) -> None:
            nonlocal errors
            for i in range(per_client):
                query = queries[(number * per_client + i) % len(queries)]
                started = time.perf_counter()
                answer = await http.post("/api/search", json={"query": query, "limit": 10})
                if answer.status_code == 200 and answer.json()["results"]:
                    latencies.append((time.perf_counter() - started) * 1000)
                else:
                    errors += 1

        started = time.perf_counter()
        await asyncio.gather(*(one_client(n) for n in range(clients)))
        return summary(latencies, errors, time.perf_counter() - started)


async def mcp_load(url: str, key: str, queries: list[str], clients: int, per_client: int) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    ready = asyncio.Event()
    connected = 0

    async def one_client(number: int) -> None:
        nonlocal errors, connected
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):
            connected += 1
            if connected == clients:
                ready.set()
            await ready.wait()  # every client connected: then all search at once
            for i in range(per_client):
                query = queries[(number * per_client + i) % len(queries)]
                started = time.perf_counter()
                result = await client.call_tool("search", {"query": query, "limit": 10})
                if not result.is_error and result.structured_content and result.structured_content["results"]:
                    latencies.append((time.perf_counter() - started) * 1000)
                else:
                    errors += 1

    started = time.perf_counter()
    await asyncio.gather(*(one_client(n) for n in range(clients)))
    return summary(latencies, errors, time.perf_counter() - started)


def sequential(url: str, key: str | None, document_id: str, count: int) -> list[float]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body = {"document_id": document_id, "max_chars": 100}
    latencies = []
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        for _ in range(count):
            started = time.perf_counter()
            answer = http.post("/api/get_document", json=body)
            latencies.append((time.perf_counter() - started) * 1000)
            assert answer.status_code == 200, answer.text
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, default=Path("/tmp/bench-serve"))
    parser.add_argument("--store", help="postgresql://… instead of SQLite")
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--per-client", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--realistic", action="store_true", help="Recombined real sentences and real queries (realistic.py)."
    )
    args = parser.parse_args()

    args.keep.mkdir(parents=True, exist_ok=True)
    label = "realistic-" if args.realistic else ""
    config = Config(db=args.keep / f"serve-{label}{args.size}.db", store=args.store, collection="bench")
    store = open_store(config, create=True)
    if store.get_collection("bench") is None:
        print(f"building {args.size} chunks …", file=sys.stderr)
        store.close()
        texts = realistic_texts(args.size) if args.realistic else None
        print(f"built in {build(config, args.size, MODEL_ID, texts=texts):.0f} s", file=sys.stderr)
        store = open_store(config, create=True)
    document_id = store.list_documents("bench", limit=1)[0].document_id
    started = time.perf_counter()
    store.sync_search_indexes("bench")  # as `retrievo index` does at its end
    print(f"side indexes synced in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    store.close()
    ring = KeyRing(lambda: open_store(config, create=True))
    _, key = ring.create(f"bench-{int(time.time())}", "read")
    started = time.perf_counter()
    ring.authenticate(key)
    cold_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    for _ in range(1000):
        ring.authenticate(key)
    warm_us = (time.perf_counter() - started) * 1000  # 1000 checks in ms = µs per check

    if args.realistic:
        queries = realistic_queries(1109)  # SciFact's claims: real questions, each asked once
    else:
        words = list(synthetic_texts(400, seed=3, words=6))
        rng = random.Random(7)
        queries = [" ".join(w.split()[: rng.randint(2, 5)]) for w in words]
    results: dict[str, Any] = {
        "size": args.size, "store": "postgresql" if args.store else "sqlite", "workers": args.workers,
        "clients": args.clients, "text": "realistic" if args.realistic else "synthetic", "per_client": args.per_client, "machine": f"{platform.machine()}, "
        f"{__import__('os').cpu_count()} cores, Python {platform.python_version()}",
        "auth_cold_verify_ms": round(cold_ms, 1), "auth_cached_check_us": round(warm_us, 2),
    }  # fmt: skip
    with server(config, "--workers", str(args.workers)) as url:
        started = time.perf_counter()
        for _ in range(
            args.workers * 2
        ):  # first search per worker loads the model (and on SQLite the HNSW graph)
            httpx.post(f"{url}/api/search", json={"query": "warm up", "limit": 1},
                       headers={"Authorization": f"Bearer {key}"}, timeout=600)  # fmt: skip
        results["warm_up_s"] = round(time.perf_counter() - started, 1)
        results["rest_one_client"] = asyncio.run(rest_load(url, key, queries[-50:], 1, 50))
        results["rest"] = asyncio.run(rest_load(url, key, queries, args.clients, args.per_client))
        print("REST", results["rest"], file=sys.stderr)
        # Other queries than the REST run's, so that no query vector comes from the server's cache.
        calls = args.clients * args.per_client
        mcp_queries = queries[calls:] + queries[:calls]
        results["mcp"] = asyncio.run(mcp_load(url, key, mcp_queries, args.clients, args.per_client))
        print("MCP", results["mcp"], file=sys.stderr)
        keyed = sequential(url, key, document_id, 300)
    with server(config, "--workers", str(args.workers), "--no-auth") as url:
        open_ = sequential(url, None, document_id, 300)
    results["auth_overhead"] = {
        "with_key_p50_ms": round(statistics.median(keyed[50:]), 2),
        "no_auth_p50_ms": round(statistics.median(open_[50:]), 2),
    }
    results["auth_overhead"]["difference_ms"] = round(
        results["auth_overhead"]["with_key_p50_ms"] - results["auth_overhead"]["no_auth_p50_ms"], 2
    )
    ring.revoke(ring.list()[-1].key_id)
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
