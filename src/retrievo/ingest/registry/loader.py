"""Registry entities → record documents, embedding exactly what seed 001 lists and nothing else.

Servers: name, description, "Tags: …", tool names and descriptions. Agents: name, description, tags,
"Capabilities: …", skill names and descriptions. Tools: their name and description (with the server's
name as context). Input schemas, paths and entry metadata are kept in metadata, never embedded.
"""

from __future__ import annotations

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
