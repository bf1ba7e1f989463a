"""The embedding models an engine can reach, by model id.

A collection is served by the model its vectors were made with (``collections.model_id``), not by
whatever the configuration names today: after ``retrievo regenerate --model NEW`` switches a
collection, every process serving it embeds queries with NEW from its next search on. The bundled
model and the static one distilled from it (``static``) are always reachable; an HTTP model
(``openai:NAME``, ``ollama:NAME``) is when the configuration names that provider or an embedding URL
(``RETRIEVO_EMBEDDER``, ``RETRIEVO_EMBED_URL``).
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence

from retrievo.config import Config, cache_folder
from retrievo.embed.base import Embedder, Vectors
from retrievo.embed.queries import QueryEmbedder
from retrievo.errors import ConfigError

log = logging.getLogger(__name__)

LOCAL_ALIASES = ("local", "minilm")
STATIC_ALIASES = ("static",)
# Tables of the static model this version no longer ships (their vectors are another space): a collection
# embedded with one is moved, not served.
RETIRED_STATIC = ("retrievo-static-minilm-v1",)


def retired(model_id: str, collection: str) -> str | None:
    """How to move a collection embedded with a model this version replaced; None for any other model."""
    if model_id not in RETIRED_STATIC:
        return None
    from retrievo.embed.static import MODEL_ID as STATIC_MODEL_ID

    return (
        f"collection {collection!r} was embedded with {model_id}, a table of the static model that this "
        f"version of retrievo replaced with {STATIC_MODEL_ID}; move it with `retrievo regenerate --model "
        f"static --collection {collection}` (seconds: no transformer runs) or `--model local` (the bundled "
        "model)"
    )


def build_embedder(model_id: str, config: Config) -> Embedder | None:
    """The embedder for a model id (or ``local``), None when this configuration cannot reach it."""
    from retrievo.embed.local import MODEL_ID
    from retrievo.embed.static import MODEL_ID as STATIC_MODEL_ID

    if config.embedder == "none":
        return None
    if model_id in (MODEL_ID, *LOCAL_ALIASES):
        from retrievo.embed.local import MiniLMEmbedder

        return MiniLMEmbedder(prepared_dir=cache_folder(config) / "models")
    if model_id in (STATIC_MODEL_ID, *STATIC_ALIASES):
        from retrievo.embed.static import StaticEmbedder

        return StaticEmbedder()
    provider, _, name = model_id.partition(":")
    if not name or provider not in ("openai", "ollama"):
        return None
    if config.embedder != provider and not config.embed_url:
        return None
    from retrievo.embed.http import OllamaEmbedder, OpenAIEmbedder

    if provider == "openai":
        return OpenAIEmbedder(
            config.embed_url or "https://api.openai.com/v1",
            name,
            config.embed_api_key,
            concurrency=config.embed_concurrency,
        )
    return OllamaEmbedder(
        config.embed_url or "http://127.0.0.1:11434",
        name,
        config.embed_api_key,
        concurrency=config.embed_concurrency,
    )


class ModelPool:
    def __init__(self, config: Config, default: Embedder | None, retry_after_s: float) -> None:
        self.config = config
        self.default = default
        self._retry_after_s = retry_after_s
        self._lock = threading.Lock()
        self._embedders: dict[str, Embedder | None] = {}
        self._queries: dict[str, QueryEmbedder] = {}
        # models loading in the background (``ready_reader``): the thread, when it started
        self.loading: dict[str, tuple[threading.Thread, float]] = {}
        self._asked: set[str] = set()  # models ``ready_reader`` was asked for (a load starts the second time)
        _POOLS.add(self)
        if default is not None:
            self._embedders[default.model_id] = default
            self._queries[default.model_id] = QueryEmbedder(default, retry_after_s)

    @property
    def default_queries(self) -> QueryEmbedder:
        if self.default is None:
            return QueryEmbedder(None, self._retry_after_s)
        return self._queries[self.default.model_id]

    def get(self, model_id: str) -> Embedder | None:
        """The embedder of ``model_id``; None when no embedder is configured or the model is out of reach."""
        if self.default is None:
            return None
        with self._lock:
            if model_id not in self._embedders:
                self._embedders[model_id] = build_embedder(model_id, self.config)
            return self._embedders[model_id]

    def require(self, spec: str) -> Embedder:
        """The embedder a ``--model`` names; ConfigError saying how to make it reachable."""
        embedder = self.get(spec) if self.default is not None else build_embedder(spec, self.config)
        if embedder is None:
            raise ConfigError(
                f"model {spec!r} cannot be reached with this configuration: name `local` for the bundled "
                "model, `static` for the static one, or openai:NAME / ollama:NAME with RETRIEVO_EMBED_URL "
                "(and RETRIEVO_EMBED_API_KEY) set"
            )
        return embedder

    def ready_reader(self, model_id: str, in_flight: int = 1) -> Callable[[Sequence[str]], Vectors] | None:
        """``model_id``'s document reader (``in_flight`` batches at once: a search's share of the cores)
        where it runs here and answers without loading first; else None, and from the second time this
        process asks, the model starts loading on a thread of its own, so that a search never waits for a
        load: the ones after it find the model ready. (Not the first time: a process that asks once, a
        one-off CLI search, would end while the model loads, and its exit would wait for the load, below.)
        A load that failed is tried again ``retry_after_s`` after it began. A fork waits for a load under
        way (a child must not inherit the locks it holds: the import lock, the model's own), and so does
        the process's exit (a runtime torn down while it builds a session aborts the process). None for a
        service (``Embedder.remote``): a search would pay it for every text."""
        embedder = self.get(model_id)
        if embedder is None or embedder.remote:
            return None
        if embedder.ready():
            return functools.partial(embedder.embed_documents, in_flight=in_flight)
        with self._lock:
            if model_id not in self._asked:
                self._asked.add(model_id)
                return None
            under_way = self.loading.get(model_id)
            if under_way is None or (
                not under_way[0].is_alive() and time.monotonic() - under_way[1] >= self._retry_after_s
            ):
                thread = threading.Thread(
                    target=_load, args=(embedder,), name=f"retrievo-load-{model_id}", daemon=True
                )
                self.loading[model_id] = (thread, time.monotonic())
                thread.start()
        return None

    def forget_queries(self) -> None:
        """Empty every query-vector cache (so a measurement pays for each query's embedding)."""
        for queries in list(self._queries.values()):
            queries.forget()

    def queries(self, model_id: str) -> QueryEmbedder | None:
        embedder = self.get(model_id)
        if embedder is None:
            return None
        with self._lock:
            if embedder.model_id not in self._queries:
                self._queries[embedder.model_id] = QueryEmbedder(embedder, self._retry_after_s)
            return self._queries[embedder.model_id]


def _load(embedder: Embedder) -> None:
    try:
        embedder.load()
    except Exception as exc:  # said here (a thread's error reaches no caller); tried again later
        log.warning("%s could not be loaded in the background (%s: %s)", embedder.model_id,
                    type(exc).__name__, exc)  # fmt: skip


_POOLS: weakref.WeakSet[ModelPool] = weakref.WeakSet()


def _wait_for_loads() -> None:
    """A fork, and the process's exit, wait for the loads under way (up to a minute each): a thread that
    imports the model's runtime holds Python's import lock, which a child would inherit held and no thread
    there releases; and onnxruntime aborts the process when it is torn down while a session is built."""
    for pool in list(_POOLS):
        for thread, _ in list(pool.loading.values()):
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout=60)


def _forked() -> None:
    """In a forked child no thread of the parent runs: its loads are not under way, its locks are new, and
    what the parent asked for is not the child's (a resident process's child answers one call)."""
    for pool in list(_POOLS):
        pool._lock = threading.Lock()
        pool.loading = {}
        pool._asked = set()


os.register_at_fork(before=_wait_for_loads, after_in_child=_forked)
atexit.register(_wait_for_loads)
