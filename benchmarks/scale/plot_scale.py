"""The scale curves as one picture: hybrid (and keyword) latency p50 / p95 against corpus size per
system, log-log, drawn from the JSON results of ``peers/run.py`` (and ``profile_arms.py`` for the
sizes only retrievo ran). Needs matplotlib: run it with the peers' environment.

    .peers/bin/python -m benchmarks.scale.plot_scale benchmarks/results/peers-*.json \
        benchmarks/results/profile-*.json --out docs/images/scale.png
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

STYLE = {"retrievo": "tab:blue", "lancedb": "tab:orange", "txtai": "tab:green", "bm25s": "tab:red"}


def points(paths: list[Path]) -> dict[tuple[str, str], list[tuple[int, float, float]]]:
    """(system, mode) -> [(corpus size, p50, p95)], sorted by size."""
    found: dict[tuple[str, str], dict[int, tuple[float, float]]] = defaultdict(dict)
    for path in paths:
        report: dict[str, Any] = json.loads(path.read_text())
        if "summary" in report:  # peers/run.py
            size = int(report["documents"])
            for system, entry in report["summary"].items():
                for mode in ("keyword", "hybrid"):
                    if mode in entry:
                        found[(system, mode)][size] = (entry[mode]["p50_ms"], entry[mode]["p95_ms"])
        for run in report.get("runs", []):  # profile_arms.py: sizes retrievo alone ran
            if "size" in run:
                for mode in ("keyword", "hybrid"):
                    found[("retrievo", mode)].setdefault(
                        int(run["size"]), (run[mode]["p50_ms"], run[mode]["p95_ms"])
                    )
    return {key: sorted((size, *values) for size, values in sizes.items()) for key, sizes in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, default=Path("docs/images/scale.png"))
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = points(args.results)
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for axis, mode in zip(axes, ("hybrid", "keyword"), strict=True):
        for (system, curve_mode), values in sorted(curves.items()):
            if curve_mode != mode:
                continue
            sizes = [v[0] for v in values]
            colour = STYLE.get(system, "tab:gray")
            axis.plot(sizes, [v[1] for v in values], "o-", color=colour, label=f"{system} p50")
            axis.plot(sizes, [v[2] for v in values], "s--", color=colour, alpha=0.6, label=f"{system} p95")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("chunks in the index")
        axis.set_title(f"{mode} search (query embedding excluded)")
        axis.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("latency, ms (2 cores)")
    for axis in axes:
        axis.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
