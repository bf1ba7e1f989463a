"""The LSPAdapter protocol (the seed's unified client interface) and the registry of adapters by language."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

from retrievo.errors import RetrievoError


class LSPUnavailable(RetrievoError):
    """The language server is not installed, failed to start, or crashed: fall back to tree-sitter."""


@dataclass(frozen=True)
class LSPSymbol:
    name: str
    kind: str
    path: str
    line_start: int  # 1-based
    line_end: int
    container: str | None = None


@dataclass(frozen=True)
class LSPDefinition:
    path: str
    line: int  # 1-based
    column: int  # 0-based


@dataclass(frozen=True)
class LSPReference:
    path: str
    line: int  # 1-based
    column: int
    text: str  # the line of code


@dataclass(frozen=True)
class LSPDiagnostic:
    path: str
    line: int
    severity: str
    message: str


class LSPAdapter(Protocol):
    """One language server. Lines are 1-based, columns 0-based characters; paths are absolute."""

    language: ClassVar[str]

    async def initialize(self, workspace: str) -> None:
        """Start the server for a workspace (raises LSPUnavailable if it cannot)."""
        ...

    async def document_symbols(self, path: str) -> list[LSPSymbol]: ...

    async def definition(self, path: str, line: int, column: int) -> list[LSPDefinition]: ...

    async def references(self, path: str, line: int, column: int) -> list[LSPReference]: ...

    async def hover(self, path: str, line: int, column: int) -> str | None: ...

    async def workspace_symbols(self, query: str) -> list[LSPSymbol]: ...

    async def diagnostics(self, path: str) -> list[LSPDiagnostic]: ...

    async def shutdown(self) -> None: ...


class LSPRegistry:
    """Adapters by language; ``get`` returns a fresh (not yet initialised) adapter, or None."""

    adapters: ClassVar[dict[str, type[LSPAdapter]]] = {}

    @classmethod
    def register(cls, language: str, adapter: type[LSPAdapter]) -> None:
        cls.adapters[language] = adapter

    @classmethod
    def get(cls, language: str) -> LSPAdapter | None:
        adapter = cls.adapters.get(language)
        return adapter() if adapter is not None else None

    @classmethod
    def languages(cls) -> list[str]:
        return sorted(cls.adapters)
