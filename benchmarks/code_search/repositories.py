"""Code retrieval figures (issue 10): click, a synthetic 10k-file repository, the Anthropic code set as a user would.

    .venv/bin/python -m benchmarks.code_search.repositories click        # symbols/edges, structure pass, full index, watch latency, tools
    .venv/bin/python -m benchmarks.code_search.repositories synthetic    # 10,000 files: structure pass, unchanged re-index
    .venv/bin/python -m benchmarks.code_search.repositories anthropic    # the 90 whole files, code chunker, Pass@k by overlap

Prints JSON. Figures and commands are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from retrievo import Config, Engine

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
CLICK = DATA / "code" / "click"
ANTHROPIC = DATA / "anthropic_codebase"


def _p50_p95(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return round(statistics.median(ordered), 2), round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 2)


def bench_click(scratch: Path) -> dict[str, Any]:
    repo = scratch / "click"
    shutil.copytree(CLICK, repo, ignore=shutil.ignore_patterns(".git"))
    result: dict[str, Any] = {}
    with Engine(Config(db=scratch / "structure.db", embedder="none")) as engine:
        started = time.perf_counter()
        report = engine.index([repo])
        result["structure_pass_s"] = round(time.perf_counter() - started, 2)
        result["files_indexed"] = report.documents_added
        store = engine._open_store(create=False)
        result["symbols"], result["edges"] = store.code_index().counts("default")
        started = time.perf_counter()
        unchanged = engine.index([repo])
        result["unchanged_reindex_s"] = round(time.perf_counter() - started, 2)
        assert unchanged.documents_unchanged == report.documents_added
        names = [s.name for s in engine.find_symbol("*", limit=500)]
        rng = random.Random(1)
        find_ms, graph_ms = [], []
        for name in rng.sample(names, 100):
            started = time.perf_counter()
            found = engine.find_symbol(name)
            find_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            engine.symbol_graph(found[0].qualified_name, depth=2)
            graph_ms.append((time.perf_counter() - started) * 1000)
        result["find_symbol_ms_p50_p95"] = _p50_p95(find_ms)
        result["symbol_graph_depth2_ms_p50_p95"] = _p50_p95(graph_ms)
    with Engine(Config(db=scratch / "full.db")) as engine:
        started = time.perf_counter()
        full = engine.index([repo])
        result["full_index_with_embeddings_s"] = round(time.perf_counter() - started, 1)
        result["chunks"] = full.chunks_written
        result["watch_to_searchable_ms_p50_p95"] = _watch_latency(engine, repo)
    return result


def _watch_latency(engine: Engine, repo: Path, edits: int = 20) -> tuple[float, float]:
    from retrievo.operations.watch import Watcher

    watcher = Watcher(engine, [repo], embed=True)
    thread, stop = watcher.start()
    assert watcher.ready.wait(30)
    target = repo / "src" / "click" / "utils.py"
    original = target.read_text()
    latencies = []
    try:
        for number in range(edits):
            token = f"watchtoken{number}x"
            saved = time.perf_counter()
            target.write_text(original + f"\n\ndef {token}():\n    return {number}\n")
            deadline = saved + 30
            while time.perf_counter() < deadline:
                # The token's parts ("watchtoken", "0", "x") match elsewhere: wait for the token itself.
                if any(token in h.chunk.text for h in engine.search(token, mode="keyword", limit=5).hits):
                    latencies.append((time.perf_counter() - saved) * 1000)
                    break
                time.sleep(0.01)
    finally:
        target.write_text(original)
        stop.set()
        thread.join(10)
    return _p50_p95(latencies)


SYNTHETIC_MODULE = '''"""Module {i}: helpers for area {area}."""

import os
from pkg.mod{dep} import helper_{dep}, Service{dep}


class Service{i}(Service{dep}):
    """Service number {i}."""

    def run(self, value):
        total = helper_{dep}(value)
        return self.finish(total)

    def finish(self, total):
        return total + {i}


def helper_{i}(value):
    """Compute {area} for a value."""
    return value * {i} + len(os.sep)


def main_{i}():
    service = Service{i}()
    return service.run(helper_{i}(1))
'''


def bench_synthetic(scratch: Path, files: int = 10_000) -> dict[str, Any]:
    repo = scratch / "synthetic" / "pkg"
    repo.mkdir(parents=True)
    rng = random.Random(0)
    for i in range(files):
        dep = rng.randrange(files)
        (repo / f"mod{i}.py").write_text(
            SYNTHETIC_MODULE.format(i=i, dep=dep, area=rng.choice(["billing", "auth", "io"]))
        )
    result: dict[str, Any] = {"files": files}
    with Engine(Config(db=scratch / "synthetic.db", embedder="none")) as engine:
        started = time.perf_counter()
        report = engine.index([repo.parent])
        result["structure_pass_s"] = round(time.perf_counter() - started, 1)
        result["chunks"] = report.chunks_written
        result["symbols"], result["edges"] = engine._open_store(create=False).code_index().counts("default")
        started = time.perf_counter()
        again = engine.index([repo.parent])
        result["unchanged_reindex_s"] = round(time.perf_counter() - started, 2)
        assert again.documents_unchanged == files
    return result


def bench_anthropic(
    scratch: Path,
    modes: tuple[str, ...] = ("keyword", "semantic", "hybrid"),
    bonuses: tuple[float, ...] = (),
) -> dict[str, Any]:
    documents = json.loads((ANTHROPIC / "documents.json").read_text())
    queries = [
        json.loads(line) for line in (ANTHROPIC / "queries.jsonl").read_text().splitlines() if line.strip()
    ]
    qrels: dict[str, list[str]] = defaultdict(list)
    for line in (ANTHROPIC / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query_id, chunk_id, _ = line.split("\t")
        qrels[query_id].append(chunk_id)
    path_of: dict[str, str] = {}
    for query in queries:
        meta = query.get("metadata", {})
        for chunk_id in qrels.get(query["_id"], []):
            path_of.setdefault(
                chunk_id.rsplit("_chunk_", 1)[0], f"{meta['repo_name']}{meta['relative_path']}"
            )
    repo = scratch / "anthropic"
    spans: dict[str, tuple[str, int, int]] = {}
    for document in documents:
        relative = path_of.get(document["doc_id"], f"unknown/{document['doc_id']}.txt")
        target = repo / relative.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        text = document["content"].replace("\r\n", "\n").replace("\r", "\n")
        target.write_text(text)
        cursor = 0
        for chunk in document["chunks"]:
            content = chunk["content"].replace("\r\n", "\n").replace("\r", "\n")
            start = text.find(content, cursor)
            if start < 0:
                start = text.find(content)
            if start >= 0:
                spans[chunk["chunk_id"]] = (str(target.resolve()), start, start + len(content))
                cursor = start + 1
    result: dict[str, Any] = {"documents": len(documents), "golden_chunks_located": len(spans)}
    with Engine(Config(db=scratch / "anthropic.db")) as engine:
        started = time.perf_counter()
        report = engine.index([repo])
        result["index_s"], result["chunks"] = round(time.perf_counter() - started, 1), report.chunks_written
        from retrievo.search import hybrid

        default_bonus = hybrid.STRUCTURE_BONUS
        runs = [(m, b) for m in modes for b in (bonuses if m == "hybrid" and bonuses else (default_bonus,))]
        plain = Engine(Config(db=scratch / "anthropic.db", code_ranking="off"))  # the fused order only
        for (mode, bonus), (ranking, asked) in itertools.product(
            runs, (("", engine), (", code ranking off", plain))
        ):
            hybrid.STRUCTURE_BONUS = bonus
            label = mode if len(bonuses) <= 1 or mode != "hybrid" else f"hybrid, structure bonus {bonus}"
            label += ranking
            found = {5: [], 10: [], 20: []}  # type: dict[int, list[float]]
            halves: dict[str, list[float]] = {"even": [], "odd": []}
            for number, query in enumerate(queries):
                golden = [spans[c] for c in qrels.get(query["_id"], []) if c in spans]
                if not golden:
                    continue
                hits = asked.search(query["text"], mode=mode, limit=20).hits
                for k, shares in found.items():
                    top = hits[:k]
                    share = sum(
                        any(h.chunk.path == p and h.chunk.start < e and s < h.chunk.end for h in top)
                        for p, s, e in golden
                    ) / len(golden)
                    shares.append(share)
                    if k == 10:
                        halves["even" if number % 2 == 0 else "odd"].append(share)
            result[label] = {f"pass@{k}": round(100 * statistics.mean(v), 1) for k, v in found.items()}
            result[label]["pass@10_halves_even_odd"] = [
                round(100 * statistics.mean(v), 1) for v in halves.values()
            ]
            result[label]["queries"] = len(found[10])
        plain.close()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=["click", "synthetic", "anthropic"])
    parser.add_argument("--files", type=int, default=10_000, help="synthetic: how many files")
    parser.add_argument("--modes", default="keyword,semantic,hybrid", help="anthropic: modes to measure")
    parser.add_argument("--bonuses", default="", help="anthropic: structure bonuses to compare (hybrid)")
    parser.add_argument("--code-max-chars", type=int, help="anthropic: lever — symbol chunk size")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        if args.what == "click":
            result = bench_click(Path(scratch))
        elif args.what == "synthetic":
            result = bench_synthetic(Path(scratch), args.files)
        else:
            if args.code_max_chars:
                from retrievo.ingest import chunkers

                spec = chunkers.CHUNKERS[chunkers.ChunkerName.CODE]
                chunkers.CODE_MAX_CHARS = args.code_max_chars
                chunkers.CHUNKERS[chunkers.ChunkerName.CODE] = chunkers.ChunkerSpec(
                    spec.name, spec.version, args.code_max_chars, spec.segmenter
                )
            modes = tuple(args.modes.split(","))
            bonuses = tuple(float(b) for b in args.bonuses.split(",") if b)
            result = bench_anthropic(Path(scratch), modes, bonuses)
            result["code_max_chars"] = args.code_max_chars or 1500
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
