"""Read-your-writes over HTTP with read replicas (issue 39): positions in headers.

A request that may write (POST, PUT, DELETE) is answered with ``X-Retrievo-Position``: the primary's WAL
position once it is done. A request that sends it back as ``X-Retrievo-After`` reads from a replica that
has replayed that far, or from the primary (``retrievo.store.base.read_after``). Only where the store has
replicas; elsewhere every read sees every write and no header is added.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from retrievo.store.base import read_after

AFTER, POSITION = b"x-retrievo-after", b"X-Retrievo-Position"
_LSN = re.compile(r"^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$")


class Positions:
    def __init__(self, app: ASGIApp, position: Callable[[], str | None]) -> None:
        self.app, self.position = app, position

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        after = dict(scope["headers"]).get(AFTER, b"").decode("latin-1").strip()
        token = read_after.set(after) if _LSN.match(after) else None  # anything else: ignored
        writes = scope["method"] in ("POST", "PUT", "DELETE")

        async def sending(message: Message) -> None:
            if writes and message["type"] == "http.response.start":
                try:
                    now = await anyio.to_thread.run_sync(self.position)
                except Exception:  # the primary away: the answer goes out without a position
                    now = None
                if now is not None:
                    message["headers"] = [*message.get("headers", []), (POSITION, now.encode())]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            if token is not None:
                read_after.reset(token)
