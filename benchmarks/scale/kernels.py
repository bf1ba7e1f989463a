"""The bundled model's kernel paths on this CPU: which are exact, how close each is to the float graph, how fast.

For each path of ``embed/kernels.py`` (``u8s8``, ``u8u8``, ``float``), on this machine's CPU:

- ``exact``: whether the path's integer sums are exact here (the probe ``RETRIEVO_KERNELS=integer`` reads);
- agreement: cosine of its vectors to the float graph's, min and mean, over SciFact abstracts, the
  Anthropic code set's chunks and CoSQA dev's code (``--texts`` of each, as ``retrievo eval`` indexes them:
  the entry's title and text), plus short questions;
- speed: chunks/s through ``embed_documents`` (one chunk per core in flight, as indexing runs) over the
  SciFact abstracts, min / median / max of ``--repeat`` rounds; each round times every path once, and
  with ``--baseline REV`` that revision's default path too (a ``git worktree``, in a child process), so
  the machine's drift falls on all alike.

    .venv/bin/python -m benchmarks.scale.kernels --baseline 5bd51cc --json benchmarks/results/kernels-DATE-CPU.json

``--record tests/data/minilm_integer_vectors.json`` writes the vectors the default path serves for the
tests' texts (``tests/test_integer_queries.py`` holds every CPU's served vectors to them), with the CPU and
path they were made on.
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
CORPORA = {"scifact": "scifact", "anthropic": "anthropic_codebase", "cosqa": "cosqa_dev"}
QUESTIONS = [
    "x",
    "How do I request parental leave?",
    "who approves expenses",
    "def parse_args(argv): return parser.parse_args(argv)",
    "What is the retention period for records kept under the 2019 policy on data protection?",
]


def texts(corpus: str, limit: int) -> list[str]:
    out = []
    with (DATA / CORPORA[corpus] / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            title = item.get("title") or ""
            out.append(f"{title}\n\n{item['text']}" if title else item["text"])
            if len(out) == limit:
                break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=300, help="texts per corpus for agreement")
    parser.add_argument("--speed-texts", type=int, default=300, help="SciFact abstracts timed")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--paths", default="float,u8u8,u8s8")
    parser.add_argument("--baseline", help="a revision whose default path is timed in the same rounds")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--record", type=Path, help="write the served vectors of the tests' texts here")
    args = parser.parse_args()
    if args.record:
        record(args.record)
        return

    from retrievo.embed import kernels
    from retrievo.embed.local import MiniLMEmbedder

    sets = {name: texts(name, args.texts) for name in CORPORA} | {"questions": QUESTIONS}
    timed = texts("scifact", args.speed_texts)
    reference: dict[str, np.ndarray] = {}
    rows: dict[str, dict[str, Any]] = {}
    models: dict[str, Any] = {}
    paths = ["float"] + [p for p in args.paths.split(",") if p != "float"]  # the reference first
    for path in paths:
        model = models[path] = MiniLMEmbedder(kernels=path, device="cpu")
        model.embed_documents(timed[:8])  # load, warm
        assert model.kernels == path, (model.kernels, path)
        vectors = {name: model.embed_documents(items) for name, items in sets.items()}
        if path == "float":
            reference = vectors
        row = rows[path] = {"path": path, "exact": path == "float" or kernels.exact(path), "rates": []}
        for name, got in vectors.items():
            cosines = np.sum(got * reference[name], axis=1)
            row[name] = {"min": round(float(cosines.min()), 5), "mean": round(float(cosines.mean()), 5)}
    if args.baseline:
        rows["baseline"] = {"path": f"default at {args.baseline}", "rates": []}
    with tempfile.TemporaryDirectory() as work:
        baseline = _worktree(args.baseline, Path(work)) if args.baseline else None
        for _ in range(args.repeat):  # rounds, every path once a round: the machine's drift is shared
            for path, model in models.items():
                start = time.perf_counter()
                model.embed_documents(timed)
                rows[path]["rates"].append(len(timed) / (time.perf_counter() - start))
            if baseline is not None:
                rows["baseline"]["rates"].append(_baseline_rate(baseline, timed))
        if baseline is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], cwd=ROOT, check=True)
    for row in rows.values():
        rates = sorted(row.pop("rates"))
        row["chunks_per_s"] = {"min": round(rates[0], 1), "median": round(rates[len(rates) // 2], 1),
                               "max": round(rates[-1], 1)}  # fmt: skip
        print(json.dumps(row), flush=True)
    result = {
        "command": "python -m benchmarks.scale.kernels " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "json" and v is not None),
        "date": time.strftime("%Y-%m-%d"),
        "cpu": kernels.cpu(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "chosen": kernels.choose("integer"),
        "paths": list(rows.values()),
    }  # fmt: skip
    print(json.dumps({k: v for k, v in result.items() if k != "paths"}))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def _worktree(revision: str, work: Path) -> Path:
    tree = work / "baseline"
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), revision], cwd=ROOT, check=True,
                   capture_output=True)  # fmt: skip
    return tree


BASELINE_CHILD = """
import json, sys, time
from retrievo.embed.local import MiniLMEmbedder
texts = json.load(open(sys.argv[1]))
model = MiniLMEmbedder()
model.embed_documents(texts[:8])
start = time.perf_counter()
model.embed_documents(texts)
print(json.dumps({"rate": len(texts) / (time.perf_counter() - start), "kernels": model.kernels}))
"""


def _baseline_rate(tree: Path, timed: list[str]) -> float:
    """chunks/s of ``tree``'s default path over ``timed``, in a child with that tree's ``src`` first."""
    feed = tree / "texts.json"
    feed.write_text(json.dumps(timed), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "RETRIEVO_KERNELS": "integer"}
    done = subprocess.run([sys.executable, "-c", BASELINE_CHILD, str(feed)], cwd=tree, env=env, check=True,
                          capture_output=True, text=True)  # fmt: skip
    rate: float = json.loads(done.stdout.strip().splitlines()[-1])["rate"]
    return rate


def record(path: Path) -> None:
    """The default path's vectors for the tests' texts (questions, the reference sentences, the bundled
    LICENSE's long paragraphs), six decimals, and where they were made."""
    from retrievo.embed import kernels
    from retrievo.embed.local import MiniLMEmbedder

    reference = json.loads((ROOT / "tests" / "data" / "minilm_reference_vectors.json").read_text())
    license_text = (ROOT / "src" / "retrievo" / "embed" / "data" / "minilm" / "LICENSE").read_text()
    items = QUESTIONS + [r["text"] for r in reference["vectors"]]
    items += [p for p in license_text.split("\n\n") if len(p) > 300][:8]
    model = MiniLMEmbedder(device="cpu")
    vectors = model.embed_documents(items)
    made = {"kernels": model.kernels, "cpu": kernels.cpu(), "date": time.strftime("%Y-%m-%d"),
            "command": f"python -m benchmarks.scale.kernels --record {path}"}  # fmt: skip
    rows = [
        {"text": t, "vector": [round(float(x), 6) for x in v]} for t, v in zip(items, vectors, strict=True)
    ]
    path.write_text(json.dumps({"made": made, "vectors": rows}) + "\n", encoding="utf-8")
    print(json.dumps(made))


if __name__ == "__main__":
    main()
