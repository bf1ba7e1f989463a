"""Which tools an MCP server offers: the toolsets picked at start, and of those only the tools the
served collections can answer now (no code tools before code is indexed).

Every tool an agent sees costs tokens in every session before its first question (GitHub's MCP
server picks toolsets at start for the same reason). ``retrievo mcp --tools docs,code`` (and
``serve``'s ``tools``) registers only those toolsets; ``auto`` (the default) registers docs, library
(seed 003's ``search_library``), code, records and registry (``similar`` and ``admin`` are asked for by
name, or ``all``) and hides a kind's tools while no served collection holds that kind. When a tool appears
or goes (an index or refresh added code, say), listeners get ``notifications/tools/list_changed``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from retrievo.errors import ConfigError

TOOLSETS: dict[str, tuple[str, ...]] = {
    "docs": ("search", "get_context", "get_document"),
    "similar": ("find_similar",),
    "code": ("find_symbol", "symbol_graph", "locate"),
    "records": ("semanticSearch", "getContext"),
    "registry": ("search_registry",),
    "library": ("search_library",),
    "admin": ("index_status", "refresh_index", "create_baseline", "verify_index", "regenerate_embeddings"),
}
# A toolset that answers over one kind of content is offered only while a served collection holds it.
NEEDS = {"code": "code", "records": "record", "registry": "registry", "library": "document"}
AUTO = frozenset({"docs", "code", "records", "registry", "library"})
KINDS_TTL_S = 2.0


def parse_toolsets(spec: str | Iterable[str] | None) -> frozenset[str]:
    """``docs,code`` (or a list of names; ``auto``, ``all``) as a set of toolsets; a clear error
    naming the toolsets for anything else."""
    if spec is None:
        return AUTO
    names = [spec] if isinstance(spec, str) else list(spec)
    picked: set[str] = set()
    for name in (part.strip().lower() for item in names for part in item.split(",")):
        if name == "auto":
            picked |= AUTO
        elif name == "all":
            picked |= set(TOOLSETS)
        elif name in TOOLSETS:
            picked.add(name)
        elif name:
            raise ConfigError(f"unknown toolset {name!r}; toolsets: {', '.join(TOOLSETS)} (or auto, all)")
    if not picked:
        raise ConfigError(f"no toolset given; toolsets: {', '.join(TOOLSETS)} (or auto, all)")
    return frozenset(picked)


def toolset_of(tool: str) -> str | None:
    return next((name for name, tools in TOOLSETS.items() if tool in tools), None)


class Offer:
    """The kinds the served collections hold (read at most every ``KINDS_TTL_S``, or at once after
    ``forget``), and so which registered tools are hidden now."""

    def __init__(
        self, kinds: Callable[[], dict[str, frozenset[str]]], collections: frozenset[str] | None
    ) -> None:
        self._kinds = kinds
        self._collections = collections
        self._lock = threading.Lock()
        self._seen: tuple[float, dict[str, frozenset[str]]] | None = None

    def held(self) -> dict[str, frozenset[str]]:
        """What each served collection holds (``Engine.content_kinds``, read at most every ``KINDS_TTL_S``)."""
        now = time.monotonic()
        with self._lock:
            seen = self._seen
        if seen is not None and now - seen[0] < KINDS_TTL_S:
            return seen[1]
        found = {
            name: kinds
            for name, kinds in self._kinds().items()
            if self._collections is None or name in self._collections
        }
        with self._lock:
            self._seen = (now, found)
        return found

    def kinds(self) -> frozenset[str]:
        """The kinds of content in the served collections."""
        return frozenset(kind for kinds in self.held().values() for kind in kinds)

    def forget(self) -> None:
        with self._lock:
            self._seen = None

    def hidden(self, tools: Iterable[str]) -> frozenset[str]:
        """Those of ``tools`` whose toolset needs a kind no served collection holds."""
        kinds = self.kinds()
        return frozenset(
            tool for tool in tools if (need := NEEDS.get(toolset_of(tool) or "")) and need not in kinds
        )
