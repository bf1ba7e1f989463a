"""The Python adapter: jedi-language-server (from PyPI), driven through pygls's LSP client."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote, urlparse

from retrievo.ingest.code.lsp.base import (
    LSPDefinition,
    LSPDiagnostic,
    LSPReference,
    LSPSymbol,
    LSPUnavailable,
)

REQUEST_TIMEOUT_S = 30.0
_SYMBOL_KINDS = {
    5: "class",
    6: "method",
    12: "function",
    11: "interface",
    10: "enum",
    23: "struct",
    2: "module",
}
_SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}


def _path(uri: str) -> str:
    return unquote(urlparse(uri).path)


def server_command() -> str | None:
    """jedi-language-server beside this Python (a venv), else on PATH."""
    beside = Path(sys.executable).parent / "jedi-language-server"
    return str(beside) if beside.exists() else shutil.which("jedi-language-server")


class JediAdapter:
    language: ClassVar[str] = "python"

    def __init__(self, command: str | None = None) -> None:
        self._command = command
        self._client: Any = None
        self._opened: set[str] = set()
        self._diagnostics: dict[str, list[LSPDiagnostic]] = {}

    async def initialize(self, workspace: str) -> None:
        from lsprotocol import types
        from pygls.lsp.client import LanguageClient

        command = self._command or server_command()
        if command is None:
            raise LSPUnavailable("jedi-language-server is not installed (pip install jedi-language-server)")
        client = LanguageClient("retrievo", "1")

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)  # type: ignore[untyped-decorator]
        def _diagnostics(params: types.PublishDiagnosticsParams) -> None:
            path = _path(params.uri)
            self._diagnostics[path] = [
                LSPDiagnostic(
                    path, d.range.start.line + 1, _SEVERITIES.get(int(d.severity or 1), "error"), d.message
                )
                for d in params.diagnostics
            ]

        try:
            await client.start_io(command)
            root = Path(workspace).resolve().as_uri()
            await asyncio.wait_for(
                client.initialize_async(
                    types.InitializeParams(
                        capabilities=types.ClientCapabilities(), root_uri=root,
                        workspace_folders=[types.WorkspaceFolder(uri=root, name=Path(workspace).name)],
                    )
                ),
                REQUEST_TIMEOUT_S,
            )  # fmt: skip
        except (OSError, TimeoutError, RuntimeError) as exc:
            await self._stop(client)
            raise LSPUnavailable(f"jedi-language-server did not start ({type(exc).__name__}: {exc})") from exc
        client.initialized(types.InitializedParams())
        self._client = client

    async def _request(self, coroutine: Any) -> Any:
        if self._client is None:
            raise LSPUnavailable("the language server is not running; call initialize first")
        try:
            return await asyncio.wait_for(coroutine, REQUEST_TIMEOUT_S)
        except (TimeoutError, RuntimeError, OSError) as exc:
            raise LSPUnavailable(f"jedi-language-server failed ({type(exc).__name__}: {exc})") from exc

    def _open(self, path: str) -> Any:
        from lsprotocol import types

        uri = Path(path).as_uri()
        if path not in self._opened:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
            self._client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
                )
            )
            self._opened.add(path)
        return types.TextDocumentIdentifier(uri=uri)

    async def document_symbols(self, path: str) -> list[LSPSymbol]:
        from lsprotocol import types

        document = self._open(path)
        found = await self._request(
            self._client.text_document_document_symbol_async(
                types.DocumentSymbolParams(text_document=document)
            )
        )
        symbols = []
        for item in found or []:
            location = getattr(item, "location", None)
            span = location.range if location is not None else item.range
            symbols.append(
                LSPSymbol(item.name, _SYMBOL_KINDS.get(int(item.kind), "symbol"), path, span.start.line + 1,
                          span.end.line + 1, getattr(item, "container_name", None))
            )  # fmt: skip
        return symbols

    async def definition(self, path: str, line: int, column: int) -> list[LSPDefinition]:
        from lsprotocol import types

        params = types.DefinitionParams(
            text_document=self._open(path), position=types.Position(line=line - 1, character=column)
        )
        found = await self._request(self._client.text_document_definition_async(params))
        items = found if isinstance(found, list) else [found] if found else []
        definitions = []
        for item in items:
            uri = getattr(item, "uri", None) or getattr(item, "target_uri", None)
            span = getattr(item, "range", None) or getattr(item, "target_selection_range", None)
            if uri and span is not None:
                definitions.append(LSPDefinition(_path(uri), span.start.line + 1, span.start.character))
        return definitions

    async def references(self, path: str, line: int, column: int) -> list[LSPReference]:
        from lsprotocol import types

        params = types.ReferenceParams(
            context=types.ReferenceContext(include_declaration=False),
            text_document=self._open(path),
            position=types.Position(line=line - 1, character=column),
        )
        found = await self._request(self._client.text_document_references_async(params))
        references = []
        lines_of: dict[str, list[str]] = {}
        for item in found or []:
            where = _path(item.uri)
            if where not in lines_of:
                try:
                    lines_of[where] = Path(where).read_text(encoding="utf-8", errors="replace").split("\n")
                except OSError:
                    lines_of[where] = []
            row = item.range.start.line
            text = lines_of[where][row].strip() if row < len(lines_of[where]) else ""
            references.append(LSPReference(where, row + 1, item.range.start.character, text))
        return references

    async def hover(self, path: str, line: int, column: int) -> str | None:
        from lsprotocol import types

        params = types.HoverParams(
            text_document=self._open(path), position=types.Position(line=line - 1, character=column)
        )
        found = await self._request(self._client.text_document_hover_async(params))
        if found is None:
            return None
        contents = found.contents
        return str(getattr(contents, "value", contents))

    async def workspace_symbols(self, query: str) -> list[LSPSymbol]:
        from lsprotocol import types

        found = await self._request(
            self._client.workspace_symbol_async(types.WorkspaceSymbolParams(query=query))
        )
        symbols = []
        for item in found or []:
            location = item.location
            span = getattr(location, "range", None)
            line = span.start.line + 1 if span is not None else 1
            symbols.append(
                LSPSymbol(item.name, _SYMBOL_KINDS.get(int(item.kind), "symbol"), _path(location.uri), line, line,
                          getattr(item, "container_name", None))
            )  # fmt: skip
        return symbols

    async def diagnostics(self, path: str) -> list[LSPDiagnostic]:
        """What the server published for the file (it publishes on open; given a moment to do so)."""
        self._open(path)
        for _ in range(40):
            if path in self._diagnostics:
                break
            await asyncio.sleep(0.05)
        return self._diagnostics.get(path, [])

    async def shutdown(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                await asyncio.wait_for(client.shutdown_async(None), 5)
                client.exit(None)
            except (TimeoutError, RuntimeError, OSError):
                pass
            await self._stop(client)

    @staticmethod
    async def _stop(client: Any) -> None:
        with contextlib.suppress(TimeoutError, RuntimeError, OSError):
            await asyncio.wait_for(client.stop(), 5)
