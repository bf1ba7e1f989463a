"""``POST /v1/embeddings``: the bundled model (or the configured one) behind the OpenAI embeddings API.

One machine with the model — a GPU, or just a spare one — can then embed for every indexer of a team:
point them at it with ``RETRIEVO_EMBEDDER=openai``, ``RETRIEVO_EMBED_URL=http://HOST:PORT/v1``,
``RETRIEVO_EMBED_MODEL=local`` and a read key as ``RETRIEVO_EMBED_API_KEY``. Behind the same keys, rate
limits and logs as the rest of the API. Vectors are L2-normalised, as float lists (``encoding_format``
``float``, the default) or as base64 strings of little-endian float32 (``base64``, what retrievo's own
OpenAI embedder asks for: a quarter of the bytes). The model runs where ``RETRIEVO_DEVICE`` puts it: a
server with a GPU embeds there (``embed/device.py``).
"""

from __future__ import annotations

import base64
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from retrievo.embed.pool import LOCAL_ALIASES
from retrievo.engine import Engine
from retrievo.errors import EmbedderUnavailable
from retrievo.surfaces.http.rest import arguments_of

MAX_INPUTS = 2048  # the OpenAI API's own limit per request
MAX_INPUT_CHARS = 100_000


def _openai_error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": None}}, status)


def add_embedding_routes(app: FastAPI, engine: Engine) -> None:
    @app.post("/v1/embeddings", tags=["embeddings"], summary="OpenAI-compatible embeddings (read key).")
    async def embeddings(request: Request) -> JSONResponse:
        if not request.state.principal.may("read"):
            return _openai_error(403, "embeddings need a key with the read scope", "permission_error")
        body = await arguments_of(request)
        if isinstance(body, JSONResponse):
            return body
        embedder = engine.embedder
        if embedder is None:
            return _openai_error(503, "this server has no embedder (RETRIEVO_EMBEDDER=none)", "server_error")
        model = body.get("model") or embedder.model_id
        if model not in (embedder.model_id, *LOCAL_ALIASES):
            return _openai_error(404, f"model {model!r} is not served here; this server serves "
                                      f"{embedder.model_id!r} (or ask for 'local')")  # fmt: skip
        given = body.get("input")
        texts = [given] if isinstance(given, str) else given
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return _openai_error(400, "'input' must be a string or a non-empty list of strings")
        if len(texts) > MAX_INPUTS or any(len(t) > MAX_INPUT_CHARS for t in texts):
            return _openai_error(400, f"at most {MAX_INPUTS} inputs of {MAX_INPUT_CHARS} characters each")
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            return _openai_error(400, "encoding_format must be 'float' or 'base64'")
        try:
            vectors = await anyio.to_thread.run_sync(embedder.embed_documents, texts)
        except EmbedderUnavailable as exc:
            return _openai_error(503, str(exc), "server_error")
        characters = sum(len(t) for t in texts)
        data = [
            {"object": "embedding", "index": i, "embedding": _encoded(row, encoding)}
            for i, row in enumerate(vectors)
        ]
        usage = {"prompt_tokens": characters // 4, "total_tokens": characters // 4}  # an estimate
        return JSONResponse({"object": "list", "data": data, "model": embedder.model_id, "usage": usage})


def _encoded(row: Any, encoding: str) -> Any:
    if encoding == "base64":
        return base64.b64encode(row.astype("<f4").tobytes()).decode("ascii")
    return row.tolist()
