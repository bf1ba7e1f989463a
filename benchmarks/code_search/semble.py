"""semble's code-search benchmark, its protocol exactly, over the 12 repositories in ../shared/data/semble.

MinishLab/semble's benchmark runner (its ``run_benchmark.py``, ``metrics.py`` and ``data.py``): each repository's
benchmark root is indexed whole; every query is asked once and its first 10 chunks kept; a query's targets
are its relevant and secondary ones, each counted; a target's rank is that of the first chunk that covers it
(either path a suffix of the other; the lines overlap when the target has lines); NDCG@10 with binary gains
(two targets covered first by one chunk fill one place), over an ideal of min(10, targets) places; a
repository's score is the mean over its queries, a category's the mean over the repositories that have it,
a language's and the summary the mean over repositories. semble's own figures for each repository (from
``manifest.json``) stand beside ours.

Two ways of asking, both at their defaults: ``search`` (hybrid, 10 chunks) and ``locate`` (10 files, a
target covered by its file whatever its lines; the targets are the distinct files named, so one file named
twice is one target). ``--modes keyword,semantic`` ask ``search`` in each arm's mode alone too (what hybrid
adds over its best arm).

A query naming a file that is not in the repository at its pin (the annotations were written against other
snapshots: chi's ``cors.go``, ``redirect.go``, phoenix's ``template.ex``) cannot score full marks, nor
anything when it names no other; each row says whether it is ``answerable`` (every target a file at the
pin), and each mean is given again over the answerable queries alone.

Every repository is one SQLite index under ``--work`` (kept: a second run reuses it and reports the seconds
its build took; ``--rebuild`` builds again). The bundled model; nothing is downloaded. ``--docs DIR``: as a
user indexes a repository, its documentation too (``DIR/<repository>/``, written by ``semble_docs.py`` from
the repository's history at its pin; the code's index copied, the documentation indexed into it:
``<repository>+docs.db``); the targets stay code files.

    .venv/bin/python -m benchmarks.code_search.semble [--repos express,sinatra] [--modes search,locate]
        [--work /tmp/semble] [--rebuild] [--docs /tmp/semble-docs] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrievo import Config, Engine

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "semble"
K = 10
CATEGORIES = ("symbol", "semantic", "architecture")
MODES = ("search", "locate", "keyword", "semantic")
ARMS = ("keyword", "semantic")  # ``search`` in that mode alone: an arm without the other (or fusion)


@dataclass(frozen=True)
class Target:
    """A file, or lines of it (1-based, inclusive), relative to the repository's root."""

    path: str
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True)
class Task:
    query: str
    category: str
    targets: tuple[Target, ...]  # relevant, then secondary


def path_matches(found: str, wanted: str) -> bool:
    """semble's ``data.path_matches``: equal, or either path a suffix of the other at a ``/``."""
    found, wanted = found.replace("\\", "/"), wanted.replace("\\", "/")
    return found == wanted or found.endswith(f"/{wanted}") or wanted.endswith(f"/{found}")


def covers(path: str, start: int, end: int, target: Target) -> bool:
    """semble's ``data.target_matches_location``: the path matches and, when the target has lines, they overlap."""
    if not path_matches(path, target.path):
        return False
    if target.start is None or target.end is None:
        return True
    return not (end < target.start or start > target.end)


def ndcg_at_k(ranks: list[int], targets: int, k: int = K) -> float:
    """semble's ``metrics.ndcg_at_k``: binary gains at the 1-based ``ranks``, ideal min(k, targets) places."""
    if targets == 0:
        return 0.0
    gains = [0] * k
    for rank in ranks:
        if 1 <= rank <= k:
            gains[rank - 1] = 1

    def dcg(values: list[int]) -> float:
        return sum(value / math.log2(i + 2) for i, value in enumerate(values))

    return dcg(gains) / dcg([1] * min(k, targets))


def first_rank(found: list[tuple[str, int, int]], target: Target) -> int | None:
    """semble's ``metrics.target_rank``: the 1-based rank of the first (path, start, end) covering the target."""
    return next((rank for rank, (p, s, e) in enumerate(found, 1) if covers(p, s, e, target)), None)


def _target(raw: str | list[Any]) -> Target:
    return Target(raw) if isinstance(raw, str) else Target(str(raw[0]), int(raw[1]), int(raw[2]))


def load_tasks(repo: str) -> list[Task]:
    rows = [
        json.loads(line) for line in (DATA / "annotations" / f"{repo}.jsonl").read_text().splitlines() if line
    ]
    return [Task(row["q"], row["c"], tuple(_target(t) for t in [*row["r"], *row["s"]])) for row in rows]


def relative(path: str, repo_root: Path) -> str:
    """A chunk's path as the annotations write it: relative to the repository's root (not the benchmark root)."""
    absolute = Path(path)
    return str(absolute.relative_to(repo_root)) if absolute.is_relative_to(repo_root) else path


def open_index(
    repo: str, root: Path, work: Path, rebuild: bool, docs: Path | None = None
) -> tuple[Config, dict[str, Any]]:
    """The repository's index (built unless kept from an earlier run) and how its build went. With ``docs``
    (its documentation's folder): the code's index copied, the documentation indexed into it as well."""
    name = f"{repo}+docs" if docs else repo
    # the environment's settings (RETRIEVO_EMBEDDER=static: the static model), this index and collection
    config = Config.from_env(db=work / f"{name}.db", collection=repo)
    built = work / f"{name}.build.json"
    if built.exists() and config.db.exists() and not rebuild:
        return config, json.loads(built.read_text()) | {"reused": True}
    for stale in [built, *work.glob(f"{name}.db*")]:  # the database, its journal and side indexes
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink(missing_ok=True)
    code: dict[str, Any] = {}
    if docs is not None:
        _, code = open_index(repo, root, work, rebuild)
        for part in work.glob(f"{repo}.db*"):
            if not part.name.endswith(".lock"):
                copy = work / part.name.replace(f"{repo}.db", f"{name}.db", 1)
                shutil.copytree(part, copy) if part.is_dir() else shutil.copy2(part, copy)
    with Engine(config) as engine:
        started = time.perf_counter()
        report = engine.index([docs if docs is not None else root])
        seconds = time.perf_counter() - started
        assert report.embed_error is None, report.embed_error
    build = {"index_s": round(seconds, 2), "files": report.documents_added, "chunks": report.chunks_written}
    if code:  # the code's build, the documentation's beside it
        build = {"index_s": code["index_s"], "docs_index_s": build["index_s"], "docs_files": build["files"],
                 "docs_chunks": build["chunks"], "files": code["files"], "chunks": code["chunks"]}  # fmt: skip
    built.write_text(json.dumps(build))
    return config, build | {"reused": False}


def search_once(
    engine: Engine, repo: str, repo_root: Path, task: Task, mode: str | None = None
) -> tuple[float, list[int], list[tuple[str, int, int]]]:
    """One query asked of ``search`` at its defaults (or in ``mode``: ``keyword``, ``semantic``): its
    NDCG@10, its targets' ranks, the chunks found."""
    asked = {"mode": mode} if mode else {}
    hits = engine.search(task.query, collection=repo, limit=K, **asked).hits[:K]
    found = [(relative(h.chunk.path, repo_root), h.chunk.line_start, h.chunk.line_end) for h in hits]
    ranks = [r for t in task.targets if (r := first_rank(found, t)) is not None]
    return ndcg_at_k(ranks, len(task.targets)), ranks, found


def evaluate(
    repo: str,
    spec: dict[str, Any],
    work: Path,
    rebuild: bool,
    modes: tuple[str, ...],
    docs: Path | None = None,
) -> dict[str, Any]:
    repo_root = DATA / "repos" / repo
    root = (repo_root / spec["benchmark_root"]).resolve()
    config, build = open_index(repo, root, work, rebuild, docs)
    tasks = load_tasks(repo)
    rows: list[dict[str, Any]] = []
    took: dict[str, list[float]] = {mode: [] for mode in modes}
    with Engine(config) as engine:
        engine.warm_up()
        for task in tasks:
            row: dict[str, Any] = {"q": task.query, "c": task.category, "targets": len(task.targets)}
            # every target a file of the repository at its pin (the annotations name some that are not)
            row["answerable"] = all((repo_root / t.path).is_file() for t in task.targets)
            if "search" in modes:
                started = time.perf_counter()
                ndcg, ranks, found = search_once(engine, repo, repo_root, task)
                took["search"].append((time.perf_counter() - started) * 1000)
                row |= {"ndcg10": ndcg, "ranks": ranks, "top": [f"{p}:{s}-{e}" for p, s, e in found]}
            for arm in (m for m in ARMS if m in modes):
                started = time.perf_counter()
                ndcg, ranks, _ = search_once(engine, repo, repo_root, task, arm)
                took[arm].append((time.perf_counter() - started) * 1000)
                row |= {f"{arm}_ndcg10": ndcg, f"{arm}_ranks": ranks}
            if "locate" in modes:
                started = time.perf_counter()
                files = [
                    relative(f.path, repo_root) for f in engine.locate(task.query, collection=repo, limit=K)
                ]
                took["locate"].append((time.perf_counter() - started) * 1000)
                wanted = list(dict.fromkeys(t.path for t in task.targets))
                ranks = [
                    r for w in wanted if (r := first_rank([(f, 0, 0) for f in files], Target(w))) is not None
                ]
                row |= {
                    "locate_ndcg10": ndcg_at_k(ranks, len(wanted)),
                    "locate_ranks": ranks,
                    "locate_top": files,
                }
            rows.append(row)
        chunks = next(c.chunks for c in engine.status().collections if c.name == repo)
    result: dict[str, Any] = {
        "language": spec["language"],
        "benchmark_root": spec["benchmark_root"],
        "queries": len(tasks),
        "chunks": chunks,
        "index_s": build["index_s"],
        "index_reused": build["reused"],
        **({"docs_files": build["docs_files"], "docs_chunks": build["docs_chunks"]} if docs else {}),
    }
    for mode in modes:
        key = "ndcg10" if mode == "search" else f"{mode}_ndcg10"
        result[mode] = {
            "ndcg10": statistics.mean(r[key] for r in rows),
            "by_category": {
                c: statistics.mean(r[key] for r in rows if r["c"] == c)
                for c in CATEGORIES
                if any(r["c"] == c for r in rows)
            },
            "p50_ms": round(statistics.median(took[mode]), 1),
        }
        answerable = [r[key] for r in rows if r["answerable"]]
        result[mode]["answerable"] = statistics.mean(answerable) if answerable else None
    result["answerable"] = sum(r["answerable"] for r in rows)
    published = spec["semble_published"]
    result["semble"] = {k: published[k] for k in ("ndcg10", "by_category", "chunks", "index_ms")}
    result["rows"] = rows
    return result


def mean_over(results: dict[str, dict[str, Any]], value: Any) -> float | None:
    values = [v for r in results.values() if (v := value(r)) is not None]
    return statistics.mean(values) if values else None


def summarise(results: dict[str, dict[str, Any]], modes: tuple[str, ...]) -> dict[str, Any]:
    """semble's ``_save_results``: every figure a mean over repositories (a language's over its own)."""

    def figures(group: dict[str, dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"repos": len(group)}
        for mode in modes:
            out[mode] = {"ndcg10": mean_over(group, lambda r, m=mode: r[m]["ndcg10"])} | {
                c: mean_over(group, lambda r, m=mode, c=c: r[m]["by_category"].get(c)) for c in CATEGORIES
            }
            # the same mean over the queries whose targets are all files at the pin
            out[mode]["answerable"] = mean_over(group, lambda r, m=mode: r[m]["answerable"])
        out["semble"] = {"ndcg10": mean_over(group, lambda r: r["semble"]["ndcg10"])} | {
            c: mean_over(group, lambda r, c=c: r["semble"]["by_category"].get(c)) for c in CATEGORIES
        }
        out["index_s"] = mean_over(group, lambda r: r["index_s"])
        out["semble_index_s"] = mean_over(group, lambda r: r["semble"]["index_ms"] / 1000)
        return out

    languages = sorted({r["language"] for r in results.values()})
    return {
        "summary": figures(results),
        "by_language": {
            lang: figures({n: r for n, r in results.items() if r["language"] == lang}) for lang in languages
        },
    }


def _f(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def table(results: dict[str, dict[str, Any]], summary: dict[str, Any], modes: tuple[str, ...]) -> str:
    locate = "locate" in modes
    head = ["repository", "language", "queries", "retrievo NDCG@10", "semble", "ratio",
            "symbol/semantic/architecture (semble)", *(["locate NDCG@10"] if locate else []),
            "chunks (semble)", "index s (semble)"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def row(name: str, language: str, queries: str, f: dict[str, Any], chunks: str, index: str) -> None:
        ours, theirs = f.get("search", {}).get("ndcg10"), f["semble"]["ndcg10"]
        ratio = _f(ours / theirs, 2) if ours is not None and theirs else "–"
        cats = "/".join(_f(f.get("search", {}).get(c), 2) for c in CATEGORIES)
        cats += " (" + "/".join(_f(f["semble"].get(c), 2) for c in CATEGORIES) + ")"
        cells = [name, language, queries, _f(ours), _f(theirs), ratio, cats,
                 *([_f(f["locate"]["ndcg10"])] if locate else []), chunks, index]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")

    for name, r in results.items():
        flat = {m: r[m]["ndcg10"] for m in modes}
        f = {m: {"ndcg10": flat[m]} | r[m]["by_category"] for m in modes}
        f["semble"] = {"ndcg10": r["semble"]["ndcg10"]} | r["semble"]["by_category"]
        row(name, r["language"], str(r["queries"]), f, f"{r['chunks']} ({r['semble']['chunks']})",
            f"{r['index_s']:.1f} ({r['semble']['index_ms'] / 1000:.2f})")  # fmt: skip
    for language, f in summary["by_language"].items():
        row(
            f"*{language}*",
            f"{f['repos']} repos",
            "",
            f,
            "",
            f"{_f(f['index_s'], 1)} ({_f(f['semble_index_s'], 2)})",
        )
    s = summary["summary"]
    row("**mean**", f"{s['repos']} repos", str(sum(r["queries"] for r in results.values())), s, "",
        f"{_f(s['index_s'], 1)} ({_f(s['semble_index_s'], 2)})")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repos", default="", help="comma-separated (default: all 12)")
    parser.add_argument(
        "--modes",
        default="search,locate",
        help="search, locate, keyword, semantic (the last two: search's arms alone), comma-separated",
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/semble"), help="the indexes (kept)")
    parser.add_argument("--rebuild", action="store_true", help="build every index again")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument(
        "--docs",
        type=Path,
        help="each repository's documentation, DOCS/<repository>/ (semble_docs.py), indexed too",
    )
    args = parser.parse_args()
    manifest = json.loads((DATA / "manifest.json").read_text())["repositories"]
    names = [n for n in args.repos.split(",") if n] or sorted(manifest)
    if unknown := sorted(set(names) - set(manifest)):
        parser.error(f"unknown repositories {unknown}; choose from {', '.join(sorted(manifest))}")
    asked = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not asked or set(asked) - set(MODES):
        parser.error(
            f"--modes: {', '.join(sorted(set(asked) - set(MODES))) or 'none'}; choose from {', '.join(MODES)}"
        )
    modes = tuple(m for m in MODES if m in asked)
    git = ("git", "-C", str(ROOT))  # the code that runs: HEAD at the start, and whether src/ differs from it
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=False).stdout
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "src"], capture_output=True, text=True, check=False
    )
    args.work.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        docs = args.docs / name if args.docs else None
        results[name] = evaluate(name, manifest[name], args.work, args.rebuild, modes, docs)
        r = results[name]
        print(f"{name}: " + "  ".join(f"{m} {r[m]['ndcg10']:.3f}" for m in modes)
              + f"  (semble {r['semble']['ndcg10']:.3f})  chunks {r['chunks']}  index {r['index_s']:.1f} s"
              + (" (kept)" if r["index_reused"] else ""), flush=True)  # fmt: skip
    summary = summarise(results, modes)
    print(table(results, summary, modes))
    absent = {n: r["queries"] - r["answerable"] for n, r in results.items() if r["answerable"] < r["queries"]}
    if absent:  # what the annotations ask for that no file at the pin holds: no ranking finds it
        print(
            "queries naming a file absent at the pin: "
            + ", ".join(f"{n} {k}" for n, k in absent.items())
            + "; the mean over the others: "
            + ", ".join(f"{m} {_f(summary['summary'][m]['answerable'])}" for m in modes)
        )
    if args.json:
        payload = {
            "date": time.strftime("%Y-%m-%d"),
            "command": "python -m benchmarks.code_search.semble "
            + " ".join(
                f"{k} {v}"
                for k, v in (("--repos", args.repos), ("--modes", args.modes), ("--docs", args.docs))
                if v
            )
            + (" --rebuild" if args.rebuild else ""),
            "retrievo_commit": commit.strip() + (" (src/ changed)" if dirty.stdout.strip() else ""),
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
            },
            "semble_source": json.loads((DATA / "manifest.json").read_text())["_source"],
            "protocol": __doc__.split("\n\n")[1].replace("\n", " "),
            **summary,
            "repositories": results,
        }
        args.json.write_text(json.dumps(payload, indent=1) + "\n")


if __name__ == "__main__":
    main()
