"""The bundled model's serving graph: the NaN guards out, its weight products on integer kernels.

The shipped graph (an export of PyTorch's scaled-dot-product attention) follows every softmax with
``Where(IsNaN(p), 0, p)``, a guard for rows whose keys are all masked. Ours never are (the mask hides
padded *keys*; every row sees at least ``[CLS]``), and the guard was a third of a 256-token chunk's time:
two passes over batch × 12 heads × seq × seq. It is taken out (the vectors do not move: cosine 0.9999998).

The weights are int8 with one scale per output column, but the graph turns them back into float and
multiplies in float (``MatMul(x, Cast(W_q) * scale)``). Here each such product becomes
``MatMulIntegerToFloat`` over the same int8 weights, with the activations quantised **per token**
(each row its own scale, uint8 with zero point 128, one ``QuantizeLinear`` over the rows), then scaled
back by the row's scale: ``(q(x) @ W_q) * column_scale * row_scale``. On a core with VNNI/AMX the
integer products cost a fifth of the float ones (5 ms for the 36 products of a 256-token chunk). Where
u8 × s8 sums are not exact (x86 without VNNI: 16-bit pair sums that saturate), the same weights shifted
into uint8 serve (``products="u8u8"``): the same integers, summed exactly; ``embed/kernels.py`` chooses.

A per-token scale (not one per tensor), the LayerNorm outputs' few outlier channels kept in float
(``x[:, O] @ W[O, :]`` added to the integer product of the rest), and for each layer's second feed-forward
product — over the GELU output, lopsided (≥ -0.17, peaks of 24) and the largest error before — its own
outlier channels and each row quantised around its middle (``(x - m) @ W + m · colsum(W)``: the 255 steps
span the row's range, not twice its peak) keep the vectors close to the float graph's: cosine 0.9999 on
average, ≥ 0.9997 at worst on SciFact abstracts, the Anthropic code set's chunks and CoSQA's code (before
the feed-forward change: 0.9996, ≥ 0.9993) — on an exact path. 7-bit activations (``u7s8``, which never
saturate either) reach 0.9988 at worst and are not chosen. Per-token scales also make a text's vector
independent of the batch it is embedded in. Measured per path and CPU: docs/scale.md "Bundled
model kernels per CPU" (``benchmarks/scale/kernels.py``; tests/test_integer_queries.py checks the bundled texts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np

# Channels of the model's hidden state whose peak in some LayerNorm output exceeds 6 x that output's
# median channel peak (all-MiniLM-L6-v2: channel 99 reaches ~30 where the median is ~1.7). Derived
# on the model's own LICENSE text; tests/test_integer_queries.py re-derives it. A property of the pinned weights.
OUTLIER_CHANNELS = (63, 99, 127, 223)
# The same rule over each layer's GELU output (the second feed-forward product's input, 1,536 wide):
# channel 856 of layer 0 peaks at ~24 where the median channel peaks at ~1.5, and it set many tokens'
# scales, which made that product the integer graph's largest error (kept in float, the vectors' mean
# cosine to the float graph's went 0.9996 -> 0.9999). Same derivation, same test.
FFN_OUTLIER_CHANNELS = ((856,), (607,), (218, 1004), (358,), (), ())
HIDDEN = 384
# The integer products a graph is built on (embed/kernels.py chooses one for the CPU at hand).
Products = Literal["u8s8", "u8u8", "u7s8"]


class IntegerRewriteError(Exception):
    """The graph is not the shape this rewrite knows (another model): the float graph serves."""


def float_model(path: Path) -> bytes:
    """The model at ``path`` without its softmax NaN guards (same vectors), serialised for onnxruntime."""
    import onnx

    model = onnx.load(str(path))
    _drop_nan_guards(model.graph)
    return bytes(model.SerializeToString())


def integer_model(
    path: Path,
    outliers: tuple[int, ...] = OUTLIER_CHANNELS,
    products: Products = "u8s8",
    ffn_outliers: tuple[tuple[int, ...], ...] = FFN_OUTLIER_CHANNELS,
) -> bytes:
    """The model at ``path`` without NaN guards and with its weight products on integer kernels:
    ``u8s8`` multiplies the shipped int8 weights, ``u8u8`` the same weights shifted by 128 into uint8
    with zero point 128 (the same integers, so the same sums where both are exact)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    _drop_nan_guards(graph)
    producer = {output: node for node in graph.node for output in node.output}
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    graph.initializer.extend([
        helper.make_tensor("iq_127", TensorProto.FLOAT, [], [63.0 if products == "u7s8" else 127.0]),
        helper.make_tensor("iq_eps", TensorProto.FLOAT, [], [1e-12]),
        helper.make_tensor("iq_zero", TensorProto.UINT8, [], [64 if products == "u7s8" else 128]),
        helper.make_tensor("iq_zero_b", TensorProto.UINT8, [], [128]),
        helper.make_tensor("iq_one", TensorProto.FLOAT, [], [1.0]),
        helper.make_tensor("iq_half", TensorProto.FLOAT, [], [0.5]),
        helper.make_tensor("iq_rows", TensorProto.INT64, [1], [-1]),
    ])  # fmt: skip

    nodes: list[Any] = []
    quantised: dict[str, str] = {}  # input name -> prefix of its quantised form (Q, K and V share one)
    shifted: set[str] = set()  # the uint8 weights made for u8u8

    def quantise(x: str, channels: tuple[int, ...], width: int, centre: bool) -> str:
        p = f"iq_x{len(quantised)}_"
        source = x
        if channels:  # outlier channels out of the integer part; kept aside in float
            mask = np.ones(width, dtype=np.float32)
            mask[list(channels)] = 0.0
            graph.initializer.extend([
                numpy_helper.from_array(mask, p + "mask"),
                numpy_helper.from_array(np.asarray(channels, dtype=np.int64), p + "outliers"),
            ])  # fmt: skip
            nodes.append(helper.make_node("Mul", [x, p + "mask"], [p + "rest"]))
            nodes.append(helper.make_node("Gather", [x, p + "outliers"], [p + "peaks"], axis=2))
            source = p + "rest"
        if centre:  # a lopsided row (GELU's output, >= -0.17): quantised around its middle, added back after
            nodes.extend([
                helper.make_node("ReduceMax", [source], [p + "hi"], axes=[-1], keepdims=1),
                helper.make_node("ReduceMin", [source], [p + "lo"], axes=[-1], keepdims=1),
                helper.make_node("Add", [p + "hi", p + "lo"], [p + "span"]),
                helper.make_node("Mul", [p + "span", "iq_half"], [p + "mid"]),
                helper.make_node("Sub", [source, p + "mid"], [p + "centred"]),
            ])  # fmt: skip
            source = p + "centred"
        nodes.extend([
            # one scale per token: max |x| over the row / 127 (its zero point 128, a row's shape)
            helper.make_node("Abs", [source], [p + "abs"]),
            helper.make_node("ReduceMax", [p + "abs"], [p + "max"], axes=[-1], keepdims=1),
            helper.make_node("Max", [p + "max", "iq_eps"], [p + "maxe"]),
            helper.make_node("Div", [p + "maxe", "iq_127"], [p + "scale"]),
            helper.make_node("Reshape", [p + "scale", "iq_rows"], [p + "row_scale"]),
            helper.make_node("Shape", [p + "row_scale"], [p + "rows"]),
            helper.make_node("Expand", ["iq_zero", p + "rows"], [p + "row_zero"]),
            # QuantizeLinear per axis 0 of the (tokens, channels) view: one pass, no float temporaries
            helper.make_node("Flatten", [source], [p + "flat"], axis=2),
            helper.make_node("QuantizeLinear", [p + "flat", p + "row_scale", p + "row_zero"], [p + "qflat"],
                             axis=0),
            helper.make_node("Shape", [source], [p + "shape"]),
            helper.make_node("Reshape", [p + "qflat", p + "shape"], [p + "q"]),
        ])  # fmt: skip
        return p

    rewritten = ffn = 0
    for node in graph.node:
        weight = _int8_weight(node, producer, initializers)
        if weight is None:
            nodes.append(node)
            continue
        weight_q, column_scale = weight
        x = node.input[0]
        source = producer.get(x)
        width = initializers[weight_q].dims[0]
        channels: tuple[int, ...] = ()
        centre = width == 4 * HIDDEN
        if source is not None and source.op_type == "LayerNormalization" and width == HIDDEN:
            channels = outliers
        elif width == 4 * HIDDEN:  # a layer's second feed-forward product, over its GELU output
            channels = ffn_outliers[ffn] if ffn < len(ffn_outliers) else ()
            ffn += 1
        if x not in quantised:
            quantised[x] = quantise(x, channels, width, centre)
        q = quantised[x]
        p = f"iq_m{rewritten}_"
        rewritten += 1
        inputs = [q + "q", weight_q, "iq_one", column_scale, "iq_zero"]
        if products == "u8u8":  # B = W + 128 with zero point 128: (a - 128)(b - 128) = (a - 128) W
            inputs[1] = weight_q + "_u8"
            if inputs[1] not in shifted:
                shifted.add(inputs[1])
                weights = numpy_helper.to_array(initializers[weight_q]).astype(np.int16) + 128
                graph.initializer.append(numpy_helper.from_array(weights.astype(np.uint8), inputs[1]))
            inputs.append("iq_zero_b")
        nodes.append(
            helper.make_node("MatMulIntegerToFloat", inputs, [p + "columns"], domain="com.microsoft")
        )
        dequantised = numpy_helper.to_array(initializers[weight_q]).astype(np.float32)
        dequantised *= numpy_helper.to_array(initializers[column_scale]).astype(np.float32)
        terms = [p + "integer"]
        nodes.append(helper.make_node("Mul", [p + "columns", q + "scale"], [p + "integer"]))
        if channels:  # the outlier channels' rows in float
            graph.initializer.append(numpy_helper.from_array(dequantised[list(channels), :], p + "peak_rows"))
            nodes.append(helper.make_node("MatMul", [q + "peaks", p + "peak_rows"], [p + "peak"]))
            terms.append(p + "peak")
        if centre:  # (x - mid) @ W + mid * (column sums of W)
            graph.initializer.append(numpy_helper.from_array(dequantised.sum(axis=0), p + "column_sums"))
            nodes.append(helper.make_node("Mul", [q + "mid", p + "column_sums"], [p + "middle"]))
            terms.append(p + "middle")
        for i, term in enumerate(terms[1:], start=1):
            total = list(node.output) if i == len(terms) - 1 else [f"{p}sum{i}"]
            nodes.append(helper.make_node("Add", [terms[i - 1] if i == 1 else f"{p}sum{i - 1}", term], total))
        if len(terms) == 1:
            nodes[-1].output[0] = node.output[0]
    if not rewritten:
        raise IntegerRewriteError(f"{path}: no MatMul over int8 weights with column scales")
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    del graph.node[:]
    graph.node.extend(_live(nodes, {output.name for output in graph.output}))
    live = {name for node in graph.node for name in node.input}
    unused = [tensor for tensor in graph.initializer if tensor.name not in live]
    for tensor in unused:  # the float weights the rewrite left unread
        graph.initializer.remove(tensor)
    return bytes(model.SerializeToString())


def _drop_nan_guards(graph: Any) -> int:
    """Remove ``Where(IsNaN(p), c, p)`` (readers of it read ``p``); how many went."""
    producer = {output: node for node in graph.node for output in node.output}
    renamed: dict[str, str] = {}
    dropped: set[int] = set()
    for node in graph.node:
        if node.op_type != "Where":
            continue
        test = producer.get(node.input[0])
        if test is not None and test.op_type == "IsNaN" and test.input[0] == node.input[2]:
            renamed[node.output[0]] = node.input[2]
            dropped.update((id(node), id(test)))
    if not dropped or {output.name for output in graph.output} & renamed.keys():
        return 0  # none, or a guard on a graph output: the graph stays as it was
    kept = [node for node in graph.node if id(node) not in dropped]
    for node in kept:
        for i, name in enumerate(node.input):
            if name in renamed:
                node.input[i] = renamed[name]
    del graph.node[:]
    graph.node.extend(kept)
    return len(renamed)


def _int8_weight(node: Any, producer: dict[str, Any], initializers: dict[str, Any]) -> tuple[str, str] | None:
    """(int8 weight, column scale) when ``node`` is ``MatMul(x, Cast(W_q) * scale)``, else None."""
    if node.op_type != "MatMul":
        return None
    dequantise = producer.get(node.input[1])
    if dequantise is None or dequantise.op_type != "Mul" or dequantise.input[1] not in initializers:
        return None
    cast = producer.get(dequantise.input[0])
    if cast is None or cast.op_type != "Cast" or cast.input[0] not in initializers:
        return None
    if initializers[cast.input[0]].data_type != 3:  # TensorProto.INT8
        return None
    return cast.input[0], dequantise.input[1]


def _live(nodes: list[Any], outputs: set[str]) -> list[Any]:
    """``nodes`` less those nothing downstream reads (the float weights the rewrite left unused)."""
    needed = set(outputs)
    kept = []
    for node in reversed(nodes):
        if any(output in needed for output in node.output):
            kept.append(node)
            needed.update(node.input)
    return kept[::-1]
