"""How the MCP tools run engine work: in a worker thread, errors turned into messages an agent can act
on; searches a few at a time (``search_call``), everything else on anyio's pool (``call``)."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar
from mcp.server.mcpserver.exceptions import ToolError

from retrievo.errors import RetrievoError
from retrievo.secrets import redact

log = logging.getLogger("retrievo.mcp")
T = TypeVar("T")


# Searches (CPU-bound: the query's embedding, the arms, the excerpts) run this many at once per
# event loop; the rest wait their turn on the loop. Forty at once, anyio's default, spent a fifth more
# CPU a search on two cores (GIL and thread hand-offs) for no more throughput: 100 clients at 100k
# chunks, mean 840 -> 630 ms, 110 -> 143 searches a second (docs/benchmarks.md).
SEARCH_SLOTS = max(2, 2 * (os.cpu_count() or 1))
_SEARCHES: RunVar[anyio.CapacityLimiter] = RunVar("retrievo_searches")


def searches_limiter() -> anyio.CapacityLimiter:
    """This event loop's limiter of concurrent searches (made on first use)."""
    try:
        return _SEARCHES.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(SEARCH_SLOTS)
        _SEARCHES.set(limiter)
        return limiter


async def search_call(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call`` for a search: at most SEARCH_SLOTS of them run at once."""
    return await _in_thread(function, args, kwargs, searches_limiter())


async def call(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run blocking engine work in a worker thread; turn every error into a message an agent can act on.

    Our own errors keep their text (secrets redacted). Anything else is a defect: its traceback goes
    to the server's log, and the agent gets its type and a pointer there, never an empty error.
    """
    return await _in_thread(function, args, kwargs, None)


async def _in_thread(
    function: Callable[..., T],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    limiter: anyio.CapacityLimiter | None,
) -> T:
    try:
        return await anyio.to_thread.run_sync(functools.partial(function, *args, **kwargs), limiter=limiter)
    except ToolError:
        raise  # already what the agent should read (a scope check inside the call)
    except RetrievoError as exc:
        raise ToolError(redact(str(exc))) from exc
    except Exception as exc:
        log.exception("unexpected error in a tool call")
        raise ToolError(
            f"internal error ({type(exc).__name__}); the server's log has the details. What the call wrote before "
            "it stopped is kept, never half-written: index_status and verify_index say what the index holds"
        ) from exc
