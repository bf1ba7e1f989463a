"""Does storing vectors as float16 cost retrieval quality? Dense nDCG@10 with float32 vs float16 vectors.

.venv/bin/python -m benchmarks.quality.float16_check ../shared/data/anthropic_codebase
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from retrievo.embed.local import MiniLMEmbedder
from retrievo.evaluation.beir import load_beir
from retrievo.evaluation.metrics import ndcg_at_k
from retrievo.text.hashing import embedding_input


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path)
    args = parser.parse_args()
    dataset = load_beir(args.dataset)
    embedder = MiniLMEmbedder()
    ids = [doc.doc_id for doc in dataset.corpus]
    documents = embedder.embed_documents([embedding_input(doc.title, doc.text) for doc in dataset.corpus])
    queries = {qid: embedder.embed_query(text) for qid, text in dataset.queries.items()}
    for label, matrix in (
        ("float32", documents),
        ("float16", documents.astype(np.float16).astype(np.float32)),
    ):
        scores = []
        for qid, vector in queries.items():
            ranked = [ids[i] for i in np.argsort(-(matrix @ vector))[:10]]
            scores.append(ndcg_at_k(ranked, dataset.qrels[qid], 10))
        print(f"{dataset.name} dense nDCG@10 with {label} vectors: {np.mean(scores):.4f}")


if __name__ == "__main__":
    main()
