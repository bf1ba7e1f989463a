"""An experiment: the static table tuned on question → code pairs from installed packages (contrastive).

The static model reads a question ("python check if a variable is iterable") and a function as the mean of
their tokens; nothing in its training (``train.py``: each text pulled towards the bundled model's vector
for it) asks that a question land near the code that answers it. Here it is asked directly:

- **Pairs**: every Python function or method of the installed distributions (``corpus.py``'s: this
  project's ``.venv`` less every project an evaluation here reads or keeps aside, and less tests) whose
  docstring's first line reads as a sentence (12–160 characters), paired with its source *without* the
  docstring (at most 1,200 characters), at most ``--per-dist`` a distribution (by the SHA-1 of the line).
  No evaluation set is read. One distribution in ten (by the SHA-1 of its name) is held out.
- **Loss**: InfoNCE over a batch of pairs (each first line against every function of the batch, and back;
  temperature ``--tau``), plus ``--keep`` × (1 − cosine) of each text's new vector to the shipped table's
  vector for it (the table stays what it was where the pairs say nothing).
- Adam from the shipped table, ``--epochs`` passes; the pass with the lowest held-out InfoNCE loss kept.
  The evaluation sets are scored once, after (``choose.py``'s semantic nDCG@10).

    .venv/bin/python -m benchmarks.static_model.contrast --out /tmp/static-contrast [--per-dist 2000]
    .venv/bin/python -m benchmarks.static_model.choose ../shared/data/cosqa_dev --split dev \\
        --tables src/retrievo/embed/data/static /tmp/static-contrast
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.metadata
import json
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from benchmarks.static_model.corpus import EXCLUDED, source_files
from benchmarks.static_model.distill import quantise
from benchmarks.static_model.train import bags
from retrievo.embed.static import StaticEmbedder, table_arrays, table_folder

Floats = npt.NDArray[np.float32]
MAX_CODE = 1200


def _first_line(doc: str) -> str | None:
    first = next((line.strip() for line in doc.strip().splitlines() if line.strip()), "")
    return first if 12 <= len(first) <= 160 and " " in first else None


def pairs_of(source: str) -> list[tuple[str, str]]:
    """(docstring's first line, the function's source without its docstring) for each documented function."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines = source.splitlines()
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        doc = ast.get_docstring(node)
        first = _first_line(doc) if doc else None
        if first is None or not node.body or node.end_lineno is None:
            continue
        docnode = node.body[0]
        start, end = node.lineno - 1, node.end_lineno
        if node.decorator_list:
            start = min(d.lineno for d in node.decorator_list) - 1
        kept = lines[start : docnode.lineno - 1] + lines[(docnode.end_lineno or docnode.lineno) : end]
        code = "\n".join(kept).strip()
        if len(code.splitlines()) >= 2:
            out.append((first, code[:MAX_CODE]))
    return out


def collect(per_dist: int) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    seen: set[str] = set()
    dists = sorted(importlib.metadata.distributions(), key=lambda d: (d.metadata["Name"] or "").lower())
    for dist in dists:
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if not name or name in EXCLUDED:
            continue
        mine: dict[str, str] = {}
        for _, body in source_files(dist, {".py"}):
            for first, code in pairs_of(body):
                if first not in seen:
                    mine.setdefault(first, code)
        chosen = sorted(mine, key=lambda t: hashlib.sha1(t.encode()).hexdigest())[:per_dist]
        seen.update(chosen)
        found += [{"dist": name, "query": q, "code": mine[q]} for q in chosen]
    return found


def _unit(m: Floats) -> tuple[Floats, Floats]:
    norms = np.linalg.norm(m, axis=1, keepdims=True) + 1e-9
    return m / norms, norms


def _back(unit: Floats, norms: Floats, grad_unit: Floats) -> Floats:
    """The gradient on the mean rows from the gradient on their unit vectors."""
    return (grad_unit - np.sum(grad_unit * unit, axis=1, keepdims=True) * unit) / norms


def loss(
    table: Floats, q: sp.csr_matrix, d: sp.csr_matrix, q0: Floats, d0: Floats, tau: float, keep: float
) -> tuple[float, float, Floats]:
    """InfoNCE both ways over the batch, plus ``keep`` × (1 − cosine to the start's vectors); the gradient."""
    uq, nq = _unit(np.asarray(q @ table, dtype=np.float32))
    ud, nd = _unit(np.asarray(d @ table, dtype=np.float32))
    s = uq @ ud.T / tau
    b = len(s)

    def softmax(x: Floats) -> Floats:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    p, pt = softmax(s), softmax(s.T)
    nce = float(-(np.log(np.diag(p) + 1e-12).mean() + np.log(np.diag(pt) + 1e-12).mean()) / 2)
    ds = ((p - np.eye(b)) + (pt - np.eye(b)).T) / (2 * b)  # dL/ds
    gq = ds @ ud / tau
    gd = ds.T @ uq / tau
    drift = float((2 - np.sum(uq * q0, axis=1).mean() - np.sum(ud * d0, axis=1).mean()) / 2)
    gq = gq - keep * q0 / (2 * b)
    gd = gd - keep * d0 / (2 * b)
    grad = q.T @ _back(uq, nq, gq) + d.T @ _back(ud, nd, gd)
    return nce, drift, np.asarray(grad, dtype=np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-dist", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--tau", type=float, default=0.05)
    parser.add_argument("--keep", type=float, default=1.0)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--pairs", type=Path, help="pairs.jsonl of an earlier run (else collected)")
    args = parser.parse_args()
    started = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.pairs and args.pairs.exists():
        pairs = [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines()]
    else:
        pairs = collect(args.per_dist)
        (args.out / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
    print(
        f"{len(pairs)} pairs from {len({p['dist'] for p in pairs})} distributions ({time.perf_counter() - started:.0f}s)"
    )

    folder = table_folder()
    manifest = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    vectors, scales = table_arrays(folder, manifest)
    table = (vectors.astype(np.float32) * scales[:, None]).astype(np.float32)
    embedder = StaticEmbedder(folder)
    embedder._load()  # the reader's own [UNK]
    unknown = embedder._unknown
    qb = bags(embedder.token_ids([p["query"] for p in pairs]), unknown, len(table))
    db = bags(embedder.token_ids([p["code"] for p in pairs]), unknown, len(table))
    q0, _ = _unit(np.asarray(qb @ table, dtype=np.float32))
    d0, _ = _unit(np.asarray(db @ table, dtype=np.float32))
    held = np.array([int(hashlib.sha1(p["dist"].encode()).hexdigest(), 16) % 10 == 0 for p in pairs])
    train, test = np.flatnonzero(~held), np.flatnonzero(held)
    print(f"{len(train)} to learn from, {len(test)} held out")
    rng = np.random.default_rng(0)

    def held_out(t: Floats) -> float:
        order = np.random.default_rng(1).permutation(test)
        values = [
            loss(t, qb[b], db[b], q0[b], d0[b], args.tau, args.keep)[0]
            for b in (order[i : i + args.batch] for i in range(0, len(order) - args.batch + 1, args.batch))
        ]
        return float(np.mean(values))

    best, best_table, best_epoch = held_out(table), table.copy(), 0
    history = [{"epoch": 0, "held_out_nce": round(best, 4)}]
    print(f"epoch 0: held-out InfoNCE {best:.4f}")
    m, v = np.zeros_like(table), np.zeros_like(table)
    step = 0
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(train)
        for begin in range(0, len(order) - args.batch + 1, args.batch):
            batch = order[begin : begin + args.batch]
            _, _, grad = loss(table, qb[batch], db[batch], q0[batch], d0[batch], args.tau, args.keep)
            step += 1
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad * grad
            table -= args.lr * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
        value = held_out(table)
        history.append({"epoch": epoch, "held_out_nce": round(value, 4)})
        print(f"epoch {epoch}: held-out InfoNCE {value:.4f} ({time.perf_counter() - started:.0f}s)")
        if value < best:
            best, best_table, best_epoch = value, table.copy(), epoch

    quantised, row_scales = quantise(best_table)
    np.save(args.out / "vectors.npy", quantised)
    np.save(args.out / "scales.npy", row_scales)
    out = dict(manifest)
    out["model_id"] = "retrievo-static-minilm-contrast"
    out["recipe"] = dict(manifest["recipe"]) | {
        "contrast": {
            "pairs": len(pairs),
            "tau": args.tau,
            "keep": args.keep,
            "lr": args.lr,
            "batch": args.batch,
            "kept_epoch": best_epoch,
            "history": history,
        }
    }
    out["sha256"] = {
        n: hashlib.sha256((args.out / f"{n}.npy").read_bytes()).hexdigest() for n in ("vectors", "scales")
    }
    (args.out / "model.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out} (epoch {best_epoch}; {time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    main()
