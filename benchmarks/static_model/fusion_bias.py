"""Hybrid nDCG@10 with the static model as adaptive fusion's bias moves: how much weight its arm should get.

Adaptive fusion's constants (``search/fusion.py``: the dense arm's weight grows with its best cosine
around 0.6, plus ``BIAS``) were fitted on MiniLM's cosines. The static model's cosines sit on a similar
scale but say less, so at the same weight its arm pulls hybrid below keyword alone on two sets of three.
This runs ``retrievo eval --modes hybrid`` with ``RETRIEVO_EMBEDDER=static`` for several values of
``BIAS`` (set in this process only; nothing in the package changes), one index per set.

    .venv/bin/python -m benchmarks.static_model.fusion_bias --biases 0.25 -1 -2 -3
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from retrievo.evaluation.runner import evaluate
from retrievo.search import fusion

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SETS = (("scifact", "test"), ("anthropic_codebase", "test"), ("cosqa_dev", "dev"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--biases", type=float, nargs="+", default=[fusion.BIAS, -1.0, -2.0, -3.0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    os.environ["RETRIEVO_EMBEDDER"] = "static"
    with tempfile.TemporaryDirectory(prefix="static-bias-") as scratch:
        for name, split in SETS:
            for bias in args.biases:
                fusion.BIAS = bias
                report = evaluate(
                    args.data / name, db=Path(scratch) / f"{name}.db", modes=["hybrid"], split=split
                )
                print(json.dumps({"dataset": name, "bias": bias, "hybrid_ndcg_10": report.modes[0].ndcg_10}))


if __name__ == "__main__":
    main()
