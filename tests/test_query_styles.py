"""Queries that are not questions (issue 55): one rare word, a quoted phrase, a phrase copied from a document.

Through ``search`` and ``search_library`` on SQLite and PostgreSQL (``make_engine``), and through the MCP
server with the SDK's real client over stdio. The library's other abstracts are about the same things in
other words, so the dense arm alone ranks them close; only the exact words tell the passage asked for.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from retrievo import Config, Engine
from retrievo.search import exact
from retrievo.search.answer import answerability as answer
from retrievo.search.query import read_query

ABSTRACTS = {
    "par2.md": "# Activation of proteinase-activated receptor 2 in the colon\n\nTrypsin cleaves the receptor's "
    "amino terminus; the new end binds the receptor itself. In the colon this signalling drives "
    "inflammation and pain in mice.",
    "thrombin.md": "# Thrombin signalling in platelets\n\nThrombin cuts a G protein-coupled receptor on "
    "platelets, which then aggregate. Enzymes that cut receptors switch on signalling in many cells.",
    "protease.md": "# Enzymes that cut proteins in the gut\n\nDigestive enzymes in the intestine cleave "
    "dietary proteins. Their activity in the colon is controlled by inhibitors made by the epithelium; "
    "trypsin binds there and the receptor was activated in a few cells only.",
    "itch.md": "# Itch and pain from skin enzymes\n\nSkin proteases activate sensory neurons and cause itch "
    "and inflammation. Mice without the receptor scratch less.",
    "asthma.md": "# Airway inflammation and protease allergens\n\nHouse dust mite allergens are enzymes that "
    "break barriers in the lung, and the immune response that follows narrows the airways.",
    "tumour.md": "# Tumour growth in mice fed a high-fat diet\n\nMice on the diet grew larger tumours; the "
    "tumour cells took up fatty acids and divided faster.",
}
RARE = "proteinase"
PHRASE = "this signalling drives inflammation and pain"  # copied from par2.md's body
QUOTED = '"receptor was activated"'  # only protease.md holds it as written; others hold the words apart


def _corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "abstracts"
    folder.mkdir()
    for name, text in ABSTRACTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _first(engine: Engine, query: str) -> str:
    hits = engine.search(query, limit=5).hits
    assert hits, query
    return Path(hits[0].chunk.path).name


def test_a_rare_word_a_quoted_phrase_and_a_copied_phrase_find_their_document_on_both_stores(
    make_engine: Any, tmp_path: Path
) -> None:
    engine = make_engine()
    engine.index([_corpus(tmp_path)])
    assert _first(engine, RARE) == "par2.md"
    assert _first(engine, RARE.upper() + "S") == "par2.md"  # any case, any inflection (the stemmer)
    assert _first(engine, PHRASE) == "par2.md"
    assert _first(engine, QUOTED) == "protease.md"
    # answerable as typed: the word, the phrase; a quoted phrase no passage holds is no answer
    assert engine.search(RARE, min_score=0.4).hits and engine.search(QUOTED, min_score=0.4).hits
    assert not engine.search('"receptor was digested"', min_score=0.4).hits
    library = engine.library(RARE, min_similarity=0.0)
    assert Path(library.entries[0].document.best.chunk.path).name == "par2.md"
    library = engine.library(QUOTED, min_similarity=0.0)
    assert Path(library.entries[0].document.best.chunk.path).name == "protease.md"


def test_exact_evidence_reads_words_as_the_keyword_arm_indexes_them() -> None:
    words = read_query("Servers")
    assert exact.evidence(words, exact.passage_tokens("", "The server list")).coverage == 1.0
    phrase = read_query("signalling drives inflammation")
    held = exact.evidence(phrase, exact.passage_tokens("", "this signalling drives inflammation in mice"))
    apart = exact.evidence(phrase, exact.passage_tokens("", "inflammation drives signalling"))
    assert (held.coverage, held.phrase) == (1.0, 1.0)
    assert apart.coverage == 1.0 and apart.phrase == 0.0
    quoted = read_query('mice "receptor was activated"')
    assert exact.evidence(quoted, exact.passage_tokens("", "the receptor was activated")).quoted == 1.0
    assert exact.evidence(quoted, exact.passage_tokens("", "the receptor is activated")).quoted == 0.0
    assert read_query("the of and").content  # only stop words: they are what was asked for
    assert exact.evidence(read_query(""), ["x"]) == exact.Evidence(0.0, 0.0)


def test_the_same_queries_through_the_mcp_server(tmp_path: Path, minilm: Any) -> None:
    db = tmp_path / "styles.db"
    with Engine(Config(db=db), embedder=minilm) as engine:
        engine.index([_corpus(tmp_path)])
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db), "--tools", "all"]
    )
    found: dict[str, str] = {}

    async def main() -> None:
        with anyio.fail_after(120):
            async with Client(server) as client:
                for query in (RARE, PHRASE, QUOTED):
                    result = await client.call_tool("search", {"query": query, "limit": 3})
                    assert not result.is_error, result.content
                    assert result.structured_content is not None
                    found[query] = Path(result.structured_content["results"][0]["path"]).name
                result = await client.call_tool("search_library", {"query": RARE, "min_similarity": 0.0})
                assert not result.is_error, result.content
                assert result.structured_content is not None
                found["library"] = str(result.structured_content["results"][0])

    anyio.run(main)
    assert found[RARE] == "par2.md" and found[PHRASE] == "par2.md" and found[QUOTED] == "protease.md"
    assert "par2" in found["library"]


def test_the_chunks_holding_a_phrase_s_words_are_the_same_on_both_stores(
    make_engine: Any, tmp_path: Path
) -> None:
    """``Store.chunks_holding``: every current chunk holding all the words (stemmed, any case), whatever
    BM25 would rank; none for a word no chunk holds, at a point in time, or outside a filter."""
    from retrievo.models import Filters, Kind

    engine = make_engine()
    engine.index([_corpus(tmp_path)])
    store = engine._open_store(create=False)
    chunks = store.get_chunks(store.chunks_holding("default", ["Receptors", "ACTIVATED"], Filters(), 50))
    # itch.md's "activate" is "activated"'s stem: words, not their order or form
    assert {Path(c.path).name for c in chunks.values()} == {"par2.md", "protease.md", "itch.md"}
    assert store.chunks_holding("default", ["receptor", "xylophone"], Filters(), 50) == []
    assert store.chunks_holding("default", ["receptor"], Filters(as_of="2020-01-01T00:00:00Z"), 50) == []
    assert store.chunks_holding("default", ["receptor"], Filters(kinds=(Kind.CODE,)), 50) == []
    assert len(store.chunks_holding("default", ["mice"], Filters(), 2)) == 2
    # a quoted phrase whose holder the arms rank low still comes first: every holder is read
    hits = engine.search('"house dust mite"', limit=3).hits
    assert Path(hits[0].chunk.path).name == "asthma.md"


def test_a_phrase_matches_by_word_position_on_both_stores(make_engine: Any, tmp_path: Path) -> None:
    """``Store.chunks_with_phrase``: the chunks holding the words in a run (FTS5's phrase query on SQLite,
    the tokens' positions checked on PostgreSQL), stemmed and any case; words apart or out of order do not."""
    from retrievo.models import Filters

    engine = make_engine()
    engine.index([_corpus(tmp_path)])
    store = engine._open_store(create=False)

    def holders(phrase: str) -> set[str]:
        found = store.get_chunks(store.chunks_with_phrase("default", phrase, Filters(), 50))
        return {Path(c.path).name for c in found.values()}

    assert holders("Receptor WAS activated") == {"protease.md"}  # par2/itch hold the words apart
    assert holders("signalling drive inflammation") == {"par2.md"}  # "drives": the stem
    assert holders("inflammation drives signalling") == set()  # the same words, out of order
    assert holders("receptor xylophone") == set()
    assert store.chunks_with_phrase("default", "  ", Filters(), 5) == []
    # FTS5's syntax is plain words inside a phrase; a NUL or a phrase of punctuation finds nothing
    assert holders('receptor "was" activated') == {"protease.md"}
    assert holders("NEAR(receptor was") == set()  # "near receptor was": no passage holds that run
    assert holders("receptor* : was") == {"protease.md"}  # operators are separators: "receptor was"
    assert (
        holders("\x00receptor\x00")
        == holders("receptor")
        == {"par2.md", "thrombin.md", "protease.md", "itch.md"}
    )
    assert store.chunks_with_phrase("default", '""', Filters(), 5) == []
    assert store.chunks_with_phrase("default", "*:()", Filters(), 5) == []
    assert holders("receptor was\x00activated") == {"protease.md"}
    # the words some passage holds, as typed: what a query asks that the collection lacks; a word's
    # pieces ("cleaves_receptor") held by one chunk, a word of no letters is not held
    assert store.held_words("default", ["Receptors", "xylophone", "MICE"]) == {"Receptors", "MICE"}
    assert store.held_words("default", ["cleaves_receptor", "___"]) == {"cleaves_receptor"}
    assert store.held_words("default", []) == frozenset()
    assert store.chunks_with_phrase("default", "the receptor", Filters(as_of="2020-01-01T00:00:00Z"), 5) == []


def test_a_run_of_common_words_copied_from_a_passage_finds_it_first(make_engine: Any, tmp_path: Path) -> None:
    """A copied run of words every passage has (deep in BM25's list) is looked up by position: its passage
    first, answerable; one or two words the collection lacks are no answer."""
    folder = _corpus(tmp_path)
    for i in range(30):  # many passages holding "if a value is" apart, one holding the run
        (folder / f"note{i:02}.md").write_text(
            f"# Note {i}\n\nIf the value is missing a default is used; a value is read once. Note {i}.",
            encoding="utf-8",
        )
    (folder / "rule.md").write_text(
        "# Validation\n\nThe option is checked: if a value is provided it must be a number.", encoding="utf-8"
    )
    engine = make_engine()
    engine.index([folder])
    hits = engine.search("if a value is provided", limit=5).hits
    assert Path(hits[0].chunk.path).name == "rule.md"
    assert hits[0].relevance >= 0.4
    # one or two words the collection does not hold: refused, whatever sits near them in meaning; one word
    # of two held is read by meaning
    assert not engine.search("xylophone", min_score=0.4).hits
    assert not engine.search("xylophone quasar", min_score=0.4).hits
    assert engine.search("receptor", min_score=0.4).hits
    for query, share in (("xylophone", 1.0), ("receptor xylophone", 0.5), ("receptor", 0.0)):
        found = engine.search(query, limit=3).signals
        assert found is not None and found.missing == share, query
    # a long text quoting a string no passage holds (an issue's literal) is not refused for it
    issue = 'the receptor was activated in a few cells only and then "no such option" was printed by the tool'
    hits = engine.search(issue, limit=5).hits
    assert hits and answer.held(hits, read_query(issue)) is not None
    # not a question: "what is a xylophone" is read by the answerability model, not by the words held
    signals = engine.search("what is a xylophone", limit=3).signals
    assert signals is not None and signals.missing == 0.0
