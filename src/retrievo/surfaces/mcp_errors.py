"""Argument errors an agent can act on: which argument, what was wrong, what is allowed.

The SDK reports a call whose arguments do not fit the tool's schema with pydantic's raw text (its
own layout and an errors.pydantic.dev link). ``RetrievoMCPServer`` rewrites those into one line per
problem, naming the argument path, and for an unknown argument the ones the tool takes.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

MAX_SHOWN_INPUT = 60


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


class RetrievoMCPServer(MCPServer):
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
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            raise ToolError(describe(name, cause, accepted)) from None
