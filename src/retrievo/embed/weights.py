"""The bundled model's weights out of its ONNX graph, as float arrays under BERT's own parameter names.

The shipped graph keeps every weight matrix as int8 with one float scale per output column (per row for
the embedding tables) and multiplies ``Cast(W_q) * scale``; here each is turned back into the float
matrix the graph multiplies by, and named by the bias its product is added to
(``inner.encoder.layer.0.attention.self.query.bias`` → ``encoder.layer.0.attention.self.query.weight``,
stored as ``[in, out]``: ``x @ W + b``). ``embed/bert.py`` runs the model from these on any array library
(NumPy here, PyTorch on a GPU), so a GPU embeds with exactly the weights the CPU's graph holds: the same
model, the same model id, vectors that mix in one index. No PyTorch is needed to read them, and
``tests/test_gpu_path.py`` checks the conversion against the graph itself, on the CPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retrievo.errors import EmbedderUnavailable

Weights = dict[str, npt.NDArray[np.float32]]
PREFIX = "inner."  # the export wraps the BERT module as ``inner``
LAYERS = 6
HEADS = 12
HIDDEN = 384


def bert_weights(path: Path) -> Weights:
    """Every parameter of the bundled graph at ``path``, float32, under BERT's names (see the module)."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    arrays = {tensor.name: numpy_helper.to_array(tensor) for tensor in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    readers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)

    def dequantised(name: str) -> npt.NDArray[np.float32]:
        """The float tensor ``name`` stands for: an initializer, or ``Cast(int8) * scale`` of one."""
        if name in arrays:
            return np.asarray(arrays[name], dtype=np.float32)
        scaled = producer.get(name)
        cast = producer.get(scaled.input[0]) if scaled is not None and scaled.op_type == "Mul" else None
        if scaled is None or cast is None or cast.op_type != "Cast" or scaled.input[1] not in arrays:
            raise EmbedderUnavailable(
                f"{path}: not the bundled model's shape ({name}: no weight, no int8 weight times a scale)"
            )
        quantised = arrays[cast.input[0]].astype(np.float32)
        return np.asarray(quantised * arrays[scaled.input[1]].astype(np.float32), dtype=np.float32)

    weights: Weights = {}
    for name, value in arrays.items():
        if name.startswith(PREFIX) and name.endswith(("LayerNorm.weight", "LayerNorm.bias", ".bias")):
            weights[name[len(PREFIX) :]] = np.asarray(value, dtype=np.float32)
    for table in ("word", "position", "token_type"):
        name = f"{PREFIX}embeddings.{table}_embeddings.weight"
        weights[name[len(PREFIX) :]] = dequantised(name)
    for node in graph.node:
        if node.op_type != "MatMul":
            continue
        bias = _bias_of(node.output[0], readers, arrays)
        if bias is None:
            continue  # attention's own products (Q @ K^T, P @ V): no weight
        weights[bias[len(PREFIX) : -len("bias")] + "weight"] = dequantised(node.input[1])
    missing = [name for name in expected_names() if name not in weights]
    if missing:
        raise EmbedderUnavailable(f"{path}: not the bundled model's shape; missing {', '.join(missing[:4])}")
    return {name: weights[name] for name in expected_names()}


def _bias_of(output: str, readers: dict[str, list[Any]], arrays: dict[str, Any]) -> str | None:
    """The bias initializer added to a product's output (``Add(product, bias)``), if any."""
    for node in readers.get(output, []):
        if node.op_type == "Add":
            for name in node.input:
                if name != output and name in arrays and name.endswith(".bias"):
                    return str(name)
    return None


def expected_names() -> list[str]:
    """BERT's parameter names for the bundled model's shape (6 layers), in a fixed order."""
    names = [
        "embeddings.word_embeddings.weight",
        "embeddings.position_embeddings.weight",
        "embeddings.token_type_embeddings.weight",
        "embeddings.LayerNorm.weight",
        "embeddings.LayerNorm.bias",
    ]
    parts = (
        "attention.self.query",
        "attention.self.key",
        "attention.self.value",
        "attention.output.dense",
        "intermediate.dense",
        "output.dense",
    )
    for layer in range(LAYERS):
        for part in parts:
            names += [f"encoder.layer.{layer}.{part}.weight", f"encoder.layer.{layer}.{part}.bias"]
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            names += [f"encoder.layer.{layer}.{norm}.weight", f"encoder.layer.{layer}.{norm}.bias"]
    return names
