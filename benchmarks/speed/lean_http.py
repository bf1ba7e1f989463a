"""A lean HTTP/1.1 load-test client: one keep-alive connection per simulated client, requests written and
answers read on asyncio streams, nothing else (the way wrk or hey drive a server).

Why: the load tests run the clients on the server's own two cores. httpx spends ~4 ms of CPU a call with
one pool of 100 connections (httpcore scans its connections for every queued request) and ~1.5 ms with
a client per connection; this client ~0.1 ms (`benchmarks/speed/serve.py` measures each). What a load
generator spends is taken from the server under test, so the lean client shows what the server
sustains; the httpx and SDK loads stay beside it for what those clients get on the same cores.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit


class HttpError(RuntimeError):
    pass


class Connection:
    """One keep-alive connection: a request at a time, as one client of a load test."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self._reader, self._writer, self._host = reader, writer, host

    @classmethod
    async def open(cls, url: str) -> Connection:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise HttpError(f"only http://host:port URLs: {url!r}")
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port, limit=2**24)
        return cls(reader, writer, f"{parts.hostname}:{parts.port}")

    async def post_json(self, path: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        """(status, parsed JSON answer) of a POST of ``body`` as JSON."""
        payload = json.dumps(body).encode()
        lines = [f"POST {path} HTTP/1.1", f"Host: {self._host}", "Content-Type: application/json",
                 f"Content-Length: {len(payload)}", *(f"{k}: {v}" for k, v in (headers or {}).items())]  # fmt: skip
        self._writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
        status, answer = await self._answer()
        return status, json.loads(answer) if answer else None

    async def _answer(self) -> tuple[int, bytes]:
        head = await self._reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        fields = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip()
        if "content-length" in fields:
            return status, await self._reader.readexactly(int(fields["content-length"]))
        if fields.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while size := int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16):
                parts.append(await self._reader.readexactly(size))
                await self._reader.readexactly(2)
            await self._reader.readuntil(b"\r\n")  # the last chunk's (empty) trailer
            return status, b"".join(parts)
        raise HttpError(f"an answer without a length: {status_line}")

    async def close(self) -> None:
        self._writer.close()
        await self._writer.wait_closed()
