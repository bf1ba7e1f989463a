"""The bundled model on a GPU: PyTorch, fp16, the weights of the CPU's graph (``embed/weights.py``) and the
one forward pass (``embed/bert.py``).

Only ``embed/local.py`` loads this, when ``embed/device.py`` chose ``cuda``; PyTorch is an optional extra
(``pip install 'retrievo[gpu]'``) and nothing else imports it. The session embeds a batch of token ids in
one pass (attention by ``scaled_dot_product_attention``, flash kernels where the GPU has them) and pools
on the device, so only the 384 floats a text needs come back. ``benchmarks/scale/gpu_embed.py`` measures
it (chunks/s, cosine to the CPU's vectors) on whatever device PyTorch sees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from retrievo.embed.bert import hidden_states, mean_pool
from retrievo.embed.weights import HIDDEN, bert_weights

MASKED = -30_000.0  # an additive bias fp16 can hold (its range ends at ±65,504)


class TorchOps:
    def __init__(self) -> None:
        import torch
        from torch.nn import functional

        self.torch, self.functional = torch, functional

    def layer_norm(self, x: Any, weight: Any, bias: Any) -> Any:
        return self.functional.layer_norm(x, (HIDDEN,), weight, bias, eps=1e-12)

    def gelu(self, x: Any) -> Any:
        return self.functional.gelu(x)

    def attention(self, q: Any, k: Any, v: Any, bias: Any) -> Any:
        return self.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)

    def masked(self, mask: Any, like: Any) -> Any:
        return ((1.0 - mask.to(like.dtype)) * MASKED)[:, None, None, :]


class TorchSession:
    """The model's weights on ``device`` (fp16 on a GPU; float32 on a CPU, where fp16 kernels are slow)."""

    def __init__(self, path: Path, device: str = "cuda", half: bool | None = None) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(device)
        half = self.device.type == "cuda" if half is None else half
        self.dtype = torch.float16 if half else torch.float32
        self.ops = TorchOps()
        self.weights = {
            name: torch.tensor(array, dtype=self.dtype, device=self.device)
            for name, array in bert_weights(path).items()
        }

    def pooled(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean-pooled (not yet normalised) float32 vectors for a batch of token ids and its mask."""
        torch = self.torch
        with torch.inference_mode():
            tokens = torch.from_numpy(ids).to(self.device, non_blocking=True)
            seen = torch.from_numpy(mask).to(self.device, self.dtype, non_blocking=True)
            hidden = hidden_states(self.ops, self.weights, tokens, seen)
            vectors = mean_pool(hidden.float(), seen.float())
            result: np.ndarray = vectors.cpu().numpy().astype(np.float32, copy=False)
        return result
