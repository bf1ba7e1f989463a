"""retrievo beside LanceDB, txtai and bm25s: one run, the same vectors, rotating order, ratios.

Each system runs in a child process of this one (one process tree): retrievo with the project's
interpreter, the peers with the interpreter of their own environment (``benchmarks/peers/README.md``;
they are never a dependency of retrievo). Every system gets the same texts, the same document
vectors and the same query vectors, so query embedding is excluded everywhere. Rounds rotate the
order in which the systems run; each figure is the median over rounds of each round's p50 / p95.

    .venv/bin/python -m benchmarks.peers.run --corpus scifact --peers-python .peers/bin/python
    .venv/bin/python -m benchmarks.peers.run --corpus realistic --size 100000 --peers-python .peers/bin/python

Corpora: ``scifact`` (../shared/data, vectors from the bundled MiniLM, nDCG@10 on the test qrels) or
``realistic`` (benchmarks/scale/realistic.py: recombined real sentences, low-rank vectors, latency only).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the repository root: benchmarks.common, benchmarks.scale

SYSTEMS = ("retrievo", "lancedb", "txtai", "bm25s", "faiss", "matmul")
MODES = ("keyword", "semantic", "hybrid", "dense arm")


def prepare_scifact(work: Path, data: Path, db: Path | None) -> dict[str, Any]:
    """Texts, qrels and MiniLM vectors (documents: title + text as retrievo's eval embeds them), read
    from a `retrievo eval --db` index of the corpus (built here when none is given)."""
    from retrievo.config import Config
    from retrievo.engine import Engine
    from retrievo.evaluation.beir import load_beir
    from retrievo.evaluation.runner import evaluate

    if db is None or not db.exists():
        db = db or work / "vectors.db"
        evaluate(
            data, db=db, modes=("semantic",), limit_queries=1
        )  # embeds the corpus with the bundled model
    dataset = load_beir(data, "test")
    engine = Engine(Config.from_env(db=db, collection=f"eval-{dataset.name}"))
    store = engine._open_store(create=False)
    rows = store._read(  # type: ignore[attr-defined]
        """SELECT d.source, e.vector FROM chunks c JOIN documents d ON d.id = c.document_id
           JOIN embeddings e ON e.embed_key = c.embed_key WHERE c.superseded_at IS NULL"""
    )
    by_source = {row[0].rsplit("/", 1)[1]: np.frombuffer(row[1], dtype=np.float16) for row in rows}
    ids = [doc.doc_id for doc in dataset.corpus]
    vectors = np.stack([by_source[i] for i in ids]).astype(np.float32)
    queries = list(dataset.queries.items())
    model = engine._pool.default_queries.embedder
    assert model is not None
    query_vectors = np.stack([model.embed_query(text) for _, text in queries]).astype(np.float32)
    return {
        "ids": ids,
        "titles": [doc.title for doc in dataset.corpus],
        "texts": [doc.text or doc.title for doc in dataset.corpus],
        "queries": [text for _, text in queries],
        "qrels": {str(n): dataset.qrels[qid] for n, (qid, _) in enumerate(queries)},
        "vectors": vectors,
        "query_vectors": query_vectors,
    }


def prepare_realistic(size: int, queries: int) -> dict[str, Any]:
    from benchmarks.common import low_rank
    from benchmarks.scale.realistic import realistic_queries, realistic_texts

    texts = list(realistic_texts(size))
    return {
        "ids": [str(i) for i in range(size)],
        "titles": [f"Document {i // 1000}" for i in range(size)],
        "texts": texts,
        "queries": realistic_queries(queries),
        "qrels": {},
        "vectors": low_rank(size, 384, seed=1),
        "query_vectors": low_rank(queries, 384, seed=9),
    }


def write_inputs(work: Path, corpus: dict[str, Any]) -> None:
    np.save(work / "vectors.npy", corpus["vectors"])
    np.save(work / "query_vectors.npy", corpus["query_vectors"])
    keys = ("ids", "titles", "texts", "queries", "qrels")
    (work / "corpus.json").write_text(json.dumps({key: corpus[key] for key in keys}))


def run_system(system: str, python: str, work: Path, ann: bool, out: Path) -> dict[str, Any]:
    command = [python, str(HERE / "systems.py"), system, str(work), str(out)] + (["--ann"] if ann else [])
    # The physical floor runs its product on one BLAS thread; every other system with its defaults.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"} if system == "matmul" else None
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout)[-2000:]}
    result: dict[str, Any] = json.loads(out.read_text())
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def summarise(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    summary: dict[str, dict[str, Any]] = {}
    for system in rounds[0]:
        runs = [r[system] for r in rounds if "error" not in r[system]]
        if not runs:
            summary[system] = {"error": rounds[0][system]["error"]}
            continue
        entry: dict[str, Any] = {"build_s": round(statistics.median(r["build_s"] for r in runs), 2)}
        for mode in MODES:
            if mode in runs[0]["latency"]:
                entry[mode] = {
                    stat: round(statistics.median(r["latency"][mode][stat] for r in runs), 2)
                    for stat in ("p50_ms", "p95_ms", "cpu_ms")
                    if stat in runs[0]["latency"][mode]
                }
                if runs[0].get("ndcg10", {}).get(mode) is not None:
                    entry[mode]["ndcg10"] = runs[0]["ndcg10"][mode]
        summary[system] = entry
    return summary


def ratios(summary: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """retrievo ÷ each peer, per mode and statistic (below 1: retrievo is faster)."""
    ours = summary.get("retrievo", {})
    found: dict[str, dict[str, float]] = {}
    for system, entry in summary.items():
        if system == "retrievo" or "error" in entry:
            continue
        found[system] = (
            {"build_s": round(ours["build_s"] / max(entry["build_s"], 1e-3), 2)} if "build_s" in ours else {}
        )
        for mode in MODES:
            if mode in entry and mode in ours:
                for stat in ("p50_ms", "p95_ms", "cpu_ms"):
                    if stat not in entry[mode] or stat not in ours[mode]:
                        continue
                    found[system][f"{mode} {stat}"] = round(
                        ours[mode][stat] / max(entry[mode][stat], 1e-3), 2
                    )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", choices=("scifact", "realistic"), default="scifact")
    parser.add_argument("--data", type=Path, default=HERE.parents[2] / "shared" / "data" / "scifact")
    parser.add_argument("--vectors-db", type=Path, help="A `retrievo eval --db` index of --data to reuse.")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeats", "--rounds", dest="rounds", type=int, default=3)
    parser.add_argument("--peers-python", default=str(HERE.parents[1] / ".peers" / "bin" / "python"))
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--json", type=Path, help="Write the summary here.")
    parser.add_argument("--busy", type=int, default=0, help="Processes spinning on the CPU beside the run.")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="retrievo-peers-"))
    corpus = (
        prepare_scifact(work, args.data, args.vectors_db)
        if args.corpus == "scifact"
        else prepare_realistic(args.size, args.queries)
    )
    write_inputs(work, corpus)
    systems = [s for s in SYSTEMS if s in args.systems.split(",")]
    ann = args.corpus == "realistic" and args.size >= 50_000
    rounds: list[dict[str, dict[str, Any]]] = []
    from busy import busy

    with busy(args.busy):
        run_rounds(args, systems, work, ann, rounds)
    summary = summarise(rounds)
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores, Python {sys.version.split()[0]}",
        "command": " ".join(sys.argv),
        "corpus": args.corpus if args.corpus == "scifact" else f"realistic-{args.size}",
        "documents": len(corpus["ids"]),
        "queries": len(corpus["queries"]),
        "rounds": args.rounds,
        "busy_processes": args.busy,
        "summary": summary,
        "ratios_retrievo_over_peer": ratios(summary),
    }
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


def run_rounds(
    args: argparse.Namespace,
    systems: list[str],
    work: Path,
    ann: bool,
    rounds: list[dict[str, dict[str, Any]]],
) -> None:
    for number in range(args.rounds):
        order = systems[number % len(systems) :] + systems[: number % len(systems)]
        results: dict[str, dict[str, Any]] = {}
        for system in order:
            python = sys.executable if system == "retrievo" else args.peers_python
            results[system] = run_system(system, python, work, ann, work / f"{system}-{number}.json")
            print(f"round {number + 1} {system}: {json.dumps(results[system])[:300]}", flush=True)
        rounds.append(results)


if __name__ == "__main__":
    main()
