"""Embedding throughput, the static model against the bundled MiniLM, on the same real chunks.

The first ``--chunks`` SciFact abstracts (or another BEIR-layout set's documents, ``--data``; title as
context, then the text: what the engine embeds), through ``Embedder.embed_documents`` (each model's own
batching and threads); then the test queries one at a time through ``embed_query`` (no cache). Each model
is loaded and warmed up on other text before it is timed; the first run (the static model's word cache
empty) and the best of ``--repeat`` runs are kept, as wall-clock chunks/s and as chunks per CPU-second of
the process (all its threads: the figure other work on the machine leaves alone).

    .venv/bin/python -m benchmarks.static_model.throughput [--data ../shared/data/anthropic_codebase | --index DB]
        [--static-only | --vs OLD/src [--runs 5]]
        --json benchmarks/results/static-model-throughput-2026-11-29.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import retrievo
from retrievo.embed.base import Embedder
from retrievo.embed.kernels import cpu_identity
from retrievo.embed.local import MiniLMEmbedder
from retrievo.embed.static import StaticEmbedder
from retrievo.evaluation.beir import load_beir
from retrievo.text.hashing import embedding_input

SCIFACT = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "scifact"


def measure(embedder: Embedder, texts: list[str], queries: list[str], repeat: int) -> dict[str, Any]:
    # Loaded, and one query: not the texts (the first pass meets them first). Not a batch for the static
    # model (its float rows are made in the first pass, as in a process's first index); a batch for
    # MiniLM (timed once: its figure is not its warm-up's).
    embedder.embed_query("load and warm up")
    if not isinstance(embedder, StaticEmbedder):
        embedder.embed_documents(["load and warm up"] * 64)
    seconds, cpu_seconds = [], []
    for _ in range(repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        embedder.embed_documents(texts)
        seconds.append(time.perf_counter() - started)
        cpu_seconds.append(time.process_time() - cpu_started)
    started = time.perf_counter()
    for query in queries:
        embedder.embed_query(query)
    per_query = (time.perf_counter() - started) / len(queries)
    return {
        "model_id": embedder.model_id,
        "dimensions": embedder.dimensions,
        "chunks": len(texts),
        "seconds": round(min(seconds), 3),
        "chunks_per_second": round(len(texts) / min(seconds), 1),
        # the first pass: the static model's word cache (StaticEmbedder.token_ids) starts empty
        "first_pass_chunks_per_second": round(len(texts) / seconds[0], 1),
        # CPU time of this process, all its threads: what another load on the machine does not change
        "chunks_per_cpu_second": round(len(texts) / min(cpu_seconds), 1),
        "query_ms": round(per_query * 1000, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=SCIFACT,
        help="a BEIR-layout set (e.g. ../shared/data/anthropic_codebase)",
    )
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument(
        "--index", type=Path, help="embed this SQLite index's chunks instead (e.g. a repository's)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--static-only",
        action="store_true",
        help="the static model alone (no MiniLM run, no ratios): for a before/after of the static model, "
        "run again with PYTHONPATH=OLD/src",
    )
    parser.add_argument(
        "--vs",
        type=Path,
        help="another checkout (or its src/): the static model alone, this checkout and that one in turn, "
        "each run a fresh process (--runs pairs); medians and their ratios",
    )
    parser.add_argument("--runs", type=int, default=5, help="with --vs: pairs of fresh processes")
    args = parser.parse_args()
    if args.vs:
        compare(args)
        return
    dataset = load_beir(args.data, "test")
    texts = [embedding_input(doc.title, doc.text or doc.title) for doc in dataset.corpus[: args.chunks]]
    queries = list(dataset.queries.values())
    source = f"{args.data.name}: the first {len(texts)} abstracts"
    if args.index:  # a repository's chunks as the engine embeds them (context, then text)
        import apsw

        rows = apsw.Connection(str(args.index), flags=apsw.SQLITE_OPEN_READONLY).execute(
            "SELECT context, text FROM chunks WHERE superseded_at IS NULL ORDER BY id LIMIT ?", (args.chunks,)
        )
        texts = [embedding_input(context or "", text) for context, text in rows]
        source = f"{args.index.name}: {len(texts)} chunks of a retrievo index"
    load_before = os.getloadavg()[0]
    results = [measure(StaticEmbedder(), texts, queries, args.repeat)]
    if not args.static_only:
        results.append(measure(MiniLMEmbedder(), texts, queries, 1))  # ~a minute a run on 2 cores
    report: dict[str, Any] = {
        "data": f"{source}; {len(queries)} test queries of {args.data.name}",
        "machine": f"{cpu_identity()[0]}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "source": str(Path(retrievo.__file__).parent),  # which checkout's code ran
        "models": results,
        # other work on the machine slows both models; read figures taken under load with care
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    if len(results) == 2:
        static, minilm = results
        report |= {
            "speed_up": round(static["chunks_per_second"] / minilm["chunks_per_second"], 1),
            "cpu_speed_up": round(static["chunks_per_cpu_second"] / minilm["chunks_per_cpu_second"], 1),
            "query_speed_up": round(minilm["query_ms"] / static["query_ms"], 1),
        }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def compare(args: argparse.Namespace) -> None:
    """``--vs``: this checkout's static model against another's, on the same texts, each side a fresh
    process in turn (A B B A …, so that the machine's drift touches both); medians of each figure."""
    import statistics
    import subprocess
    import sys
    import tempfile

    forwarded = ["--data", str(args.data), "--chunks", str(args.chunks), "--repeat", str(args.repeat)]
    forwarded += ["--index", str(args.index)] if args.index else []
    vs = args.vs.resolve()
    vs = vs / "src" if (vs / "src" / "retrievo").is_dir() else vs  # a checkout or its src/
    if not (vs / "retrievo").is_dir():
        raise SystemExit(f"--vs {args.vs}: no retrievo package there (give a checkout or its src/)")
    paths = {"here": str(Path(retrievo.__file__).resolve().parents[1]), "vs": str(vs)}
    sides: dict[str, list[dict[str, Any]]] = {"here": [], "vs": []}
    with tempfile.TemporaryDirectory() as scratch:
        for run in range(args.runs):
            order = ["here", "vs"] if run % 2 == 0 else ["vs", "here"]  # A B B A …: drift touches both
            for side in order:
                out = Path(scratch) / f"{side}-{run}.json"
                env = dict(os.environ, PYTHONPATH=paths[side])
                command = [sys.executable, "-m", "benchmarks.static_model.throughput", *forwarded]
                subprocess.run([*command, "--static-only", "--json", str(out)], env=env, check=True,
                               stdout=subprocess.DEVNULL)  # fmt: skip
                sides[side].append(json.loads(out.read_text(encoding="utf-8")))
    if sides["here"][0]["source"] == sides["vs"][0]["source"]:
        raise SystemExit(f"both sides ran {sides['here'][0]['source']}: nothing compared")
    figures = ("chunks_per_second", "first_pass_chunks_per_second", "chunks_per_cpu_second", "query_ms")
    medians = {
        side: {f: statistics.median(r["models"][0][f] for r in runs) for f in figures}
        for side, runs in sides.items()
    }
    report = {
        "data": sides["here"][0]["data"],
        "machine": sides["here"][0]["machine"],
        "date": time.strftime("%Y-%m-%d"),
        "runs": args.runs,
        "sources": {side: runs[0]["source"] for side, runs in sides.items()},
        "medians": medians,
        # here ÷ vs: above 1 is faster for the rates, slower for query_ms
        "ratio_here_to_vs": {f: round(medians["here"][f] / medians["vs"][f], 2) for f in figures},
        "load_average_1min": [r["load_average_1min"] for runs in sides.values() for r in runs],
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
