"""Registry entries from JSON: MCP server definitions (the gateway's and the official registry's
``server.json``), A2A agent cards (v1.0 ``supportedInterfaces`` and older ``url``; camelCase and
snake_case), and tools as children of their server. Each malformed entry gets its own error; the
rest of the file loads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

MAX_TEXT_CHARS = 20_000  # a 5 MB description is cut, not loaded whole
MAX_ENTRY_BYTES = 100 * 1024 * 1024  # per file: a registry dump with thousands of entries is one file


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class Server:
    path: str
    name: str
    description: str
    tags: tuple[str, ...]
    is_enabled: bool
    tools: tuple[Tool, ...]
    entry: dict[str, Any]  # the whole entry, kept as given (never embedded)


@dataclass(frozen=True)
class Skill:
    id: str
    name: str
    description: str
    tags: tuple[str, ...]
    examples: tuple[str, ...]


@dataclass(frozen=True)
class Agent:
    path: str
    name: str
    description: str
    tags: tuple[str, ...]
    is_enabled: bool
    capabilities: tuple[str, ...]
    skills: tuple[Skill, ...]
    entry: dict[str, Any]


@dataclass
class Parsed:
    servers: list[Server] = field(default_factory=list)
    agents: list[Agent] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one line per refused entry


def _get(entry: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in entry:
            return entry[name]
    return None


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return text[:MAX_TEXT_CHARS]


def _tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(t.strip() for t in value.split(",") if t.strip())
    if isinstance(value, list):
        return tuple(str(t)[:200] for t in value if str(t).strip())
    return ()


def _slug(name: str) -> str:
    return "/" + "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name.strip().lower()).strip("-")


def is_server(entry: dict[str, Any]) -> bool:
    if "server_name" in entry or "serverName" in entry or "tool_list" in entry or "toolList" in entry:
        return True
    return "name" in entry and ("packages" in entry or "remotes" in entry)


def is_agent(entry: dict[str, Any]) -> bool:
    keys = set(entry)
    return bool(keys & {"skills", "protocolVersion", "protocol_version", "supportedInterfaces"}) or (
        "url" in keys and "capabilities" in keys
    )


def parse_entries(data: bytes, origin: str) -> Parsed:
    """Every registry entry in a JSON file (one entry, or a list of entries)."""
    parsed = Parsed()
    if len(data) > MAX_ENTRY_BYTES:
        parsed.errors.append(f"{origin}: {len(data)} bytes is over the {MAX_ENTRY_BYTES}-byte limit")
        return parsed
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        parsed.errors.append(f"{origin}: not JSON ({exc})")
        return parsed
    except RecursionError:  # a hostile depth is this file refused with its reason, never the run stopped
        parsed.errors.append(f"{origin}: nested too deeply: more levels than the JSON parser allows")
        return parsed
    entries = document if isinstance(document, list) else [document]
    for number, entry in enumerate(entries, start=1):
        where = origin if len(entries) == 1 else f"{origin} entry {number}"
        try:
            if not isinstance(entry, dict):
                parsed.errors.append(f"{where}: not an object")
            elif is_server(entry):
                _server(entry, where, parsed)
            elif is_agent(entry):
                _agent(entry, where, parsed)
            else:
                parsed.errors.append(f"{where}: neither an MCP server nor an A2A agent card")
        except RecursionError:
            parsed.errors.append(f"{where}: nested too deeply: more levels than the JSON parser allows")
    return parsed


def _long_description(entry: dict[str, Any], where: str, parsed: Parsed) -> None:
    description = _get(entry, "description")
    if isinstance(description, str) and len(description) > MAX_TEXT_CHARS:
        parsed.errors.append(
            f"{where}: description of {len(description):,} characters cut to {MAX_TEXT_CHARS:,} (the entry loads)"
        )


def _server(entry: dict[str, Any], where: str, parsed: Parsed) -> None:
    _long_description(entry, where, parsed)
    name = _text(_get(entry, "server_name", "serverName", "title", "name")).strip()
    if not name:
        parsed.errors.append(f"{where}: server has no name")
        return
    path = _text(_get(entry, "path") or _slug(_text(_get(entry, "name")) or name))
    tools = []
    for number, raw in enumerate(_get(entry, "tool_list", "toolList", "tools") or [], start=1):
        if not isinstance(raw, dict) or not str(raw.get("name", "")).strip():
            parsed.errors.append(f"{where}: tool {number} has no name")
            continue
        described = raw.get("parsed_description")
        description = described.get("main") if isinstance(described, dict) else raw.get("description")
        schema = _get(raw, "schema", "inputSchema", "input_schema") or {}
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError:
                parsed.errors.append(f"{where}: tool {raw['name']!r} has an input schema that is not JSON")
                continue
        if not isinstance(schema, dict):
            parsed.errors.append(f"{where}: tool {raw['name']!r} has an input schema that is not an object")
            continue
        tools.append(Tool(str(raw["name"])[:200], _text(description), schema))
    enabled = _get(entry, "is_enabled", "isEnabled", "enabled")
    parsed.servers.append(
        Server(path, name, _text(_get(entry, "description")), _tags(_get(entry, "tags")),
               enabled is not False, tuple(tools), entry)
    )  # fmt: skip


def _agent(entry: dict[str, Any], where: str, parsed: Parsed) -> None:
    _long_description(entry, where, parsed)
    name = _text(_get(entry, "name")).strip()
    if not name:
        parsed.errors.append(f"{where}: agent has no name")
        return
    interfaces = _get(entry, "supportedInterfaces", "supported_interfaces") or []
    url = _get(entry, "url") or next((i.get("url") for i in interfaces if isinstance(i, dict)), None)
    path = _text(_get(entry, "path") or url or _slug(name))
    capabilities = _get(entry, "capabilities") or {}
    enabled_capabilities = tuple(
        str(k) for k, v in (capabilities.items() if isinstance(capabilities, dict) else []) if v
    )
    skills = []
    for raw in _get(entry, "skills") or []:
        if isinstance(raw, dict) and (raw.get("name") or raw.get("id")):
            skills.append(
                Skill(str(raw.get("id", "")), _text(raw.get("name") or raw.get("id")), _text(raw.get("description")),
                      _tags(raw.get("tags")), tuple(_text(e) for e in raw.get("examples") or [] if e))
            )  # fmt: skip
    enabled = _get(entry, "is_enabled", "isEnabled", "enabled")
    tags = _tags(_get(entry, "tags")) or tuple(dict.fromkeys(t for s in skills for t in s.tags))
    parsed.agents.append(
        Agent(path, name, _text(_get(entry, "description")), tags, enabled is not False, enabled_capabilities,
              tuple(skills), entry)
    )  # fmt: skip
