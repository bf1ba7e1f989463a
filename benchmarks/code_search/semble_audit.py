"""What semble's annotations allow at each pin, and whether its published figures fit inside it (issue 68).

No index and no ranking: the files of ../shared/data/semble at their pins, the annotations, and semble's
published figures (``manifest.json``). For every query:

- **its ceiling**: the NDCG@10 a perfect ranking would score, under ``semble.py``'s protocol: the targets that
  are files at the pin at places 1, 2, …, over the ideal of min(10, targets). A query naming only files
  absent at the pin (chi's ``middleware/cors.go``) has a ceiling of 0;
- the targets that **forward** (define nothing and hold at most ``FORWARDING_LINES`` lines of code: fmtlib's
  ``core.h``, an include; fastapi's ``websockets.py``, a re-export): what a query asks is elsewhere;
- for a **symbol** query (one name): the files that *define* the name, as retrievo's own parser reads every
  code file under the benchmark root (``ingest/code/symbols.py``; a C++ template's specialisations define
  it too: ``formatter<…>``), and whether a target is among them. A target that does not define the name
  (fmtlib's ``basic_format_args`` annotated as ``core.h``, which includes ``base.h``, where it is defined;
  chi's ``Router`` as ``mux.go``, whose ``Mux`` implements the interface ``chi.go`` defines) is scored full
  only by a ranking that puts another file above the definition.

For each repository and category the mean ceiling stands beside semble's published figure: a published
figure *above* the ceiling cannot be had with these annotations at this pin (it was measured on other
annotations or another checkout), so it is no measure to stand at or above.

    .venv/bin/python -m benchmarks.code_search.semble_audit [--repos chi,phoenix] [--results RUN.json] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.code_search.semble import CATEGORIES, DATA, K, Task, load_tasks, ndcg_at_k, path_matches
from retrievo.ingest.code.languages import language_of
from retrievo.ingest.code.symbols import parse_symbols

TOLERANCE = 1e-9  # a published figure above the ceiling by more than this cannot be had
FORWARDING_LINES = (
    10  # a file defining nothing in at most this many lines of code forwards (an include, re-exports)
)
_COMMENT = re.compile(r"\s*(//|/\*|\*|--)")  # a line of comment in the C family, Haskell, Lua
_HASH_COMMENTS = frozenset({"python", "ruby", "shell", "elixir"})  # ``#`` starts a comment (not an include)


@dataclass(frozen=True)
class Audit:
    """One query: its ceiling, the targets absent at the pin, and for a symbol query where it is defined."""

    query: str
    category: str
    ceiling: float
    absent: tuple[str, ...]
    forwarding: tuple[str, ...]  # targets at the pin that forward (fmtlib's ``core.h``: an include)
    forwarding_only: bool  # every target forwards: what the query asks is in none of them
    defined_in: tuple[str, ...] = ()  # a symbol query's name: the files defining it (repository-relative)
    # a symbol query: a target defines the name, or is named after it, or no file defines it (a re-export of
    # another package's: ``IntoResponse``); False: only other files define it. None: not a symbol query
    target_defines: bool | None = None


def ceiling(task: Task, repo_root: Path) -> tuple[float, tuple[str, ...]]:
    """The best NDCG@10 a ranking can score: every target that is a file at the pin, first."""
    absent = tuple(t.path for t in task.targets if not (repo_root / t.path).is_file())
    present = len(task.targets) - len(absent)
    return ndcg_at_k(list(range(1, min(present, K) + 1)), len(task.targets)), absent


def definitions(repo_root: Path, benchmark_root: str) -> tuple[dict[str, set[str]], set[str]]:
    """Every name a code file under the benchmark root defines -> the files defining it (repository-relative),
    and the files that forward (define nothing in at most ``FORWARDING_LINES`` lines of code). A name is read
    without its template arguments (``formatter<T, Char>``: a specialisation)."""
    defined: dict[str, set[str]] = {}
    forwarding: set[str] = set()
    for path in sorted((repo_root / benchmark_root).rglob("*")):
        if not path.is_file() or language_of(path.suffix) is None:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        language = language_of(path.suffix, text)  # a header read as the language it holds
        if language is None:
            continue
        symbols = parse_symbols(text, language, path.stem)
        where = str(path.relative_to(repo_root))
        for symbol in symbols or ():
            name = symbol.name.split("<", 1)[0].strip() or symbol.name  # Ruby's ``<=>`` stays itself
            defined.setdefault(name, set()).add(where)
        if symbols == [] and code_lines(text, language) <= FORWARDING_LINES:
            forwarding.add(where)
    return defined, forwarding


def code_lines(text: str, language: str) -> int:
    """The lines that are neither blank nor a comment's."""
    hashes = language in _HASH_COMMENTS
    return sum(
        1
        for line in text.splitlines()
        if line.strip() and not _COMMENT.match(line) and not (hashes and line.lstrip().startswith("#"))
    )


def audit(repo: str, spec: dict[str, Any]) -> dict[str, Any]:
    repo_root = DATA / "repos" / repo
    tasks = load_tasks(repo)
    defined, forwards = definitions(repo_root, spec["benchmark_root"])
    rows: list[Audit] = []
    for task in tasks:
        best, absent = ceiling(task, repo_root)
        forwarding = tuple(t.path for t in task.targets if t.path in forwards)
        only = len(forwarding) == len(task.targets)
        if task.category != "symbol":
            rows.append(Audit(task.query, task.category, best, absent, forwarding, only))
            continue
        name = re.split(r"::|\.", task.query.strip())[-1]  # ``Sinatra::Base``: Base
        where = tuple(sorted(defined.get(name, ())))
        named = any(Path(t.path).stem.lower() == name.lower() for t in task.targets)  # a module of that name
        hits = named or not where or any(path_matches(w, t.path) for w in where for t in task.targets)
        rows.append(Audit(task.query, task.category, best, absent, forwarding, only, where, hits))
    published = spec["semble_published"]
    by_category: dict[str, dict[str, Any]] = {}
    for category in CATEGORIES:
        mine = [r.ceiling for r in rows if r.category == category]
        if not mine:
            continue
        figure = published["by_category"].get(category)
        top = statistics.mean(mine)
        by_category[category] = {
            "queries": len(mine),
            "ceiling": top,
            "semble": figure,
            "semble_above_ceiling": figure is not None and figure > top + TOLERANCE,
        }
    top = statistics.mean(r.ceiling for r in rows)
    return {
        "language": spec["language"],
        "queries": len(rows),
        "ceiling": top,
        "semble": published["ndcg10"],
        "semble_above_ceiling": published["ndcg10"] > top + TOLERANCE,
        "by_category": by_category,
        "absent": [{"q": r.query, "c": r.category, "absent": list(r.absent)} for r in rows if r.absent],
        "forwarding": [
            {"q": r.query, "c": r.category, "forwards": list(r.forwarding), "every_target": r.forwarding_only}
            for r in rows
            if r.forwarding
        ],
        "not_defining": [
            {"q": r.query, "targets": [t.path for t in task.targets], "defined_in": list(r.defined_in)}
            for r, task in zip(rows, tasks, strict=True)
            if r.target_defines is False
        ],
    }


def sound_means(results: dict[str, Any], audits: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A harness run's (``semble.py --json``) NDCG@10 over the *sound* queries: every target a file at the pin,
    and a symbol query's target defining the name where a file does; again without the queries whose every
    target forwards (``forwarding``). Means by repository, then by language and category over them."""
    out: dict[str, Any] = {}
    for label, forwarding in (("sound", False), ("sound_not_forwarding", True)):
        by_repo: dict[str, float] = {}
        by_category: dict[str, list[float]] = {}
        for repo, run in results["repositories"].items():
            a = audits[repo]
            unsound = {r["q"] for r in a["absent"]} | {r["q"] for r in a["not_defining"]}
            if forwarding:
                unsound |= {r["q"] for r in a["forwarding"] if r["every_target"]}
            rows = [row for row in run["rows"] if row["q"] not in unsound]
            if not rows:
                continue  # no query of the repository is sound: it has no figure here
            by_repo[repo] = statistics.mean(row["ndcg10"] for row in rows)
            for category in CATEGORIES:
                mine = [row["ndcg10"] for row in rows if row["c"] == category]
                if mine:
                    by_category.setdefault(category, []).append(statistics.mean(mine))
        languages: dict[str, list[float]] = {}
        for repo, value in by_repo.items():
            languages.setdefault(results["repositories"][repo]["language"], []).append(value)
        out[label] = {
            "mean": statistics.mean(by_repo.values()),
            "by_language": {lang: statistics.mean(v) for lang, v in sorted(languages.items())},
            "by_category": {c: statistics.mean(v) for c, v in by_category.items()},
            "by_repository": by_repo,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repos", default="", help="comma-separated (default: all 12)")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument(
        "--results", type=Path, help="a harness run (semble.py --json): its means over sound queries"
    )
    args = parser.parse_args()
    manifest = json.loads((DATA / "manifest.json").read_text())["repositories"]
    names = [n for n in args.repos.split(",") if n] or sorted(manifest)
    if unknown := sorted(set(names) - set(manifest)):
        parser.error(f"unknown repositories {unknown}; choose from {', '.join(sorted(manifest))}")
    results = {name: audit(name, manifest[name]) for name in names}
    print("| repository | language | ceiling | semble | " + " | ".join(f"{c} ceiling / semble" for c in CATEGORIES)
          + " |")  # fmt: skip
    print("|---|---|---|---|" + "---|" * len(CATEGORIES))
    for name, r in results.items():
        cells = []
        for c in CATEGORIES:
            f = r["by_category"].get(c)
            cells.append(
                "–" if f is None else f"{f['ceiling']:.3f} / " + ("–" if f["semble"] is None else f"{f['semble']:.3f}") + (" **above**" if f["semble_above_ceiling"] else "")
            )  # fmt: skip
        mark = " **above**" if r["semble_above_ceiling"] else ""
        print(
            f"| {name} | {r['language']} | {r['ceiling']:.3f} | {r['semble']:.3f}{mark} | "
            + " | ".join(cells)
            + " |"
        )
    print(f"mean ceiling {statistics.mean(r['ceiling'] for r in results.values()):.3f}")
    for name, r in results.items():
        for row in r["absent"]:
            print(f"{name}: absent at the pin {', '.join(row['absent'])} ({row['c']}: {row['q']!r})")
        for row in r["forwarding"]:
            print(
                f"{name}: target forwards (defines nothing) {', '.join(row['forwards'])} ({row['c']}: {row['q']!r})"
            )
        for row in r["not_defining"]:
            print(f"{name}: symbol {row['q']!r} annotated {', '.join(row['targets'])}; defined in "
                  + (", ".join(row["defined_in"]) or "no file"))  # fmt: skip
    payload: dict[str, Any] = {
        "command": "python -m benchmarks.code_search.semble_audit"
        + "".join(f" {k} {v}" for k, v in (("--repos", args.repos), ("--results", args.results)) if v),
        "repositories": results,
    }
    if args.results:
        run = json.loads(args.results.read_text())
        if missing := sorted(set(run["repositories"]) - set(results)):
            parser.error(f"--results holds repositories not audited here: {missing}")
        payload["results"] = {"file": str(args.results), **sound_means(run, results)}
        for label, figures in payload["results"].items():
            if label == "file":
                continue
            print(f"{args.results.name}, {label.replace('_', ' ')}: mean {figures['mean']:.3f}; "
                  + ", ".join(f"{k} {v:.3f}" for k, v in figures["by_category"].items()) + "; "
                  + ", ".join(f"{k} {v:.3f}" for k, v in figures["by_language"].items()))  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(payload, indent=1) + "\n")


if __name__ == "__main__":
    main()
