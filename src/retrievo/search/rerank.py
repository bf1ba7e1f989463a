"""An optional reranking stage over the fused top-N: one abstract method, two implementations.

- ``HttpReranker``: any endpoint speaking the Cohere/Jina/TEI ``POST /rerank`` shape
  (``{"model", "query", "documents", "top_n"}`` → ``{"results": [{"index", "relevance_score"}]}``).
- ``OnnxCrossEncoder``: a cross-encoder exported to ONNX, loaded from a local folder holding
  ``model.onnx`` and ``tokenizer.json`` (nothing is downloaded, ever).

Off by default. ``RETRIEVO_RERANK_URL`` or ``RETRIEVO_RERANK_PATH`` turns it on; ``RETRIEVO_RERANK_DEPTH``
(default 30) is how many fused hits it reorders. A reranker that fails is logged and the fused order
stands (``explain`` then shows no ``rerank`` entry). ``explain`` shows each hit's fused rank and score
(``fused``) and its reranked rank and score (``rerank``).
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrievo.config import Config
from retrievo.errors import ConfigError, RetrievoError

log = logging.getLogger(__name__)
DEFAULT_DEPTH = 30
MAX_PAIR_TOKENS = 512
BATCH = 16


class Reranker(ABC):
    name: str = "reranker"

    @abstractmethod
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text for this query, higher is better; RetrievoError when it cannot."""


class HttpReranker(Reranker):
    def __init__(
        self, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 15.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"http:{model}"
        self._api_key = api_key
        import httpx  # here, not at the top: a search without this service never loads it

        self._client = httpx.Client(timeout=timeout_s)

    def __repr__(self) -> str:
        return f"HttpReranker(base_url={self.base_url!r}, model={self.model!r})"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        import httpx

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        body = {"model": self.model, "query": query, "documents": list(texts), "top_n": len(texts),
                "return_documents": False}  # fmt: skip
        try:
            response = self._client.post(f"{self.base_url}/rerank", json=body, headers=headers)
            response.raise_for_status()
            scores = [float("-inf")] * len(texts)
            for item in response.json()["results"]:
                scores[int(item["index"])] = float(item["relevance_score"])
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise RetrievoError(f"the reranker at {self.base_url} failed ({type(exc).__name__})") from exc
        return scores


class OnnxCrossEncoder(Reranker):
    """A local cross-encoder (e.g. ms-marco-MiniLM-L-6-v2 exported to ONNX): query and text in one pass."""

    def __init__(self, folder: Path) -> None:
        model, tokenizer = folder / "model.onnx", folder / "tokenizer.json"
        if not model.is_file() or not tokenizer.is_file():
            raise ConfigError(
                f"a cross-encoder folder needs model.onnx and tokenizer.json; {folder} lacks one"
            )
        self.folder = folder
        self.name = f"onnx:{folder.name}"
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, list[str]] | None = None

    def _load(self) -> tuple[Any, Any, list[str]]:
        with self._lock:
            if self._loaded is None:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
                tokenizer.enable_truncation(max_length=MAX_PAIR_TOKENS)
                tokenizer.enable_padding()
                session = ort.InferenceSession(
                    str(self.folder / "model.onnx"), providers=["CPUExecutionProvider"]
                )
                self._loaded = (tokenizer, session, [i.name for i in session.get_inputs()])
            return self._loaded

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        tokenizer, session, inputs = self._load()
        scores: list[float] = []
        for start in range(0, len(texts), BATCH):
            batch = tokenizer.encode_batch([(query, text) for text in texts[start : start + BATCH]])
            feed = {
                "input_ids": np.array([e.ids for e in batch], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in batch], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in batch], dtype=np.int64),
            }
            logits = np.asarray(session.run(None, {k: v for k, v in feed.items() if k in inputs})[0])
            # One logit (relevance) or two (not relevant, relevant): the last column is "relevant".
            scores.extend(float(v) for v in logits.reshape(len(batch), -1)[:, -1])
        return scores


def make_reranker(config: Config) -> Reranker | None:
    """The reranker the settings ask for (``RETRIEVO_RERANK_URL`` or ``_PATH``), or None: off."""
    url, model, api_key, path = (
        config.rerank_url,
        config.rerank_model,
        config.rerank_api_key,
        config.rerank_path,
    )
    if url and path:
        raise ConfigError("set RETRIEVO_RERANK_URL or RETRIEVO_RERANK_PATH, not both")
    if url:
        return HttpReranker(url, model or "rerank-english-v3.0", api_key)
    if path:
        return OnnxCrossEncoder(Path(path).expanduser())
    return None


def rerank(
    reranker: Reranker, query: str, fused: list[tuple[int, float]], texts: dict[int, str], depth: int
) -> tuple[list[tuple[int, float]], dict[int, tuple[int, float]]] | None:
    """The top ``depth`` of ``fused`` reordered by the reranker (the rest after them, in fused order), and
    each reranked chunk's (new rank, rerank score); None when the reranker failed (logged)."""
    head = [(chunk_id, score) for chunk_id, score in fused[:depth] if chunk_id in texts]
    if not head:
        return None
    try:
        scores = reranker.score(query, [texts[chunk_id] for chunk_id, _ in head])
    except RetrievoError as exc:
        log.warning("reranker unavailable (%s); keeping the fused order", exc)
        return None
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
    reranked = [head[i] for i in order]
    placed = {chunk_id for chunk_id, _ in reranked}
    ranks = {head[i][0]: (new_rank, scores[i]) for new_rank, i in enumerate(order, start=1)}
    return reranked + [item for item in fused if item[0] not in placed], ranks
