"""The query's words as the keyword arm reads them (stemmed, whole words, common words left out) in what
an agent sees: marked excerpts, the word share, and ``search_library``'s similarity, which ranks and
separates documents by each one's own evidence (issue 55, items 5 and 6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from retrievo.search.answer.highlight import highlight, word_share
from retrievo.search.documents.library import similarity
from retrievo.search.query import read_query

NOTES = {
    "receptor.md": "# Receptor activation\n\nA proteinase cleaves the receptor's tail and activates it.\n",
    "antibody.md": "# Serum titres\n\nOne antibody bound the spike protein in every sample we measured.\n",
    "antibodies.md": "# Serology\n\nAntibodies against the virus were found in forty of the patients.\n",
    "servers.md": "# Server inventory\n\nThe mail Server and the web server run in the basement.\n",
    "theme.md": "# Page theme\n\nThe theme of the page is dark; themes change with the season.\n",
    "bread.md": "# Sourdough\n\nA starter of flour and water ferments for days before baking.\n",
    "trains.md": "# Timetables\n\nRegional trains leave every hour from platform two.\n",
    "cotton.md": "# Cotton\n\nUpland varieties are grown for fibre across warm regions.\n",
}


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text)
    return folder


def _library(engine: Any, query: str, **options: Any) -> list[tuple[str, float]]:
    found = engine.library(query, **options)
    return [(Path(e.document.best.chunk.path).name, e.document.similarity) for e in found.entries]


def test_a_rare_word_puts_the_one_document_holding_it_first_without_a_certain_score(
    make_engine: Any, notes: Path
) -> None:
    engine = make_engine()
    engine.index([notes])
    found = _library(engine, "proteinase")
    assert found and found[0][0] == "receptor.md", found
    assert 0.7 <= found[0][1] < 1.0, "holding the one word is evidence, not a certain match"
    everything = _library(engine, "proteinase", min_similarity=0.0)
    scores = [score for _, score in everything]
    assert scores == sorted(scores, reverse=True) and everything[0][0] == "receptor.md"
    assert all(score < found[0][1] for name, score in everything[1:]), "the word separates"


def test_no_document_takes_a_score_from_another(make_engine: Any, notes: Path) -> None:
    engine = make_engine()
    engine.index([notes])
    query = "proteinase cleaves the receptor"
    cosine = {Path(h.chunk.path).name: h.score for h in engine.search(query, mode="semantic", limit=20).hits}
    for name, score in _library(engine, query, min_similarity=0.0):
        if (
            word_share(NOTES[name], read_query(query)) == 0.0
        ):  # no word of the query: by meaning alone, its own cosine
            assert score == similarity(cosine[name]), name


def test_singular_and_plural_find_the_same_documents(make_engine: Any, notes: Path) -> None:
    engine = make_engine()
    engine.index([notes])
    singular, plural = _library(engine, "antibody"), _library(engine, "antibodies")
    expected = {"antibody.md", "antibodies.md"}
    assert {name for name, _ in singular[:2]} == {name for name, _ in plural[:2]} == expected
    assert word_share(NOTES["antibodies.md"], read_query("antibody")) == word_share(
        NOTES["antibody.md"], read_query("antibodies")
    )
    assert (
        word_share(NOTES["servers.md"], read_query("which servers exist?")) == 0.5
    )  # "server" held, "exist" not
    hits = engine.search("servers", limit=3).hits
    assert Path(hits[0].chunk.path).name == "servers.md"
    assert "**Server** inventory" in highlight(
        hits[0].chunk.title + "\n" + hits[0].chunk.text, read_query("servers")
    )


def test_highlight_marks_the_query_s_words_never_a_stop_word_or_a_word_inside_another(
    make_engine: Any, notes: Path
) -> None:
    engine = make_engine()
    engine.index([notes])
    hit = engine.search("the theme of the page", limit=1).hits[0]
    assert Path(hit.chunk.path).name == "theme.md"
    marked = highlight(hit.chunk.text, read_query("the theme of the page"))
    assert "**The**" not in marked and "**the**" not in marked, "a stop word is never marked"
    assert "The **theme** of the **page**" in marked and "**themes**" in marked, marked
    assert highlight("the theme, then the themes", read_query("the")) == "the theme, then the themes"
    assert highlight("parse parsed reparse", read_query("parses")) == "**parse** **parsed** reparse"
    assert highlight("Café au lait", read_query("cafe")) == "**Café** au lait", (
        "diacritics fold as in the keyword arm"
    )
