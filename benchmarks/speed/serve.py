"""`retrievo serve` under load, keys on: 100 concurrent REST clients and 100 concurrent MCP clients
searching a 100k-chunk index, query embedding included; and what authentication costs per request.

The clients run on the server's own cores, so what they spend is taken from the server. Each load
says the server's and the clients' CPU a call. REST is driven by a lean keep-alive client
(`lean_http.py`, ~0.1 ms a call) and, as it did until 2026-11-24, by httpx with one pool (~4 ms a
call); MCP by 100 official SDK clients over streamable HTTP and by the lean client sending the SDK's
very requests.

    .venv/bin/python -m benchmarks.speed.serve --size 100000 --keep /tmp/bench-serve [--workers 2]
    .venv/bin/python -m benchmarks.speed.serve … --alternate 2    # A/B: REST and MCP alternated, one server

The index is query.py's synthetic one (60-word chunks, low-rank vectors) labelled with the bundled
model's id, so the server embeds each query with the real model. The rate limit is raised out of the
way; everything else is the default server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import LATEST_PROTOCOL_VERSION as VERSION

from benchmarks.common import free_port, synthetic_texts, wait_healthy
from benchmarks.scale.realistic import realistic_queries, realistic_texts
from benchmarks.speed.lean_http import Connection
from benchmarks.speed.query import build
from retrievo.config import Config
from retrievo.embed.local import MODEL_ID
from retrievo.store.factory import open_store
from retrievo.surfaces.access import KeyRing

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def server(config: Config, *options: str) -> Iterator[tuple[str, int]]:
    """(URL, process id) of a fresh server on the index."""
    port = free_port()
    where = ["--store", config.store] if config.store else ["--db", str(config.db)]
    command = [sys.executable, "-m", "retrievo.surfaces.cli", "serve", "--port", str(port), "--collection",
               "bench", "--rate", "1000000", "--burst", "1000000", *where, *options]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, 120)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


class Tally:
    """The latencies of a load's good answers and its count of bad ones."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors = 0

    async def call(self, answer: Awaitable[bool]) -> None:
        """Await one call (``answer``: whether it came back good), timed from here."""
        started = time.perf_counter()
        if await answer:
            self.latencies.append((time.perf_counter() - started) * 1000)
        else:
            self.errors += 1

    async def run(self, clients: int, one_client: Callable[[int], Awaitable[None]]) -> dict[str, float]:
        """Every client at once; the summary of their calls."""
        started = time.perf_counter()
        await asyncio.gather(*(one_client(n) for n in range(clients)))
        wall, ordered, calls = (
            time.perf_counter() - started,
            sorted(self.latencies),
            len(self.latencies) + self.errors,
        )
        return {
            "calls": calls, "errors": self.errors, "mean_ms": round(statistics.fmean(ordered), 1),
            "p50_ms": round(ordered[len(ordered) // 2], 1), "p95_ms": round(ordered[int(len(ordered) * 0.95)], 1),
            "max_ms": round(ordered[-1], 1), "calls_per_s": round(calls / wall, 1),
        }  # fmt: skip


def queries_of(queries: list[str], number: int, per_client: int) -> list[str]:
    """Client ``number``'s queries: its own slice, each query asked once across the clients."""
    return [queries[(number * per_client + i) % len(queries)] for i in range(per_client)]


def cpu_seconds(pid: int) -> float:
    """User + system CPU so far of a process and its live descendants (``--workers N``: the workers)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(FileNotFoundError):  # ended meanwhile
                total += cpu_seconds(int(child))
    return total


def measured(pid: int, load: Awaitable[dict[str, float]]) -> dict[str, float]:
    """A load's summary with the server's and this process's (the clients') CPU milliseconds a call."""
    server_before, clients_before = cpu_seconds(pid), time.process_time()
    result = asyncio.run(load)  # type: ignore[arg-type]
    calls = result["calls"]
    result["server_cpu_ms_per_call"] = round((cpu_seconds(pid) - server_before) * 1000 / calls, 2)
    result["client_cpu_ms_per_call"] = round((time.process_time() - clients_before) * 1000 / calls, 2)
    return result


async def rest_load(
    url: str, key: str, queries: list[str], clients: int, per_client: int
) -> dict[str, float]:
    """Each client a keep-alive connection of its own (`lean_http`), all searching at once."""
    tally = Tally()
    auth = {"Authorization": f"Bearer {key}"}
    connections = [await Connection.open(url) for _ in range(clients)]

    async def search(connection: Connection, query: str) -> bool:
        status, answer = await connection.post_json("/api/search", {"query": query, "limit": 10}, auth)
        return status == 200 and bool(answer["results"])

    async def one_client(number: int) -> None:
        for query in queries_of(queries, number, per_client):
            await tally.call(search(connections[number], query))

    result = await tally.run(clients, one_client)
    for connection in connections:
        await connection.close()
    return result


async def rest_httpx_load(
    url: str, key: str, queries: list[str], clients: int, per_client: int
) -> dict[str, float]:
    """The REST load of rounds one to eight: httpx, one pool of ``clients`` connections."""
    tally = Tally()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}, limits=limits,
                                 timeout=120) as http:  # fmt: skip

        async def search(query: str) -> bool:
            answer = await http.post("/api/search", json={"query": query, "limit": 10})
            return answer.status_code == 200 and bool(answer.json()["results"])

        async def one_client(number: int) -> None:
            for query in queries_of(queries, number, per_client):
                await tally.call(search(query))

        return await tally.run(clients, one_client)


async def mcp_load(url: str, key: str, queries: list[str], clients: int, per_client: int) -> dict[str, float]:
    tally = Tally()
    connected = asyncio.Barrier(clients)  # every client connected: then all search at once

    async def one_client(number: int) -> None:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):

            async def search(query: str) -> bool:
                result = await client.call_tool("search", {"query": query, "limit": 10})
                return not result.is_error and bool(
                    result.structured_content and result.structured_content["results"]
                )

            await connected.wait()
            for query in queries_of(queries, number, per_client):
                await tally.call(search(query))

    return await tally.run(clients, one_client)


def lean_request(method: str, params: dict[str, Any], number: int, name: str | None = None) -> dict[str, Any]:
    """Headers and JSON body of one request as the official SDK client sends it (protocol 2026-07-28:
    stateless, a ``_meta`` envelope in every request, ``Mcp-Method`` / ``Mcp-Name`` headers)."""
    meta = {"io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "bench-lean", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": VERSION,
               "Mcp-Method": method, **({"Mcp-Name": name} if name else {})}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": number, "method": method, "params": {**params, "_meta": meta}}
    return {"headers": headers, "json": body}


async def mcp_lean_load(
    url: str, key: str, queries: list[str], clients: int, per_client: int
) -> dict[str, float]:
    """The requests the official SDK client sends (``lean_request``: ``server/discover``, then each
    ``tools/call search``, ``tools/list`` once after the first call), sent by the lean client
    (``lean_http``, a keep-alive connection per client), as the REST load sends its requests. All
    clients connect (discover) first, then all search.

    The SDK's client spends 6.5-10 ms of CPU a call (measured 2026-11-24), more than the server; on this
    2-core machine the 100 clients' CPU is taken from the server's. This load shows what the server
    itself sustains over MCP; ``mcp_load`` what 100 SDK clients on the same cores get."""
    tally = Tally()
    connected = asyncio.Barrier(clients)

    async def one_client(number: int) -> None:
        auth = {"Authorization": f"Bearer {key}"}
        connection = await Connection.open(url)
        try:

            async def rpc(method: str, params: dict[str, Any], number: int, name: str | None = None) -> Any:
                request = lean_request(method, params, number, name)
                status, answer = await connection.post_json(
                    "/mcp", request["json"], {**request["headers"], **auth}
                )
                if status != 200:
                    raise RuntimeError(f"MCP answered HTTP {status}: {answer}")
                return answer

            async def search(query: str, number: int) -> bool:
                arguments = {"name": "search", "arguments": {"query": query, "limit": 10}}
                result = (await rpc("tools/call", arguments, number, "search")).get("result") or {}
                return not result.get("isError") and bool(
                    (result.get("structuredContent") or {}).get("results")
                )

            assert "result" in await rpc("server/discover", {}, 1)
            await connected.wait()
            for i, query in enumerate(queries_of(queries, number, per_client)):
                await tally.call(search(query, 2 * i + 2))
                if i == 0:
                    assert "result" in await rpc("tools/list", {}, 3)
        finally:
            await connection.close()

    return await tally.run(clients, one_client)


async def same_answer_both_ways(url: str, key: str, query: str) -> bool:
    """The lean client's structured answer equals the official SDK client's for the same call."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        official = (await client.call_tool("search", {"query": query, "limit": 10})).structured_content
    call = lean_request(
        "tools/call", {"name": "search", "arguments": {"query": query, "limit": 10}}, 1, "search"
    )
    connection = await Connection.open(url)
    _, answer = await connection.post_json(
        "/mcp", call["json"], {**call["headers"], "Authorization": f"Bearer {key}"}
    )
    await connection.close()
    lean = answer["result"]["structuredContent"]
    ids = [[(hit["uri"], hit["line_start"]) for hit in answer["results"]] for answer in (official, lean)]
    return bool(ids[0]) and ids[0] == ids[1]


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


def alternate(config: Config, key: str, queries: list[str], args: argparse.Namespace) -> None:
    """A/B runs: REST and MCP (lean client) alternated on one warmed server; each load asks
    ``clients x per_client`` queries after the previous load's, so none comes from the server's cache
    (512 vectors) while there are more than 512 + that many queries (1,109 here)."""
    loads = {"rest": rest_load, "mcp_lean": mcp_lean_load}
    calls = args.clients * args.per_client
    with server(config, "--workers", str(args.workers)) as (url, pid):
        for _ in range(args.workers * 2):
            httpx.post(f"{url}/api/search", json={"query": "warm up", "limit": 1},
                       headers={"Authorization": f"Bearer {key}"}, timeout=600)  # fmt: skip
        for number in range(args.alternate * len(loads)):
            name = list(loads)[number % len(loads)]
            start = number * calls % len(queries)
            asked = queries[start:] + queries[:start]
            result = measured(pid, loads[name](url, key, asked, args.clients, args.per_client))
            print(json.dumps({"load": name, **result}), flush=True)


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
        "--alternate", type=int, metavar="ROUNDS",
        help="Only REST then MCP (lean client) on one warmed server, ROUNDS times, each load on queries of its own.",
    )  # fmt: skip
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
    if args.alternate:
        alternate(config, key, queries, args)
        ring.revoke(ring.list()[-1].key_id)
        return
    results: dict[str, Any] = {
        "size": args.size, "store": "postgresql" if args.store else "sqlite", "workers": args.workers,
        "clients": args.clients, "text": "realistic" if args.realistic else "synthetic", "per_client": args.per_client, "machine": f"{platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}",
        "auth_cold_verify_ms": round(cold_ms, 1), "auth_cached_check_us": round(warm_us, 2),
    }  # fmt: skip
    with server(config, "--workers", str(args.workers)) as (url, pid):
        started = time.perf_counter()
        for _ in range(
            args.workers * 2
        ):  # first search per worker loads the model (and on SQLite the HNSW graph)
            httpx.post(f"{url}/api/search", json={"query": "warm up", "limit": 1},
                       headers={"Authorization": f"Bearer {key}"}, timeout=600)  # fmt: skip
        results["warm_up_s"] = round(time.perf_counter() - started, 1)
        results["rest_one_client"] = measured(pid, rest_load(url, key, queries[-50:], 1, 50))
        results["rest"] = measured(pid, rest_load(url, key, queries, args.clients, args.per_client))
        print("REST", results["rest"], file=sys.stderr)
        # Each load its own queries, so that no query vector comes from the server's cache.
        calls = args.clients * args.per_client
        mcp_queries = queries[calls:] + queries[:calls]
        results["mcp"] = measured(pid, mcp_load(url, key, mcp_queries, args.clients, args.per_client))
        print("MCP", results["mcp"], file=sys.stderr)
        results["mcp_lean_same_answer"] = asyncio.run(same_answer_both_ways(url, key, queries[0]))
        keyed = sequential(url, key, document_id, 300)
    with server(config, "--workers", str(args.workers)) as (url, pid):  # a fresh server: nothing cached
        for _ in range(args.workers * 2):
            httpx.post(f"{url}/api/search", json={"query": "warm up", "limit": 1},
                       headers={"Authorization": f"Bearer {key}"}, timeout=600)  # fmt: skip
        # The SDK clients' very queries, now from the lean client.
        results["mcp_lean"] = measured(
            pid, mcp_lean_load(url, key, mcp_queries, args.clients, args.per_client)
        )
        print("MCP, lean client", results["mcp_lean"], file=sys.stderr)
        # The REST queries again, on this fresh server: nothing cached.
        results["rest_httpx"] = measured(
            pid, rest_httpx_load(url, key, queries, args.clients, args.per_client)
        )
        print("REST, httpx client", results["rest_httpx"], file=sys.stderr)
    with server(config, "--workers", str(args.workers), "--no-auth") as (url, _):
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
