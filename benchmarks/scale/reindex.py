"""Re-index an unchanged tree of N small files: what `retrievo index` costs when nothing changed."""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import peak_rss_mb, synthetic_texts
from retrievo.config import Config
from retrievo.engine import Engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    print(f"# {platform.machine()}, Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}")
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "tree"
        for i, text in enumerate(synthetic_texts(args.files, words=80)):
            path = tree / f"dir{i % 100:03d}" / f"note{i}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# Note {i}\n\n{text}\n")
        # Keyword-only: the first pass's embedding time is not what this measures.
        engine = Engine(Config(db=Path(folder) / "tree.db", embedder="none"))
        started = time.perf_counter()
        first = engine.index([tree])
        first_s = time.perf_counter() - started
        started = time.perf_counter()
        again = engine.index([tree])
        again_s = time.perf_counter() - started
        engine.close()
    assert again.documents_unchanged == args.files and again.chunks_written == 0
    print(
        f"{args.files} files | first index {first_s:.1f} s ({first.chunks_written} chunks) | "
        f"unchanged re-index {again_s:.2f} s | peak RSS {peak_rss_mb():.0f} MB"
    )


if __name__ == "__main__":
    main()
