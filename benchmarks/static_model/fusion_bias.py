"""The static model's adaptive-fusion bias, chosen leaving one data set out (``fusion.MODEL_BIAS``).

Adaptive fusion's constants (``search/fusion.py``: the dense arm's weight grows with its best cosine
around 0.6, plus a bias) were fitted on MiniLM's cosines. The static model's cosines sit on a similar
scale but say less (at MiniLM's bias, ``fusion.BIAS``, the first, untrained table's arm pulled hybrid below
keyword search alone on two judged sets of three). This measures hybrid nDCG@10 with ``RETRIEVO_EMBEDDER=static`` for each bias
(``fusion.MODEL_BIAS`` set in this process only) on SciFact, the Anthropic set, CoSQA dev and semble's 12
repositories (mean NDCG@10, its protocol: ``benchmarks/code_search/semble.py``), then, for each set left
out, chooses the bias with the best mean over the other three and reports the set left out at that bias.

    .venv/bin/python -m benchmarks.static_model.fusion_bias --work /tmp/static-bias \\
        [--biases 0.25 0 -1 -2 -3] [--json benchmarks/results/static-v2-fusion-bias-DATE.json]

Indexes are kept under ``--work`` (a second run reuses them: the static model embeds in seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from benchmarks.code_search import semble
from retrievo import Engine
from retrievo.embed.static import MODEL_ID
from retrievo.evaluation.runner import evaluate
from retrievo.search import fusion

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SETS = (("scifact", "test"), ("anthropic_codebase", "test"), ("cosqa_dev", "dev"))


def semble_mean(work: Path) -> float:
    """semble's 12 repositories, mean NDCG@10 of ``search`` at its defaults."""
    manifest = json.loads((semble.DATA / "manifest.json").read_text())["repositories"]
    means = []
    for repo, spec in manifest.items():
        repo_root = semble.DATA / "repos" / repo
        config, _ = semble.open_index(repo, (repo_root / spec["benchmark_root"]).resolve(), work, False)
        with Engine(config) as engine:
            means.append(statistics.mean(semble.search_once(engine, repo, repo_root, t)[0]
                                         for t in semble.load_tasks(repo)))  # fmt: skip
    return statistics.mean(means)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--biases", type=float, nargs="+", default=[fusion.BIAS, 0.0, -1.0, -2.0, -3.0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ["RETRIEVO_EMBEDDER"] = "static"
    args.work.mkdir(parents=True, exist_ok=True)
    shipped = fusion.MODEL_BIAS[MODEL_ID]
    table: dict[str, dict[float, float]] = {}
    for bias in args.biases:
        fusion.MODEL_BIAS[MODEL_ID] = bias
        for name, split in SETS:
            report = evaluate(DATA / name, db=args.work / f"{name}.db", modes=["hybrid"], split=split)
            table.setdefault(name, {})[bias] = round(report.modes[0].ndcg_10, 4)
        table.setdefault("semble", {})[bias] = round(semble_mean(args.work / "semble"), 4)
        print(json.dumps({"bias": bias} | {name: row[bias] for name, row in table.items()}), flush=True)
    fusion.MODEL_BIAS[MODEL_ID] = shipped
    folds = {}
    for left_out, row in table.items():
        others = [name for name in table if name != left_out]
        chosen = max(args.biases, key=lambda b: (statistics.mean(table[n][b] for n in others), -abs(b)))
        folds[left_out] = {
            "chosen": chosen,
            "held_out_ndcg_10": row[chosen],
            "at_minilm_bias": row.get(fusion.BIAS),
        }
        print(f"left out {left_out:20} chose {chosen:+.2f}: {row[chosen]:.4f}", flush=True)
    if args.json:
        result = {"date": time.strftime("%Y-%m-%d"), "model": MODEL_ID, "shipped": shipped, "ndcg_10": table,
                  "folds": folds, "command": "python -m benchmarks.static_model.fusion_bias --work DIR --biases "
                  + " ".join(f"{b:g}" for b in args.biases)}  # fmt: skip
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
