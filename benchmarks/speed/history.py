"""Point-in-time reads at scale: as_of / baseline latency vs HEAD, baseline cost, prune time.

A corpus of SIZE current chunks in documents of 100 chunks, each document rewritten four times (five
revisions, 5 × SIZE chunk rows in all, every chunk's text and vector new in each revision). A baseline
is taken after the third revision. Then, with the same queries (synthetic words, precomputed query
vectors: query embedding excluded), p50/p95 per mode at HEAD, at the baseline and at an ``as_of``
time between the first and second revisions; baseline creation time and the index's growth; and
``prune`` up to the last revision (keeping what the baseline holds).

    .venv/bin/python -m benchmarks.speed.history --size 100000 [--store postgresql://…]
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import low_rank, p50_p95, peak_rss_mb, synthetic_texts, timed
from benchmarks.speed.query import DIMS, MODEL_ID, FixedQueryEmbedder, config_for, write_document
from retrievo.engine import Engine
from retrievo.store.base import Store
from retrievo.store.factory import open_store

PER_DOCUMENT = 100
REVISIONS = 5


def write_round(store: Store, size: int, round_number: int) -> None:
    texts = synthetic_texts(size, seed=round_number)
    for first in range(0, size, PER_DOCUMENT):
        batch = [next(texts) for _ in range(min(PER_DOCUMENT, size - first))]
        write_document(
            store, first, batch, low_rank(len(batch), DIMS, seed=round_number * 10_000_000 + first + 1)
        )


def latencies(engine: Engine, words: list[str], **point: str) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(5)
    engine.search("warm up the caches", limit=10, **point)  # type: ignore[arg-type]
    found: dict[str, tuple[float, float]] = {}
    for mode in ("keyword", "semantic", "hybrid"):
        samples = []
        for text in words:
            query = " ".join(text.split()[: int(rng.integers(2, 6))])
            _, ms = timed(lambda q=query, m=mode: engine.search(q, mode=m, limit=10, **point))  # type: ignore[arg-type]
            samples.append(ms)
        found[mode] = p50_p95(samples)
    return found


def size_of(store_url: str | None, db: Path) -> float:
    if store_url:
        return 0.0
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000, help="Current chunks (rows: 5 × this).")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--store", help="postgresql:// URL of an empty database.")
    args = parser.parse_args()
    print(
        f"# {platform.processor() or platform.machine()}, Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}"
    )
    print(
        f"# store: {'PostgreSQL' if args.store else 'SQLite'}; {args.size} current chunks × {REVISIONS} revisions"
    )
    db = Path(tempfile.mkdtemp(prefix="retrievo-history-")) / "history.db"
    config = config_for(db, args.store)
    store = open_store(config, create=True)
    store.ensure_collection("bench")
    store.set_collection_model("bench", MODEL_ID, DIMS)
    stamps: list[str] = []
    baseline = None
    started = time.perf_counter()
    for round_number in range(REVISIONS):
        with store.bulk_load("bench"):
            write_round(store, args.size, round_number)
        stamps.append(store.timeline("bench").last_change_at or "")
        if round_number == 2:
            before_mb = size_of(args.store, db)
            baseline, create_ms = timed(lambda: store.create_baseline("bench", "after-third", "bench"))
            print(f"baseline create: {create_ms:.1f} ms, index growth {size_of(args.store, db) - before_mb:.3f} MB "
                  f"(pins {baseline.revisions} revisions)", flush=True)  # fmt: skip
        print(f"revision {round_number + 1} written ({time.perf_counter() - started:.0f} s)", flush=True)
    store.close()
    assert baseline is not None
    words = list(synthetic_texts(args.queries, seed=3, words=6))
    engine = Engine(config, embedder=FixedQueryEmbedder(low_rank(args.queries, DIMS, seed=9)))
    print("point | keyword p50/p95 ms | semantic p50/p95 ms | hybrid p50/p95 ms")
    rows = {
        "HEAD": latencies(engine, words),
        "baseline (after revision 3)": latencies(engine, words, baseline="after-third"),
        "as_of (after revision 1)": latencies(engine, words, as_of=stamps[0]),
    }
    for name, found in rows.items():
        print(f"{name} | " + " | ".join(f"{p50:.1f} / {p95:.1f}" for p50, p95 in found.values()), flush=True)
    head = rows["HEAD"]["hybrid"][0]
    for name in list(rows)[1:]:
        print(f"{name}: hybrid p50 {rows[name]['hybrid'][0] / head:.2f}× HEAD")
    pruned, prune_ms = timed(lambda: engine.history.prune(stamps[-1], "bench"))
    print(f"prune up to the last revision: {prune_ms / 1000:.1f} s — {pruned.revisions} revisions, {pruned.chunks} chunks, "
          f"{pruned.vectors} vectors freed; {pruned.kept_for_baselines} kept for the baseline")  # fmt: skip
    after = engine.search("alpha beta", mode="hybrid", limit=10, baseline="after-third")
    print(f"baseline still answers after prune: {len(after.hits)} hits; peak RSS {peak_rss_mb():.0f} MB")
    engine.close()


if __name__ == "__main__":
    main()
