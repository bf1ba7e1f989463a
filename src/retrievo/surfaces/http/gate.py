"""Every request to ``/api`` or ``/mcp`` passes here: key check, rate limit, one structured log line.

- No key, a malformed key, an unknown or revoked key: 401 with the same words, whatever was wrong.
- Over the key's rate: 429 with ``Retry-After``.
- Failed logins are throttled per key id and per client (``FailureThrottle``): after 10 failures, one
  attempt every 10 seconds, the rest answered 429 with ``Retry-After`` before any hash is computed.
- The log line has method, path (never the query string), status, duration and the key's *name*;
  never a secret, never query text (unless ``log_queries``, and then only from the REST layer).
"""

from __future__ import annotations

import json
import logging
import math
import time

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from retrievo.errors import AccessDenied, RetrievoError
from retrievo.surfaces.access import FailureThrottle, KeyRing, Principal, TokenBucket
from retrievo.surfaces.http.settings import ServeSettings

log = logging.getLogger("retrievo.http")
OPERATOR = Principal("operator (--no-auth)", "admin", None)
PUBLIC = ("/api/openapi.json", "/api/docs", "/api/docs/oauth2-redirect")
UNAUTHORIZED = "a valid API key is required (Authorization: Bearer rtv_…)"
THROTTLED = "too many failed logins; retry in {} s"
RATE_LIMITED = "rate limit for this key; retry in {} s"


def guarded(path: str) -> bool:
    return (
        (path.startswith("/api/") and path not in PUBLIC)
        or path == "/mcp"
        or path.startswith(("/mcp/", "/v1/"))
    )


async def respond(
    send: Send, status: int, body: dict[str, str], headers: dict[str, str] | None = None
) -> None:
    payload = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


def bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            text = value.decode("latin-1").strip()
            kind, _, token = text.partition(" ")
            return token.strip() if kind.lower() == "bearer" and token.strip() else ""
    return None


async def check_key(
    keys: KeyRing, failures: FailureThrottle, token: str, client: str
) -> Principal | float | None:
    """The key's principal; None when refused; the seconds to wait while its failures are throttled (per key
    id and per client). The one check for every door: the API, MCP, and the page's form."""
    known = keys.remembered(token)  # checked a moment ago: no thread hop
    if known is not None:
        return known
    who = (f"key:{token.split('.', 1)[0][:40]}", f"client:{client}")
    if not keys.vouched(token) and (wait := failures.wait(*who)) > 0:
        return wait
    try:
        return await anyio.to_thread.run_sync(keys.authenticate, token)
    except AccessDenied:
        failures.failed(*who)
        return None
    except RetrievoError:
        log.exception("the key store could not be read")
        raise


class Gate:
    def __init__(
        self, app: ASGIApp, keys: KeyRing, settings: ServeSettings, bucket: TokenBucket | None = None,
        failures: FailureThrottle | None = None,
    ) -> None:  # fmt: skip
        self.app = app
        self.keys = keys
        self.settings = settings
        self.bucket = bucket or TokenBucket(settings.rate, settings.burst)
        self.failures = failures or FailureThrottle()

    async def _principal(self, scope: Scope) -> Principal | float | None:
        """The caller; None when refused; the seconds to wait when its failures are being throttled."""
        if self.settings.no_auth:
            return OPERATOR
        token = bearer(scope)
        if not token:
            return None
        client = scope.get("client")
        return await check_key(self.keys, self.failures, token, client[0] if client else "-")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [0]
        who = "-"

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            if guarded(scope["path"]):
                principal = await self._principal(scope)
                if principal is None:
                    await respond(sending, 401, {"error": UNAUTHORIZED}, {"WWW-Authenticate": "Bearer"})
                    return
                if isinstance(principal, float):
                    retry = str(math.ceil(principal))
                    await respond(
                        sending, 429, {"error": THROTTLED.format(retry)}, {"Retry-After": retry}
                    )  # fmt: skip
                    return
                who = principal.name
                wait = self.bucket.take(principal.key_id or "operator")
                if wait > 0:
                    await respond(
                        sending, 429, {"error": RATE_LIMITED.format(math.ceil(wait))},
                        {"Retry-After": str(math.ceil(wait))},
                    )  # fmt: skip
                    return
                scope.setdefault("state", {})["principal"] = principal
            await self.app(scope, receive, sending)
        finally:
            log.info(
                json.dumps(
                    {
                        "event": "request",
                        "method": scope.get("method"),
                        "path": scope["path"],
                        "status": status[0],
                        "ms": round((time.perf_counter() - started) * 1000, 1),
                        "key": who,
                    }
                )
            )
