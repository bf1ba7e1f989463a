"""Registry entities → record documents, embedding exactly what seed 001 lists and nothing else.

Servers: name, description, "Tags: …", tool names and descriptions. Agents: name, description, tags,
"Capabilities: …", skill names and descriptions. Tools: their name and description (with the server's
name as context). Input schemas, paths and entry metadata are kept in metadata, never embedded.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from retrievo.ingest.registry.entries import Agent, Parsed, Server
from retrievo.models import Kind, LoadedDocument, Section

PREFIX = "registry:"


def server_source(path: str) -> str:
    return f"{PREFIX}server:{path}"


def agent_source(path: str) -> str:
    return f"{PREFIX}agent:{path}"


def tool_source(server_path: str, tool: str) -> str:
    return f"{PREFIX}server:{server_path}#tool:{tool}"


def _document(
    source: str, title: str, text: str, context: str, metadata: dict[str, object]
) -> LoadedDocument:
    return LoadedDocument(
        source=source, text=text, title=title, kind=Kind.RECORD, media_type="application/x-registry-entry",
        metadata=metadata, sections=(Section(0, len(text), context=context, metadata=metadata),),
    )  # fmt: skip


def server_documents(server: Server) -> list[LoadedDocument]:
    lines = [server.name, server.description]
    if server.tags:
        lines.append("Tags: " + ", ".join(server.tags))
    lines += [f"{t.name}: {t.description}".rstrip(": ") for t in server.tools]
    meta: dict[str, object] = {
        "entity_type": "server", "name": server.name, "path": server.path, "description": server.description,
        "tags": list(server.tags), "is_enabled": server.is_enabled,
        "tools": [{"name": t.name, "description": t.description} for t in server.tools], "entry": server.entry,
    }  # fmt: skip
    documents = [
        _document(
            server_source(server.path), server.name, "\n".join(x for x in lines if x), server.name, meta
        )
    ]
    for tool in server.tools:
        tool_meta: dict[str, object] = {
            "entity_type": "tool", "name": tool.name, "path": f"{server.path}#{tool.name}",
            "server_path": server.path, "server_name": server.name, "description": tool.description,
            "tags": list(server.tags), "is_enabled": server.is_enabled, "input_schema": tool.input_schema,
        }  # fmt: skip
        text = f"{tool.name}\n{tool.description}".strip()
        documents.append(
            _document(tool_source(server.path, tool.name), tool.name, text, server.name, tool_meta)
        )
    return documents


def agent_document(agent: Agent) -> LoadedDocument:
    lines = [agent.name, agent.description]
    if agent.tags:
        lines.append("Tags: " + ", ".join(agent.tags))
    if agent.capabilities:
        lines.append("Capabilities: " + ", ".join(agent.capabilities))
    lines += [f"{s.name}: {s.description}".rstrip(": ") for s in agent.skills]
    meta: dict[str, object] = {
        "entity_type": "agent", "name": agent.name, "path": agent.path, "description": agent.description,
        "tags": list(agent.tags), "is_enabled": agent.is_enabled, "capabilities": list(agent.capabilities),
        "skills": [{"id": s.id, "name": s.name, "description": s.description, "tags": list(s.tags),
                    "examples": list(s.examples)} for s in agent.skills],
        "entry": agent.entry,
    }  # fmt: skip
    return _document(agent_source(agent.path), agent.name, "\n".join(x for x in lines if x), agent.name, meta)


def documents_of(parsed: Parsed) -> list[LoadedDocument]:
    documents = [d for server in parsed.servers for d in server_documents(server)]
    documents += [agent_document(agent) for agent in parsed.agents]
    return documents


@dataclass
class Settled:
    """Every file's entries with one entry per path: what a registry load writes, and what it said."""

    servers: list[Server] = field(default_factory=list)
    agents: list[Agent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # a path several files claim: what was kept


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def settle(files: list[tuple[str, Parsed]]) -> Settled:
    """One entry per path when several files (or entries) claim it, by a rule that loses no tool: the
    claimant with the most tools (an agent: skills) is kept, ties to the file first in path order, and
    tools only the others list join it. Each such path gets a note naming the files."""
    servers: dict[str, list[tuple[str, Server]]] = {}
    agents: dict[str, list[tuple[str, Agent]]] = {}
    for origin, parsed in sorted(files, key=lambda item: item[0]):
        for server in parsed.servers:
            servers.setdefault(server.path, []).append((origin, server))
        for agent in parsed.agents:
            agents.setdefault(agent.path, []).append((origin, agent))
    settled = Settled()
    for path, claims in servers.items():
        ordered = sorted(claims, key=lambda claim: -len(claim[1].tools))  # stable: path order on ties
        origin, kept = ordered[0]
        names = {tool.name for tool in kept.tools}
        joined = []
        for _, other in ordered[1:]:
            for tool in other.tools:
                if tool.name not in names:
                    names.add(tool.name)
                    joined.append(tool)
        settled.servers.append(replace(kept, tools=kept.tools + tuple(joined)))
        if len(ordered) > 1:
            also = f" and {_plural(len(joined), 'tool')} only the others list" if joined else ""
            others = ", ".join(f"{o} ({_plural(len(s.tools), 'tool')})" for o, s in ordered[1:])
            settled.notes.append(
                f"server path {path} is in {len(ordered)} entries: kept {origin} "
                f"({_plural(len(kept.tools), 'tool')}{also}); also in {others}"
            )
    for path, cards in agents.items():
        best = sorted(cards, key=lambda card: -len(card[1].skills))
        origin, agent = best[0]
        settled.agents.append(agent)
        if len(best) > 1:
            others = ", ".join(f"{o} ({_plural(len(a.skills), 'skill')})" for o, a in best[1:])
            settled.notes.append(
                f"agent path {path} is in {len(best)} entries: kept {origin} "
                f"({_plural(len(agent.skills), 'skill')}); also in {others}"
            )
    return settled
