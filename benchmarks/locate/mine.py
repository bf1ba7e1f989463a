"""Mine (commit message -> files changed) pairs from the git histories of public Python repositories.

Training data for a learned "issue text -> file to edit" ranker (issue #59).  Each pair is one
non-merge commit on a repository's default branch: its message (subject + body, trailers stripped)
as the query, and the non-test ``.py`` files it modified (paths that exist at the parent commit) as
the gold files.  Test files are recorded separately.

Plain Python: the standard library and ``git`` through :mod:`subprocess`.  Reads bare mirrors laid
out as ``<mirror-root>/<owner>+<name>/repo`` (what the ``fetch`` tool writes)::

    python -m benchmarks.locate.mine --mirror-root /work/.mirror \\
        --out benchmarks/locate/pairs.jsonl.gz --manifest benchmarks/locate/manifest.json

Re-mining exactly the recorded commits (mirrors that have moved on still hold them)::

    python -m benchmarks.locate.mine --mirror-root /work/.mirror \\
        --out benchmarks/locate/pairs.jsonl.gz --heads-from benchmarks/locate/manifest.json
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime as _dt
import gzip
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.locate.filters import (
    BOT_RE,
    DOC_TOP_DIRS,
    MAX_FILES_CHANGED,
    MAX_MESSAGE_CHARS,
    MAX_OTHER_FILES,
    MAX_RENAMES,
    MAX_SCAN,
    MIN_WORDS,
    MIN_WORDS_WITH_REF,
    NOISE_LINE_RE,
    PER_REPO_CAP,
    SWEEP_PATTERNS,
    TEST_DIR_PARTS,
    TRAILER_RE,
    VENDORED_PARTS,
    WORD_RE,
    clean_message,
    commit_skip,
    compile_sweeps,
    is_doc,
    is_test,
    is_vendored,
    issue_refs,
    normalise_subject,
)

# --------------------------------------------------------------------------------------------
# Which repositories
# --------------------------------------------------------------------------------------------

#: Repositories mined by default (owner/name as on GitHub).
REPOS: tuple[str, ...] = (
    "pallets/click",
    "pallets/jinja",
    "pallets/werkzeug",
    "encode/httpx",
    "encode/starlette",
    "tiangolo/fastapi",
    "pydantic/pydantic",
    "sqlalchemy/sqlalchemy",
    "python-poetry/poetry",
    "pypa/pip",
    "psf/black",
    "marshmallow-code/marshmallow",
    "aio-libs/aiohttp",
    "celery/celery",
    "scrapy/scrapy",
    "tornadoweb/tornado",
    "python-attrs/attrs",
    "urllib3/urllib3",
    "pytest-dev/pluggy",
    "networkx/networkx",
    "Pylons/pyramid",
    "boto/boto3",
    "astropy/astropy",
    "pypa/setuptools",
    "tox-dev/tox",
    "ipython/ipython",
    "falconry/falcon",
    "dask/dask",
    "httpie/cli",
)

#: Kept aside to judge the trained ranker: never mined, for training or tuning (issue #59).
HELD_OUT: frozenset[str] = frozenset(
    {
        "psf/requests",
        "pallets/flask",
        "pytest-dev/pytest",
        "scikit-learn/scikit-learn",
        "matplotlib/matplotlib",
        "Textualize/rich",
        "sindresorhus/got",
    }
)

#: The validation set's repositories (``/work/shared/data/swe_loc_dev``); read from its
#: ``instances.jsonl`` when present, this list otherwise.
VALIDATION_FALLBACK: frozenset[str] = frozenset(
    {"sphinx-doc/sphinx", "pylint-dev/pylint", "pydata/xarray", "mwaskom/seaborn"}
)
VALIDATION_INSTANCES = (
    Path(__file__).resolve().parents[2].parent / "shared" / "data" / "swe_loc_dev" / "instances.jsonl"
)

#: Per-repository extras: path prefixes that are vendored/synced copies of other projects, and
#: sweep patterns (by name) that would match that project's ordinary vocabulary.
REPO_EXTRAS: dict[str, dict[str, tuple[str, ...]]] = {
    # setuptools carries pypa/distutils (itself CPython's distutils history) as a subtree.
    "pypa/setuptools": {"vendored": ("distutils/", "setuptools/_distutils/", "docs/")},
    # black's own vocabulary: "black", "format", "formatting" are what its fixes are about.
    "psf/black": {"skip_sweeps": ("black", "format_subject", "format_tool", "code_style")},
}

LOG_FORMAT = "%x1e%H%x1f%P%x1f%an%x1f%aI%x1f%cI%x1f%B%x1d"


@dataclass
class RepoResult:
    repo: str
    mirror: str
    head: str = ""
    head_date: str = ""
    scanned: int = 0
    pairs: list[dict] = field(default_factory=list)
    skipped: collections.Counter = field(default_factory=collections.Counter)
    error: str = ""


def mirror_dir(root: Path, repo: str) -> Path:
    return root / repo.replace("/", "+") / "repo"


def git(gitdir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(gitdir), *args],
        check=True,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
    ).stdout


def iter_commits(gitdir: Path, rev: str):
    """Yield (sha, parents, author, author_date, commit_date, message, [(status, paths...)])."""
    cmd = [
        "git",
        "-c",
        "core.quotepath=off",
        "--git-dir",
        str(gitdir),
        "log",
        "--no-merges",
        "--no-color",
        "--find-renames",
        "--name-status",
        f"--format={LOG_FORMAT}",
        rev,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    reader = io.TextIOWrapper(proc.stdout, encoding="utf-8", errors="replace", newline="\n")
    buf = ""
    try:
        while True:
            chunk = reader.read(1 << 16)
            records = (buf + chunk).split("\x1e")
            buf = records.pop() if chunk else ""
            for rec in records:
                if rec.strip():
                    yield parse_record(rec)
            if not chunk:
                break
    finally:
        proc.kill()
        proc.wait()


def parse_record(rec: str):
    head, _, files_part = rec.partition("\x1d")
    sha, parents, author, adate, cdate, message = head.split("\x1f", 5)
    changes = []
    for line in files_part.split("\n"):
        if not line.strip():
            continue
        fields = line.split("\t")
        changes.append((fields[0], *fields[1:]))
    return sha, parents.split(), author, adate, cdate, message, changes


def mine_repo(root: Path, repo: str, rev: str | None, cap: int, max_scan: int) -> RepoResult:
    gitdir = mirror_dir(root, repo)
    res = RepoResult(repo=repo, mirror=str(gitdir))
    if not gitdir.is_dir():
        res.error = f"no mirror at {gitdir}"
        return res
    try:
        res.head = git(gitdir, "rev-parse", f"{rev or 'HEAD'}^{{commit}}").strip()
        res.head_date = git(gitdir, "log", "-1", "--format=%cI", res.head).strip()
    except subprocess.CalledProcessError as exc:
        res.error = f"git rev-parse failed: {exc.stderr.strip()[:200]}"
        return res

    extras = REPO_EXTRAS.get(repo, {})
    extra_vendored = extras.get("vendored", ())
    sweeps = compile_sweeps(extras.get("skip_sweeps", ()))
    seen: set[tuple[str, tuple[str, ...]]] = set()

    for sha, parents, author, adate, cdate, raw_message, changes in iter_commits(gitdir, res.head):
        if res.scanned >= max_scan or len(res.pairs) >= cap:
            break
        res.scanned += 1
        reason = classify(parents, author, raw_message, changes, sweeps, extra_vendored, seen)
        if isinstance(reason, str):
            res.skipped[reason] += 1
            continue
        pair = reason
        pair.update(
            repo=repo,
            sha=sha,
            parent=parents[0],
            date=cdate,
            author_date=adate,
        )
        res.pairs.append(pair)
    # Stable key order in the output.
    order = (
        "repo",
        "sha",
        "parent",
        "date",
        "author_date",
        "subject",
        "message",
        "refs",
        "files",
        "test_files",
        "added_files",
        "other_files",
        "n_changed",
    )
    res.pairs = [{k: p[k] for k in order} for p in res.pairs]
    return res


def classify(parents, author, raw_message, changes, sweeps, extra_vendored, seen):
    """A skip reason (str), or the pair's fields (dict)."""
    skip = commit_skip(parents, author, changes)
    if skip:
        return skip

    message = clean_message(raw_message)
    subject = message.split("\n", 1)[0].strip()
    for name, pattern in sweeps:
        if pattern.search(subject):
            return f"sweep_{name}"

    files, tests, added, other = [], [], [], []
    vendored_py = 0
    for change in changes:
        status, path = change[0][:1], change[-1]
        if not path.endswith(".py"):
            other.append(path)
            continue
        if is_vendored(path, extra_vendored):
            vendored_py += 1
            continue
        if is_test(path):
            if status in "MA":
                tests.append(path)
            continue
        if is_doc(path):
            other.append(path)
        elif status == "M":
            files.append(path)
        elif status == "A":
            added.append(path)
    if not files:
        if vendored_py:
            return "vendored_only"
        if added:
            return "py_added_only"
        return "no_source_py_modified"

    words = len(WORD_RE.findall(message))
    refs = issue_refs(message)
    if words < MIN_WORDS and not (refs and words >= MIN_WORDS_WITH_REF):
        return "uninformative_message"

    key = (normalise_subject(subject), tuple(sorted(files)))
    if key in seen:
        return "duplicate"
    seen.add(key)
    return {
        "subject": subject,
        "message": message,
        "refs": refs,
        "files": sorted(files),
        "test_files": sorted(tests),
        "added_files": sorted(added),
        "other_files": sorted(other)[:MAX_OTHER_FILES],
        "n_changed": len(changes),
    }


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def validation_repos() -> frozenset[str]:
    if VALIDATION_INSTANCES.is_file():
        with VALIDATION_INSTANCES.open(encoding="utf-8") as fh:
            repos = {json.loads(line)["repo"] for line in fh if line.strip()}
        return frozenset(repos | VALIDATION_FALLBACK)
    return VALIDATION_FALLBACK


def filters_description() -> dict:
    return {
        "merges": "skipped (git log --no-merges; commits with != 1 parent skipped)",
        "bot_authors": BOT_RE.pattern,
        "max_files_changed": MAX_FILES_CHANGED,
        "mass_rename": f"more than {MAX_RENAMES} renamed/copied files, or renames >= half the files",
        "sweep_subject_patterns": [f"{n}: {p}" for n, p in SWEEP_PATTERNS],
        "repo_extras": {k: {kk: list(vv) for kk, vv in v.items()} for k, v in REPO_EXTRAS.items()},
        "vendored_path_parts": sorted(VENDORED_PARTS),
        "doc_top_dirs (their .py files are not gold)": sorted(DOC_TOP_DIRS),
        "test_path": "a dir part in "
        + str(sorted(TEST_DIR_PARTS))
        + ", or test_*.py, *_test.py, tests.py, test.py, conftest.py",
        "gold_files": "non-test, non-vendored, non-doc .py files with status M (exist at the parent)",
        "requires": "at least one gold file",
        "informative_message": f">= {MIN_WORDS} words, or >= {MIN_WORDS_WITH_REF} words "
        "and an issue/PR reference (#N, gh-N, issue N, github.com/.../issues|pull/N)",
        "trailers_stripped": TRAILER_RE.pattern,
        "noise_lines_stripped": NOISE_LINE_RE.pattern,
        "max_message_chars": MAX_MESSAGE_CHARS,
        "duplicates": "same subject (backport prefix and PR suffix removed) and same gold "
        "files within a repo (cherry-picks, backports): the newest is kept",
        "per_repo_cap": PER_REPO_CAP,
        "max_scan": MAX_SCAN,
        "order": "git log order from the recorded head (newest first); first cap pairs kept",
    }


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror-root", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--out", type=Path, default=here / "pairs.jsonl.gz")
    ap.add_argument("--manifest", type=Path, default=None, help="default: next to --out")
    ap.add_argument("--repos", nargs="*", default=None, help="owner/name ... (default: REPOS)")
    ap.add_argument("--cap", type=int, default=PER_REPO_CAP)
    ap.add_argument("--max-scan", type=int, default=MAX_SCAN)
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    ap.add_argument(
        "--heads-from",
        type=Path,
        default=None,
        help="a manifest.json: mine each repository from the head commit recorded there",
    )
    args = ap.parse_args(argv)

    repos = list(args.repos or REPOS)
    forbidden = {r.lower() for r in HELD_OUT | validation_repos()}
    bad = [r for r in repos if r.lower() in forbidden]
    if bad:
        ap.error(f"held-out or validation repositories may not be mined: {', '.join(bad)}")

    pinned: dict[str, str] = {}
    if args.heads_from:
        manifest = json.loads(args.heads_from.read_text(encoding="utf-8"))
        pinned = {r["repo"]: r["head"] for r in manifest["repos"] if r.get("head")}

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [
            pool.submit(mine_repo, args.mirror_root, r, pinned.get(r), args.cap, args.max_scan) for r in repos
        ]
        results = [f.result() for f in futures]

    args.out.parent.mkdir(parents=True, exist_ok=True)
    total = 0
    with (
        open(args.out, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz,
    ):
        for res in results:
            for pair in res.pairs:
                gz.write((json.dumps(pair, ensure_ascii=False) + "\n").encode("utf-8"))
                total += 1

    for res in results:
        status = res.error or f"{len(res.pairs)} pairs from {res.scanned} commits"
        print(f"{res.repo:32s} {status}", file=sys.stderr)
    print(f"total: {total} pairs -> {args.out}", file=sys.stderr)

    manifest_path = args.manifest or args.out.with_name("manifest.json")
    manifest = {
        "description": "(commit message -> files changed) pairs for a learned file ranker (issue #59)",
        "generated": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python -m benchmarks.locate.mine " + " ".join(sys.argv[1:] if argv is None else argv),
        "git_version": subprocess.run(
            ["git", "--version"], capture_output=True, text=True, check=False
        ).stdout.strip(),
        "output": args.out.name,
        "total_pairs": total,
        "repos": [
            {
                "repo": res.repo,
                "head": res.head,
                "head_date": res.head_date,
                "pairs": len(res.pairs),
                "commits_scanned": res.scanned,
                "oldest_pair_date": res.pairs[-1]["date"] if res.pairs else None,
                "skipped": dict(sorted(res.skipped.items())),
                **({"error": res.error} if res.error else {}),
            }
            for res in results
        ],
        "held_out_never_mined": sorted(HELD_OUT),
        "validation_never_mined": sorted(validation_repos()),
        "filters": filters_description(),
    }
    manifest_path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", "utf-8")
    print(f"manifest -> {manifest_path}", file=sys.stderr)
    return 0 if all(not r.error for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
