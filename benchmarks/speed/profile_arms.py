"""Where a search's milliseconds go, arm by arm, on a real corpus or on realistic text at scale.

Per query: the query embedding (the bundled model, alone), the keyword arm and the dense arm as the
store runs them (depth 100, what a default search asks each arm for), and the whole default search
(`engine.search(query)`, 10 results) with its query embedding already cached — so "hybrid" is
everything but the model, and "rest" = hybrid − keyword − semantic (fusion, calibration, chunk reads;
below zero when the keyword arm's thread overlaps the dense arm's). On a BEIR corpus, "hybrid with
embedding" is the same search asked first, its query embedded by the bundled model within it (the
keyword arm runs meanwhile).

    # a BEIR corpus, real MiniLM vectors (index built on first use, kept in --db)
    .venv/bin/python -m benchmarks.speed.profile_arms --dataset ../shared/data/scifact --db /tmp/ev/scifact.db
    # realistic text (benchmarks/scale/realistic.py) with low-rank vectors, built in --keep
    .venv/bin/python -m benchmarks.speed.profile_arms --sizes 100000 1000000 --keep /tmp/scale
    # the same on PostgreSQL: one size per (empty) database; its keyword side index under --keep
    .venv/bin/python -m benchmarks.speed.profile_arms --sizes 100000 --keep /tmp/scale --store postgresql://…/r100k

Side indexes are synced at the end of the build, inside its bulk load (as `retrievo index` does);
"build s" includes it, "sync s" is that sync alone.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import low_rank, p50_p95, peak_rss_mb, timed
from benchmarks.scale.realistic import realistic_queries, realistic_texts
from benchmarks.speed.query import DIMS, MODEL_ID, FixedQueryEmbedder, _write, config_for
from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.evaluation.beir import load_beir
from retrievo.evaluation.runner import evaluate
from retrievo.models import Filters
from retrievo.store.factory import open_store

DEPTH = 100


def profile(engine: Engine, collection: str, queries: list[str], model_ms: list[float]) -> dict[str, Any]:
    store = engine._open_store(create=False)
    info = store.get_collection(collection)
    assert info is not None and info.model_id is not None
    embed = engine._query_fn(store, collection)[0]
    assert embed is not None
    vectors = [embed(query)[1] for query in queries]  # fills the engine's query cache as well
    engine.search(queries[0], collection)  # first search: opens caches
    arms: dict[str, list[float]] = {"keyword": [], "semantic": [], "hybrid": []}
    for query, vector in zip(queries, vectors, strict=True):
        arms["keyword"].append(
            timed(lambda q=query: store.keyword_search(collection, q, Filters(), DEPTH))[1]
        )
        arms["semantic"].append(
            timed(lambda v=vector: store.vector_search(collection, info.model_id or "", v, Filters(), DEPTH))[
                1
            ]
        )
        arms["hybrid"].append(timed(lambda q=query: engine.search(q, collection))[1])
    rest = [h - k - s for k, s, h in zip(arms["keyword"], arms["semantic"], arms["hybrid"], strict=True)]
    figures = {name: p50_p95(values) for name, values in arms.items()}
    figures["rest"] = p50_p95(rest)
    if model_ms:
        figures["query embedding"] = p50_p95(model_ms)
    return {name: {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2)} for name, (p50, p95) in figures.items()}


def dataset_run(folder: Path, db: Path, limit: int) -> dict[str, Any]:
    if not db.exists():
        evaluate(folder, db=db, modes=("hybrid",), limit_queries=1)  # embeds the corpus
    data = load_beir(folder, "test")
    queries = [text for _, text in list(data.queries.items())[:limit]]
    engine = Engine(Config.from_env(db=db, collection=f"eval-{data.name}"))
    model = engine._pool.default_queries.embedder
    assert model is not None
    model.embed_query("warm up")
    model_ms = [timed(lambda q=query: model.embed_query(q))[1] for query in queries]
    collection = f"eval-{data.name}"
    engine.search("a first search opens the caches", collection)
    # Each query once, through a fresh engine (nothing in its query cache): the model within the search.
    fresh = Engine(Config.from_env(db=db, collection=collection))
    fresh.search("warm up the model", collection)
    with_model = [timed(lambda q=query: fresh.search(q, collection))[1] for query in queries]
    fresh.close()
    p50, p95 = p50_p95(with_model)
    return {
        "corpus": data.name,
        "queries": len(queries),
        **profile(engine, collection, queries, model_ms),
        "hybrid with embedding": {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2)},
    }


def scale_run(size: int, folder: Path, limit: int, store_url: str | None = None) -> dict[str, Any]:
    db = folder / f"realistic-{size}.db"
    config = replace(config_for(db, store_url), cache_dir=folder / "pg-cache")
    build_s = sync_s = 0.0
    if not _built(config):
        # As `retrievo index` does it: the side indexes synced at the end of the bulk load, inside it
        # (the keyword index has followed the load and tokenized most rows already).
        store = open_store(config, create=True)
        store.ensure_collection("bench")
        store.set_collection_model("bench", MODEL_ID, DIMS)
        started = time.perf_counter()
        with store.bulk_load("bench"):
            _write(store, realistic_texts(size), size)
            _, sync_ms = timed(lambda: store.sync_search_indexes("bench"))
        build_s, sync_s = time.perf_counter() - started, sync_ms / 1000
        store.close()
    queries = realistic_queries(limit)
    engine = Engine(config, embedder=FixedQueryEmbedder(low_rank(limit, DIMS, seed=9)))
    store = open_store(config, create=False)
    store.sync_search_indexes("bench")  # nothing to do unless the index was built elsewhere
    store.close()
    figures = profile(engine, "bench", queries, [])
    return {
        "size": size,
        "store": "postgresql" if store_url else "sqlite",
        "build_s": round(build_s, 1),
        "sync_s": round(sync_s, 1),
        **figures,
    }


def _built(config: Config) -> bool:
    if not config.store:
        return config.db.exists()
    try:
        store = open_store(config, create=False)
    except Exception:  # no retrievo tables yet
        return False
    try:
        return store.get_collection("bench") is not None
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, help="A BEIR folder (real queries, the bundled model).")
    parser.add_argument("--db", type=Path, help="Index of --dataset (built here when missing).")
    parser.add_argument("--sizes", type=int, nargs="*", default=[])
    parser.add_argument("--keep", type=Path, default=Path("/tmp/retrievo-scale"))
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--json", type=Path, help="Write the figures here too.")
    parser.add_argument("--store", help="postgresql:// URL of a database for --sizes (one size each).")
    args = parser.parse_args()
    runs: list[dict[str, Any]] = []
    if args.dataset:
        runs.append(
            dataset_run(args.dataset, args.db or Path(f"/tmp/profile-{args.dataset.name}.db"), args.queries)
        )
    args.keep.mkdir(parents=True, exist_ok=True)
    for size in args.sizes:
        runs.append(scale_run(size, args.keep, args.queries, args.store))
    for run in runs:
        run["peak_rss_mb"] = round(peak_rss_mb())
        print(json.dumps(run))
    if args.json:
        machine = f"{platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cores, Python {sys.version.split()[0]}"
        args.json.write_text(
            json.dumps({"date": time.strftime("%Y-%m-%d"), "machine": machine, "runs": runs}, indent=1) + "\n"
        )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
