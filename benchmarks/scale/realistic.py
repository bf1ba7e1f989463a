"""Realistic text at any size: real sentences (SciFact's abstracts, ../shared/data) recombined.

A 5,000-word Zipf list makes every query term common and every posting list the same shape; real
sentences keep a natural vocabulary (tens of thousands of words, a long tail of rare ones, many
words per chunk), which is what decides keyword latency. Each chunk is 3–7 sentences drawn at random,
plus one unique token so that every chunk is distinct. Queries are SciFact's real claims.
Nothing here is copied into the package: the data is read from ../shared/data at run time.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "scifact"
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


@cache
def sentences(data: Path = DATA) -> tuple[str, ...]:
    found: list[str] = []
    with (data / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            found.append(record["title"])
            found += [s.strip() for s in _SENTENCE.split(record["text"]) if len(s.split()) >= 4]
    return tuple(found)


def realistic_texts(count: int, seed: int = 0) -> Iterator[str]:
    pool = sentences()
    rng = random.Random(seed)
    for i in range(count):
        yield " ".join(rng.choices(pool, k=rng.randint(3, 7))) + f" ref{i}"


def realistic_queries(count: int, data: Path = DATA) -> list[str]:
    with (data / "queries.jsonl").open(encoding="utf-8") as handle:
        queries = [json.loads(line)["text"] for line in handle]
    return (queries * (count // len(queries) + 1))[:count]
