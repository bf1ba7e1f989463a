"""Peak RSS while indexing, at 10k and 100k chunks: does memory grow with the corpus?

A folder of Markdown files is written from SciFact abstracts (real text; each file a unique title so
every chunk has its own embedding key, ``--per-file`` abstracts a file). A child process per size
runs ``retrievo index`` through the Python API into a fresh SQLite file and reports its peak RSS
(``ru_maxrss``) and the chunks written and embedded; and the peak up to the end of embedding
(read, chunk, write, embed, write vectors), noted by the progress callbacks, apart from the build of
the side indexes at the end (the keyword index and the HNSW graph search holds in memory anyway).

Embedders:

- ``service`` (default): an OpenAI-shaped embedding service on loopback (``common.FakeEmbeddings``, a
  thread of the parent process) answering deterministic 384-dimension vectors at once, so the run measures retrievo's own pipeline (reading,
  chunking, writing, planning and writing vectors), not the model; the bundled model's memory is a
  constant it adds (measured with ``--embedder local``).
- ``local``: the bundled model (slow: ~40-50 chunks/s on 2 cores; use for the smaller size).

    .venv/bin/python -m benchmarks.scale.ingest_memory --sizes 10000 100000 --json benchmarks/results/ingest-memory-DATE.json
    .venv/bin/python -m benchmarks.scale.ingest_memory --sizes 10000 --embedder local
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

from benchmarks.common import FakeEmbeddings, peak_rss_mb

ROOT = Path(__file__).resolve().parents[2]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"


def write_corpus(folder: Path, chunks: int, per_file: int) -> int:
    """Markdown files of SciFact abstracts, one ``##`` section each, until about ``chunks`` sections."""
    abstracts = []
    with SCIFACT.open(encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            if item["text"].strip():
                abstracts.append((item["title"], item["text"][:480]))
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    file_number = 0
    while written < chunks:
        sections = []
        for i in range(per_file):
            title, text = abstracts[(written + i) % len(abstracts)]
            sections.append(f"## {title} ({written + i})\n\n{text}\n")
        shard = folder / f"part{file_number // 1000:03d}"
        shard.mkdir(exist_ok=True)
        (shard / f"notes-{file_number:06d}.md").write_text(
            f"# Notes {file_number}\n\n" + "\n".join(sections), encoding="utf-8"
        )
        written += per_file
        file_number += 1
    return file_number


# The child: one index ------------------------------------------------------------------------------


class _Peaks:
    """Progress that notes the peak RSS as reading and embedding go (before the side indexes)."""

    def __init__(self) -> None:
        self.pipeline_mb = 0.0

    def file_done(self, path: str) -> None:
        self.pipeline_mb = peak_rss_mb()

    def embedding_started(self, total: int) -> None:
        self.pipeline_mb = peak_rss_mb()

    def embedded(self, count: int) -> None:
        self.pipeline_mb = peak_rss_mb()


def child(folder: str, embedder: str, url: str | None) -> dict[str, Any]:
    from retrievo.config import Config
    from retrievo.engine import Engine

    db = Path(tempfile.mkdtemp(prefix="ingest-memory-")) / "bench.db"
    if embedder == "local":
        config = Config(db=db)
    else:
        config = Config(db=db, embedder="openai", embed_url=url, embed_model="bench-384")
    baseline_mb = peak_rss_mb()
    started = time.perf_counter()
    peaks = _Peaks()
    with Engine(config) as engine:
        report = engine.index([Path(folder)], progress=peaks)
    return {
        "files": report.files_seen,
        "chunks_written": report.chunks_written,
        "chunks_embedded": report.chunks_embedded,
        "embed_error": report.embed_error,
        "seconds": time.perf_counter() - started,
        "rss_after_imports_mb": baseline_mb,
        "peak_rss_through_embedding_mb": peaks.pipeline_mb,
        "peak_rss_mb": peak_rss_mb(),
        "db_mb": db.stat().st_size / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--per-file", type=int, default=20)
    parser.add_argument("--embedder", choices=["service", "local"], default="service")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.embedder, args.url)))
        return
    path = os.pathsep.join((str(ROOT / "src"), str(ROOT)))  # the child imports benchmarks.common
    environ = {**os.environ, "PYTHONPATH": path}
    service = FakeEmbeddings(dims=384) if args.embedder == "service" else None  # in this process
    url = service.url if service is not None else None
    rows = []
    try:
        for size in args.sizes:
            with tempfile.TemporaryDirectory(prefix="ingest-memory-corpus-") as folder:
                files = write_corpus(Path(folder) / "corpus", size, args.per_file)
                command = [sys.executable, __file__, "--child", str(Path(folder) / "corpus"),
                           "--embedder", args.embedder, "--url", url or ""]  # fmt: skip
                done = subprocess.run(command, env=environ, capture_output=True, text=True, check=False)
                if done.returncode:
                    raise SystemExit(f"child failed:\n{done.stderr[-3000:]}")
                row = {"target_chunks": size, "files_written": files, "embedder": args.embedder,
                       **json.loads(done.stdout.strip().splitlines()[-1])}  # fmt: skip
                rows.append(row)
                print(
                    f"{row['chunks_written']:>7} chunks ({row['files']} files) | {row['seconds']:7.1f} s | "
                    f"peak RSS through embedding {row['peak_rss_through_embedding_mb']:4.0f} MB, "
                    f"with the side indexes {row['peak_rss_mb']:4.0f} MB "
                    f"| embedded {row['chunks_embedded']} | db {row['db_mb']:.0f} MB",
                    flush=True,
                )
    finally:
        if service is not None:
            service.close()
    if args.json:
        meta = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()} {os.cpu_count()} cores",
                "command": " ".join(sys.argv)}  # fmt: skip
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
