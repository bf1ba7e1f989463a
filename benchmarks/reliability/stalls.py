"""The inputs that stalled a server (issue 66), timed on this machine: each beside what it should cost.

- a 10,000-letter word searched in hybrid mode, against the median of five ordinary questions (goal: no
  more than the five together);
- an Archi model nested 10,000 and 80,000 folders deep, read (was 1.9 s and 14.5 s of CPU);
- ``retrievo mcp`` over stdio: time to the ``initialize`` answer and to the first search (the model was
  loaded before ``initialize`` was answered: 11.9–12.4 s on a loaded machine);
- ``POST /api/search`` with ``filters`` 3,000 brackets deep and a 60 MB body (were 500 and a whole read).

    .venv/bin/python -m benchmarks.reliability.stalls --db INDEX [--json F]

``INDEX``: any index holding documents (e.g. ``retrievo index examples/handbook --db /tmp/h.db``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client, StdioServerParameters

from retrievo import Config, Engine
from retrievo.ingest.records.readers import read_model

QUESTIONS = ["How do I request parental leave?", "who approves expenses", "home office equipment allowance",
             "lost laptop what to do", "how many days of annual leave"]  # fmt: skip


def long_word(db: Path) -> dict[str, float]:
    with Engine(Config(db=db)) as engine:
        engine.search("warm up")
        ordinary = []
        for question in QUESTIONS:
            started = time.perf_counter()
            engine.search(question)
            ordinary.append(time.perf_counter() - started)
        started = time.perf_counter()
        engine.search("a" * 4_000 + "B" * 3_000 + "c" * 3_000)  # one 10,000-letter "word", camel case too
        word = time.perf_counter() - started
    return {"ordinary_median_ms": round(statistics.median(ordinary) * 1000, 1),
            "five_ordinary_ms": round(sum(ordinary) * 1000, 1), "long_word_ms": round(word * 1000, 1)}  # fmt: skip


def deep_archi(depth: int) -> float:
    head = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<archimate:model xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
        b' xmlns:archimate="http://www.archimatetool.com/archimate" name="Deep" id="m">'
    )
    folders = b"".join(b'<folder name="f%d" id="d%d">' % (i, i) for i in range(depth))
    element = b'<element xsi:type="archimate:BusinessActor" name="Clerk" id="e1"/>'
    data = head + folders + element + b"</folder>" * depth + b"</archimate:model>"
    started = time.process_time()
    read_model(data, "deep.archimate")
    return round(time.process_time() - started, 3)


async def mcp_start(db: Path) -> dict[str, float]:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db)]
    )
    started = time.perf_counter()
    async with Client(server) as client:
        initialized = time.perf_counter() - started
        await client.call_tool("search", {"query": QUESTIONS[0]})
        first = time.perf_counter() - started
    return {"initialize_s": round(initialized, 2), "first_search_s": round(first, 2)}


def rest_limits(db: Path) -> dict[str, Any]:
    # the test suite's real `retrievo serve`: a free port, a clean stop
    from tests.serving import create_key, serving

    where = ["--db", str(db)]
    key = {"Authorization": f"Bearer {create_key(where, f'stalls-{time.time_ns()}')}"}
    with serving(where) as server:
        deep = b'{"query": "leave", "filters": ' + b"[" * 3_000 + b"]" * 3_000 + b"}"  # 6 KB, as sent raw
        nested = httpx.post(f"{server.url}/api/search", content=deep, headers={"Content-Type": "application/json", **key},
                            timeout=60)  # fmt: skip
        started = time.perf_counter()
        huge = httpx.post(f"{server.url}/api/search", content=b'{"query": "' + b"x" * 60_000_000 + b'"}',
                          headers={"Content-Type": "application/json", **key}, timeout=120)  # fmt: skip
        huge_s = time.perf_counter() - started
        after = httpx.post(f"{server.url}/api/search", json={"query": "leave"}, headers=key, timeout=60)
    return {"deep_filters_status": nested.status_code, "body_60mb_status": huge.status_code,
            "body_60mb_s": round(huge_s, 2), "next_request_status": after.status_code}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "long_word": long_word(args.db),
        "archi_cpu_s": {"10000": deep_archi(10_000), "80000": deep_archi(80_000)},
        "mcp": anyio.run(mcp_start, args.db),
        "rest": rest_limits(args.db),
    }
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
