"""A new user's run on real documentation (issue 15): index, re-index unchanged, look at the citations.

Give folders of real docs (e.g. Flask's and gunicorn's .rst from their PyPI source archives, click's
Markdown from ../shared/data/code/click/docs). Reports files, first index and unchanged re-index time,
how many reST/AsciiDoc/notebook documents got a title from their content (not their file name) and a
heading path, and a few citations as a user sees them.

    pip download flask==3.0.3 gunicorn==23.0.0 --no-binary :all: --no-deps -d /tmp/sd   # then untar
    .venv/bin/python -m benchmarks.scale.friction /tmp/sd/flask-3.0.3/docs /tmp/sd/gunicorn-23.0.0/docs \
        ../shared/data/code/click/docs
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from retrievo import Config, Engine
from retrievo.ingest.loaders import load_file
from retrievo.models import LoadedDocument

QUERIES = ["deploy behind a proxy", "application factory pattern", "worker timeout", "option with a prompt"]


def main() -> None:
    roots = [Path(p).resolve() for p in sys.argv[1:]]
    db = Path(tempfile.mkdtemp()) / "friction.db"
    with Engine(Config(db=db)) as engine:
        started = time.perf_counter()
        first = engine.index(roots)
        first_s = time.perf_counter() - started
        started = time.perf_counter()
        again = engine.index(roots)
        again_s = time.perf_counter() - started
        print(f"files seen {first.files_seen}, documents {first.documents_added}, chunks {first.chunks_written}, "
              f"skipped {len(first.skipped)}; first index {first_s:.1f} s; unchanged re-index {again_s:.2f} s "
              f"({again.documents_unchanged} unchanged)")  # fmt: skip
        markup = [d for d in engine.documents() if Path(d.path).suffix in (".rst", ".adoc", ".ipynb")]
        loaded = [load_file(Path(d.path), 10**8) for d in markup]
        headed = sum(
            1
            for doc in loaded
            if isinstance(doc, LoadedDocument) and any(s.heading_path for s in doc.sections)
        )
        with_path = sum(1 for d in markup if any(" > " in c.context for c in engine.chunks(d.document_id)))
        print(f"reST/AsciiDoc/notebooks: {len(markup)}; title and sections from their headings {headed} "
              f"(the rest have no heading: file-name title); chunks citing a heading path in {with_path}")  # fmt: skip
        for query in QUERIES:
            hit = engine.search(query, limit=1).hits[0].chunk
            print(f"  {query!r}: [1] {hit.context} — {hit.path}:{hit.line_start}-{hit.line_end}")


if __name__ == "__main__":
    main()
