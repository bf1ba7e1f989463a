"""Features for the learned file ranker (issue 59): each mined pair's candidate files, as the ranker sees them.

For every repository of ``pairs.jsonl.gz`` ONE snapshot is indexed, keyword only (no embedder, as
``benchmarks/code_search/swe_locate.py`` builds its ``-keyword`` indexes): the tree at the manifest's head,
written from the bare mirror with ``git archive | tar -x`` into ``--work``/trees. Pairs whose gold files the
snapshot no longer has (moved, renamed, deleted since) are dropped; of the rest, the newest ``--cap`` are read.
(The snapshot is after the commit, so it holds the fix itself: names a fix added are found "defined". That
flatters every system alike; swe_loc_dev, at each issue's base commit, has no such help.)

For each pair the message is asked as ``retrievo locate`` asks an issue (keyword arm, ``code_files``); the
hand-weighted ranking's best ``WINDOW`` files, and any gold file found below them (``outside``), are written
with ``file_ranker.features`` — the one definition the model reads at query time — and, for comparison only,
BM25 over whole ``.py`` files (``bm25``: this file's, not the index's; the index has chunks).

``--swe`` does the same for ../shared/data/swe_loc_dev's 31 issues over the indexes ``swe_locate.py --keep
/tmp/swe/new --modes locate`` made (each issue's tree at its base commit): the validation set, never trained on.

    .venv/bin/python -m benchmarks.locate.features [--repos owner/name ...] [--cap 150] [--work /tmp/loc]
    .venv/bin/python -m benchmarks.locate.features --swe [--keep /tmp/swe/new]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pathspec
from scipy import sparse

from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.models import Filters
from retrievo.search.code.files import FileHit, Read, file_signals, keyword_chunks, weigh_files
from retrievo.search.code.question import read_question
from retrievo.search.code.ranker import features, query
from retrievo.search.code.role import relative_path
from retrievo.search.query import read_query
from retrievo.store.base import Store

HERE = Path(__file__).resolve().parent
PAIRS = HERE / "pairs.jsonl.gz"
MANIFEST = HERE / "manifest.json"
MIRRORS = Path("/work/.mirror")
WINDOW = 50  # the hand-weighted ranking's best files, the ones a model re-orders
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_STOP = frozenset(
    "the a an and or of to in is it for on with as be by this that from at are was not when if but no can "
    "should would will do does use used using fix fixes fixed add added".split()
)


def tokens(text: str) -> list[str]:
    """Words for BM25 over files: identifiers whole and split (``getHTTPResponse`` → gethttpresponse, get,
    http, response), lower-cased, a few English stop words out."""
    out: list[str] = []
    for word in _IDENT.findall(text.replace("_", " ")):
        low = word.lower()
        parts = [p.lower() for p in _CAMEL.findall(word)]
        out.extend(t for t in {low, *parts} if len(t) > 1 and t not in _STOP)
    return out


class FileBM25:
    """BM25 (k1 1.2, b 0.75; Robertson and Zaragoza 2009) over a tree's ``.py`` files (or those ``keep``
    takes, by their path relative to the tree), one document a file."""

    def __init__(
        self, root: Path, k1: float = 1.2, b: float = 0.75, keep: Callable[[str], bool] | None = None
    ) -> None:
        take = keep or (lambda path: path.endswith(".py"))
        relative = (p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        self.paths = sorted(path for path in relative if take(path))
        vocab: dict[str, int] = {}
        rows, cols, vals, lengths = [], [], [], []
        for i, path in enumerate(self.paths):
            counts = Counter(tokens((root / path).read_text(encoding="utf-8", errors="replace")))
            lengths.append(sum(counts.values()))
            for term, n in counts.items():
                rows.append(i)
                cols.append(vocab.setdefault(term, len(vocab)))
                vals.append(n)
        self.vocab = vocab
        tf = sparse.csr_matrix((vals, (rows, cols)), shape=(len(self.paths), len(vocab)), dtype=np.float64)
        df = np.bincount(cols, minlength=len(vocab))
        idf = np.log(1 + (len(self.paths) - df + 0.5) / (df + 0.5))
        norm = k1 * (1 - b + b * np.array(lengths, dtype=np.float64) / max(np.mean(lengths), 1.0))
        tf = tf.tocoo()
        weighted = tf.data * (k1 + 1) / (tf.data + norm[tf.row]) * idf[tf.col]
        self.matrix = sparse.csr_matrix((weighted, (tf.row, tf.col)), shape=tf.shape)

    def ranked(self, text: str) -> list[str]:
        """The files holding any of the text's words, best first (ties by path)."""
        found = self.scores(text)
        return sorted(found, key=lambda path: (-found[path], path))

    def scores(self, text: str) -> dict[str, float]:
        terms = [self.vocab[t] for t in set(tokens(text)) if t in self.vocab]
        if not terms:
            return {}
        column = np.asarray(self.matrix[:, terms].sum(axis=1)).ravel()
        return {self.paths[i]: float(column[i]) for i in np.flatnonzero(column)}


def candidates(
    store: Store, collection: str, root: Path, text: str, gold: list[str], bm25: FileBM25
) -> dict[str, Any]:
    """One text's record: the gold files' places by each system and the window's files with features."""
    started = time.perf_counter()
    question = read_question(read_query(text))
    found = keyword_chunks(store, collection, question, Filters())
    signals = {s.path: s for s in file_signals(store, collection, question, Read(found))}
    ranked: list[FileHit] = weigh_files(store, collection, question, list(signals.values()))
    hand_ms = (time.perf_counter() - started) * 1000
    roots = store.roots(collection)
    relative = {h.path: relative_path(h.path, roots).split("/", 1)[-1] for h in ranked}
    places = {relative[h.path]: i + 1 for i, h in enumerate(ranked)}
    by_bm25 = bm25.scores(text)
    bm25_order = sorted(by_bm25, key=lambda p: (-by_bm25[p], p))
    bm25_places = {p: i + 1 for i, p in enumerate(bm25_order)}
    top_bm25 = max(by_bm25.values(), default=1.0)
    q = query(question.text, ranked[0].score if ranked else 0.0, max((s for _, s in found), default=0.0))
    chosen = [(i, h) for i, h in enumerate(ranked) if i < WINDOW or relative[h.path] in gold]
    lengths = {h.path: len(store.current_chunk_ids(h.document_id)) for _, h in chosen}  # chunks: the length
    rows = []
    for i, hit in chosen:
        path = relative[hit.path]
        row = features(q, path, signals[hit.path], hit.role, hit.score, i + 1, lengths[hit.path])
        rows.append({"path": path, "gold": path in gold, "outside": i >= WINDOW, "f": row,
                     "bm25": by_bm25.get(path, 0.0) / top_bm25})  # fmt: skip
    return {
        "gold": gold,
        "hand_places": [places.get(g, 0) for g in gold],
        "bm25_places": [bm25_places.get(g, 0) for g in gold],
        "candidates": rows,
        "files_ranked": len(ranked),
        "hand_ms": round(hand_ms, 1),
    }


def snapshot(repo: str, head: str, work: Path) -> Path:
    """The tree at ``head`` from the bare mirror, written once under ``work/trees``."""
    root = work / "trees" / repo.replace("/", "+")
    if not (root / ".done").exists():
        root.mkdir(parents=True, exist_ok=True)
        git = MIRRORS / repo.replace("/", "+") / "repo"
        archive = subprocess.run(
            ["git", f"--git-dir={git}", "archive", head], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
        for ignore in root.rglob(".gitignore"):  # black's tests hold invalid ones, which stop the indexer
            try:
                pathspec.GitIgnoreSpec.from_lines(ignore.read_text(errors="replace").splitlines())
            except ValueError:
                print(f"removed {ignore}: pathspec cannot read it", flush=True)
                ignore.unlink()
        (root / ".done").touch()
    return root


def mined(
    repo: str, head: str, pairs: list[dict[str, Any]], cap: int, work: Path
) -> Iterator[dict[str, Any]]:
    root = snapshot(repo, head, work).resolve()
    db = work / "db" / f"{repo.replace('/', '+')}.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    config = Config(db=db, collection="default", embedder="none")
    started = time.perf_counter()
    with Engine(config) as engine:
        if not Path(f"{db}.done").exists():
            engine.index([root], embed=False)
            Path(f"{db}.done").touch()
        index_s = time.perf_counter() - started
        store = engine._open_store(create=False)
        bm25 = FileBM25(root)
        kept = [p for p in pairs if all((root / f).is_file() for f in p["files"])][:cap]
        print(f"{repo}: {len(kept)} of {len(pairs)} pairs, indexed in {index_s:.0f} s", flush=True)
        for pair in kept:
            record = candidates(store, "default", root, pair["message"], pair["files"], bm25)
            yield {"repo": repo, "sha": pair["sha"], "head": head, **record}


def swe(keep: Path) -> Iterator[dict[str, Any]]:
    """swe_loc_dev's issues over swe_locate.py's keyword indexes (``--keep``)."""
    from benchmarks.code_search.swe_locate import collection_of, load_instances

    trees: dict[str, FileBM25] = {}
    for instance in load_instances():
        name, repo = instance["instance_id"], instance["repo"].split("/")[1]
        root = (keep / "trees" / name).resolve()
        config = Config(db=keep / f"{repo}-keyword.db", collection=collection_of(name), embedder="none")
        with Engine(config) as engine:
            store = engine._open_store(create=False)
            trees[name] = FileBM25(root)
            record = candidates(store, config.collection, root, instance["problem_statement"],
                                instance["gold_files"], trees.pop(name))  # fmt: skip
            yield {"repo": instance["repo"], "instance": name, **record}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repos", nargs="*", default=[])
    parser.add_argument("--cap", type=int, default=150)
    parser.add_argument("--work", type=Path, default=Path("/tmp/loc"))
    parser.add_argument("--swe", action="store_true", help="swe_loc_dev's issues instead of the mined pairs")
    parser.add_argument("--keep", type=Path, default=Path("/tmp/swe/new"))
    args = parser.parse_args()
    if args.swe:
        out = args.work / "swe_features.jsonl.gz"
        with gzip.open(out, "wt") as f:
            for record in swe(args.keep):
                f.write(json.dumps(record) + "\n")
                print(record["instance"], record["hand_places"], record["bm25_places"], flush=True)
        return
    heads = {r["repo"]: r["head"] for r in json.loads(MANIFEST.read_text())["repos"] if r.get("head")}
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with gzip.open(PAIRS, "rt") as f:
        for line in f:
            pair = json.loads(line)
            by_repo[pair["repo"]].append(pair)
    (args.work / "features").mkdir(parents=True, exist_ok=True)
    for repo in args.repos or list(by_repo):
        part = args.work / "features" / f"{repo.replace('/', '+')}.jsonl.gz"
        if part.exists():
            continue
        started, records = time.perf_counter(), []
        for record in mined(repo, heads[repo], by_repo[repo], args.cap, args.work):
            records.append(record)
        with gzip.open(f"{part}.tmp", "wt") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
        Path(f"{part}.tmp").rename(part)
        hits = sum(any(0 < p <= 1 for p in r["hand_places"]) for r in records) / max(len(records), 1)
        print(f"{repo}: {len(records)} pairs in {time.perf_counter() - started:.0f} s, hand hit@1 {hits:.2f}",
              flush=True)  # fmt: skip
    with gzip.open(args.work / "features.jsonl.gz", "wt") as out:
        for part in sorted((args.work / "features").glob("*.jsonl.gz")):
            with gzip.open(part, "rt") as f:
                out.writelines(f)


if __name__ == "__main__":
    main()
