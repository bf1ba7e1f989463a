"""The reranking seam: an HTTP /rerank endpoint (Cohere/Jina/TEI shape, served locally) and a local ONNX
cross-encoder. No cross-encoder's weights can be had offline here, so the ONNX test builds a small
ONNX graph with the real tokenizer and the cross-encoder's inputs and output (a logit per pair) whose
score is how often the pair mentions one word; the code path is the one a real model takes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import JsonServer
from retrievo import Config, Engine
from retrievo.errors import ConfigError
from retrievo.search.rerank import HttpReranker, OnnxCrossEncoder, make_reranker

QUESTION = "How many weeks of parental leave?"


class RerankServer(JsonServer):
    """Scores each document by how often it says ``favourite`` (so the test decides the order)."""

    def __init__(self, favourite: str) -> None:
        self.favourite = favourite
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.fail = False
        super().__init__()
        self.url = f"{self.base}/v1"

    def answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        self.requests.append(body)
        self.headers.append(headers)
        if self.fail or path != "/v1/rerank":
            return 500, {"message": "internal"}
        results = [
            {"index": i, "relevance_score": doc.lower().count(self.favourite) / (1 + len(doc) / 1000)}
            for i, doc in enumerate(body["documents"])
        ]
        results.sort(key=lambda r: -r["relevance_score"])
        return 200, {"id": "r1", "results": results[: body["top_n"]], "meta": {}}


@pytest.fixture
def rerank_server() -> Iterator[RerankServer]:
    server = RerankServer("sick")
    yield server
    server.close()


def test_http_reranker_reorders_the_fused_top_and_explains(
    handbook: Path, minilm: Any, tmp_path: Path, rerank_server: RerankServer, caplog: pytest.LogCaptureFixture
) -> None:
    plain = Engine(Config(db=tmp_path / "i.db"), embedder=minilm)
    plain.index([handbook])
    before = plain.search(QUESTION, limit=5)
    plain.close()
    config = Config.from_env(db=tmp_path / "i.db", rerank_url=rerank_server.url, rerank_model="rerank-v3.5",
                             rerank_api_key="sk-rerank-secret", rerank_depth=10)  # fmt: skip
    with Engine(config, embedder=minilm) as engine:
        after = engine.search(QUESTION, limit=5, explain=True)
        body = rerank_server.requests[-1]
        assert body["query"] == QUESTION and body["model"] == "rerank-v3.5" and len(body["documents"]) == 10
        assert rerank_server.headers[-1]["Authorization"] == "Bearer sk-rerank-secret"
        top = after.hits[0]
        assert "sick" in top.chunk.text.lower()  # the reranker's choice, not the fused one
        assert before.hits[0].chunk.chunk_id != top.chunk.chunk_id
        assert top.explain is not None and top.explain["rerank"].rank == 1
        assert top.explain["fused"].rank > 1  # explain shows where it stood before
        assert "sk-rerank-secret" not in repr(config)
        # A failing reranker: logged, fused order kept, no rerank entry.
        rerank_server.fail = True
        with caplog.at_level(logging.WARNING):
            kept = engine.search(QUESTION, limit=5, explain=True)
        assert [h.chunk.chunk_id for h in kept.hits] == [h.chunk.chunk_id for h in before.hits]
        assert kept.hits[0].explain is not None and "rerank" not in kept.hits[0].explain
        assert "keeping the fused order" in caplog.text and "sk-rerank-secret" not in caplog.text


def _count_word_model(folder: Path, token_id: int) -> None:
    """An ONNX graph with a cross-encoder's interface: logits[n, 1] = occurrences of one token in the pair."""
    import onnx
    from onnx import TensorProto, helper

    target = helper.make_tensor("target", TensorProto.INT64, [], [token_id])
    nodes = [
        helper.make_node("Equal", ["input_ids", "target"], ["hits"]),
        helper.make_node("Cast", ["hits"], ["hits_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["hits_f", "mask_f"], ["counted"]),
        helper.make_node("ReduceSum", ["counted", "axes"], ["logits"], keepdims=1),
    ]
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    graph = helper.make_graph(
        nodes, "count_word",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["n", "l"])
         for name in ("input_ids", "attention_mask", "token_type_ids")],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["n", 1])],
        initializer=[target, axes],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(folder / "model.onnx"))


def test_onnx_cross_encoder_from_a_local_folder(handbook: Path, minilm: Any, tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    from retrievo.embed.tokens import bundled_tokenizer_json

    folder = tmp_path / "cross-encoder"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(bundled_tokenizer_json(), encoding="utf-8")
    token_id = Tokenizer.from_str(bundled_tokenizer_json()).token_to_id("sick")
    assert token_id is not None
    _count_word_model(folder, token_id)
    encoder = OnnxCrossEncoder(folder)
    scores = encoder.score(QUESTION, ["sick leave when sick", "parental leave", "nothing"])
    assert scores == [2.0, 0.0, 0.0]
    config = Config.from_env(db=tmp_path / "i.db", rerank_path=str(folder))
    with Engine(config, embedder=minilm) as engine:
        engine.index([handbook])
        result = engine.search(QUESTION, limit=3, explain=True)
    assert "sick" in result.hits[0].chunk.text.lower()
    assert result.hits[0].explain is not None and result.hits[0].explain["rerank"].score >= 1


def test_reranker_settings_are_checked(tmp_path: Path) -> None:
    assert make_reranker(Config()) is None
    assert isinstance(make_reranker(Config(rerank_url="http://x/v1")), HttpReranker)
    with pytest.raises(ConfigError, match="not both"):
        make_reranker(Config(rerank_url="http://x", rerank_path=str(tmp_path)))
    with pytest.raises(ConfigError, match=r"model\.onnx and tokenizer\.json"):
        make_reranker(Config(rerank_path=str(tmp_path)))
    with pytest.raises(ConfigError, match="rerank_depth"):
        Config.from_env(rerank_depth=0)
