"""Compound identifiers are searchable by their parts."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from retrievo.store.fts_query import query_terms
from retrievo.text.identifiers import identifier_terms, keyword_terms, split_identifier


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


def reference_identifier_terms(text: str) -> str:
    """The plain definition: every identifier, in order, once; the parts of those with more than one."""
    words: list[str] = []
    for identifier in dict.fromkeys(re.findall(r"[A-Za-z_][A-Za-z0-9_]*[A-Za-z0-9]", text)):
        parts = split_identifier(identifier)
        if len(parts) > 1:
            words.extend(parts)
    return " ".join(words)


IDENTIFIER_TEXT = st.text(
    alphabet=st.sampled_from("abcXYZ_019 .-(é中\n") | st.characters(), max_size=120
) | st.lists(st.sampled_from(["word", "Word", "WORD", "runTarget", "run_target", "HTTPError", "x2", "2x",
                              "_a", "a_", "__init__", "é", "caféBar", "ABc", "AbC", " ", ".", "-", "A2b",
                              "x2Y", "2ab", "22AB3C", "a_1", "_2A", "mRNA", "CD4", "İ", "ß"]),
             max_size=30).map("".join)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(IDENTIFIER_TEXT)
def test_identifier_terms_equal_the_plain_definition(text: str) -> None:
    """Only the runs with a mark of a part boundary are read: the same terms, in the same order."""
    assert identifier_terms(text) == reference_identifier_terms(text)


def reference_keyword_terms(text: str, context: str) -> str:
    """The plain definition: identifier parts, then every word of context and text whose NFKC form differs."""
    folded = [
        unicodedata.normalize("NFKC", word)
        for word in dict.fromkeys(re.findall(r"\w+", f"{context} {text}"))
        if unicodedata.normalize("NFKC", word) != word
    ]
    return " ".join([identifier_terms(text), *folded]).strip()


# Compatibility forms (ligatures, full-width, half-width kana and their voiced mark, superscripts, the
# micro sign), combining marks before and after letters, conjoining Hangul jamo, and anything else.
FOLDING_TEXT = st.text(
    alphabet=st.sampled_from("aé e\u0301\u0327 ﬁﬀＵｎ ｶﾞﾞ ²µΩ \u1100\u1161\u11a8가 각.-_x1") | st.characters(),
    max_size=60,
)


@settings(max_examples=1000, deadline=None)
@given(FOLDING_TEXT, FOLDING_TEXT)
def test_keyword_terms_equal_the_plain_definition(text: str, context: str) -> None:
    """A text (and context) already in NFKC skips the word-by-word folding: the same terms either way."""
    assert keyword_terms(text, context) == reference_keyword_terms(text, context)
    normalized = unicodedata.normalize("NFKC", text)
    assert keyword_terms(normalized, "") == reference_keyword_terms(normalized, "")
