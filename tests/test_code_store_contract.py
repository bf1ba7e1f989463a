"""The code structure index behaves the same on SQLite and PostgreSQL (the shared contract)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from retrievo.errors import DocumentNotFound

MODELS = """class Base:
    def save(self):
        return persist(self)


def persist(item):
    return item
"""
SERVICE = '''from models import Base, persist


class Invoice(Base):
    """An invoice."""

    def total(self):
        return persist(self)
'''
TEST = """from service import Invoice


def test_total():
    assert Invoice().total()
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "models.py").write_text(MODELS)
    (root / "service.py").write_text(SERVICE)
    (root / "tests" / "test_service.py").write_text(TEST)
    return root


def test_symbols_edges_incremental_updates_and_removal(make_engine: Any, repo: Path) -> None:
    engine = make_engine()
    engine.index([repo], embed=False)
    assert [s.qualified_name for s in engine.find_symbol("Invoice")] == ["service.Invoice"]
    assert engine.find_symbol("*e", kind="method")[0].qualified_name in {
        "models.Base.save",
        "service.Invoice.total",
    }
    graph = engine.symbol_graph("service.Invoice")
    assert {("inherits", ("models.Base",)), ("calls", ("models.persist",))} <= {
        (e.kind, e.resolved) for e in graph.edges
    }
    users = engine.symbol_graph("models.persist", direction="dependents", depth=2)
    assert {"models.Base.save", "service.Invoice.total"} <= {e.source for e in users.edges}
    assert [t.source for t in users.tests] == ["test_service.test_total"]

    # A changed file replaces only its own rows; edges into it resolve to what it now holds.
    (repo / "models.py").write_text(MODELS.replace("persist", "store_item"))
    assert engine.index([repo], embed=False).documents_changed == 1
    edges = engine.symbol_graph("service.Invoice.total").edges
    assert [e.resolved for e in edges if e.kind == "calls"] == [()], "persist no longer exists anywhere"
    assert engine.find_symbol("store_item")[0].path.endswith("models.py")

    (repo / "service.py").unlink()
    assert engine.index([repo], embed=False).documents_removed == 1
    with pytest.raises(DocumentNotFound):
        engine.symbol_graph("service.Invoice")
    assert not engine.find_symbol("total")


def test_the_structure_index_travels_with_migrate(tmp_path: Path, repo: Path, postgres_url: str) -> None:
    from retrievo import Config, Engine
    from retrievo.store.postgres.store import PostgresStore
    from retrievo.store.sqlite import SQLiteStore
    from retrievo.store.transfer import move

    with Engine(Config(db=tmp_path / "a.db", embedder="none")) as engine:
        engine.index([repo])
    source, target = SQLiteStore(tmp_path / "a.db"), PostgresStore(postgres_url, create=True)
    move(source, target)
    for store in (source, target):
        assert store.code_index().counts("default") == source.code_index().counts("default") != (0, 0)
    source.close(), target.close()
    with Engine(Config(store=postgres_url, embedder="none")) as engine:
        assert engine.symbol_graph("service.Invoice").edges
