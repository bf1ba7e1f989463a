"""HTTP embedding providers: OpenAI-compatible ``/embeddings`` and Ollama ``/api/embed``.

Several batches in flight at once (``parallel_batches``, RETRIEVO_EMBED_CONCURRENCY, default 4: a
service on a GPU is never idle between requests; the base class never holds more than that many batches,
so memory stays bounded). Vectors travel as base64 float32 where the provider speaks it (the OpenAI API's
``encoding_format: base64``: a quarter of the bytes of a JSON float list and no float parsing; a
provider that refuses it with 400/422 is asked again, from then on, for float lists). Retries with exponential back-off on connection errors, 429 and 5xx, waiting
at least what a ``Retry-After`` header asks (at most ``MAX_RETRY_AFTER_S``). The API key travels only
in the Authorization header; no message, log line or repr ever contains it.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from retrievo.embed.base import Embedder, Vectors
from retrievo.errors import EmbedderUnavailable

log = logging.getLogger(__name__)
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 30.0
QUERY_BUDGET_S = 0.8  # a search gives up on its query's vector (and falls back to keywords) by then …
QUERY_CONNECT_S = 0.5  # … a connection it waits for …
QUERY_RETRY_WAIT_S = 0.2  # … and a pause before its one retry


class HttpEmbedder(Embedder):
    """Shared transport for HTTP providers; subclasses say how to shape a request and read a reply."""

    path: str = ""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dimensions: int | None = None,
        retries: int = 3,
        backoff_s: float = 0.5,
        timeout_s: float = 60.0,
        batch_size: int = 64,
        concurrency: int = 4,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.model_id = f"{type(self).provider}:{model}"
        self.batch_size = batch_size
        self._api_key = api_key
        self._dimensions = dimensions
        self._retries = retries
        self._backoff_s = backoff_s
        self._timeout_s = timeout_s
        self.parallel_batches = max(1, concurrency)
        self.parallel_queries = max(self.parallel_queries, self.parallel_batches)
        limits = httpx.Limits(max_connections=self.parallel_batches + 4)
        self._client = httpx.Client(timeout=timeout_s, limits=limits)

    provider = "http"
    parallel_queries = 4  # a provider serves requests side by side
    remote = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    def close(self) -> None:
        """Close the kept-alive connections to the provider."""
        self._client.close()

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._dimensions = int(self.embed_batch(["dimension probe"]).shape[1])
        return self._dimensions

    def request_body(self, texts: Sequence[str]) -> dict[str, Any]:
        raise NotImplementedError

    def parse_vectors(self, body: Any) -> list[Any]:
        """One row per text, in order: a list of floats or a base64 string of little-endian float32."""
        raise NotImplementedError

    def refused_format(self) -> bool:
        """Called on a 400/422 answer: True when the request's vector format was dropped for a plainer one
        (the request is then sent again at once)."""
        return False

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, self._retries, budget_s=None)

    def embed_query_batch(self, texts: Sequence[str]) -> Vectors:
        """A search waits for its query's vector: a provider that does not answer is given up within
        ``QUERY_BUDGET_S`` (a quick connect, a retry only if its wait fits), so the search falls back to
        keywords in under a second instead of after every retry (3.5 s of backoff for documents)."""
        return self._embed(texts, min(self._retries, 1), budget_s=QUERY_BUDGET_S)

    def _embed(self, texts: Sequence[str], retries: int, budget_s: float | None) -> Vectors:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        url = self.base_url + self.path
        last_problem = "no attempt made"
        wait_s = 0.0
        started = time.monotonic()
        timeout: httpx.Timeout | httpx._client.UseClientDefault = (
            httpx.Timeout(self._timeout_s, connect=QUERY_CONNECT_S)
            if budget_s is not None
            else httpx.USE_CLIENT_DEFAULT
        )
        made = 0
        for attempt in range(retries + 1):
            if attempt:
                pause = max(wait_s, self._backoff_s * 2 ** (attempt - 1))
                if budget_s is not None:
                    pause = min(pause, QUERY_RETRY_WAIT_S)
                    if time.monotonic() - started + pause >= budget_s:
                        break  # a search does not wait out the backoff: it falls back to keywords
                time.sleep(pause)
            made += 1
            try:
                response = self._post(url, texts, headers, timeout)
            except httpx.HTTPError as exc:
                last_problem = f"{type(exc).__name__}: cannot reach {url}"
                log.warning("embedding request failed (attempt %d): %s", attempt + 1, last_problem)
                continue
            if response.status_code in RETRYABLE_STATUS:
                last_problem = f"HTTP {response.status_code} from {url}"
                wait_s = _retry_after(response.headers.get("retry-after"))
                log.warning("embedding request failed (attempt %d): %s", attempt + 1, last_problem)
                continue
            if response.status_code >= 400:
                raise EmbedderUnavailable(
                    f"embedding provider {url} answered HTTP {response.status_code}; "
                    "check the model name and API key (RETRIEVO_EMBED_MODEL, RETRIEVO_EMBED_API_KEY)"
                )
            try:
                vectors = _rows(self.parse_vectors(response.json()))
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                raise EmbedderUnavailable(
                    f"embedding provider {url} sent a reply retrievo cannot read"
                ) from exc
            if len(vectors) != len(texts):
                raise EmbedderUnavailable(
                    f"embedding provider {url} returned {len(vectors)} vectors for {len(texts)} texts"
                )
            return vectors
        raise EmbedderUnavailable(
            f"embedding provider unavailable after {made} attempt{'' if made == 1 else 's'} ({last_problem})"
        )

    def _post(self, url: str, texts: Sequence[str], headers: dict[str, str], timeout: Any) -> httpx.Response:
        response = self._client.post(url, json=self.request_body(texts), headers=headers, timeout=timeout)
        if response.status_code in (400, 422) and self.refused_format():
            log.warning("%s refused base64 vectors; asking it for float lists from now on", url)
            response = self._client.post(url, json=self.request_body(texts), headers=headers, timeout=timeout)
        return response


def _retry_after(value: str | None) -> float:
    """Seconds a ``Retry-After`` header asks for (a number of seconds; a date or nonsense: 0), capped."""
    try:
        return min(max(float(value or 0), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:
        return 0.0


def _rows(vectors: list[Any]) -> Vectors:
    """float32 rows from float lists or base64 strings (little-endian float32, the OpenAI API's base64)."""
    if vectors and isinstance(vectors[0], str):
        rows = [np.frombuffer(base64.b64decode(row), dtype="<f4") for row in vectors]
        if len({len(row) for row in rows}) != 1:
            raise ValueError("base64 vectors of different lengths")
        return np.stack(rows).astype(np.float32, copy=False)
    return np.asarray(vectors, dtype=np.float32)


class OpenAIEmbedder(HttpEmbedder):
    """OpenAI-compatible: OpenAI, Azure OpenAI, vLLM, TEI, LM Studio (POST {base}/embeddings)."""

    provider = "openai"
    path = "/embeddings"
    base64_vectors = True  # until the provider refuses them

    def request_body(self, texts: Sequence[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self.base64_vectors:
            body["encoding_format"] = "base64"
        return body

    def refused_format(self) -> bool:
        if not self.base64_vectors:
            return False
        self.base64_vectors = False
        return True

    def parse_vectors(self, body: Any) -> list[Any]:
        rows = sorted(body["data"], key=lambda item: item.get("index", 0))
        return [row["embedding"] for row in rows]


class OllamaEmbedder(HttpEmbedder):
    """Ollama (POST {base}/api/embed with ``input`` as a list)."""

    provider = "ollama"
    path = "/api/embed"

    def request_body(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"model": self.model, "input": list(texts)}

    def parse_vectors(self, body: Any) -> list[Any]:
        return list(body["embeddings"])
