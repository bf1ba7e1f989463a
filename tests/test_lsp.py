"""The jedi-language-server adapter, for real: every LSP operation, and `index --lsp` refining the graph."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from retrievo import Config, Engine
from retrievo.ingest.code.lsp import JediAdapter, LSPRegistry, LSPUnavailable

STORAGE = '''class Disk:
    def save(self):
        return "disk"


class Cloud:
    def save(self):
        """Upload."""
        return "cloud"
'''
BACKUP = """from storage import Cloud


def backup():
    target = Cloud()
    return target.save()
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "storage.py").write_text(STORAGE)
    (root / "backup.py").write_text(BACKUP)
    (root / "broken.py").write_text("def broken(:\n    pass\n")
    return root


def test_every_operation_against_the_real_server(repo: Path) -> None:
    async def session() -> None:
        adapter = JediAdapter()
        await adapter.initialize(str(repo))
        try:
            symbols = await adapter.document_symbols(str(repo / "storage.py"))
            assert {("Disk", "class"), ("Cloud", "class")} <= {(s.name, s.kind) for s in symbols}
            (definition,) = await adapter.definition(str(repo / "backup.py"), 6, 18)  # target.save
            assert definition.path == str(repo / "storage.py") and definition.line == 7
            references = await adapter.references(str(repo / "storage.py"), 6, 6)  # class Cloud
            assert any(
                r.path.endswith("backup.py") and r.line == 5 and "Cloud()" in r.text for r in references
            )
            hover = await adapter.hover(str(repo / "backup.py"), 6, 18)
            assert hover is not None and "save" in hover
            found = await adapter.workspace_symbols("Cloud")
            assert any(s.name == "Cloud" for s in found) or found == []  # jedi searches lazily
            problems = await adapter.diagnostics(str(repo / "broken.py"))
            assert problems and problems[0].severity == "error" and problems[0].line == 1
        finally:
            await adapter.shutdown()

    asyncio.run(session())


def test_index_lsp_resolves_what_names_alone_cannot(repo: Path, tmp_path: Path) -> None:
    with Engine(Config(db=tmp_path / "plain.db", embedder="none")) as engine:
        engine.index([repo])
        calls = [e for e in engine.symbol_graph("backup.backup").edges if e.target == "target.save"]
        assert calls[0].resolved == ("storage.Disk.save", "storage.Cloud.save"), "ambiguous by name"
    with Engine(Config(db=tmp_path / "lsp.db", embedder="none")) as engine:
        report = engine.index([repo], lsp=True)
        assert report.lsp_warning is None and report.lsp_edges_asked == 1 and report.lsp_edges_resolved == 1
        calls = [e for e in engine.symbol_graph("backup.backup").edges if e.target == "target.save"]
        assert calls[0].resolved == ("storage.Cloud.save",)
        again = engine.index([repo], lsp=True)
        assert again.lsp_edges_asked == 0, "answers are kept until the file changes"


def test_a_missing_server_is_a_warning_and_the_tree_sitter_graph_stands(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(
        LSPRegistry.adapters, "python", lambda: JediAdapter(command=str(tmp_path / "no-such-server"))
    )
    with Engine(Config(db=tmp_path / "w.db", embedder="none")) as engine:
        report = engine.index([repo], lsp=True)
        assert report.documents_added == 3 and report.lsp_warning and "did not start" in report.lsp_warning
        calls = [e for e in engine.symbol_graph("backup.backup").edges if e.target == "target.save"]
        assert len(calls[0].resolved) == 2
    with pytest.raises(LSPUnavailable):
        asyncio.run(JediAdapter(command=str(tmp_path / "no-such-server")).initialize(str(repo)))
