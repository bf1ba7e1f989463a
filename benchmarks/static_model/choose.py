"""Choose among distilled tables: semantic nDCG@10 of each, exact cosine over a BEIR set's whole corpus.

A quick stand-in for ``retrievo eval --modes semantic`` (the same text the engine embeds — the title as
context, then the text — and an exact search, which the engine also runs below 30,000 vectors), so a
variant costs seconds, not an index build. Each ``--tables`` folder is one ``distill.py --out``.

    .venv/bin/python -m benchmarks.static_model.choose /work/shared/data/scifact \\
        --tables /tmp/static-eval/t-128-words-1e-3 /tmp/static-eval/t-256-words-1e-3
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from retrievo.embed.base import Embedder
from retrievo.embed.static import MODEL_ID, StaticEmbedder
from retrievo.evaluation.beir import load_beir
from retrievo.evaluation.metrics import ndcg_at_k
from retrievo.text.hashing import embedding_input


def semantic_ndcg(embedder: Embedder, dataset_dir: Path, split: str) -> float:
    dataset = load_beir(dataset_dir, split)
    ids = [doc.doc_id for doc in dataset.corpus]
    texts = [embedding_input(doc.title, doc.text or doc.title) for doc in dataset.corpus]
    documents = embedder.embed_documents(texts)
    queries = embedder.embed_queries(list(dataset.queries.values()))
    scores = queries @ documents.T
    total = 0.0
    for row, query_id in enumerate(dataset.queries):
        top = np.argsort(-scores[row], kind="stable")[:10]
        total += ndcg_at_k([ids[i] for i in top], dataset.qrels[query_id], 10)
    return total / len(dataset.queries)


def served(folder: Path) -> Path:
    """``folder`` as the engine reads a table: a start ``distill.py`` wrote (its own model id) is copied
    under the served id into a temporary folder; the shipped table is read where it is."""
    manifest = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    if manifest["model_id"] == MODEL_ID:
        return folder
    copy = Path(tempfile.mkdtemp(prefix="static-table-"))
    for name in ("vectors.npy", "scales.npy"):
        shutil.copyfile(folder / name, copy / name)
    (copy / "model.json").write_text(json.dumps(manifest | {"model_id": MODEL_ID}), encoding="utf-8")
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--tables", type=Path, nargs="+", required=True)
    args = parser.parse_args()
    for folder in args.tables:
        recipe = json.loads((folder / "model.json").read_text(encoding="utf-8"))["recipe"]
        score = semantic_ndcg(StaticEmbedder(served(folder)), args.dataset, args.split)
        print(json.dumps({"table": str(folder), "dataset": args.dataset.name, "split": args.split,
                          "semantic_ndcg_10": round(score, 4), "recipe": recipe}))  # fmt: skip


if __name__ == "__main__":
    main()
