"""The reliability diagram of calibrated relevance (predicted vs observed, held-out halves) as a PNG.

    .venv/bin/pip install matplotlib        # only for this picture; not a dependency of retrievo
    .venv/bin/python -m benchmarks.quality.calibration_plot benchmarks/results/calibration-2026-11-22.json \
        docs/images/reliability.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    report = json.loads(source.read_text(encoding="utf-8"))
    profiles = list(report["reliability"])
    figure, axes = plt.subplots(1, len(profiles), figsize=(5 * len(profiles), 4.6), squeeze=False)
    for axis, profile in zip(axes[0], profiles, strict=True):
        axis.plot([0, 1], [0, 1], color="#999999", linestyle="--", linewidth=1, label="perfect")
        for name, entry in report["reliability"][profile].items():
            rows = entry["table"]
            axis.plot(
                [r["predicted"] for r in rows], [r["observed"] for r in rows], marker="o",
                label=f"{name} (ECE {entry['ece']:.3f})",
            )  # fmt: skip
        axis.set_title(f"{profile}: held-out halves")
        axis.set_xlabel("predicted relevance (mean in bin)")
        axis.set_ylabel("observed share relevant")
        axis.set_xlim(0, 1)
        axis.set_ylim(0, 1)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8, loc="upper left")
    figure.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=110)


if __name__ == "__main__":
    main()
