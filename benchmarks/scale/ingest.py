"""Where indexing's time goes, per corpus, for this code and a baseline revision side by side in one run.

For each corpus and each code version (this checkout's ``src/`` and ``--baseline REV``, checked out with
``git worktree`` into a temporary folder), a child process with that ``src/`` first on its path:

1. indexes the corpus with no embedder: files/s read and chunked, chunks/s written, and the seconds
   until a keyword search finds it (what a user waits for before the first answer);
2. embeds every chunk with the bundled model (``Engine.embed_missing``): chunks/s embedded, of which the
   seconds spent writing vectors (chunks/s written); seconds until fully embedded;
3. reports its peak RSS and saves the vectors, so the parent reports their cosine to the baseline's.

Corpora: a ``swe_loc_dev`` repository tree (its package folder), SciFact abstracts, the Anthropic code
set's chunks (each whole, as ``retrievo eval`` indexes them). ``--floor`` measures the physical floor:
the FLOPs one chunk costs at its token length and this machine's int8 matrix-multiply rate.

    .venv/bin/python -m benchmarks.scale.ingest --baseline e1334e6 --json benchmarks/results/ingest-DATE.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
SWE_TREE = "mwaskom__seaborn-3010"
SAMPLE = 400  # vectors saved per corpus for the cosine comparison


# The child: one corpus, one code version ------------------------------------------------------------


def _documents(corpus: str, limit: int) -> list[Any]:
    from retrievo.models import LoadedDocument

    name = {"scifact": "scifact", "anthropic": "anthropic_codebase"}[corpus]
    documents = []
    with (DATA / name / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            documents.append(LoadedDocument(source=f"{corpus}/{item['_id']}", text=item["text"],
                                            title=item.get("title") or ""))  # fmt: skip
            if len(documents) == limit:
                break
    return documents


def child(corpus: str, path: str, limit: int, vectors_out: str) -> dict[str, Any]:
    from retrievo.config import Config
    from retrievo.embed.local import MiniLMEmbedder
    from retrievo.engine import Engine

    folder = tempfile.mkdtemp(prefix="ingest-")
    db = Path(folder) / "bench.db"
    started = time.perf_counter()
    keyword = Engine(Config(db=db, embedder="none"))
    if corpus == "code":
        report = keyword.index([Path(path)])
        files = report.files_seen
    else:
        documents = _documents(corpus, limit)
        report = keyword.add_documents(documents, chunker="whole")
        files = len(documents)
    hits = keyword.search("the", mode="keyword", limit=1).hits if corpus != "code" else ["code"]
    searchable_s = time.perf_counter() - started
    keyword.close()

    embedder = MiniLMEmbedder()
    embedder.embed_documents(["load the model before timing"])
    engine = Engine(Config(db=db), embedder=embedder)
    store = engine._open_store(create=False)
    writes = [0.0]
    put = type(store).put_embeddings

    def timed_put(self: Any, *args: Any, **kwargs: Any) -> None:
        began = time.perf_counter()
        put(self, *args, **kwargs)
        writes[0] += time.perf_counter() - began

    type(store).put_embeddings = timed_put  # type: ignore[method-assign]
    began = time.perf_counter()
    embedded = engine.embed_missing()
    embed_s = time.perf_counter() - began
    engine.close()
    with sqlite3.connect(db) as connection:  # the same chunks in every version: the first keys
        rows = connection.execute("SELECT vector FROM embeddings ORDER BY embed_key LIMIT ?", (SAMPLE,))
        np.save(vectors_out, _unit(np.stack([np.frombuffer(row[0], dtype=np.float16) for row in rows])))
    chunks = embedded.chunks_embedded
    return {
        "files": files,
        "chunks": report.chunks_written,
        "keyword_hits": len(hits),
        "files_per_s": files / searchable_s,
        "chunks_written_per_s": report.chunks_written / searchable_s,
        "seconds_until_keyword_searchable": searchable_s,
        "chunks_embedded": chunks,
        "embed_chunks_per_s": chunks / embed_s,
        "vector_writes_s": writes[0],
        "vectors_written_per_s": chunks / writes[0] if writes[0] else None,
        "seconds_until_fully_embedded": searchable_s + embed_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "kernels": getattr(embedder, "kernels", getattr(embedder, "query_kernels", "?")),
    }


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = vectors.astype(np.float32)
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


# The parent ----------------------------------------------------------------------------------------


def _run_child(src: Path, corpus: str, path: str, limit: int, vectors_out: str) -> dict[str, Any]:
    environ = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, __file__, "--child", corpus, "--path", path, "--limit", str(limit),
               "--vectors", vectors_out]  # fmt: skip
    done = subprocess.run(command, env=environ, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"child {corpus} on {src} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def floor(seconds: float = 3.0) -> dict[str, float]:
    """This machine's int8 matrix-multiply rate on one core (onnxruntime's MatMulInteger, 256×384·384×1536)
    and the FLOPs of one 256-token chunk through MiniLM-L6 (6 layers, hidden 384, FFN 1536, 12 heads)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rows, inner, cols = 256, 384, 1536
    weight = numpy_helper.from_array(
        np.random.default_rng(0).integers(-127, 127, (inner, cols), dtype=np.int8), "w"
    )
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [rows, inner])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [rows, cols])], [weight],
    )  # fmt: skip
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).integers(0, 255, (rows, inner), dtype=np.uint8)
    runs, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        session.run(None, {"x": x})
        runs += 1
    int8_ops_per_s = runs * 2 * rows * inner * cols / (time.perf_counter() - began)
    tokens, hidden, ffn, layers = 256, 384, 1536, 6
    linear = 2 * tokens * layers * (4 * hidden * hidden + 2 * hidden * ffn)
    attention = 2 * 2 * tokens * tokens * hidden * layers
    return {"int8_ops_per_s_one_core": int8_ops_per_s, "chunk_flops_256": float(linear + attention),
            "chunk_linear_flops_256": float(linear), "cores": float(os.cpu_count() or 1)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", default="HEAD~1", help="git revision to compare with ('' for none)")
    parser.add_argument("--limit", type=int, default=1000, help="SciFact / Anthropic documents per corpus")
    parser.add_argument("--corpora", default="code,scifact,anthropic")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--path", default="", help=argparse.SUPPRESS)
    parser.add_argument("--vectors", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.path, args.limit, args.vectors)))
        return

    work = Path(tempfile.mkdtemp(prefix="ingest-bench-"))
    versions = {"this": ROOT / "src"}
    if args.baseline:
        revision = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.baseline],
                                  capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(work / "baseline"), revision],
                       capture_output=True, check=True)  # fmt: skip
        versions[f"baseline {revision}"] = work / "baseline" / "src"
    tree = ""
    if "code" in args.corpora:
        with tarfile.open(DATA / "swe_loc_dev" / "trees" / f"{SWE_TREE}.tar.gz") as archive:
            archive.extractall(work, filter="data")
        tree = str(work / SWE_TREE / "seaborn")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, "
                               f"{os.cpu_count()} cores", "head": head, "corpora": {}}  # fmt: skip
    print(f"# {results['date']} · {results['machine']} · this = {head}", flush=True)
    try:
        for corpus in args.corpora.split(","):
            rows: dict[str, Any] = {}
            for label, src in versions.items():
                out = str(work / f"{corpus}-{label.split()[0]}.npy")
                rows[label] = _run_child(src, corpus, tree, args.limit, out)
                rows[label]["vectors"] = out
                row = rows[label]
                print(f"{corpus:9s} {label:17s} {row['chunks']:5d} chunks | {row['files_per_s']:7.1f} files/s | "
                      f"searchable {row['seconds_until_keyword_searchable']:6.1f} s | embed "
                      f"{row['embed_chunks_per_s']:5.1f} chunks/s | fully embedded "
                      f"{row['seconds_until_fully_embedded']:6.1f} s | peak RSS {row['peak_rss_mb']:5.0f} MB",
                      flush=True)  # fmt: skip
            if len(rows) == 2:
                this, base = rows["this"], next(v for k, v in rows.items() if k != "this")
                cosines = np.sum(np.load(this["vectors"]) * np.load(base["vectors"]), axis=1)
                this["speedup"] = this["embed_chunks_per_s"] / base["embed_chunks_per_s"]
                this["cosine_to_baseline"] = {"min": float(cosines.min()), "mean": float(cosines.mean())}
                print(f"{corpus:9s} embedding ×{this['speedup']:.2f}; cosine to the baseline's vectors "
                      f"min {cosines.min():.5f} mean {cosines.mean():.5f}", flush=True)  # fmt: skip
            results["corpora"][corpus] = rows
        results["floor"] = floor()
        f = results["floor"]
        print(f"floor: one core multiplies int8 at {f['int8_ops_per_s_one_core'] / 1e12:.2f} Tops/s; a 256-token "
              f"chunk is {f['chunk_flops_256'] / 1e9:.2f} GFLOP", flush=True)  # fmt: skip
    finally:
        if args.baseline:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(work / "baseline")],
                           capture_output=True, check=False)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
