"""Compound identifiers are searchable by their parts."""

from __future__ import annotations

from retrievo.ingest.identifiers import identifier_terms, split_identifier
from retrievo.store.fts_query import query_terms


def test_camel_snake_and_acronyms_split_into_words() -> None:
    assert split_identifier("DiffExecutor") == ["diff", "executor"]
    assert split_identifier("run_target") == ["run", "target"]
    assert split_identifier("HTTPServerError") == ["http", "server", "error"]
    assert split_identifier("parse_JSONValue2") == ["parse", "json", "value", "2"]
    assert split_identifier("plain") == ["plain"]


def test_identifier_terms_lists_parts_of_compound_identifiers_once() -> None:
    text = "let exec = DiffExecutor::new(); exec.run_target(); DiffExecutor again; plain words"
    assert identifier_terms(text) == "diff executor run target"


def test_queries_match_identifier_parts_too() -> None:
    assert query_terms("What does DiffExecutor do?") == ["does", "diffexecutor", "do", "diff", "executor"]
