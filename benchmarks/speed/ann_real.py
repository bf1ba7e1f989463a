"""HNSW recall@10 on a model's vectors of real text, for each ``expansion_add`` the graph is built with.

The settings retrievo uses (usearch, cosine, float16, 16 links a node), the graph built in this process,
searched at the ef ``store/ann.py`` gives a graph of its size. Two sets of vectors:

- ``--texts`` (default): distinct real texts from ``../shared/data`` — SciFact's sentences (over 40
  characters), the paragraphs of semble's 12 repositories (cut at blank lines, 60 to 2,000 characters) and
  CoSQA dev's code — embedded by the static model (~75,000 texts, a few seconds). Queries: SciFact's first
  150 claims and CoSQA dev's first 150 questions, reported together and each set alone.
- ``--db DB``: every current vector of a SQLite index (``benchmarks.scale.million --embedder static``
  leaves one: each abstract there ~193 times, a near-copy each), queries SciFact's first 100 claims.

    .venv/bin/python -m benchmarks.speed.ann_real --adds 32 64 128
    .venv/bin/python -m benchmarks.speed.ann_real --db /tmp/mil/million-XXXX/million.db --adds 32 64 --efs 373 2000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
SOURCES = {".py", ".go", ".rs", ".ts", ".js", ".rb", ".ex", ".java", ".kt", ".h", ".cc", ".cpp", ".md"}


def real_texts() -> list[str]:
    texts: set[str] = set()
    for line in (DATA / "scifact" / "corpus.jsonl").open(encoding="utf-8"):
        texts.update(s for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]) if len(s) > 40)
    for path in sorted((DATA / "semble" / "repos").rglob("*")):
        if path.is_file() and path.suffix in SOURCES and path.stat().st_size < 400_000:
            text = path.read_text(encoding="utf-8", errors="replace")
            texts.update(p for p in re.split(r"\n\s*\n", text) if 60 < len(p) < 2000)
    for line in (DATA / "cosqa_dev" / "corpus.jsonl").open(encoding="utf-8"):
        text = json.loads(line).get("text", "")
        if len(text) > 40:
            texts.add(text)
    return sorted(texts)


def queries(count_scifact: int, count_cosqa: int) -> list[str]:
    def first(path: Path, count: int) -> list[str]:
        return [json.loads(line)["text"] for line in path.open(encoding="utf-8")][:count]

    return first(DATA / "scifact" / "queries.jsonl", count_scifact) + first(
        DATA / "cosqa_dev" / "queries.jsonl", count_cosqa
    )


def index_vectors(db: Path, model_id: str, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Every current chunk's vector of ``model_id`` (an index may hold other models' too)."""
    from retrievo.store.sqlite.vectors import decode_vectors

    connection = sqlite3.connect(db)
    rows = connection.execute(
        """SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
           WHERE c.superseded_at IS NULL ORDER BY c.id""",
        (model_id,),
    ).fetchall()
    connection.close()
    if not rows:
        raise SystemExit(f"{db} holds no vectors of {model_id} (index it with --embedder static)")
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    return ids, decode_vectors([row[1] for row in rows], dims)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, help="a SQLite index's vectors (the static model's) instead")
    parser.add_argument("--adds", type=int, nargs="+", default=[32, 64, 128])
    parser.add_argument("--efs", type=int, nargs="*", default=[], help="search efs beside the size's own")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import onnxruntime  # noqa: F401  (before usearch, as store/ann.py loads them)
    from usearch.index import Index

    from retrievo.embed.static import StaticEmbedder
    from retrievo.store.ann import expansion_search

    model = StaticEmbedder()
    if args.db:
        ids, vectors = index_vectors(args.db, model.model_id, model.dimensions)
        asked = queries(100, 0)
    else:
        texts = real_texts()
        vectors = model.embed_documents(texts)
        ids = np.arange(len(texts), dtype=np.int64)
        asked = queries(150, 150)
    # each query set on its own too (SciFact's claims, CoSQA's questions): a choice holds on both or on neither
    sets = {"scifact": slice(0, 150), "cosqa": slice(150, len(asked))} if not args.db else {}
    query_vectors = model.embed_queries(asked).astype(np.float32)
    scores = query_vectors @ vectors.T
    exact = [set(ids[row].tolist()) for row in np.argpartition(-scores, 9, axis=1)[:, :10]]
    del scores
    efs = sorted({expansion_search(len(ids)), *args.efs})
    rows: list[dict[str, Any]] = []
    for add in args.adds:
        index = Index(ndim=vectors.shape[1], metric="cos", dtype="f16", connectivity=16, expansion_add=add)
        started = time.perf_counter()
        for begin in range(0, len(ids), 20_000):
            index.add(ids[begin : begin + 20_000], vectors[begin : begin + 20_000])
        build_s = time.perf_counter() - started
        for ef in efs:
            index.expansion_search = ef  # type: ignore[misc]  # a setter its type hints do not show
            started = time.perf_counter()
            found = [set(index.search(vector, 10).keys.tolist()) for vector in query_vectors]
            ms = (time.perf_counter() - started) / len(query_vectors) * 1000
            recall = float(np.mean([len(a & e) / 10 for a, e in zip(found, exact, strict=True)]))
            pairs = list(zip(found, exact, strict=True))
            by_set = {name: round(float(np.mean([len(a & e) / 10 for a, e in pairs[part]])), 3)
                      for name, part in sets.items()}  # fmt: skip
            row = {"vectors": len(ids), "expansion_add": add, "build_s": round(build_s, 1), "ef": ef,
                   "recall_at_10": round(recall, 3), "recall_by_query_set": by_set, "ms_per_query": round(ms, 2)}  # fmt: skip
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json:
        meta = {
            "date": time.strftime("%Y-%m-%d"),
            "command": " ".join(["python -m benchmarks.speed.ann_real", *sys.argv[1:]]),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "source": str(args.db or "real texts"),
            "queries": len(asked),
        }
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
