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


EXTRACT_MOD = """//! Extractors.

mod json;
use http::Plain;

pub use axum_core::extract::{
    FromRef, FromRequest, Request,
};
"""
EXTRACT_JSON = """use super::FromRequest;

/// A JSON body.
pub struct Json<T>(pub T);

impl<T> FromRequest for Json<T> {
    fn from_request(req: Request) -> Self {
        Json(parse(req))
    }
}
"""
FFI = "pub use zlib_sys::inflate_raw;\n\npub fn inflate(data: &[u8]) -> Vec<u8> {\n    inflate_raw(data)\n}\n"
PACKAGE_INIT = """from requests import Session as Session
from multidict import (
    CIMultiDict,
    MultiDict,
)

from .client import Client as Client
"""
CLIENT = "from requests import Session\n\n\nclass Client:\n    def open(self) -> Session:\n        return Session()\n"


def test_a_name_defined_elsewhere_is_found_where_the_code_re_exports_it(
    make_engine: Any, tmp_path: Path
) -> None:
    """``FromRequest`` is axum-core's: the crate only uses it, and ``extract/mod.rs`` re-exports it with
    ``pub use``. Asked for by name, that re-export comes first, not the impls that mention it more often;
    a package's ``__init__.py`` is the same for Python (an import over several lines too); a name defined
    here is its definition, as before; a plain ``use``, a ``pub use`` in a file that is no module's face
    (``zlib.rs``) and an empty name are nothing."""
    root = tmp_path / "crate"
    (root / "src" / "extract").mkdir(parents=True)
    (root / "src" / "extract" / "mod.rs").write_text(EXTRACT_MOD)
    (root / "src" / "extract" / "json.rs").write_text(EXTRACT_JSON)
    (root / "src" / "zlib.rs").write_text(FFI)
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text(PACKAGE_INIT)
    (root / "pkg" / "client.py").write_text(CLIENT)
    engine = make_engine()
    engine.index([root], embed=False)

    def structure(query: str) -> list[str]:
        hits = engine.search(query, mode="hybrid", limit=10, explain=True).hits
        return [h.chunk.path for h in hits if h.explain is not None and "structure" in h.explain]

    top = engine.search("FromRequest", mode="hybrid", limit=5).hits[0]
    assert top.chunk.path.endswith("extract/mod.rs") and "pub use" in top.chunk.text
    assert structure("FromRequest") == [top.chunk.path]  # the impls that use it are no stand-ins
    assert [p.rsplit("/", 2)[-2:] for p in structure("Session")] == [["pkg", "__init__.py"]]
    assert [p.rsplit("/", 1)[-1] for p in structure("CIMultiDict")] == ["__init__.py"]  # over lines
    assert [p.rsplit("/", 1)[-1] for p in structure("Client")] == ["client.py"]  # defined: no stand-in
    # the dotted name keeps only its own definitions; ``Client`` is still defined here
    assert all(p.endswith("client.py") for p in structure("`Client.open` `Client`"))
    assert structure("Plain") == [] and structure("`inflate_raw`") == [] and structure("`Router.`") == []
    # an issue's text (over 30 words) names many things it does not ask about: no stand-ins there
    issue = "After upgrading, my handler that implements FromRequest fails to compile. " * 4
    assert structure(issue) == [] and structure(issue[:75]) == [top.chunk.path]
