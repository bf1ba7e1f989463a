"""bm25s over a repository's ``.py`` files, one document per file (issue 35's "plain BM25" reference).

Runs under the peers' interpreter (``.peers/bin/python``, benchmarks/peers/requirements.txt). Reads JSON lines
``{"root": DIR, "query": TEXT}`` on stdin; writes one JSON list per line: the first 10 files, relative to root.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import bm25s
import Stemmer


def main() -> None:
    stemmer = Stemmer.Stemmer("english")
    for line in sys.stdin:
        asked = json.loads(line)
        root = Path(asked["root"])
        files = sorted(p for p in root.rglob("*.py") if p.is_file())
        texts = [p.read_text(errors="replace") for p in files]
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
        )
        tokens = bm25s.tokenize([asked["query"]], stopwords="en", stemmer=stemmer, show_progress=False)
        found, _ = retriever.retrieve(tokens, k=min(10, len(files)), show_progress=False, n_threads=1)
        print(json.dumps([str(files[i].relative_to(root)) for i in found[0]]), flush=True)


if __name__ == "__main__":
    main()
