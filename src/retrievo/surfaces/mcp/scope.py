"""What the MCP tool modules share: the scope of collections a server (or a caller's key) may reach,
the argument types of every tool, and the read context as the engine's keywords.

``server.py`` builds the server and calls each tool module's ``register_*``; the tool modules import
this module, never the server, so the MCP surface has no import circle."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Annotated, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from retrievo.config import DEFAULT_COLLECTION
from retrievo.errors import ConfigError
from retrievo.models import Filters
from retrievo.surfaces.filters import filters_from_mapping
from retrievo.surfaces.mcp.schemas import ReadContext, SearchFilters
from retrievo.surfaces.present import shown_path

MAX_QUERY = 10_000


class NotServed(ToolError):
    """A collection outside what this server (or the caller's key) may reach; says nothing of it."""


class NoSuchCollection(ToolError):
    """A collection this server may serve but which does not exist (yet)."""


@dataclass(frozen=True)
class Shown:
    """Paths as a server shows them, on every tool alike: below the indexed root that holds them (the root's
    folder name first when there are several), as ``locate`` always did. The roots themselves go to a local
    client only; a client over the network learns their folder names, never where the server keeps them
    (before, every REST search gave a read key the server's absolute paths)."""

    roots: tuple[str, ...] = ()
    local: bool = True

    def path(self, path: str) -> str:
        shown = shown_path(path, self.roots) if self.roots else path
        return shown if self.local or not PurePath(shown).is_absolute() else PurePath(shown).name

    def text(self, text: str, paths: Iterable[str]) -> str:
        """A text citing ``paths`` (a context's block headers) with each path as shown here."""
        for path in sorted(set(paths), key=len, reverse=True):  # a longer path before one it starts with
            text = text.replace(path, self.path(path))
        return text

    def said(self, text: str) -> str:
        """A message (an example, an error) as a remote client may read it: each root by its folder name."""
        if self.local:
            return text
        for root in sorted(self.roots, key=len, reverse=True):
            text = text.replace(root, PurePath(root).name)
        return text

    def listed(self) -> list[str] | None:
        return [root if self.local else PurePath(root).name for root in self.roots] or None


@dataclass(frozen=True)
class Scope:
    """The collections one server may read and refresh: all (None) or an allow-list."""

    default: str
    allowed: frozenset[str] | None = None
    existing: Callable[[], list[str] | None] | None = None  # the index's collections (None: unreadable)
    held: Callable[[], dict[str, frozenset[str]]] | None = None  # what each served collection holds (Offer)
    roots: Callable[[str | None], list[str]] | None = None  # a collection's indexed roots (Engine.roots)
    local: bool = True  # a client on this machine (stdio): shown where the roots are

    def shown(self, collection: str | None) -> Shown:
        """How paths of ``collection`` (one, several comma-joined, or the default) are shown here."""
        names = [c.strip() for c in collection.split(",")] if collection else [None]
        found = {root for name in names for root in (self.roots(name) if self.roots is not None else ())}
        return Shown(tuple(sorted(found)), self.local)

    def check(self, collection: str | None) -> str:
        if collection and "," in collection:  # several (search fans out over them): each checked
            return ",".join(self.check(part.strip()) for part in collection.split(","))
        name = collection or self.default
        if self.allowed is not None and name not in self.allowed:
            raise NotServed(
                f"collection {name!r} is not served here; this server serves: {', '.join(sorted(self.allowed))}"
            )
        existing = self.existing() if self.existing is not None else None
        if existing is not None and name not in existing:
            # Only what this server serves is named: a restricted server reveals no other collection.
            visible = [c for c in existing if self.allowed is None or c in self.allowed]
            raise NoSuchCollection(
                f"collection {name!r} does not exist; collections here: {', '.join(visible) or 'none yet'} "
                f"(a person can make it with `retrievo index PATH --collection {name}`)"
            )
        return name

    def searched(self) -> str:
        """No collection named: the default if it exists (or the index cannot be read: its error says so),
        else the served collections holding documents or code, comma-joined (the search fans out)."""
        existing = self.existing() if self.existing is not None else None
        if (
            existing is None
            or self.default != DEFAULT_COLLECTION  # a default configured by name is kept (its error says so)
            or (self.default in existing and (self.allowed is None or self.default in self.allowed))
        ):
            return self.check(None)
        kinds = self.held() if self.held is not None else {}
        held = [
            name for name, has in sorted(kinds.items())
            if has & {"document", "code"} and (self.allowed is None or name in self.allowed)
        ]  # fmt: skip
        return ",".join(held) if held else self.check(None)

    def holding(
        self, kind: str, collection: str | None, several: bool = True, unheld: str | None = None
    ) -> str:
        """The collection(s) a tool over one kind of content reads: the one(s) named, checked; else the
        served collections that hold ``kind`` (comma-joined when ``several``: the search fans out; else
        the default when it holds the kind, or the first that does). With none holding it, the default or
        ``unheld`` (whose answer or error says what to index). ``held`` is the Offer's cached reading."""
        if collection is not None:
            return self.check(collection)
        kinds = self.held() if self.held is not None else {}
        held = [
            name for name, has in sorted(kinds.items())
            if kind in has and (self.allowed is None or name in self.allowed)
        ]  # fmt: skip
        if not held:  # ``unheld`` (an unrestricted server): the collection whose error says what to load
            return self.check(unheld if unheld is not None and self.allowed is None else None)
        if several:
            return ",".join(held)
        return self.default if self.default in held else held[0]

    def filters(self, raw: SearchFilters | None) -> tuple[str, Filters]:
        """The collection(s) a search reads and its filters: the collection named, checked; else the default
        where it exists, else every served collection holding documents or code (before: "collection
        'default' does not exist" over an index whose collections have other names)."""
        data = raw.model_dump(exclude_none=True) if raw is not None else {}
        named = data.pop("collection", None)
        collection = self.check(named) if named is not None else self.searched()
        if raw is None:
            return collection, Filters()
        try:
            return collection, filters_from_mapping(data)
        except ConfigError as exc:
            raise ToolError(str(exc)) from exc


def point_of(read_context: ReadContext | None) -> dict[str, str | None]:
    """A tool's read_context as the engine's ``baseline``/``as_of`` keywords."""
    if read_context is None:
        return {"baseline": None, "as_of": None}
    return {"baseline": read_context.baseline_id, "as_of": read_context.as_of}


def head_only(tool: str, read_context: ReadContext | None) -> None:
    """Refuse a point in time a HEAD-only tool cannot read, saying what can."""
    if read_context is not None and (read_context.baseline_id or read_context.as_of):
        raise ToolError(
            f"{tool} reads the code structure as indexed now (HEAD): the symbol index keeps no history. "
            "Leave read_context out, or use search with read_context for the code's text at that point"
        )


def _query(query: str) -> str:
    if not query.strip():
        raise ToolError("query is empty; pass the words or question to search for")
    return query


Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY)]
MAX_LIMIT = 50
Limit = Annotated[int, Field(strict=True, ge=1, le=MAX_LIMIT)]
# Ids are SQLite/PostgreSQL 64-bit integers: anything larger cannot name a chunk.
MAX_ID = 2**63 - 1
Detail = Annotated[
    Literal["brief", "full"], Field(description="brief: excerpt + citation; full: exact text.")
]
Mode = Annotated[Literal["hybrid", "keyword", "semantic"], Field()]
Offset = Annotated[int | None, Field(strict=True, ge=0)]  # slices of a text: any size is safe
Line = Annotated[int | None, Field(strict=True, ge=1)]
# One collection by name (default: the server's default one, or the one holding the tool's kind of content).
Collection = Annotated[str | None, Field(max_length=200)]
# One collection or several, comma-separated (a tool over one kind of content: default, all that hold it).
Collections = Annotated[str | None, Field(max_length=1000, description="Comma-separated for several.")]
