"""``retrievo locate`` on TypeScript/JavaScript repositories, with commit history as the queries.

What it measures: how often ``Engine.locate`` (the ``retrievo locate`` command: an issue's text → the files to
edit) puts a file a commit modified among its first 1, 5 and 10 files, when the commit's message (subject and
body, trailers stripped) is the text. Two TypeScript/JavaScript repositories, read from their bare mirrors:
``sindresorhus/ky`` (TypeScript, ``source/``) and ``axios/axios`` (JavaScript, ``lib/``). The pairs are mined
the way ``mine.py`` mines Python histories, with its filters imported from ``filters.py`` (bot authors;
formatting/lint/bump/release/version/changelog/revert subjects; more than 10 files changed; mass renames;
fewer than 8 words unless 4 and an issue/PR reference; same subject and gold files twice) plus a few for
JavaScript: the subject is also checked with its conventional-commit prefix (``chore(release): v1.7.9``)
taken off, ``style:`` commits and prettier/eslint/xo/tslint/biome sweeps are skipped. Gold: ``.ts .tsx .js
.mjs .cjs`` files with status M (so present at the parent) that are not tests (under a test folder,
``__tests__``, or named ``*.test.*``/``*.spec.*``), not declarations (``*.d.ts``), not built or vendored
output (``dist/ build/ out/ coverage/ node_modules/ vendor/``…, ``*.min.js``, ``*.bundle.js``) and not in
docs/examples/benchmarks/sandbox/fixtures folders.

Each repository is written ONCE at its mirror's HEAD (``features.snapshot``: ``git archive HEAD | tar -x``
into ``--work``/trees) and indexed keyword only (``embedder="none"``, ``embed=False``; ``<db>.done`` marks a
finished index, so a rerun reuses it). Pairs whose gold files that tree no longer has are dropped; of the rest
the newest ``--cap`` are asked, ``engine.locate(message, limit=10)`` each, over the whole tree (tests, docs,
``dist/`` and all, as a user would index it). The baseline is BM25 (k1 1.2, b 0.75) over whole files, one
document per source file (the gold suffixes, the same non-source paths left out), with ``features.tokens``
(identifiers whole and split at ``_`` and camelCase). Reported per repository and pooled over all pairs:
hit@1/5/10 (a gold file among the first k) for both, the number of pairs, and the median time of one
``locate`` call. A diagnostic column, ``locate (source only)``, asks ``locate`` again for ``DEEP`` files
and keeps the source files among them (no tests, changelogs, README, ``dist/``, JSON): how much the other
files it ranks cost it against BM25, which only ever sees source files.

Caveats. The snapshot is at HEAD, after the commit, so it already holds the fix: names the fix added count as
defined, and the file reads as it does now, not as it did then. That flatters every system alike (locate and
BM25), more so for recent commits; for old commits the reverse: the gold file is judged as it reads today,
and the code a fix touched may since have moved elsewhere (axios' 2017 ``xhr.js`` fixes). Commit messages
are terser than issues and often name the code. The two repositories are small (30 and 82 source files), so
hit@10 is near its ceiling; ky's history is short. Scripts and root configs (axios' ``bin/``,
``rollup.config.js``) count as source, so ``chore(ci)`` commits on them are pairs too.

    .venv/bin/python -m benchmarks.locate.ts_check [--work /tmp/tsloc] [--cap 200] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.locate.features import MIRRORS, FileBM25, snapshot
from benchmarks.locate.filters import (
    MIN_WORDS,
    MIN_WORDS_WITH_REF,
    TEST_DIR_PARTS,
    WORD_RE,
    clean_message,
    commit_skip,
    compile_sweeps,
    is_doc,
    is_vendored,
    issue_refs,
    normalise_subject,
)
from benchmarks.locate.mine import git, iter_commits
from retrievo.config import Config
from retrievo.engine import Engine

REPOS: tuple[str, ...] = ("sindresorhus/ky", "axios/axios")
SUFFIXES = (".ts", ".tsx", ".js", ".mjs", ".cjs")
CUTOFFS = (1, 5, 10)
LIMIT = 10  # files asked of locate
DEEP = 40  # files asked for the source-only diagnostic

#: Folders whose files are not the source a fix edits (besides filters.VENDORED_PARTS and DOC_TOP_DIRS).
NON_SOURCE_PARTS = frozenset(
    {
        "dist",
        "build",
        "out",
        "coverage",
        "lib-cov",
        "bower_components",
        "jspm_packages",
        "docs",
        "doc",
        "documentation",
        "website",
        "example",
        "examples",
        "benchmark",
        "benchmarks",
        "bench",
        "sandbox",
        "fixtures",
        "__fixtures__",
        "__mocks__",
        "__snapshots__",
    }
)
JS_TEST_PARTS = TEST_DIR_PARTS | {"__tests__", "spec", "specs", "e2e"}
JS_TEST_NAME = re.compile(r"\.(test|spec)\.[cm]?[jt]sx?$|^test\.[cm]?[jt]s$")
BUILT_NAME = re.compile(r"\.(min|bundle)\.[cm]?js$")
CONVENTIONAL = re.compile(r"^\s*(\w+)(\([^)]*\))?!?:\s*")  # "fix(http): ...", "chore(release): v1.7.9"
JS_SWEEPS = re.compile(r"\b(prettier|eslint|tslint|biome|xo)\b", re.IGNORECASE)


def is_js_test(path: str) -> bool:
    parts = path.split("/")
    return any(p in JS_TEST_PARTS for p in parts[:-1]) or bool(JS_TEST_NAME.search(parts[-1]))


def is_source(path: str) -> bool:
    """A TypeScript/JavaScript file a fix would edit: not a test, declaration, build output, vendored copy,
    doc, example or benchmark."""
    name = path.rsplit("/", 1)[-1]
    if not name.endswith(SUFFIXES) or name.endswith(".d.ts") or BUILT_NAME.search(name):
        return False
    if is_js_test(path) or is_vendored(path) or is_doc(path):
        return False
    return not any(p in NON_SOURCE_PARTS for p in path.split("/")[:-1])


# --------------------------------------------------------------------------------------------
# Pairs
# --------------------------------------------------------------------------------------------


@dataclass
class Mined:
    repo: str
    head: str
    scanned: int = 0
    pairs: list[dict[str, Any]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


def classify(
    parents: list[str],
    author: str,
    raw: str,
    changes: list[tuple[str, ...]],
    sweeps: list[tuple[str, re.Pattern[str]]],
    seen: set[tuple[str, tuple[str, ...]]],
) -> str | dict[str, Any]:
    """A skip reason, or the pair (``mine.classify`` with JavaScript gold files)."""
    skip = commit_skip(parents, author, changes)
    if skip:
        return skip
    message = clean_message(raw)
    subject = message.split("\n", 1)[0].strip()
    conventional = CONVENTIONAL.match(subject)
    bare = subject[conventional.end() :] if conventional else subject
    if conventional and conventional.group(1).lower() == "style":
        return "sweep_style"
    if JS_SWEEPS.search(subject):
        return "sweep_js_tool"
    for name, pattern in sweeps:
        if pattern.search(subject) or pattern.search(bare):
            return f"sweep_{name}"
    gold = sorted(c[-1] for c in changes if c[0][:1] == "M" and is_source(c[-1]))
    if not gold:
        return "no_source_modified"
    words = len(WORD_RE.findall(message))
    refs = issue_refs(message)
    if words < MIN_WORDS and not (refs and words >= MIN_WORDS_WITH_REF):
        return "uninformative_message"
    key = (normalise_subject(subject), tuple(gold))
    if key in seen:
        return "duplicate"
    seen.add(key)
    return {"subject": subject, "message": message, "files": gold, "n_changed": len(changes)}


def mine(repo: str) -> Mined:
    """Every pair of the repository's HEAD history, newest first (the cap is applied after the snapshot)."""
    gitdir = MIRRORS / repo.replace("/", "+") / "repo"
    result = Mined(repo, git(gitdir, "rev-parse", "HEAD^{commit}").strip())
    sweeps = compile_sweeps()
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for sha, parents, author, _adate, cdate, raw, changes in iter_commits(gitdir, result.head):
        result.scanned += 1
        pair = classify(parents, author, raw, changes, sweeps, seen)
        if isinstance(pair, str):
            result.skipped[pair] += 1
        else:
            result.pairs.append({"sha": sha, "date": cdate, **pair})
    return result


# --------------------------------------------------------------------------------------------
# The baseline
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Asking
# --------------------------------------------------------------------------------------------


def place(ranked: list[str], gold: list[str]) -> int:
    """1-based place of the first gold file among ``ranked``; 0 when none is there."""
    return next((i + 1 for i, path in enumerate(ranked) if path in gold), 0)


def hits(places: list[int]) -> dict[str, float]:
    return {f"hit@{k}": round(sum(0 < p <= k for p in places) / max(len(places), 1), 3) for k in CUTOFFS}


def check(repo: str, cap: int, work: Path) -> dict[str, Any]:
    mined = mine(repo)
    root = snapshot(repo, mined.head, work).resolve()
    kept = [p for p in mined.pairs if all((root / f).is_file() for f in p["files"])]
    gone = len(mined.pairs) - len(kept)
    kept = kept[:cap]
    db = work / "db" / f"{repo.replace('/', '+')}.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    done = Path(f"{db}.done")
    config = Config(db=db, collection="default", embedder="none")
    records: list[dict[str, Any]] = []
    with Engine(config) as engine:
        if done.exists():
            index_s, reused = float(done.read_text() or "nan"), True
        else:
            started = time.perf_counter()
            engine.index([root], embed=False)
            index_s, reused = time.perf_counter() - started, False
            done.write_text(f"{index_s:.1f}")
        bm25 = FileBM25(root, keep=is_source)
        print(
            f"{repo}: {len(kept)} pairs asked ({len(mined.pairs)} mined from {mined.scanned} commits, "
            f"{gone} with a gold file gone at HEAD); indexed in {index_s:.0f} s"
            f"{' (earlier run)' if reused else ''}; {len(bm25.paths)} source files",
            flush=True,
        )
        prefix = f"{root}/"
        for pair in kept:
            started = time.perf_counter()
            found = engine.locate(pair["message"], limit=LIMIT)
            ms = (time.perf_counter() - started) * 1000
            files = [h.path.removeprefix(prefix) for h in found]
            deep = [h.path.removeprefix(prefix) for h in engine.locate(pair["message"], limit=DEEP)]
            source = [f for f in deep if is_source(f)][:LIMIT]
            records.append(
                {
                    "sha": pair["sha"],
                    "date": pair["date"],
                    "subject": pair["subject"],
                    "gold": pair["files"],
                    "locate": files,
                    "locate_place": place(files, pair["files"]),
                    "locate_source_place": place(source, pair["files"]),
                    "bm25": (by_bm25 := bm25.ranked(pair["message"]))[:LIMIT],
                    "bm25_place": place(by_bm25, pair["files"]),
                    "ms": round(ms, 1),
                }
            )
    return {
        "repo": repo,
        "head": mined.head,
        "commits_scanned": mined.scanned,
        "mined": len(mined.pairs),
        "gold_gone_at_head": gone,
        "skipped": dict(sorted(mined.skipped.items())),
        "source_files": len(bm25.paths),
        "index_s": round(index_s, 1),
        "index_reused": reused,
        "records": records,
    }


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "pairs": len(records),
        "locate": hits([r["locate_place"] for r in records]),
        "locate_source_only": hits([r["locate_source_place"] for r in records]),
        "bm25_files": hits([r["bm25_place"] for r in records]),
        "median_ms": round(statistics.median(r["ms"] for r in records), 1) if records else None,
    }


def row(name: str, s: dict[str, Any]) -> str:
    cells = "  ".join(
        " ".join(f"{s[system][f'hit@{k}']:6.3f}" for k in CUTOFFS)
        for system in ("locate", "locate_source_only", "bm25_files")
    )
    return f"{name:18s} {s['pairs']:5d}  {cells}  {s['median_ms'] or 0:9.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/tsloc"))
    parser.add_argument("--cap", type=int, default=200, help="pairs asked per repository (newest first)")
    parser.add_argument("--repos", nargs="*", default=list(REPOS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = [check(repo, args.cap, args.work) for repo in args.repos]
    table = {r["repo"]: summary(r["records"]) for r in results}
    table["pooled"] = summary([rec for r in results for rec in r["records"]])
    heads = ("locate hit@1/5/10", "(source only)", "BM25 files hit@1/5/10")
    print(f"\n{'':18s} {'pairs':>5s}  " + "  ".join(f"{h:>20s}" for h in heads) + "  median ms")
    for name, s in table.items():
        print(row(name, s))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        out = {
            "command": "python -m benchmarks.locate.ts_check "
            + f"--work {args.work} --cap {args.cap} --repos {' '.join(args.repos)}",
            "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "git_version": subprocess.run(
                ["git", "--version"], check=False, capture_output=True, text=True
            ).stdout.strip(),
            "limit": LIMIT,
            "summary": table,
            "repos": results,
        }
        args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"-> {args.json}")


if __name__ == "__main__":
    main()
