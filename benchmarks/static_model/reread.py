"""The static-only hybrid answer's first N chunks re-ranked by the bundled model: how near its own hybrid.

While a collection has only the static model's vectors, its hybrid search is 0.04 (SciFact) to 0.14 (CoSQA
dev) below the bundled model's. This measures one way to close that gap without the stored vectors: take the
static hybrid answer's first N chunks, make the bundled model's vectors for them (and for the query), and
re-rank them by

- ``cosine``: the bundled model's cosine alone;
- ``mix``: 0.3 × the static hybrid score + 0.7 × the cosine, each min-max scaled over the N;
- ``rrf``: the reciprocal ranks of the two orders (k = 60);
- ``engine``: the engine's adaptive fusion (``search/fusion.py``, the bundled model's bias) of the keyword
  arm's first N and the N by the bundled model's cosine: its own hybrid, its dense arm read over the N
  (without the exact-match evidence and the short-query weight);

scored as ``retrievo eval`` scores (a document where its best chunk stands, nDCG@10). The indexes are
``fusion_bias.py``'s (``--work``: built with ``RETRIEVO_EMBEDDER=static`` when missing); nothing is
written to them. The bundled model's own hybrid nDCG@10 is docs/benchmarks.md's reference run.

    .venv/bin/python -m benchmarks.static_model.reread --work /tmp/static-bias [--depths 20 30 50] \\
        [--json benchmarks/results/static-reread-DATE.json]

The bundled model embeds every distinct candidate once (~1 min for CoSQA dev's, ~2 min for SciFact's on
2 cores); the timing per chunk is reported, as the cost a query would pay.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from retrievo import Config, Engine
from retrievo.embed.local import MiniLMEmbedder
from retrievo.evaluation.beir import load_beir
from retrievo.evaluation.metrics import ndcg_at_k
from retrievo.evaluation.runner import SOURCE_PREFIX, evaluate
from retrievo.models import ArmHit, Filters
from retrievo.search import fusion
from retrievo.text.hashing import embedding_input

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SETS = (("scifact", "test"), ("cosqa_dev", "dev"))
MIX = 0.3  # the static hybrid score's share in ``mix``
RRF_K = 60


def _scaled(values: np.ndarray) -> np.ndarray:
    span = float(values.max() - values.min()) or 1.0
    return (values - values.min()) / span


def reranked(rule: str, static: np.ndarray, cosine: np.ndarray) -> np.ndarray:
    """The candidates' order (indexes) under ``rule``; ties keep the static order."""
    if rule == "cosine":
        return np.argsort(-cosine, kind="stable")
    if rule == "mix":
        return np.argsort(-(MIX * _scaled(static) + (1 - MIX) * _scaled(cosine)), kind="stable")
    if rule == "rrf":
        place = np.empty(len(cosine))
        place[np.argsort(-cosine, kind="stable")] = np.arange(len(cosine))
        fused = 1 / (RRF_K + np.arange(len(cosine)) + 1) + 1 / (RRF_K + place + 1)
        return np.argsort(-fused, kind="stable")
    return np.arange(len(cosine))  # "static": as the static hybrid answer stands


def measure(work: Path, name: str, split: str, depths: list[int], model: MiniLMEmbedder) -> dict[str, Any]:
    dataset = load_beir(DATA / name, split)
    db = work / f"{name}.db"
    if not db.exists():
        evaluate(DATA / name, db=db, modes=["hybrid"], split=split)  # the static model's index, built once
    collection, prefix = f"eval-{name}", f"{SOURCE_PREFIX}{dataset.name}/"
    runs: dict[str, list[tuple[int, str, float]]] = {}
    keyword: dict[str, list[ArmHit]] = {}
    texts: dict[int, str] = {}
    documents: dict[int, str] = {}
    with Engine(Config.from_env(db=db, collection=collection)) as engine:
        store = engine._open_store(create=False)
        for query_id, query in dataset.queries.items():
            hits = engine.search(query, collection=collection, limit=max(depths)).hits
            runs[query_id] = [(h.chunk.chunk_id, h.chunk.path.removeprefix(prefix), h.score) for h in hits]
            for h in hits:
                texts.setdefault(h.chunk.chunk_id, embedding_input(h.chunk.context or "", h.chunk.text))
            keyword[query_id] = store.keyword_search(collection, query, Filters(), max(depths))
        read = {h.chunk_id for hits in keyword.values() for h in hits}
        documents = {
            c: chunk.path.removeprefix(prefix) for c, chunk in store.get_chunks(sorted(read)).items()
        }
    ids = list(texts)
    started = time.perf_counter()
    vectors = model.embed_documents([texts[i] for i in ids])
    per_chunk_ms = (time.perf_counter() - started) * 1000 / max(len(ids), 1)
    row = {chunk_id: i for i, chunk_id in enumerate(ids)}
    queries = model.embed_queries(list(dataset.queries.values()))
    table: dict[str, dict[int, float]] = {}
    for rule in ("static", "cosine", "mix", "rrf", "engine"):
        for depth in depths:
            total = 0.0
            for q, query_id in enumerate(dataset.queries):
                found = runs[query_id][:depth]
                if not found:
                    continue
                static = np.array([score for _, _, score in found])
                cosine = vectors[[row[c] for c, _, _ in found]] @ queries[q]
                ranked: list[str] = []
                if rule == "engine":
                    where = {c: d for c, d, _ in found} | documents
                    order = np.argsort(-cosine, kind="stable")
                    dense = [ArmHit(found[i][0], r, float(cosine[i])) for r, i in enumerate(order, start=1)]
                    arms = {"keyword": keyword[query_id][:depth], "semantic": dense}
                    fused, _ = fusion.adaptive_fusion(arms, bias=fusion.BIAS)
                    order_ids = [chunk_id for chunk_id, _ in fused]
                else:
                    order_ids = [found[i][0] for i in reranked(rule, static, cosine)]
                    where = {c: d for c, d, _ in found}
                for chunk_id in order_ids:
                    if where[chunk_id] not in ranked:
                        ranked.append(where[chunk_id])
                total += ndcg_at_k(ranked[:10], dataset.qrels[query_id], 10)
            table.setdefault(rule, {})[depth] = round(total / len(dataset.queries), 4)
        print(json.dumps({"set": name, "rule": rule, "ndcg_10": table[rule]}), flush=True)
    return {"ndcg_10": table, "candidates": len(ids), "bundled_ms_per_chunk": round(per_chunk_ms, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--work", type=Path, required=True, help="fusion_bias.py's indexes (built if missing)"
    )
    parser.add_argument("--depths", type=int, nargs="+", default=[20, 30, 50])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ["RETRIEVO_EMBEDDER"] = "static"
    args.work.mkdir(parents=True, exist_ok=True)
    model = MiniLMEmbedder()
    results = {name: measure(args.work, name, split, args.depths, model) for name, split in SETS}
    if args.json:
        report = {"date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()} cores", "mix": MIX,
                  "rrf_k": RRF_K, "sets": results,
                  "command": "python -m benchmarks.static_model.reread --work DIR --depths "
                  + " ".join(map(str, args.depths))}  # fmt: skip
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
