"""What `get_context` gives for code questions with its defaults (seed 002's budget manager): how many
code blocks and how many tokens of evidence, over click's source, tests and docs (../shared/data).

    .venv/bin/python -m benchmarks.code_search.context [--db /tmp/click-context.db] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from retrievo import Config, Engine

CLICK = Path(__file__).resolve().parents[3] / "shared" / "data" / "code" / "click"
QUESTIONS = [
    "how does click parse command line options",
    "where are environment variables read for option defaults",
    "how is the help text of a command formatted",
    "how does a group dispatch to its subcommands",
    "how are boolean flags and their secondary names handled",
]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", type=Path, default=Path("/tmp/click-context.db"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with Engine(Config(db=args.db)) as engine:
        if not args.db.exists() or not engine.status().collections:
            started = time.perf_counter()
            engine.index([CLICK / "src", CLICK / "tests", CLICK / "docs"])
            print(f"indexed in {time.perf_counter() - started:.0f} s")
        rows = []
        for question in QUESTIONS:
            assembled = engine.context(question)  # the defaults: 4,000 tokens, one neighbour each side
            code = [s for s in assembled.sources if s.kind == "code"]
            rows.append({"question": question, "tokens": assembled.tokens, "sources": len(assembled.sources),
                         "code_sources": len(code), "code_files": len({s.path for s in code})})  # fmt: skip
            print(f"{assembled.tokens:5} tokens, {len(assembled.sources):2} sources, {len(code):2} code "
                  f"({len({s.path for s in code})} files)  {question}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "questions": rows}, indent=2))


if __name__ == "__main__":
    main()
