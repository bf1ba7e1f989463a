"""Search quality while a collection moves from the static model to the bundled one, chunk by chunk.

The second stage of indexing (``operations/staged.py``) makes the bundled model's vectors beside the
static ones in the order of the chunks' keys. While it runs, a hybrid search ranks each chunk by the best
vector it has (``search/migrating.py``). This measures hybrid nDCG@10 on judged sets when the bundled model
has reached a share of the chunks (0, 25, 50, 75, 100 %, its first keys, as the migration takes them),
and semantic nDCG@10 (the dense arm alone, the merge without the keyword arm's help), beside the static
model alone until the switch (what searches read before, at every share but the last)
and the bundled model alone (after the switch). Searches read the answer's first hits again with the
bundled model (``reread_arm``, on by default since 2026-11-29, where that model is loaded in the process):
this measures the merge alone (``RETRIEVO_REREAD_DEPTH=0`` unless set), as the figures in
docs/benchmarks.md were; ``reread_engine.py`` measures the re-read.

Each set's bundled index is made once under ``--work`` (``retrievo eval``'s own index: whole documents,
``eval-NAME``); each share is a copy of it where the served model is the static one, every chunk has a
static vector, the bundled model is the shadow and only the first share of keys keep its vectors.

    .venv/bin/python -m benchmarks.static_model.migration --work /tmp/migration \\
        [--sets scifact anthropic_codebase cosqa_dev] [--json benchmarks/results/migration-DATE.json]

``--semble DIR``: semble's code-search repositories instead (``DIR``: the bundled indexes
``benchmarks/code_search/semble.py --work DIR`` built), scored by its protocol (NDCG@10 of the first 10
chunks), each repository's copy made and moved as above; the mean over repositories.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np

from retrievo.embed.local import MODEL_ID as TRANSFORMER
from retrievo.embed.static import MODEL_ID as STATIC
from retrievo.embed.static import StaticEmbedder
from retrievo.engine import embedding as engine_embedding
from retrievo.evaluation.runner import evaluate
from retrievo.store.sqlite.vectors import encode_vector
from retrievo.text.hashing import embedding_input

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SPLITS = {"scifact": "test", "anthropic_codebase": "test", "cosqa_dev": "dev"}
SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)


def scores(name: str, db: Path) -> dict[str, float]:
    """nDCG@10 of hybrid search (the default) and of the dense arm alone (semantic), which reads the merge
    without the keyword arm's help."""
    report = evaluate(DATA / name, db=db, modes=["hybrid", "semantic"], split=SPLITS[name])
    return {mode.mode: round(mode.ndcg_10, 4) for mode in report.modes}


def semble_scores(repo: str, db: Path) -> dict[str, float]:
    """semble's NDCG@10 for ``repo``'s index ``db``: ``search`` at its defaults and its dense arm alone."""
    from benchmarks.code_search import semble
    from retrievo import Config, Engine

    root = semble.DATA / "repos" / repo
    tasks = semble.load_tasks(repo)
    out = {}
    with Engine(Config.from_env(db=db, collection=repo)) as engine:
        for mode, asked in (("hybrid", None), ("semantic", "semantic")):
            found = [semble.search_once(engine, repo, root, task, asked)[0] for task in tasks]
            out[mode] = round(float(np.mean(found)), 4)
    return out


def semble_repositories(indexes: Path, asked: list[str] | None) -> list[str]:
    """The repositories of semble's manifest (those ``asked``, else all) whose bundled index is in ``indexes``;
    an index of another model is refused (``semble.py`` under ``RETRIEVO_EMBEDDER=static`` writes the same
    names)."""
    from benchmarks.code_search import semble

    names = json.loads((semble.DATA / "manifest.json").read_text(encoding="utf-8"))["repositories"]
    chosen = [name for name in (asked or sorted(names)) if (indexes / f"{name}.db").exists()]
    unknown = sorted(set(asked or ()) - set(names))
    if unknown or not chosen:
        raise SystemExit(
            f"--semble {indexes}: no index of {unknown or 'any repository'} of semble's manifest"
        )
    for name in chosen:
        with sqlite3.connect(indexes / f"{name}.db") as db:
            (model,) = db.execute("SELECT model_id FROM collections WHERE name = ?", (name,)).fetchone()
        db.close()
        if model != TRANSFORMER:
            raise SystemExit(
                f"{indexes / name}.db is served by {model}, not the bundled model: build it again"
            )
    return chosen


def moving_copy(base: Path, out: Path, share: float, static: StaticEmbedder) -> None:
    """``base`` (served by the bundled model) copied to ``out``, served by the static model and moving
    to the bundled one, which holds only the first ``share`` of the keys."""
    for stale in out.parent.glob(f"{out.name}*"):  # the last share's copy and its side indexes
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    with sqlite3.connect(base) as source, sqlite3.connect(out) as copy:
        source.backup(copy)  # what a WAL not yet checkpointed holds comes too
    source.close()
    copy.close()
    db = sqlite3.connect(out)
    rows = db.execute(
        "SELECT embed_key, MIN(context), MIN(text) FROM chunks GROUP BY embed_key ORDER BY embed_key"
    ).fetchall()
    vectors = np.asarray(
        static.embed_documents([embedding_input(r[1], r[2]) for r in rows]), dtype=np.float32
    )
    kept = rows[round(share * len(rows)) :]
    with db:
        db.executemany(
            "INSERT OR REPLACE INTO embeddings (embed_key, model_id, vector) VALUES (?, ?, ?)",
            [(r[0], STATIC, encode_vector(v)) for r, v in zip(rows, vectors, strict=True)],
        )
        db.executemany(
            "DELETE FROM embeddings WHERE embed_key = ? AND model_id = ?", [(r[0], TRANSFORMER) for r in kept]
        )
        db.execute(
            "UPDATE collections SET model_id = ?, dimensions = ?, shadow_model_id = ?, shadow_dimensions = ?",
            (STATIC, static.dimensions, TRANSFORMER, 384),
        )
        db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument(
        "--sets", nargs="+", help=f"default: {' '.join(SPLITS)} (with --semble: every repository)"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--semble", type=Path, help="semble's bundled indexes (benchmarks/code_search/semble.py --work)"
    )
    args = parser.parse_args()
    os.environ.setdefault("RETRIEVO_REREAD_DEPTH", "0")  # the merge alone (the module's docstring)
    args.sets = semble_repositories(args.semble, args.sets) if args.semble else args.sets or list(SPLITS)
    args.work.mkdir(parents=True, exist_ok=True)
    score = semble_scores if args.semble else scores
    static = StaticEmbedder()
    table: dict[str, dict[str, Any]] = {}
    for name in args.sets:
        base = args.semble / f"{name}.db" if args.semble else args.work / f"{name}.db"
        row: dict[str, Any] = {"bundled": score(name, base)}  # made on the first run, reused after
        blended, alone = {}, {}
        for share in SHARES:
            moving = args.work / f"{name}-moving.db"
            moving_copy(base, moving, share, static)
            blended[share] = score(name, moving)
            shadow = engine_embedding.EmbeddingLifecycle._shadow_queries
            engine_embedding.EmbeddingLifecycle._shadow_queries = lambda *a: None  # type: ignore[method-assign]
            try:
                alone[share] = score(name, moving)
            finally:
                engine_embedding.EmbeddingLifecycle._shadow_queries = shadow  # type: ignore[method-assign]
            print(
                f"{name:20} {share:4.0%}  blended {blended[share]}  static alone {alone[share]}", flush=True
            )
        row |= {"blended": blended, "static_alone": alone}
        table[name] = row
        print(f"{name:20} bundled alone {row['bundled']}", flush=True)
    if args.json:
        result = {
            "date": time.strftime("%Y-%m-%d"),
            "machine": f"{platform.processor() or platform.machine()}, {platform.python_version()}",
            "command": "python -m benchmarks.static_model.migration --work DIR "
            + (f"--semble {args.semble}" if args.semble else "--sets " + " ".join(args.sets)),
            "ndcg_10": table,  # each: hybrid and semantic
        }
        if args.semble:  # semble's summary: the mean over repositories
            result["mean"] = {
                part: {
                    str(share): {
                        mode: round(float(np.mean([table[r][part][share][mode] for r in table])), 4)
                        for mode in ("hybrid", "semantic")
                    }
                    for share in SHARES
                }
                for part in ("blended", "static_alone")
            } | {
                "bundled": {
                    m: round(float(np.mean([table[r]["bundled"][m] for r in table])), 4)
                    for m in ("hybrid", "semantic")
                }
            }
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
