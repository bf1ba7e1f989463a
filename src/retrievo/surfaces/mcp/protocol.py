"""What the server declares beside its tools, each one real: prompts (``ask``, ``explain_symbol``,
``find_elements``, listed while their kind is held), ``completion/complete`` for their arguments
(collection names, symbol names, element types), and ``logging/setLevel`` with ``notifications/message``
for long work (``refresh_index``, ``verify_index``, ``create_baseline``, ``regenerate_embeddings``).

The conformance suite (@modelcontextprotocol/conformance) asks each capability to be declared only where
it works: no ``prompts`` with zero prompts, no ``logging`` that refuses ``setLevel`` (-32601).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from mcp.server.lowlevel import NotificationOptions
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.models import InitializationOptions
from mcp.types import (
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmptyResult,
    LoggingLevel,
    PromptReference,
    SetLevelRequestParams,
)

from retrievo.engine import Engine
from retrievo.search.records.elements import facet_values
from retrievo.surfaces.mcp.calls import call, search_call
from retrievo.surfaces.mcp.schemas import SearchFilters
from retrievo.surfaces.mcp.scope import Scope

LEVELS: tuple[LoggingLevel, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
)  # fmt: skip
DEFAULT_LEVEL: LoggingLevel = "info"  # what a client that never set a level gets: long work's start and end
LONG_WORK = frozenset({"refresh_index", "verify_index", "create_baseline", "regenerate_embeddings"})
MAX_COMPLETIONS = 100  # the spec's cap on one completion answer
PROMPT_TOOLSETS = {"ask": "docs", "explain_symbol": "code", "find_elements": "records"}


class LogLevels:
    """The level each client connection asked for with ``logging/setLevel`` (default ``DEFAULT_LEVEL``);
    a session object is made per request, its connection lasts."""

    def __init__(self) -> None:
        self._levels: weakref.WeakKeyDictionary[Any, LoggingLevel] = weakref.WeakKeyDictionary()

    def set(self, session: Any, level: LoggingLevel) -> None:
        self._levels[_connection(session)] = level

    def wants(self, session: Any, level: LoggingLevel) -> bool:
        asked = self._levels.get(_connection(session), DEFAULT_LEVEL)
        return LEVELS.index(level) >= LEVELS.index(asked)


def _connection(session: Any) -> Any:
    return getattr(session, "_connection", session)


def declare_list_changes(lowlevel: Any, announces: bool) -> None:
    """Handshake-era ``initialize`` declares ``listChanged`` (tools, prompts) as ``announces`` says: the
    SDK's stdio and HTTP runners ask the low-level server for its options without any."""
    declared = lowlevel.create_initialization_options

    def options(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        told = NotificationOptions(prompts_changed=announces, tools_changed=announces)
        made: InitializationOptions = declared(
            notification_options or told, experimental_capabilities, extensions
        )
        return made

    lowlevel.create_initialization_options = options


def register_logging(server: Any) -> None:
    """``logging/setLevel``: the session's threshold for the ``notifications/message`` the server sends."""

    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        server.log_levels.set(ctx.session, params.level)
        return EmptyResult()

    server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)


async def tell(context: Any, levels: LogLevels, level: LoggingLevel, data: Any) -> None:
    """Send ``data`` as a ``notifications/message`` to the client that made the request ``context``
    serves, if it asked for ``level`` (a call with no client session, REST's, tells nobody)."""
    request = getattr(context, "_request_context", None)
    if request is None or not levels.wants(request.session, level):
        return
    await request.session.send_log_message(
        level, data, logger="retrievo", related_request_id=request.request_id
    )


def register_prompts(server: Any, engine: Engine, scope: Scope) -> None:
    """Prompts a person picks in a client (Claude Code lists them as slash commands), each one a
    question the tools answer, its argument completed from the index."""

    async def ask(question: str, collection: str | None = None) -> str:
        """Answer a question from the indexed documents, citing path:lines."""
        named, filters = scope.filters(
            SearchFilters.model_validate({"collection": collection}) if collection else None
        )
        context = await search_call(engine.context, question, collection=named, filters=filters)
        shown = await call(scope.shown, named)
        return (
            f"Answer this question from the evidence below, citing each claim as [n] path:lines: {question}\n"
            "Say so plainly where the evidence does not answer it.\n\n"
            + shown.text(context.text, (s.path for s in context.sources))
        )

    async def explain_symbol(name: str) -> str:
        """Explain a code symbol: where it is defined, what it uses, what uses it and its tests."""
        return (
            f"Explain the code symbol {name}: find it with find_symbol (pattern {name!r}), then read its "
            "dependencies and dependents with symbol_graph, and the tests that reach it. Cite path:lines."
        )

    async def find_elements(element_type: str, question: str) -> str:
        """Find model elements of one type that answer a question."""
        return (
            f"Find the {element_type} elements that answer: {question}. Use semanticSearch with "
            f'filters {{"element_type": "{element_type}"}}, then getContext for each element you cite.'
        )

    for function in (ask, explain_symbol, find_elements):
        server.add_prompt(Prompt.from_function(function))


def register_completions(server: Any, engine: Engine, scope: Scope) -> None:
    """``completion/complete`` for the prompts' arguments: served collection names, symbol names
    (from the code index), element types (from the indexed models)."""

    def collections(prefix: str) -> list[str]:
        names = engine.collections() or []
        return [n for n in names if (scope.allowed is None or n in scope.allowed) and n.startswith(prefix)]

    def symbols(prefix: str) -> list[str]:
        found = engine.find_symbol(f"{prefix}*", limit=MAX_COMPLETIONS) if prefix else []
        return sorted({hit.name for hit in found})

    def element_types(prefix: str) -> list[str]:
        kinds = scope.held() if scope.held is not None else {}
        types: set[str] = set()
        for name, held in kinds.items():
            if "record" in held:
                store, collection = engine.collection_store(name)
                types.update(facet_values(store, collection)["element_type"])
        return sorted(t for t in types if t.casefold().startswith(prefix.casefold()))

    sources: dict[tuple[str, str], Callable[[str], list[str]]] = {
        ("ask", "collection"): collections,
        ("explain_symbol", "name"): symbols,
        ("find_elements", "element_type"): element_types,
    }

    async def complete(ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        ref = params.ref
        source = None  # a prompt not offered, a resource template's argument: nothing to offer
        if isinstance(ref, PromptReference) and server.prompt_offered(ref.name) is not None:
            source = sources.get((ref.name, params.argument.name))
        values = await call(source, params.argument.value) if source is not None else []
        return CompleteResult(
            completion=Completion(
                values=values[:MAX_COMPLETIONS], total=len(values), has_more=len(values) > MAX_COMPLETIONS
            )
        )

    server._lowlevel_server.add_request_handler("completion/complete", CompleteRequestParams, complete)
