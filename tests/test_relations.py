"""Relationship questions over models: the element at the other end of the asked relationship comes first."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from conftest import SHARED_DATA
from retrievo.models import Filters, Kind
from retrievo.search.records.relations import name_match, relation_intent
from test_mcp import call, run_client

RECORDS = Filters(kinds=(Kind.RECORD,))
GRAPH = {
    "name": "Billing landscape",
    "elements": [
        {"id": "svc", "type": "BusinessService", "name": "Invoice Delivery Service"},
        {"id": "app", "type": "ApplicationComponent", "name": "Billing Engine"},
        {"id": "proc", "type": "BusinessProcess", "name": "Send Invoices"},
        {"id": "node", "type": "Node", "name": "Ledger Host"},
        {"id": "role", "type": "BusinessRole", "name": "Accounts Clerk"},
        {"id": "evt", "type": "BusinessEvent", "name": "Month Closed"},
        {"id": "portal", "type": "ApplicationComponent", "name": "Customer Portal"},
    ],
    "relationships": [
        {"id": "r1", "type": "Realization", "source": "app", "target": "svc"},
        {"id": "r2", "type": "Realization", "source": "proc", "target": "svc"},
        {"id": "r3", "type": "Realization", "source": "node", "target": "app"},
        {"id": "r4", "type": "Assignment", "source": "role", "target": "proc"},
        {"id": "r5", "type": "Triggering", "source": "evt", "target": "proc"},
        {"id": "r6", "type": "Serving", "source": "app", "target": "portal"},
    ],
}


@pytest.mark.parametrize(
    ("question", "first_end", "asked", "named"),
    [
        ("Which application component realizes the invoice delivery service?", ("realization", "source"),
         "applicationcomponent", "invoice delivery service"),
        ("which node provides the database service", ("realization", "source"), "node", "database service"),
        ("who is assigned to handle claims", ("assignment", "source"), "businessrole", "handle claims"),
        ("what is triggered when damage occurs", ("triggering", "target"), None, "damage occurs"),
        ("what is realized by the NAS file server", ("realization", "target"), None, "nas file server"),
        ("what does the register process access", ("access", "target"), None, "register process"),
        ("what is the customer file composed of", ("composition", "target"), None, "customer file"),
        ("what is the insurance policy part of", ("composition", "source"), None, "insurance policy"),
        ("which technology service supports the CRM system", ("serving", "source"), "technologyservice",
         "crm system"),
        ("what uses the claim files service", ("serving", "target"), None, "claim files service"),
        ("what happens after register", ("triggering", "target"), None, "register"),
        ("what role does the client play", ("assignment", "target"), "businessrole", "client"),
        ("what is the customer file made of", ("composition", "target"), None, "customer file"),
        ("what technology does the crm system depend on", ("serving", "source"), None, "crm system"),
        ("which application component is behind the premium payment service", ("realization", "source"),
         "applicationcomponent", "is behind the premium payment service"),
    ],
)  # fmt: skip
def test_a_question_says_which_relationship_and_which_end_it_asks_for(
    question: str, first_end: tuple[str, str], asked: str | None, named: str
) -> None:
    intent = relation_intent(question)
    assert intent is not None and intent.ends[0] == first_end and intent.named == named
    assert (asked in intent.asked_types) if asked else not intent.asked_types


def test_impact_and_plain_questions() -> None:
    impact = relation_intent("What would be affected if the mainframe fails?")
    assert impact is not None and impact.impact and impact.depth == 2 and impact.named == "mainframe"
    assert ("serving", "target") in impact.ends and ("access", "source") in impact.ends
    for plain in ("parental leave policy", "how does click parse options", "what is the refund policy"):
        assert relation_intent(plain) is None, plain


def test_the_named_element_is_found_by_its_words() -> None:
    assert name_match("Premium Payment Service", "premium payment service") == 1.0
    assert name_match("Register", "register process") == 1.0  # "process" says what kind of thing it is
    assert name_match("Damage Occured", "damage occurs") == 1.0  # same stems
    assert (
        name_match("Customer", "customer file service") < 0.6 < name_match("Customer File", "customer file")
    )


def test_relation_answers_on_both_stores_now_and_at_a_baseline(make_engine: Any, tmp_path: Path) -> None:
    model = tmp_path / "landscape.json"
    model.write_text(json.dumps(GRAPH))
    engine = make_engine()
    engine.index([model])
    found = engine.search("which application component realizes the invoice delivery service", limit=3,
                          filters=RECORDS)  # fmt: skip
    first = found.hits[0]
    assert first.chunk.metadata["element_name"] == "Billing Engine" and first.matched_via is not None
    assert first.matched_via.relationship == "realization" and first.matched_via.direction == "in"
    assert first.matched_via.path == "Invoice Delivery Service ←realization— Billing Engine"
    assert [h.chunk.metadata["element_name"] for h in found.hits[1:]][:1] != ["Billing Engine"]
    who = engine.search("who is assigned to send invoices", limit=3, filters=RECORDS).hits[0]
    assert who.chunk.metadata["element_name"] == "Accounts Clerk"
    after = engine.search("what is triggered when the month closed", limit=3, filters=RECORDS).hits[0]
    assert after.chunk.metadata["element_name"] == "Send Invoices"
    impact = engine.search("what is affected by the ledger host", limit=5, filters=RECORDS)
    paths = {h.chunk.metadata["element_name"]: h.matched_via.path for h in impact.hits if h.matched_via}
    assert paths["Billing Engine"] == "Ledger Host —realization→ Billing Engine"
    assert paths["Customer Portal"] == "Ledger Host —realization→ Billing Engine —serving→ Customer Portal"
    assert all(h.relevance <= 1 for h in impact.hits)

    # Each relationship is a record of its own: a hit on one is answered with an element, never a bare link
    report = engine.search("Ledger Host realizes", mode="keyword", limit=5, filters=RECORDS)
    assert all(h.chunk.metadata.get("element_id") for h in report.hits)
    linked = [h for h in report.hits if h.matched_via and h.matched_via.via == "relationship record"]
    assert linked and linked[0].chunk.metadata["element_name"] == "Billing Engine"
    assert (
        linked[0].matched_via is not None
        and linked[0].matched_via.path == "Ledger Host —realization→ Billing Engine"
    )
    from retrievo.search.records.elements import list_elements

    listed = list_elements(engine._open_store(create=False), "default")
    assert len(listed) == 7, "elements only: relationship records are not elements"

    engine.history.create("before-move")
    moved: dict[str, Any] = json.loads(json.dumps(GRAPH))
    moved["relationships"][0]["source"] = "portal"  # now the portal realizes the service
    model.write_text(json.dumps(moved))
    engine.index([model])
    question = "which application component realizes the invoice delivery service"
    now = engine.search(question, limit=1, filters=RECORDS).hits[0]
    then = engine.search(question, limit=1, filters=RECORDS, baseline="before-move").hits[0]
    assert now.chunk.metadata["element_name"] == "Customer Portal"
    assert then.chunk.metadata["element_name"] == "Billing Engine" and then.matched_via is not None

    # Records only, the kind filter leaves nothing out and is dropped for the fast paths; beside documents
    # it still holds
    alone = engine.search("invoice delivery", limit=5, filters=RECORDS, explain=True)
    notes = tmp_path / "notes.md"
    notes.write_text("# Invoice delivery\n\nThe invoice delivery service sends invoices by mail.\n")
    engine.index([notes])
    mixed = engine.search("invoice delivery", limit=5, filters=RECORDS)
    assert alone.hits and all(h.chunk.kind == Kind.RECORD for h in [*alone.hits, *mixed.hits])
    assert Kind.DOCUMENT in {h.chunk.kind for h in engine.search("invoice delivery", limit=10).hits}


ARCHISURANCE = SHARED_DATA / "archimate" / "opengroup-xmlexchange" / "archisurance.xml"
ISSUE_QUESTIONS = {
    "which application component realizes the premium payment service": "Financial Application",
    "which node provides the database service": "Mainframe",
    "who is assigned to handle claims": "Insurer",
    "what is triggered when damage occurs": "Register",
    "which technology service supports the CRM system": "Claim Files Service",
}


@pytest.mark.skipif(not ARCHISURANCE.exists(), reason="../shared/data not present")
def test_semantic_search_with_defaults_answers_relationship_questions_over_mcp(
    tmp_path: Path, minilm: Any
) -> None:
    from retrievo import Config, Engine

    db = tmp_path / "a.db"
    with Engine(Config(db=db), embedder=minilm) as engine:
        engine.index([ARCHISURANCE])

    async def ask(client: Client) -> None:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        for question, answer in ISSUE_QUESTIONS.items():
            found = await call(client, "semanticSearch", {"query": question, "top_k": 3}, schemas)
            results = found["results"]
            assert results[0]["element_name"] == answer, (question, results)
            assert results[0]["matched_via"]["path"].endswith(answer)
            assert all(
                {"element_id", "element_type", "layer", "revision_id", "matched_via"} <= set(r)
                for r in results
            )
            scores = [r["score"] for r in results]
            # the answer whole to top_k (before: each element cut at 0.5, mostly one left), in rank order
            assert scores == sorted(scores, reverse=True) and len(results) == 3, results
        plain = await call(client, "semanticSearch", {"query": "customer file"}, schemas)
        assert plain["results"], "the default min_score keeps a good plain question's answers"
        context = await call(client, "getContext", {"query": "who is assigned to handle claims"}, schemas)
        assert "Reached by: Handle Claim ←assignment— Insurer" in context["context"]

    run_client(
        StdioServerParameters(
            command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db)]
        ),
        ask,
    )
