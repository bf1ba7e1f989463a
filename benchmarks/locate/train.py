"""Fit the learned file ranker (issue 59) and choose it leave-one-repository-out; score it on swe_loc_dev.

Reads the candidates ``features.py`` wrote (``--features``: the mined pairs; ``--swe``: swe_loc_dev's 31
issues). The model is linear over a set of ``search.code.ranker.FEATURES``, fitted as a listwise softmax (ListNet's
top-one probability, Cao et al. 2007; with several gold files, the log of their summed probability) over each
pair's window of the hand-weighted ranking's best files, with an L2 penalty on standardised features, by
L-BFGS (SciPy). Pairs whose gold files are all below the window teach nothing and are left out of fitting
(still counted as misses when scoring).

Every candidate setting (feature set × penalty) is scored leave-one-repository-out: fitted on 28
repositories, scored on the 29th. The setting with the best mean held-out hit@1 over repositories wins (then
hit@5, hit@10); one within ``TIE`` of the best with fewer features wins over it. That setting, fitted on all
29 repositories, is written to ``src/retrievo/search/code/ranker.json`` with its provenance. Every figure
printed for the mined pairs is held out; swe_loc_dev is never fitted on nor chosen on here.

    .venv/bin/python -m benchmarks.locate.train [--features /tmp/loc/features.jsonl.gz]
        [--swe /tmp/loc/swe_features.jsonl.gz] [--out src/retrievo/search/code/ranker.json] [--json FILE]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

from benchmarks.locate.features import MANIFEST, PAIRS, WINDOW
from retrievo.search.code.ranker import FEATURES

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src" / "retrievo" / "search" / "code" / "ranker.json"
CUTOFFS = (1, 5, 10)
TIE = 0.005  # mean held-out hit@1 this close to the best is a tie: the fewer features win
EVIDENCE = ("words", "defines", "module", "frame", "innermost", "named", "test", "docs", "example", "other")
MORE = (
    "words_best", "passages", "words_sum", "stem_named", "folder_named", "name_overlap", "init", "length",
    "depth",
)  # fmt: skip
SETS: dict[str, tuple[str, ...]] = {
    "hand": ("hand",),
    "evidence": EVIDENCE,  # the hand ranking's own signals, weighed anew
    "hand+evidence": ("hand", "hand_rank", *EVIDENCE),
    "evidence+more": (*EVIDENCE, *MORE),
    "all": ("hand", "hand_rank", *EVIDENCE, *MORE),
    "all+bm25 (not deployable)": ("hand", "hand_rank", *EVIDENCE, *MORE, "bm25"),
}
PENALTIES = (0.001, 0.01, 0.1)


@dataclass
class Data:
    """Candidates of many texts, one after another: ``starts`` where each text's begin."""

    x: np.ndarray  # candidates × features (FEATURES order, then bm25)
    gold: np.ndarray  # bool
    inside: np.ndarray  # bool: in the window
    starts: np.ndarray
    records: list[dict[str, Any]]


NAMES = (*FEATURES, "bm25")


def load(path: Path) -> Data:
    with gzip.open(path, "rt") as f:
        records = [json.loads(line) for line in f]
    rows, gold, inside, starts = [], [], [], []
    for record in records:
        starts.append(len(rows))
        for c in record["candidates"]:
            rows.append([c["f"][n] for n in FEATURES] + [c["bm25"]])
            gold.append(c["gold"])
            inside.append(not c["outside"])
    return Data(np.array(rows), np.array(gold), np.array(inside), np.array(starts), records)


def subset(data: Data, keep: np.ndarray) -> Data:
    """The texts ``keep`` (a bool per text) marks."""
    bounds = np.append(data.starts, len(data.x))
    index = np.concatenate([np.arange(bounds[i], bounds[i + 1]) for i in np.flatnonzero(keep)] or [[]])
    index = index.astype(int)
    sizes = np.diff(bounds)[keep]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int) if len(sizes) else np.array([], int)
    return Data(data.x[index], data.gold[index], data.inside[index], starts,
                [r for r, k in zip(data.records, keep, strict=True) if k])  # fmt: skip


def fit(data: Data, columns: list[int], penalty: float) -> np.ndarray:
    """Weights over ``columns`` in raw feature units (listwise softmax over each text's window)."""
    inside = data.inside
    x, gold = data.x[inside][:, columns], data.gold[inside]
    query = np.repeat(np.arange(len(data.starts)), np.diff(np.append(data.starts, len(data.x))))[inside]
    useful = np.zeros(len(data.starts), bool)
    useful[np.unique(query[gold])] = True
    keep = useful[query]
    x, gold, query = x[keep], gold[keep], query[keep]
    _, query = np.unique(query, return_inverse=True)
    n = query.max() + 1
    starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])  # each text's candidates are contiguous
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        s = z @ w
        top = np.maximum.reduceat(s, starts)
        e = np.exp(s - top[query])
        total, good = np.bincount(query, e, n), np.bincount(query, e * gold, n)
        value = np.sum(np.log(total) - np.log(good)) / n + penalty * w @ w
        p_all, p_good = e / total[query], np.where(gold, e / good[query], 0.0)
        grad = z.T @ (p_all - p_good) / n + 2 * penalty * w
        return float(value), grad

    w = minimize(loss, np.zeros(len(columns)), jac=True, method="L-BFGS-B", options={"maxiter": 500}).x
    return np.asarray(w / scale)


def places(data: Data, columns: list[int], w: np.ndarray | None) -> list[list[int]]:
    """Each text's gold files' places (0: not found) when its window is re-ordered by ``w`` (None: as by
    hand); a gold file below the window keeps its hand-weighted place."""
    out = []
    bounds = np.append(data.starts, len(data.x))
    for i, record in enumerate(data.records):
        lo, hi = bounds[i], bounds[i + 1]
        inside = np.flatnonzero(data.inside[lo:hi])
        if w is not None:
            inside = inside[np.argsort(-(data.x[lo + inside][:, columns] @ w), kind="stable")]
        new = {record["candidates"][c]["path"]: j + 1 for j, c in enumerate(inside)}
        out.append(
            [
                new[g] if 0 < h <= WINDOW else h
                for g, h in zip(record["gold"], record["hand_places"], strict=True)
            ]
        )
    return out


def scores(ranks: list[list[int]]) -> dict[str, float]:
    n = max(len(ranks), 1)
    hit = {f"hit@{k}": sum(any(0 < p <= k for p in r) for r in ranks) / n for k in CUTOFFS}
    acc = {f"acc@{k}": sum(all(0 < p <= k for p in r) for r in ranks) / n for k in (5, 10)}
    return {key: round(v, 3) for key, v in (hit | acc).items()}


def loro(data: Data, columns: list[int], penalty: float) -> dict[str, list[list[int]]]:
    repos = np.array([r["repo"] for r in data.records])
    out = {}
    for repo in dict.fromkeys(repos):
        w = fit(subset(data, repos != repo), columns, penalty)
        out[str(repo)] = places(subset(data, repos == repo), columns, w)
    return out


def mean_over(by_repo: dict[str, list[list[int]]]) -> dict[str, float]:
    each = [scores(r) for r in by_repo.values()]
    return {k: round(float(np.mean([e[k] for e in each])), 3) for k in each[0]}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--features", type=Path, default=Path("/tmp/loc/features.jsonl.gz"))
    parser.add_argument("--swe", type=Path, default=Path("/tmp/loc/swe_features.jsonl.gz"))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    data = load(args.features)
    repos = [r["repo"] for r in data.records]
    print(f"{len(data.records)} pairs, {len(set(repos))} repositories, {len(data.x)} candidates", flush=True)
    hand = {
        repo: [r["hand_places"] for r in data.records if r["repo"] == repo] for repo in dict.fromkeys(repos)
    }
    bm25 = {
        repo: [r["bm25_places"] for r in data.records if r["repo"] == repo] for repo in dict.fromkeys(repos)
    }
    print(f"hand-weighted (today's locate, keyword only): {mean_over(hand)}")
    print(f"BM25 over .py files: {mean_over(bm25)}", flush=True)
    settings: dict[tuple[str, float], dict[str, Any]] = {}
    for name, names in SETS.items():
        columns = [NAMES.index(n) for n in names]
        live = [c for c in columns if data.x[:, c].std() > 0]  # a feature never seen here (meaning) is out
        for penalty in PENALTIES if len(live) > 1 else (0.0,):
            held = loro(data, live, penalty)
            settings[name, penalty] = {"columns": live, "held": held, "mean": mean_over(held)}
            print(f"{name:28} λ={penalty:<5} {len(live):2} features  LORO mean {mean_over(held)}", flush=True)
    deployable = {k: v for k, v in settings.items() if "not deployable" not in k[0]}
    key = lambda s: tuple(deployable[s]["mean"][f"hit@{k}"] for k in CUTOFFS)  # noqa: E731
    best = max(deployable, key=key)
    chosen = min(
        (s for s in deployable if deployable[s]["mean"]["hit@1"] >= deployable[best]["mean"]["hit@1"] - TIE),
        key=lambda s: (len(deployable[s]["columns"]), tuple(-v for v in key(s))),
    )
    columns = deployable[chosen]["columns"]
    weights = fit(data, columns, chosen[1])
    print(f"chosen: {chosen} ({len(columns)} features); best: {best}")
    table = {repo: {"pairs": len(hand[repo]), "bm25": scores(bm25[repo]), "hand": scores(hand[repo]),
                    "learned": scores(deployable[chosen]["held"][repo])} for repo in hand}  # fmt: skip
    print("\n| held-out repository | pairs | BM25 files h@1/5/10 | today h@1/5/10 | learned h@1/5/10 |")
    print("|---|---|---|---|---|")
    for repo, row in table.items():
        cells = [
            " / ".join(f"{row[s][f'hit@{k}']:.2f}" for k in CUTOFFS) for s in ("bm25", "hand", "learned")
        ]
        print(f"| {repo} | {row['pairs']} | " + " | ".join(cells) + " |")
    summary = {"bm25": mean_over(bm25), "hand": mean_over(hand), "learned": deployable[chosen]["mean"]}
    print(f"| **mean of {len(table)}** | {len(data.records)} | " + " | ".join(
        " / ".join(f"{summary[s][f'hit@{k}']:.3f}" for k in CUTOFFS) for s in ("bm25", "hand", "learned")) + " |")  # fmt: skip
    model = {
        "description": "search/code/ranker.py's linear model: score = Σ weight × feature over the hand-weighted "
        "ranking's best `window` files (benchmarks/locate/train.py)",
        "window": WINDOW,
        "weights": {NAMES[c]: round(float(w), 6) for c, w in zip(columns, weights, strict=True)},
        "setting": {"features": chosen[0], "penalty": chosen[1]},
        "leave_one_repository_out": {"mean_over_repositories": summary, "per_repository": table},
        "provenance": {
            "pairs": str(PAIRS.relative_to(ROOT)),
            "pairs_sha256": hashlib.sha256(PAIRS.read_bytes()).hexdigest(),
            "pairs_used": len(data.records),
            "manifest_heads": {r["repo"]: r["head"] for r in json.loads(MANIFEST.read_text())["repos"]},
            "fitted": time.strftime("%Y-%m-%d"),
            "command": ".venv/bin/python -m benchmarks.locate.features && .venv/bin/python -m "
            "benchmarks.locate.features --swe && .venv/bin/python -m benchmarks.locate.train",
            "most_pairs_of_a_repository": max(Counter(repos).values()),
            "window": WINDOW,
            "fit_seconds": round(time.perf_counter() - started, 1),
        },
    }
    if args.swe.exists():
        swe = load(args.swe)
        model["swe_loc_dev"] = {
            "bm25": scores([r["bm25_places"] for r in swe.records]),
            "hand": scores([r["hand_places"] for r in swe.records]),
            "learned": scores(places(swe, columns, weights)),
            "issues": len(swe.records),
        }
        print(f"swe_loc_dev ({len(swe.records)} issues): {json.dumps(model['swe_loc_dev'])}")
    args.out.write_text(json.dumps(model, indent=1) + "\n")
    print(f"wrote {args.out} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.json:
        args.json.write_text(
            json.dumps({f"{k[0]} λ={k[1]}": v["mean"] for k, v in settings.items()}, indent=1)
        )


if __name__ == "__main__":
    main()
