"""Train the static table on the bundled model's own vectors (model2vec's "tokenlearn", NumPy and SciPy only).

``distill.py`` reads each token alone; a text's meaning is more than the mean of its tokens read alone.
Here the table learns from whole texts: for every text of ``corpus.py``'s corpus (installed packages'
code, docstrings and descriptions; no evaluation set), the mean of its rows — exactly what
``StaticEmbedder`` computes — is pulled towards the bundled model's vector for the same text, by cosine.

- The target lives where the table does: the bundled model's vector, centred on the corpus mean, on the
  distilled table's PCA axes (``distill.py`` step 2, from its cached token outputs or recomputed).
- The table starts from the distilled one (``distill.py --out``, read with its sha256 checked). A text is
  read as the bundled model read it for its target: its first 254 tokens (the model's window less
  ``[CLS]`` and ``[SEP]``), ``[UNK]`` left out.
- Adam, mini-batches of 256 texts, ``--epochs`` passes; the texts of one distribution in ten (by SHA-1
  of its name) are held out, and the epoch with the lowest held-out loss is kept — no evaluation set
  chooses anything.
- int8 rows and one float32 scale each, as ``distill.py`` stores them.

    .venv/bin/python -m benchmarks.static_model.distill --cache /tmp/static/tok.npy --out /tmp/static/distilled
    .venv/bin/python -m benchmarks.static_model.corpus --out /tmp/static/corpus
    .venv/bin/python -m benchmarks.static_model.train --corpus /tmp/static/corpus --cache /tmp/static/tok.npy \
        --start /tmp/static/distilled       # writes the package's table
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from threadpoolctl import threadpool_limits
from tokenizers import Tokenizer

from benchmarks.static_model.distill import pca_axes, producible, quantise, token_outputs, vocabulary
from retrievo.embed.local import MAX_TOKENS as TARGET_TOKENS
from retrievo.embed.static import MODEL_ID, table_arrays, table_folder
from retrievo.embed.tokens import bundled_tokenizer_json

Floats = npt.NDArray[np.float32]
BATCH = 256


def bags(ids: list[list[int]], unknown: int, vocabulary: int) -> sp.csr_matrix:
    """One row per text: each token's share of the text (``[UNK]`` left out), as the mean reads it."""
    indptr, indices = [0], []
    for encoding in ids:
        kept = [i for i in encoding if i != unknown] or [unknown]
        indices += kept
        indptr.append(len(indices))
    data = np.concatenate(
        [np.full(indptr[k + 1] - indptr[k], 1.0 / (indptr[k + 1] - indptr[k])) for k in range(len(ids))]
    ).astype(np.float32)
    matrix = sp.csr_matrix((data, np.array(indices), np.array(indptr)), shape=(len(ids), vocabulary))
    matrix.sum_duplicates()
    return matrix


def cosine_loss(table: Floats, bag: sp.csr_matrix, target: Floats) -> tuple[float, Floats]:
    """Mean (1 − cosine) of each text's mean row to its target, and its gradient on the table."""
    means = np.asarray(bag @ table, dtype=np.float32)
    norms = np.linalg.norm(means, axis=1, keepdims=True) + 1e-9
    unit = target / (np.linalg.norm(target, axis=1, keepdims=True) + 1e-9)
    cos = np.sum(means * unit, axis=1, keepdims=True) / norms
    grad_means = -(unit / norms - cos * means / norms**2) / len(means)
    return float(np.mean(1.0 - cos)), np.asarray(bag.T @ grad_means, dtype=np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, required=True, help="corpus.py's --out")
    parser.add_argument("--cache", type=Path, help="distill.py's --cache (token outputs); else recomputed")
    parser.add_argument(
        "--start", type=Path, required=True, help="distill.py's --out: the table to start from"
    )
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--model-id", default=MODEL_ID)
    parser.add_argument("--out", type=Path, default=table_folder())
    args = parser.parse_args()
    started = time.perf_counter()
    start = args.start
    start_manifest = json.loads((start / "model.json").read_text(encoding="utf-8"))
    dims = int(start_manifest["dimensions"])

    tokens = vocabulary()
    cached = args.cache.with_suffix(".token.npy") if args.cache else None
    outputs = np.load(cached) if cached and cached.exists() else token_outputs(tokens, "token")
    with threadpool_limits(1):
        axes = pca_axes(outputs, producible(tokens), dims)[0].astype(np.float32)

    texts = [
        json.loads(line) for line in (args.corpus / "texts.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    targets = np.load(args.corpus / "targets.npy").astype(np.float32)
    targets = (targets - targets.mean(axis=0)) @ axes

    vectors, scales = table_arrays(start, start_manifest)  # the start's own id: not one the engine serves
    table = (vectors.astype(np.float32) * scales[:, None]).astype(np.float32)
    unknown = tokens.index("[UNK]")
    # The text as the bundled model read it for its target: its window less [CLS] and [SEP]
    tokenizer = Tokenizer.from_str(bundled_tokenizer_json())
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=TARGET_TOKENS - 2)
    encoded = tokenizer.encode_batch([t["text"] for t in texts], add_special_tokens=False)
    bag = bags([e.ids for e in encoded], unknown, len(tokens))
    held = np.array([int(hashlib.sha1(t["dist"].encode()).hexdigest(), 16) % 10 == 0 for t in texts])
    train, test = np.flatnonzero(~held), np.flatnonzero(held)
    held_dists = {t["dist"] for t, h in zip(texts, held, strict=True) if h}
    print(f"{len(train)} texts to learn from, {len(test)} held out ({len(held_dists)} distributions)")

    rng = np.random.default_rng(0)
    m, v = np.zeros_like(table), np.zeros_like(table)
    beta1, beta2, step = 0.9, 0.999, 0
    best, best_table, best_epoch, history = (
        cosine_loss(table, bag[test], targets[test])[0],
        table.copy(),
        0,
        [],
    )
    print(f"epoch 0: held-out loss {best:.4f}")
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(train)
        for begin in range(0, len(order), BATCH):
            batch = order[begin : begin + BATCH]
            _, grad = cosine_loss(table, bag[batch], targets[batch])
            step += 1
            m = beta1 * m + (1 - beta1) * grad
            v = beta2 * v + (1 - beta2) * grad * grad
            table -= args.lr * (m / (1 - beta1**step)) / (np.sqrt(v / (1 - beta2**step)) + 1e-8)
        train_loss = cosine_loss(table, bag[train[:5000]], targets[train[:5000]])[0]
        loss = cosine_loss(table, bag[test], targets[test])[0]
        history.append({"epoch": epoch, "train_loss": round(train_loss, 4), "held_out_loss": round(loss, 4)})
        print(
            f"epoch {epoch}: train {train_loss:.4f}, held out {loss:.4f} ({time.perf_counter() - started:.0f}s)"
        )
        if loss < best:
            best, best_table, best_epoch = loss, table.copy(), epoch

    quantised, row_scales = quantise(best_table)
    args.out.mkdir(parents=True, exist_ok=True)
    np.save(args.out / "vectors.npy", quantised)
    np.save(args.out / "scales.npy", row_scales)
    corpus = json.loads((args.corpus / "corpus.json").read_text(encoding="utf-8"))
    manifest = dict(start_manifest)
    manifest["model_id"] = args.model_id
    manifest["recipe"] = dict(start_manifest["recipe"]) | {
        "trained": {
            "corpus": {k: corpus[k] for k in ("texts", "kinds", "sha256", "command", "excluded")},
            "distributions": len(corpus["distributions"]),
            "target": "bundled model's vector, centred on the corpus mean, on the table's PCA axes",
            "loss": "1 - cosine of the text's mean row",
            "optimiser": f"Adam lr {args.lr:g}, batch {BATCH}, seed 0",
            "epochs": args.epochs,
            "kept_epoch": best_epoch,
            "history": history,
        }
    }
    manifest["sha256"] = {
        name: hashlib.sha256((args.out / f"{name}.npy").read_bytes()).hexdigest()
        for name in ("vectors", "scales")
    }
    manifest["command"] = f"python -m benchmarks.static_model.train --epochs {args.epochs} --lr {args.lr:g}"
    (args.out / "model.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    main()
