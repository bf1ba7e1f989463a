"""Which kernels serve the bundled model on this CPU: chosen once per process, by what the CPU computes.

The serving graph (``embed/integer.py``) multiplies uint8 activations (zero point 128) by the shipped int8
weights. Those sums are exact where the CPU multiplies u8 × s8 into 32-bit sums (VNNI's ``VPDPBUSD``,
AMX, ARM's dot products). On x86 without VNNI (AVX2 only: older Intel, AMD before Zen 4, most CI
runners), ONNX Runtime forms u8 × s8 pairs with ``VPMADDUBSW``, whose 16-bit sums saturate past 32,767
(255 × 127 × 2 = 64,770): the vectors drift from the float graph's (cosine 0.9975 at worst on the tests'
texts) and SciFact's hybrid nDCG@10 moved 0.7411 → 0.7393. ONNX Runtime's quantization guide describes
this and its ``reduce_range`` remedy. Here the remedy is exact arithmetic instead: the same weights shifted
into uint8 (``u8u8``, zero point 128 on both sides) go through ONNX Runtime's u8 × u8 kernels, which widen
to 16 bits before they multiply and never saturate. The integers summed are the same, so the sums are the
same: vectors from either path are interchangeable (one model id), and with the GPU's and the float graph's.

The choice is made by asking the kernels, not by reading a feature list: ``exact(products)`` runs one
``MatMulIntegerToFloat`` over inputs that saturate a 16-bit pair sum (and random ones) and compares with
NumPy's integer product. ``RETRIEVO_KERNELS``:

- ``integer`` (the default): ``u8s8`` where it is exact, else ``u8u8`` where that is exact, else ``float``;
- ``u8s8`` / ``u8u8``: that path whatever the CPU (a path that is not exact here is said in the log);
- ``float``: the shipped graph's float products.

``RETRIEVO_QUERY_KERNELS`` is the setting's older name. Each path's speed and agreement, with the CPU
it ran on: docs/scale.md "Bundled model kernels per CPU" (``benchmarks/scale/kernels.py``).
"""

from __future__ import annotations

import functools
import os
import platform
from typing import Any, Literal, cast

import numpy as np

from retrievo.errors import ConfigError

Kernels = Literal["u8s8", "u8u8", "u7s8", "float"]
SETTINGS = ("integer", "u8s8", "u8u8", "u7s8", "float")
# CPU features that decide how integer products are formed, as /proc/cpuinfo names them (x86, ARM).
FEATURES = ("avx2", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")


def kernels_setting() -> str:
    """``RETRIEVO_KERNELS`` (or its older name ``RETRIEVO_QUERY_KERNELS``): one of ``SETTINGS``."""
    name = "RETRIEVO_KERNELS" if os.environ.get("RETRIEVO_KERNELS") else "RETRIEVO_QUERY_KERNELS"
    kernels = os.environ.get(name, "integer").strip().lower() or "integer"
    if kernels not in SETTINGS:
        raise ConfigError(f"{name} must be one of {', '.join(SETTINGS)}, not {kernels!r}")
    return kernels


def choose(setting: str) -> Kernels:
    """The kernels a setting means on this CPU (``integer``: the first exact integer path, else float)."""
    if setting == "float":
        return "float"
    if setting in ("u8s8", "u8u8", "u7s8"):
        return cast(Kernels, setting)
    if exact("u8s8"):
        return "u8s8"
    return "u8u8" if exact("u8u8") else "float"


@functools.cache
def exact(products: str) -> bool:
    """Whether ONNX Runtime's ``MatMulIntegerToFloat`` sums ``products`` (u8s8 or u8u8) exactly here:
    a pair sum past 16 bits (255 × 127, twice) and random inputs, a row alone and rows together, each
    against NumPy's integer product. False if the kernel cannot run at all."""
    try:
        return _probe(products)
    except Exception:  # no onnxruntime, no contrib kernel: not this path
        return False


def _probe(products: str) -> bool:
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    width, columns = 384, 64
    weights = np.full((width, columns), 127, dtype=np.int8)
    weights[:, 1::2] = rng.integers(-128, 128, (width, columns // 2), dtype=np.int8)
    unsigned, seven = products == "u8u8", products == "u7s8"
    top, zero = (127, 64) if seven else (255, 128)
    b = (weights.astype(np.int16) + 128).astype(np.uint8) if unsigned else weights
    inputs = ["a", "b", "one", "one", "zero"] + (["zero_b"] if unsigned else [])
    node = helper.make_node("MatMulIntegerToFloat", inputs, ["y"], domain="com.microsoft")
    graph = helper.make_graph(
        [node], "probe",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [None, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(b, "b"), helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
         helper.make_tensor("zero", TensorProto.UINT8, [], [zero]),
         helper.make_tensor("zero_b", TensorProto.UINT8, [], [128])],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    # IR version 8: read by every ONNX Runtime since 1.10 (onnx's newest is refused by older runtimes)
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    activations = rng.integers(0, top + 1, (9, width), dtype=np.uint8)
    activations[:3] = top  # u8: every pair 255 × 127 = 64,770, past a 16-bit sum
    for rows in (activations[:1], activations):
        want = (rows.astype(np.int64) - zero) @ weights.astype(np.int64)
        got = session.run(None, {"a": rows})[0]
        if not np.array_equal(got, want.astype(np.float32)):
            return False
    return True


@functools.cache
def cpu_identity() -> tuple[str, tuple[str, ...]]:
    """The CPU's name and the features in ``FEATURES`` it has (read from /proc/cpuinfo where there is
    one; elsewhere the platform's name and none); no probe is run."""
    name, flags = "", set[str]()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key == "model name" and not name:
                    name = value.strip()
                elif key in ("flags", "features"):
                    flags.update(value.split())
    except OSError:  # not Linux: the name only
        pass
    return name or platform.processor() or platform.machine(), tuple(f for f in FEATURES if f in flags)


@functools.cache
def cpu() -> dict[str, Any]:
    """The CPU as far as the kernels care: its name, architecture, the features in ``FEATURES`` it has,
    and which integer paths are exact on it."""
    name, features = cpu_identity()
    return {
        "name": name,
        "machine": platform.machine(),
        "features": list(features),
        "exact": [p for p in ("u8s8", "u8u8") if exact(p)],
    }
