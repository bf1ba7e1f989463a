"""Tokens to the answer: recall of the gold file against the tokens an agent reads, per tool (issue 46).

Questions: the 31 issues of ../shared/data/swe_loc_dev (issue text → the files the fix edited; the indexes
``benchmarks/code_search/swe_locate.py --keep DIR`` made) and ``CLICK_QUESTIONS`` (short questions over click, written
for this benchmark: the file that implements the answer). For each tool, what it returns is read in order
and counted in the bundled model's tokens; recall at B = the share of questions whose first gold file
appears within B tokens:

- ``search`` (limit 20): each hit as the MCP tool returns it by default (``detail: brief``: path, lines,
  symbol, relevance, a 120-character excerpt), one JSON object per hit;
- ``search, group_by file``: the same, one row per file (``group_by: file``: its other passages named);
- ``search, full text`` (limit 20): each hit's path line and whole text (``detail: full``, or the CLI);
- ``locate`` (limit 10): each file's line as the MCP tool returns it (path, role, why, symbols);
- ``get_context``: asked with ``max_tokens`` = B, a hit when a gold file is among its sources;
- ``BM25 files``: BM25 (k1 1.2, b 0.75) over whole files, each file read whole (an agent that greps and
  opens files).

    .venv/bin/python -m benchmarks.code_search.tokens_to_answer --click /tmp/click.db [--swe /tmp/swe-keep] [--json F]
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from retrievo import Config, Engine
from retrievo.embed.tokens import TokenCounter
from retrievo.search import grouping
from retrievo.surfaces.mcp.answers import search_output
from retrievo.surfaces.mcp.scope import MAX_LIMIT

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
CLICK = DATA / "code" / "click"
BUDGETS = (500, 1000, 2000, 4000)
CLICK_QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("where are command line options parsed", ("src/click/parser.py",)),
    ("how does click parse command line options", ("src/click/parser.py", "src/click/core.py")),
    ("where are environment variables read for option defaults", ("src/click/core.py",)),
    ("how is the help text of a command formatted", ("src/click/formatting.py",)),
    ("how does a group dispatch to its subcommands", ("src/click/core.py",)),
    ("how are boolean flags and their secondary names handled", ("src/click/core.py",)),
    ("where is shell completion for bash generated", ("src/click/shell_completion.py",)),
    ("how does the progress bar render", ("src/click/_termui_impl.py",)),
    ("how are file arguments opened lazily", ("src/click/utils.py", "src/click/types.py")),
    ("where is the test runner that invokes commands in isolation", ("src/click/testing.py",)),
    ("how is a prompt with hidden input implemented", ("src/click/termui.py",)),
    ("where are parameter values converted to int ranges", ("src/click/types.py",)),
    ("how are usage errors shown to the user", ("src/click/exceptions.py",)),
    ("where is the pass_context decorator defined", ("src/click/decorators.py",)),
    ("how does click open text in an external editor", ("src/click/_termui_impl.py",)),
    ("how is help text wrapped to the terminal width", ("src/click/_textwrap.py", "src/click/formatting.py")),
    ("Command.parse_args", ("src/click/core.py",)),
    (
        "where is ANSI color handled on the Windows console",
        ("src/click/_winconsole.py", "src/click/_compat.py"),
    ),
]
Reader = Callable[[Engine, str, Path], list[tuple[str, int]]]  # (relative path, tokens) in reading order
_WORD = re.compile(r"[A-Za-z0-9_]+")
tokens = TokenCounter()


def relative(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return path


def brief_reader(engine: Engine, question: str, root: Path, by_file: bool = False) -> list[tuple[str, int]]:
    result = engine.search(question, limit=MAX_LIMIT if by_file else 20)
    output = search_output(
        result, question, "brief", files=grouping.by_file(result.hits, 20) if by_file else None
    )
    return [(relative(hit.path, root), tokens.count(hit.model_dump_json(exclude_none=True)))
            for hit in output.results]  # fmt: skip


def full_reader(engine: Engine, question: str, root: Path) -> list[tuple[str, int]]:
    return [(relative(h.chunk.path, root),
             tokens.count(f"{h.chunk.path}:{h.chunk.line_start}-{h.chunk.line_end}\n{h.chunk.text}"))
            for h in engine.search(question, limit=20).hits]  # fmt: skip


def locate_reader(engine: Engine, question: str, root: Path) -> list[tuple[str, int]]:
    found = []
    for f in engine.locate(question, limit=10):
        line = json.dumps(
            {
                "path": f.path,
                "score": round(f.score, 3),
                "role": f.role,
                "why": list(f.why),
                "symbols": [f"{e.symbol or 'passage'} {e.line_start}-{e.line_end}" for e in f.evidence],
            }
        )
        found.append((relative(f.path, root), tokens.count(line)))  # fmt: skip
    return found


class FilesBM25:
    """BM25 over whole files under a root (the text files the index read), each file read whole."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = [
            p for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in {".py", ".rst", ".md", ".txt"}
        ]
        self.terms = [
            Counter(w.lower() for w in _WORD.findall(p.read_text(errors="replace"))) for p in self.files
        ]
        self.lengths = [sum(t.values()) for t in self.terms]
        self.df: Counter[str] = Counter(w for t in self.terms for w in t)

    def read(self, question: str) -> list[tuple[str, int]]:
        n, avg = len(self.files), sum(self.lengths) / max(1, len(self.files))
        words = {w.lower() for w in _WORD.findall(question)}
        scored = []
        for i, t in enumerate(self.terms):
            s = sum(math.log(1 + (n - self.df[w] + 0.5) / (self.df[w] + 0.5)) * t[w] * 2.2
                    / (t[w] + 1.2 * (0.25 + 0.75 * self.lengths[i] / avg)) for w in words if w in t)  # fmt: skip
            if s > 0:
                scored.append((s, i))
        scored.sort(reverse=True)
        return [(str(self.files[i].relative_to(self.root)), tokens.count(self.files[i].read_text(errors="replace")))
                for _, i in scored[:20]]  # fmt: skip


def reached(read: Sequence[tuple[str, int]], gold: set[str], budget: int) -> bool:
    spent = 0
    for path, cost in read:
        spent += cost
        if spent > budget:
            return False
        if path in gold:
            return True
    return False


def score(
    engine: Engine, root: Path, questions: Sequence[tuple[str, set[str]]]
) -> dict[str, list[list[bool]]]:
    bm25 = FilesBM25(root)
    out: dict[str, list[list[bool]]] = {
        name: [] for name in ("search", "search, group_by file", "search, full text", "locate", "get_context",
                              "BM25 files")
    }  # fmt: skip
    readers: dict[str, Callable[[str], list[tuple[str, int]]]] = {
        "search": lambda q: brief_reader(engine, q, root),
        "search, group_by file": lambda q: brief_reader(engine, q, root, by_file=True),
        "search, full text": lambda q: full_reader(engine, q, root),
        "locate": lambda q: locate_reader(engine, q, root),
        "BM25 files": bm25.read,
    }
    for question, gold in questions:
        for name, read in readers.items():
            order = read(question)
            out[name].append([reached(order, gold, b) for b in BUDGETS])
        out["get_context"].append([
            any(relative(s.path, root) in gold for s in engine.context(question, max_tokens=b).sources) for b in BUDGETS
        ])  # fmt: skip
    return out


def table(label: str, results: dict[str, list[list[bool]]]) -> dict[str, Any]:
    rows = {}
    for tool, per_question in results.items():
        rows[tool] = {str(b): round(sum(q[i] for q in per_question) / max(1, len(per_question)), 3)
                      for i, b in enumerate(BUDGETS)}  # fmt: skip
        print(f"{label:11} {tool:22} " + "  ".join(f"{b:>5}: {v:.2f}" for b, v in rows[tool].items()))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--click", type=Path, required=True, help="index of ../shared/data/code/click (collection click)"
    )
    parser.add_argument("--swe", type=Path, help="benchmarks/code_search/swe_locate.py's --keep folder")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report: dict[str, Any] = {"budgets": BUDGETS}
    with Engine(Config(db=args.click, collection="click")) as engine:
        questions = [(q, set(files)) for q, files in CLICK_QUESTIONS]
        report["click"] = table("click", score(engine, CLICK.resolve(), questions))
    if args.swe:
        merged: dict[str, list[list[bool]]] = {}
        for line in (DATA / "swe_loc_dev" / "instances.jsonl").read_text().splitlines():
            instance = json.loads(line)
            name, repo = instance["instance_id"], instance["repo"].split("/")[1]
            collection = name.replace("__", "-").replace(".", "-")
            with Engine(Config(db=args.swe / f"{repo}.db", collection=collection)) as engine:
                got = score(engine, (args.swe / "trees" / name).resolve(),
                            [(instance["problem_statement"], set(instance["gold_files"]))])  # fmt: skip
            for tool, rows in got.items():
                merged.setdefault(tool, []).extend(rows)
        report["swe_loc_dev"] = table("swe_loc_dev", merged)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
