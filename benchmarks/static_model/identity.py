"""The static model's vectors here against another checkout's, bit for bit, on real text.

The texts: every document and query of SciFact, the Anthropic code set and CoSQA dev, and 1,500-character
windows of every text file of semble's 12 repositories (../shared/data). Each side embeds them in a fresh
process (``embed_documents``, then the queries one at a time through ``embed_query``); the vectors are
compared with ``numpy.array_equal``, and this checkout's token ids with the tokenizer's own.

    .venv/bin/python -m benchmarks.static_model.identity --vs OLD [--json FILE]
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

ROOT = Path(__file__).resolve().parents[2]  # this checkout: where ``-m benchmarks…`` is found
DATA = ROOT.parent / "shared" / "data"
SETS = ("scifact", "anthropic_codebase", "cosqa_dev")


def texts() -> tuple[list[str], list[str]]:
    """Documents (and repository windows), and queries."""
    documents, queries = [], []
    for name in SETS:
        for line in (DATA / name / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            documents.append(f"{row.get('title') or ''}\n{row['text']}")
        lines = (DATA / name / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        queries += [json.loads(line)["text"] for line in lines]
    for path in sorted(p for p in (DATA / "semble" / "repos").rglob("*") if p.is_file()):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        documents += [text[start : start + 1500] for start in range(0, len(text), 1500)]
    return documents, queries


def embed(out: Path) -> None:
    """This process's checkout: the documents' and the queries' vectors, saved to ``out`` (and the
    package's folder beside it, ``out`` + ``.source``)."""
    import retrievo
    from retrievo.embed.static import StaticEmbedder

    Path(f"{out}.source").write_text(str(Path(retrievo.__file__).resolve().parent), encoding="utf-8")

    documents, queries = texts()
    static = StaticEmbedder()
    vectors = np.concatenate(
        [static.embed_documents(documents), np.stack([static.embed_query(q) for q in queries])]
    )
    np.save(out, vectors)


def _commit(src: Path) -> str:
    """The checkout's commit (and ``+changes`` when its files differ from it)."""
    git = ["git", "-C", str(src)]
    head = subprocess.run(
        [*git, "rev-parse", "--short", "HEAD"], check=False, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--", "."], check=False, capture_output=True, text=True
    ).stdout
    return head + ("+changes" if dirty.strip() else "")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vs", type=Path, help="another checkout (or its src/)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--embed", type=Path, help=argparse.SUPPRESS)  # a side's own run
    args = parser.parse_args()
    if args.embed:
        embed(args.embed)
        return
    import retrievo
    from retrievo.embed.static import StaticEmbedder

    vs = args.vs.resolve()
    vs = vs / "src" if (vs / "src" / "retrievo").is_dir() else vs
    here = str(Path(retrievo.__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory() as scratch:
        sides = {}
        for side, path in (("here", here), ("vs", str(vs))):
            out = Path(scratch) / f"{side}.npy"
            command = [sys.executable, "-m", "benchmarks.static_model.identity", "--embed", str(out)]
            subprocess.run(command, env=dict(os.environ, PYTHONPATH=path), check=True, cwd=ROOT)
            imported = Path(Path(f"{out}.source").read_text(encoding="utf-8"))
            if not imported.is_relative_to(Path(path).resolve()):
                raise SystemExit(f"the {side} side imported {imported}, not the checkout in {path}")
            sides[side] = np.load(out)
    documents, queries = texts()
    static = StaticEmbedder()
    tokenizer = static._load()[1]
    expected = [e.ids for e in tokenizer.encode_batch([*documents, *queries], add_special_tokens=False)]
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "command": f"python -m benchmarks.static_model.identity --vs {args.vs}",
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "texts": len(documents) + len(queries),
        "not_ascii": sum(not t.isascii() for t in [*documents, *queries]),
        "sources": {"here": here, "vs": str(vs)},
        "commits": {side: _commit(Path(path)) for side, path in (("here", here), ("vs", str(vs)))},
        "vectors_identical": bool(np.array_equal(sides["here"], sides["vs"])),
        "max_abs_difference": float(np.abs(sides["here"] - sides["vs"]).max()),
        "ids_are_the_tokenizers": static.token_ids([*documents, *queries]) == expected,
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
