"""What goes over the wire to an agent: compact answers under a size cap, errors it can act on.

- The SDK writes a tool's text content as indented JSON repeating ``structuredContent``; here it is
  compact JSON (same data, about a third fewer bytes), and a tool's typed answer is dumped once
  (not also rendered indented and validated again).
- No answer exceeds ``RETRIEVO_MCP_MAX_BYTES`` (default 90,000 bytes, under Claude Code's 25k-token
  cap): result lists are shortened from the end and ``cut`` says so; any other answer over the cap
  is an error naming the argument that makes it smaller.
- A call whose arguments do not fit the schema gets one line per problem naming the argument path
  (not pydantic's text and link); an unknown argument is refused with the names the tool takes.
"""

from __future__ import annotations

import os
from typing import Any

import pydantic_core
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from mcp.types import Tool as MCPTool
from pydantic import BaseModel, ValidationError

MAX_SHOWN_INPUT = 60
MAX_BYTES = int(os.environ.get("RETRIEVO_MCP_MAX_BYTES", "90000"))
SMALLER = {"get_document": "max_chars", "get_context": "max_tokens", "getContext": "max_tokens"}


def _compact(data: Any) -> bytes:
    """Compact UTF-8 JSON (what ``json.dumps(ensure_ascii=False, separators=(",", ":"))`` writes, in
    pydantic-core's Rust: the answers are serialised on the server's event loop, under the GIL)."""
    return pydantic_core.to_json(data)


def fit(name: str, result: Any, cap: int = MAX_BYTES) -> Any:
    """Compact text; lists shortened from the end to the cap (``cut`` says how); else an error over it."""
    if not isinstance(result, CallToolResult) or result.structured_content is None or result.is_error:
        return result
    data = dict(result.structured_content)
    text = _compact(data)
    if len(text) > cap:
        lists = {key: value for key, value in data.items() if isinstance(value, list) and value}
        totals = {key: len(value) for key, value in lists.items()}
        while lists and len(_compact(data)) > cap:
            longest = max(lists, key=lambda key: len(_compact(lists[key])))
            lists[longest].pop()
            if not lists[longest]:
                del lists[longest]
        left_out = {key: total - len(data[key]) for key, total in totals.items() if len(data[key]) < total}
        if "total_results" in data and isinstance(data.get("results"), list):
            data["total_results"] = len(data["results"])
        said = ", ".join(f"{n} of {totals[key]} {key}" for key, n in left_out.items())
        data["cut"] = f"{said} left out to stay under {cap} bytes; ask for fewer"
        text = _compact(data)
    if len(text) > cap:
        smaller = SMALLER.get(name)
        advice = f"lower {smaller}" if smaller else "ask for less"
        raise ToolError(f"the answer would be {len(text)} bytes, over this server's cap of {cap}; {advice}")
    return CallToolResult(content=[TextContent(type="text", text=text.decode())], structured_content=data)


def _where(location: tuple[int | str, ...]) -> str:
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "arguments"


def describe(tool: str, exc: ValidationError, accepted: list[str]) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        where = _where(tuple(error["loc"]))
        shown = repr(error.get("input"))
        shown = shown if len(shown) <= MAX_SHOWN_INPUT else shown[:MAX_SHOWN_INPUT] + "…"
        if error["type"] == "extra_forbidden":
            allowed = f"; {tool} takes: {', '.join(accepted)}" if len(error["loc"]) == 1 else ""
            problems.append(f"unknown argument {where!r}{allowed}")
        elif error["type"] == "missing":
            problems.append(f"argument {where!r} is required")
        else:
            problems.append(f"argument {where!r}: {error['msg']} (got {shown})")
    return f"invalid arguments for {tool}: " + "; ".join(problems)


def without_titles(schema: Any, naming: bool = False) -> Any:
    """A JSON schema without pydantic's generated ``title`` keys (each repeats a property's own name).

    ``naming``: the keys of this mapping are property or definition names, kept as they are.
    """
    if isinstance(schema, dict):
        return {
            key: without_titles(value, naming=not naming and key in ("properties", "$defs"))
            for key, value in schema.items()
            if naming or not (key == "title" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [without_titles(item) for item in schema]
    return schema


def registered(server: MCPServer) -> tuple[int, ...]:
    """Which tools the server has registered now: a cache made from its tools holds while this does."""
    return tuple(map(id, server._tool_manager.list_tools()))


class RetrievoMCPServer(MCPServer):
    _listed: tuple[tuple[int, ...], list[MCPTool]] | None = None

    async def list_tools(self) -> list[MCPTool]:
        """The tools, their schemas without generated titles (a fifth of tools/list's bytes); made
        again only when the registered tools change (every client lists them: 0.65 ms each)."""
        now = registered(self)
        if self._listed is not None and self._listed[0] == now:
            return list(self._listed[1])
        tools = [
            tool.model_copy(
                update={
                    "input_schema": without_titles(tool.input_schema),
                    "output_schema": without_titles(tool.output_schema) if tool.output_schema else None,
                }
            )
            for tool in await super().list_tools()
        ]
        self._listed = (now, tools)
        return list(tools)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        accepted = sorted(tool.parameters.get("properties", {})) if tool is not None else []
        # A misspelt argument is an error, not silently the default (the SDK ignores unknown names).
        unknown = [key for key in arguments or {} if tool is not None and key not in accepted]
        if unknown:
            raise ToolError(
                f"invalid arguments for {name}: unknown argument {unknown[0]!r}; {name} takes: {', '.join(accepted)}"
            )
        try:
            return fit(name, await self._called(tool, name, arguments, context))
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            raise ToolError(describe(name, cause, accepted)) from None

    async def _called(self, tool: Any, name: str, arguments: dict[str, Any], context: Any) -> Any:
        """The tool's answer as the SDK's ``call_tool`` gives it, but a typed answer (an instance of the
        tool's own output model) is dumped once: the SDK would also render it as indented JSON, which
        ``fit`` replaces, and validate it again (~0.15 ms of a search's 7-8 ms of server CPU)."""
        if tool is None:
            return await super().call_tool(name, arguments, context)
        if context is None:
            context = Context(mcp_server=self, subscriptions=self._subscriptions)
        result = await tool.run(arguments, context, convert_result=False)
        meta = tool.fn_metadata
        if type(result) is meta.output_model and isinstance(result, BaseModel) and not meta.wrap_output:
            return CallToolResult(
                content=[], structured_content=result.model_dump(mode="json", by_alias=True)
            )
        return meta.convert_result(result)
