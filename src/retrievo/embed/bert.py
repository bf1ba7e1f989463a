"""The bundled model's forward pass, written once for any array library.

``hidden_states`` runs BERT (the bundled model's shape: 6 layers, 12 heads, 384 wide, GELU by erf,
LayerNorm at 1e-12) from ``embed/weights.py``'s arrays with the few operations an ``Ops`` gives — NumPy's
here (the reference the conversion test checks against the ONNX graph, on the CPU), PyTorch's on a GPU
(``embed/cuda.py``). Everything else (``@``, indexing, reshape, ``swapaxes``, ``sum``) is spelled the same
in both libraries, so the GPU runs the very pass the CPU test checks.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from retrievo.embed.weights import HEADS, HIDDEN, LAYERS

EPSILON = 1e-12
HEAD = HIDDEN // HEADS


class Ops(Protocol):
    """The operations that differ between array libraries."""

    def layer_norm(self, x: Any, weight: Any, bias: Any) -> Any: ...

    def gelu(self, x: Any) -> Any: ...

    def attention(self, q: Any, k: Any, v: Any, bias: Any) -> Any:
        """softmax(q @ kᵀ / √32 + bias) @ v over (batch, heads, seq, 32)."""
        ...

    def masked(self, mask: Any, like: Any) -> Any:
        """An additive attention bias from a (batch, seq) 0/1 mask: 0 where seen, very negative where not,
        shaped (batch, 1, 1, seq) and typed like ``like``."""
        ...


def hidden_states(ops: Ops, w: dict[str, Any], ids: Any, mask: Any) -> Any:
    """The last hidden state (batch, seq, 384) for token ``ids`` and their 0/1 attention ``mask``."""
    batch, width = ids.shape
    x = w["embeddings.word_embeddings.weight"][ids]
    x = x + w["embeddings.position_embeddings.weight"][:width][None, :, :]
    x = x + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
    x = ops.layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    bias = ops.masked(mask, x)
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."

        def dense(y: Any, part: str, p: str = p) -> Any:
            return y @ w[p + part + ".weight"] + w[p + part + ".bias"]

        def heads(y: Any) -> Any:
            return y.reshape(batch, width, HEADS, HEAD).swapaxes(1, 2)

        q, k, v = (heads(dense(x, f"attention.self.{part}")) for part in ("query", "key", "value"))
        context = ops.attention(q, k, v, bias).swapaxes(1, 2).reshape(batch, width, HIDDEN)
        x = ops.layer_norm(
            dense(context, "attention.output.dense") + x,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        inner = ops.gelu(dense(x, "intermediate.dense"))
        x = ops.layer_norm(
            dense(inner, "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]
        )
    return x


def mean_pool(hidden: Any, mask: Any) -> Any:
    """The sentence-transformers pooling: the mean of the hidden states the mask keeps (every row keeps
    at least ``[CLS]``)."""
    weights = mask[:, :, None]
    return (hidden * weights).sum(1) / weights.sum(1)


class NumpyOps:
    """The reference: float32 NumPy (erf by Abramowitz & Stegun 7.1.26, error below 1.5e-7)."""

    def layer_norm(self, x: Any, weight: Any, bias: Any) -> Any:
        mean = x.mean(axis=-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(variance + EPSILON) * weight + bias

    def gelu(self, x: Any) -> Any:
        return 0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))

    def attention(self, q: Any, k: Any, v: Any, bias: Any) -> Any:
        scores = (q @ k.swapaxes(-1, -2)) * np.float32(1.0 / np.sqrt(HEAD)) + bias
        shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return (shifted / shifted.sum(axis=-1, keepdims=True)) @ v

    def masked(self, mask: Any, like: Any) -> Any:
        return ((1.0 - mask.astype(like.dtype)) * np.float32(-1e9))[:, None, None, :]


def _erf(x: Any) -> Any:
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (sign * (1.0 - poly * np.exp(-a * a))).astype(x.dtype)
