"""≥ 10,000 generated hostile queries through the Python API in every mode: no unexpected exception, none slow.

Expected errors (our own ``RetrievoError``) are counted apart; anything else is a defect.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.reliability.hostile.corpus import write_corpus
from retrievo import Config, Engine
from retrievo.errors import RetrievoError

SLOW_MS = 2000.0
MODES = ("keyword", "semantic", "hybrid")
FTS_SYNTAX = [
    '"',
    '""',
    "*",
    "NEAR(a b)",
    "a NOT b",
    "AND",
    "OR",
    "NOT",
    "(",
    ")",
    "^",
    ":",
    "col:x",
    "-x",
    "+x",
    "{a b}",
]
SQL = ["'; DROP TABLE chunks; --", "1 OR 1=1", "%", "_", "\\", "/* */", "?", "$1", "%s", "'", "`"]
ALPHABETS = [
    (0x20, 0x7E), (0xA0, 0x2FF), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF), (0x900, 0x97F),
    (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0x1F300, 0x1FAFF), (0x300, 0x36F),
    (0xD800, 0xDFFF), (0x0, 0x1F), (0xFFF0, 0xFFFF), (0xE000, 0xF8FF), (0x10000, 0x10FFFF),
]  # fmt: skip


def _random_text(rng: random.Random, length: int) -> str:
    low, high = rng.choice(ALPHABETS)
    return "".join(chr(rng.randint(low, high)) for _ in range(length))


def hostile_queries(count: int, seed: int = 7) -> Iterator[str]:
    rng = random.Random(seed)
    words = "leave policy protein cell gene vector laptop the of and".split()
    kinds = [
        lambda: _random_text(rng, rng.randint(1, 40)),
        lambda: _random_text(rng, rng.randint(1000, 10_000)),
        lambda: rng.choice("中あ한𝒜ﬁ") * rng.randint(1000, 20_000),
        lambda: " ".join(rng.choice(FTS_SYNTAX + words) for _ in range(rng.randint(1, 30))),
        lambda: " ".join(rng.choice(SQL + words) for _ in range(rng.randint(1, 10))),
        lambda: " ".join(f"term{rng.randint(0, 10**6)}" for _ in range(rng.randint(50, 500))),
        lambda: "leave " + "\ud800" * rng.randint(1, 5) + " policy",
        lambda: "\x00".join(rng.choices(words, k=5)),
        lambda: " ".join(["the", "of", "and", "a"] * rng.randint(1, 200)),
        lambda: rng.choice(["", " ", "\n\t", "\u200b", "\ufeff", "\u202e", "." * 100, "-" * 5000]),
        lambda: "x" * rng.randint(1, 30_000),
        lambda: str(rng.randint(-(2**70), 2**70)),
        lambda: "CamelCaseIdentifier_snake.dotted::path`tick` " * rng.randint(1, 300),
        lambda: "../../etc/passwd " + "%00" * 10 + " ${jndi:ldap://x} {{7*7}} <script>",
    ]
    for _ in range(count):
        yield rng.choice(kinds)()


def run(queries: int = 10_000, documents: int = 300, seed: int = 7) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        corpus = write_corpus(Path(scratch) / "corpus", documents)
        engine = Engine(Config(db=Path(scratch) / "q.db"))
        engine.index([corpus])
        latencies: list[float] = []
        expected: Counter[str] = Counter()
        unexpected: list[str] = []
        modes: Counter[str] = Counter()
        slow: list[tuple[float, str, int]] = []
        for number, query in enumerate(hostile_queries(queries, seed)):
            mode = MODES[number % len(MODES)]
            started = time.perf_counter()
            try:
                result = engine.search(query, mode=mode, limit=10)
                result.query.encode("utf-8")
                modes[result.search_mode] += 1
            except RetrievoError as exc:
                expected[type(exc).__name__] += 1
            except Exception:
                unexpected.append(f"{mode} {query[:60]!r}: {traceback.format_exc(limit=3)}")
            elapsed = (time.perf_counter() - started) * 1000
            latencies.append(elapsed)
            if elapsed > SLOW_MS:
                slow.append((round(elapsed), mode, len(query)))
        engine.close()
    ordered = sorted(latencies)
    return {
        "queries": queries,
        "documents_indexed": documents,
        "unexpected_exceptions": len(unexpected),
        "unexpected_examples": unexpected[:5],
        "expected_errors": dict(expected),
        "answered_as": dict(modes),
        "over_2s": len(slow),
        "slow_examples": slow[:5],
        "p50_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 2),
        "max_ms": round(ordered[-1], 2),
    }
