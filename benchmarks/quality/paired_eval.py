"""Per-query nDCG@10 of this code and a baseline revision on one BEIR set, paired: is a change noise?

For each version (this checkout's ``src/`` and ``--baseline REV`` in a ``git worktree``) a child process
indexes the set as ``retrievo eval`` does (whole documents, titles as context, the bundled model) and
prints every query's nDCG@10 for the default hybrid search. The parent reports both means, the mean
paired difference with a 95 % bootstrap interval (10,000 resamples of queries), and how many queries
went up, down or stayed.

    .venv/bin/python -m benchmarks.quality.paired_eval --baseline e1334e6 --dataset scifact \
        --json benchmarks/results/paired-scifact-DATE.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"


def child(dataset_dir: str, mode: str) -> dict[str, float]:
    from retrievo.config import Config
    from retrievo.engine import Engine
    from retrievo.evaluation.beir import load_beir
    from retrievo.evaluation.metrics import ndcg_at_k
    from retrievo.evaluation.runner import SOURCE_PREFIX, corpus_documents

    dataset = load_beir(Path(dataset_dir), "test")
    prefix = f"{SOURCE_PREFIX}{dataset.name}/"
    scores: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        config = Config.from_env(db=Path(scratch) / "eval.db", collection=f"eval-{dataset.name}")
        with Engine(config) as engine:
            engine.add_documents(corpus_documents(dataset), chunker="whole")
            for query_id, text in dataset.queries.items():
                ranked: list[str] = []
                for hit in engine.search(text, mode=mode, limit=10).hits:
                    doc_id = hit.chunk.path.removeprefix(prefix)
                    if doc_id not in ranked:
                        ranked.append(doc_id)
                scores[query_id] = ndcg_at_k(ranked, dataset.qrels[query_id], 10)
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="git revision to compare with")
    parser.add_argument("--dataset", default="scifact", help="a folder of ../shared/data")
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.mode)))
        return
    work = Path(tempfile.mkdtemp(prefix="paired-eval-"))
    revision = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.baseline],
                              capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(work / "baseline"), revision],
                   capture_output=True, check=True)  # fmt: skip
    per_query: dict[str, dict[str, float]] = {}
    try:
        for label, src in (("this", ROOT / "src"), (f"baseline {revision}", work / "baseline" / "src")):
            command = [sys.executable, __file__, "--child", str(DATA / args.dataset), "--mode", args.mode,
                       "--baseline", revision]  # fmt: skip
            done = subprocess.run(command, env={**os.environ, "PYTHONPATH": str(src)}, capture_output=True,
                                  text=True, check=False)  # fmt: skip
            if done.returncode:
                raise SystemExit(f"{label} failed:\n{done.stderr[-3000:]}")
            per_query[label] = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{label}: nDCG@10 {np.mean(list(per_query[label].values())):.4f}", flush=True)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(work / "baseline")],
                       capture_output=True, check=False)  # fmt: skip
    this, base = per_query["this"], per_query[f"baseline {revision}"]
    ids = sorted(this)
    diff = np.array([this[i] - base[i] for i in ids])
    rng = np.random.default_rng(0)
    means = diff[rng.integers(0, len(diff), size=(10_000, len(diff)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "dataset": args.dataset, "mode": args.mode, "baseline": revision, "queries": len(ids),
        "ndcg_this": round(float(np.mean([this[i] for i in ids])), 4),
        "ndcg_baseline": round(float(np.mean([base[i] for i in ids])), 4),
        "mean_difference": round(float(diff.mean()), 4), "ci95": [round(float(low), 4), round(float(high), 4)],
        "queries_up": int((diff > 1e-9).sum()), "queries_down": int((diff < -1e-9).sum()),
        "queries_same": int((abs(diff) <= 1e-9).sum()),
    }  # fmt: skip
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(
            json.dumps({**result, "per_query": per_query}, indent=1) + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    main()
