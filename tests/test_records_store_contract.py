"""Records behave the same on SQLite and PostgreSQL: elements, their graph, change propagation, removal."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from retrievo.search.records.elements import list_elements

GRAPH = {
    "name": "Catalogue",
    "elements": [
        {"id": "svc-1", "type": "ApplicationService", "name": "Billing", "documentation": "Issues invoices."},
        {"id": "db-1", "type": "Node", "name": "Ledger Store"},
        {"id": "cap-1", "type": "Capability", "name": "Revenue Management"},
        {
            "id": "app-1",
            "type": "ApplicationComponent",
            "name": "Invoice Engine",
            "properties": {"owner": "finance"},
        },
    ],
    "relationships": [
        {"id": "r1", "type": "Access", "source": "svc-1", "target": "db-1"},
        {"id": "r2", "type": "Realization", "source": "app-1", "target": "svc-1"},
        {"id": "r3", "type": "Realization", "source": "svc-1", "target": "cap-1"},
    ],
}


def test_records_contract(make_engine: Any, tmp_path: Path) -> None:
    graph: dict[str, Any] = copy.deepcopy(GRAPH)
    model = tmp_path / "catalogue.json"
    model.write_text(json.dumps(graph))
    engine = make_engine()
    report = engine.index([model], embed=False)
    assert report.documents_added == 7, "4 elements, 3 relationships"
    store = engine._open_store(create=False)
    rows = {r.element_id: r for r in list_elements(store, "default")}
    assert rows["svc-1"].layer == "application" and rows["svc-1"].capability == "Revenue Management"
    assert {(r["direction"], r["element_id"]) for r in rows["svc-1"].relations} == {
        ("out", "db-1"),
        ("in", "app-1"),
        ("out", "cap-1"),
    }
    hits = engine.search("who issues invoices for revenue", mode="keyword", limit=4).hits
    assert hits[0].chunk.metadata["element_id"] in {"svc-1", "app-1"}
    assert [r.element_id for r in list_elements(store, "default", layer="technology")] == ["db-1"]

    graph["elements"][1]["name"] = "General Ledger"
    model.write_text(json.dumps(graph))
    changed = engine.index([model], embed=False)
    assert (changed.documents_changed, changed.documents_unchanged) == (3, 4), (
        "db-1, svc-1 and relationship r1"
    )
    graph["elements"] = graph["elements"][:3]
    graph["relationships"] = graph["relationships"][:1] + graph["relationships"][2:]
    model.write_text(json.dumps(graph))
    removed = engine.index([model], embed=False)
    assert removed.documents_removed == 2 and "app-1" not in {
        r.element_id for r in list_elements(store, "default")
    }


def test_an_answer_at_a_baseline_names_elements_as_they_were_then(make_engine: Any, tmp_path: Path) -> None:
    """One time per answer: at a baseline the element's name is the baseline's, like its text and type."""
    from retrievo.search.records.elements import element_hit

    graph: dict[str, Any] = copy.deepcopy(GRAPH)
    model = tmp_path / "catalogue.json"
    model.write_text(json.dumps(graph))
    engine = make_engine()
    engine.index([model], embed=False)
    engine.history.create("before-rename", "default")
    graph["elements"][1]["name"] = "General Ledger"
    model.write_text(json.dumps(graph))
    engine.index([model], embed=False)

    def ledger(**point: str) -> Any:
        hits = engine.search("ledger", mode="keyword", limit=10, **point).hits
        return next(element_hit(h) for h in hits if h.chunk.metadata["element_id"] == "db-1")

    then, now = ledger(baseline="before-rename"), ledger()
    assert then.element_name == "Ledger Store" and "Ledger Store" in then.context
    assert now.element_name == "General Ledger" and then.revision_id != now.revision_id
