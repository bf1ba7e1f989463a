"""The registry facade (``engine.registry``): add, remove, list and search MCP servers, A2A agents, tools.

Entries live in their own collection (``registry`` by default), so document searches are not mixed
with them. Loading is an upsert by path; a server re-added with fewer tools loses the others; removing
an entry removes its tools; every malformed entry is reported on its own while the rest load. A path
several files claim is loaded once by ``settle``'s rule (no tool lost) and noted in the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from retrievo.engine.indexing import IndexProgress, NoProgress, ingest_document
from retrievo.errors import DocumentNotFound, SourceError
from retrievo.ingest.registry.entries import Parsed, parse_entries
from retrievo.ingest.registry.loader import (
    PREFIX,
    agent_source,
    documents_of,
    server_source,
    settle,
    tool_source,
)
from retrievo.models import IndexReport, SearchResult, SkippedFile
from retrievo.search.query import EmbedQuery
from retrievo.search.records.registry import ENTITY_TYPES, RegistryResult, search_registry
from retrievo.store.base import Store
from retrievo.store.read_point import resolve

REGISTRY_COLLECTION = "registry"


class RegistryHost(Protocol):
    """What the facade needs of the engine (its public methods; the engine is never imported here)."""

    def open_store(self, create: bool = False, collection: str | None = None) -> Store: ...

    def writing(
        self, collection: str, embed: bool, progress: IndexProgress
    ) -> AbstractContextManager[tuple[Store, IndexReport]]: ...

    def query_embedding(self, store: Store, collection: str) -> tuple[EmbedQuery, str | None]: ...

    def search(
        self, query: str, collection: str | None = None, limit: int = 10, *args: Any, **kwargs: Any
    ) -> SearchResult: ...


class Registry:
    def __init__(self, engine: RegistryHost) -> None:
        self._engine = engine

    def add(
        self, paths: Sequence[str | Path], collection: str = REGISTRY_COLLECTION, embed: bool = True
    ) -> IndexReport:
        files: list[Path] = []
        for raw in paths:
            path = Path(raw).expanduser().resolve()
            if not path.exists():
                raise SourceError(f"path {str(path)!r} does not exist; check the spelling")
            files += sorted(path.rglob("*.json")) if path.is_dir() else [path]
        engine = self._engine
        with engine.writing(collection, embed, NoProgress()) as (store, report):
            read: list[tuple[str, Parsed]] = []
            for file in files:
                report.files_seen += 1
                try:
                    parsed = parse_entries(file.read_bytes(), str(file))
                except OSError as exc:
                    parsed = Parsed(errors=[f"{file}: unreadable ({exc.strerror or exc})"])
                report.skipped.extend(SkippedFile(str(file), error) for error in parsed.errors)
                read.append((str(file), parsed))
            settled = settle(read)
            report.notes.extend(settled.notes)
            for document in documents_of(Parsed(settled.servers, settled.agents)):
                ingest_document(store, report, document, collection, "whole", False, None)
            for server in settled.servers:  # tools no longer listed leave with the re-added server
                source = server_source(server.path)
                current = {source} | {tool_source(server.path, t.name) for t in server.tools}
                stale = [s for s in store.sources_under(collection, source) if s not in current]
                report.documents_removed += store.remove_sources(collection, stale)
        return report

    def remove(self, path: str, collection: str = REGISTRY_COLLECTION) -> int:
        store = self._engine.open_store()
        sources = store.sources_under(collection, server_source(path)) + store.sources_under(
            collection, agent_source(path)
        )
        if not sources:
            raise DocumentNotFound(
                f"no registry entry at path {path!r}; list them with `retrievo registry list`"
            )
        with store.writer_lock(collection):
            return store.remove_sources(collection, sources)

    def entries(self, collection: str = REGISTRY_COLLECTION) -> list[dict[str, Any]]:
        store = self._engine.open_store()
        listed = []
        for _, source, title, meta in store.list_records(collection):
            if source.startswith(PREFIX) and meta.get("entity_type") in ("server", "agent"):
                tools, skills = meta.get("tools"), meta.get("skills")
                listed.append({"entity_type": meta["entity_type"], "name": title, "path": meta.get("path"),
                               "is_enabled": meta.get("is_enabled", True),
                               "tools": len(tools) if isinstance(tools, list) else 0,
                               "skills": len(skills) if isinstance(skills, list) else 0})  # fmt: skip
        return listed

    def search(
        self,
        query: str,
        collection: str = REGISTRY_COLLECTION,
        limit: int = 3,
        types: Sequence[str] = ENTITY_TYPES,
        tags: Sequence[str] = (),
        include_disabled: bool = False,
        profile: str = "seed",
        baseline: str | None = None,
        as_of: str | None = None,
    ) -> RegistryResult:
        """``baseline`` or ``as_of``: the registry as it was then."""
        engine = self._engine
        store = engine.open_store()
        if store.get_collection(collection) is None:
            raise DocumentNotFound(
                f"no registry in collection {collection!r}; load one with `retrievo registry add PATH`"
            )
        point = resolve(store, collection, baseline, as_of)

        def fused(k: int) -> list[tuple[int, float]]:
            result = engine.search(query, collection, k, baseline=baseline, as_of=as_of)
            return [(h.chunk.chunk_id, h.relevance) for h in result.hits]

        embed_query, unavailable = engine.query_embedding(store, collection)
        result = search_registry(
            store, collection, query, embed_query, unavailable, limit,
            types, tags, include_disabled, profile, fused, point.filter_as_of,
        )  # fmt: skip
        return replace(result, baseline_id=point.baseline_id, as_of=point.as_of)
