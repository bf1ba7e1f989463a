"""``retrievo index --lsp``: ask a language server where ambiguous edges go, and record its answers.

Only edges whose name matches two or more symbols of the collection are asked about (a unique name
needs no server); each answer is stored on the edge (``resolved``), an edge asked about but left
unanswered is marked so it is not asked again until its file changes. A missing or failing server
is a warning: the tree-sitter graph stands as it was.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from retrievo.ingest.code.lsp.base import LSPDefinition, LSPRegistry, LSPUnavailable
from retrievo.models import IndexReport
from retrievo.store.base import Store
from retrievo.store.code_index import SymbolHit, unrefined_edges

NOT_RESOLVED = ""  # asked, and the server's answer is outside the index


@dataclass
class RefineReport:
    languages: list[str]
    edges_asked: int = 0
    edges_resolved: int = 0
    seconds: float = 0.0
    warning: str | None = None


def refine_with_lsp(store: Store, collection: str, workspace: Path) -> RefineReport:
    return asyncio.run(_refine(store, collection, workspace))


async def _refine(store: Store, collection: str, workspace: Path) -> RefineReport:
    started = time.perf_counter()
    report = RefineReport(languages=LSPRegistry.languages())
    index = store.code_index()
    for language in report.languages:
        edges = unrefined_edges(index, collection, f"text/x-{language}")
        if not edges:
            continue
        names = Counter(
            s.name for s in index.symbols_named(collection, sorted({e.target_name for e in edges}))
        )
        ambiguous = [e for e in edges if names[e.target_name] > 1]
        if not ambiguous:
            continue
        adapter = LSPRegistry.get(language)
        if adapter is None:
            continue
        resolutions: list[tuple[int, str]] = []
        try:
            await adapter.initialize(str(workspace))
            candidates: dict[str, list[SymbolHit]] = {}
            for edge in ambiguous:
                report.edges_asked += 1
                if edge.target_name not in candidates:
                    candidates[edge.target_name] = index.symbols_named(collection, [edge.target_name])
                definitions = await adapter.definition(edge.path, edge.line, edge.column)
                found = _symbol_at(candidates[edge.target_name], definitions)
                resolutions.append((edge.id, found.qualified_name if found else NOT_RESOLVED))
                report.edges_resolved += 1 if found else 0
        except LSPUnavailable as exc:
            report.warning = f"{language}: {exc}; the tree-sitter graph is used as it is"
        finally:
            await adapter.shutdown()
            # What was answered before a failure is kept.
            store.resolve_code_edges(resolutions)
    report.seconds = round(time.perf_counter() - started, 2)
    return report


def _symbol_at(candidates: list[SymbolHit], definitions: Sequence[LSPDefinition]) -> SymbolHit | None:
    for definition in definitions:
        path, line = definition.path, definition.line
        inside = [c for c in candidates if c.path == path and c.line_start <= line <= c.line_end]
        if inside:
            return min(inside, key=lambda c: c.line_end - c.line_start)
    return None


def refine_into_report(store: Store, report: IndexReport, collection: str, roots: Sequence[Path]) -> None:
    """``index --lsp``: refine, with the roots' common folder as the workspace, and say so in the report."""
    workspace = Path(os.path.commonpath([r if r.is_dir() else r.parent for r in roots]))
    refined = refine_with_lsp(store, collection, workspace)
    report.lsp_edges_asked, report.lsp_edges_resolved = refined.edges_asked, refined.edges_resolved
    report.lsp_warning = refined.warning
