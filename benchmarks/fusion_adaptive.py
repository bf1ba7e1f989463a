"""Query-adaptive fusion and calibrated relevance, chosen on tune halves, checked on held-out halves.

Each arm's top-``depth`` is fetched once per judged query from an index built by `retrievo eval`, cached
as JSON, and every fusion is then scored with retrievo's own fusion functions (``retrievo.search``),
so a row here is what the engine returns. Tune = even query positions, held-out = odd positions.

    .venv/bin/retrievo eval ../shared/data/scifact --db /tmp/ev/scifact.db
    .venv/bin/retrievo eval ../shared/data/anthropic_codebase --db /tmp/ev/anthropic.db
    .venv/bin/retrievo eval ../shared/data/cosqa_dev --split dev --db /tmp/ev/cosqa.db
    .venv/bin/python benchmarks/fusion_adaptive.py --cache /tmp/ev \
        scifact=../shared/data/scifact:/tmp/ev/scifact.db anthropic_codebase=…:… cosqa_dev=…:…[:dev]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.evaluation.beir import load_beir
from retrievo.evaluation.metrics import ndcg_at_k
from retrievo.evaluation.runner import SOURCE_PREFIX
from retrievo.models import ArmHit, Filters

Run = dict[str, Any]


def fetch(dataset_dir: Path, db: Path, split: str, depth: int) -> list[Run]:
    dataset = load_beir(dataset_dir, split)
    collection = f"eval-{dataset.name}"
    engine = Engine(Config(db=db, collection=collection))
    store = engine._open_store(create=False)
    embedder = engine.embedder
    assert embedder is not None
    prefix = f"{SOURCE_PREFIX}{dataset.name}/"
    runs = []
    for query_id, text in dataset.queries.items():
        if query_id not in dataset.qrels:
            continue
        vector = embedder.embed_query(text)
        keyword = store.keyword_search(collection, text, Filters(), depth)
        semantic = store.vector_search(collection, embedder.model_id, vector, Filters(), depth)
        chunks = store.get_chunks(sorted({h.chunk_id for h in [*keyword, *semantic]}))
        runs.append({
            "qid": query_id, "text": text, "judged": dataset.qrels[query_id],
            "keyword": [[h.chunk_id, h.score] for h in keyword],
            "semantic": [[h.chunk_id, h.score] for h in semantic],
            "doc": {str(i): c.path.removeprefix(prefix) for i, c in chunks.items()},
        })  # fmt: skip
    engine.close()
    return runs


def arms_of(run: Run, depth: int) -> dict[str, list[ArmHit]]:
    return {
        arm: [ArmHit(int(c), rank, float(s)) for rank, (c, s) in enumerate(run[arm][:depth], start=1)]
        for arm in ("keyword", "semantic")
    }


def ranked_docs(run: Run, fused: list[tuple[int, float]]) -> list[str]:
    seen: list[str] = []
    for chunk_id, _ in fused:
        doc = run["doc"][str(chunk_id)]
        if doc not in seen:
            seen.append(doc)
    return seen


Fusion = Callable[[dict[str, list[ArmHit]], str], list[tuple[int, float]]]


def ndcg(runs: list[Run], fusion: Fusion, part: str, depth: int) -> float:
    picked = [r for i, r in enumerate(runs) if part == "all" or (i % 2 == 0) == (part == "tune")]
    return float(np.mean([ndcg_at_k(ranked_docs(r, fusion(arms_of(r, depth), r["text"])), r["judged"], 10)
                          for r in picked]))  # fmt: skip


def load(specs: list[str], cache: Path, depth: int) -> dict[str, list[Run]]:
    data = {}
    for spec in specs:
        name, rest = spec.split("=", 1)
        parts = rest.split(":")
        directory, db, split = Path(parts[0]), Path(parts[1]), parts[2] if len(parts) > 2 else "test"
        path = cache / f"arms-{name}-{depth}.json"
        if not path.exists():
            path.write_text(json.dumps(fetch(directory, db, split, depth)), encoding="utf-8")
        data[name] = json.loads(path.read_text(encoding="utf-8"))
    return data


def main() -> None:
    from retrievo.search import fusion as fuse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sets", nargs="+", help="name=DATASET_DIR:DB[:split]")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ev"))
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()
    data = load(args.sets, args.cache, 300)
    variants: dict[str, Fusion] = {
        "keyword": lambda arms, q: [(h.chunk_id, h.score) for h in arms["keyword"]],
        "semantic": lambda arms, q: [(h.chunk_id, h.score) for h in arms["semantic"]],
        "zscore": lambda arms, q: fuse.zscore_fusion(arms),
        "rrf k=60": lambda arms, q: fuse.rrf(arms),
    }
    if hasattr(fuse, "adaptive_fusion"):
        variants["adaptive"] = lambda arms, q: fuse.adaptive_fusion(arms, q)[0]
    print(f"nDCG@10 at depth {args.depth}: tune | held-out | all")
    for name, fusion in variants.items():
        cells = [
            f"{ndcg(runs, fusion, part, args.depth):.4f}"
            for runs in data.values()
            for part in ("tune", "held", "all")
        ]
        print(f"{name:12s} " + "  ".join(" | ".join(cells[i : i + 3]) for i in range(0, len(cells), 3)))


if __name__ == "__main__":
    main()
