"""What only makes sense across stores: equal keyword rankings, moving indexes, concurrent access."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from retrievo import Config, Engine, IndexLockedError
from retrievo.errors import CollectionNotFound
from retrievo.models import Kind, LoadedDocument
from retrievo.text.hashing import embedding_input

QUERIES = [
    "parental leave approval",
    "lost laptop encryption",
    "expense receipts meals alcohol",
    "reciprocal rank fusion relevance",
    "chunks offsets hashes revisions",
    "multi-factor authentication hardware keys",
    "indexed index indexing chunk chunks",  # a stem several terms share counts once per term, as in FTS5
]


def _keyword_engine(**settings: Any) -> Engine:
    return Engine(Config.from_env(embedder="none", **settings))


def test_bm25_rankings_and_scores_agree_between_sqlite_and_postgresql(
    tmp_path: Path, handbook: Path, postgres_url: str
) -> None:
    lite = _keyword_engine(db=tmp_path / "lite.db")
    pg = _keyword_engine(store=postgres_url)
    for engine in (lite, pg):
        engine.index([handbook, ROOT / "docs"])
    for query in QUERIES:
        a = lite.search(query, mode="keyword", limit=10, explain=True).hits
        b = pg.search(query, mode="keyword", limit=10, explain=True).hits
        assert a and len(a) == len(b), query
        scores_a = [h.explain["keyword"].score for h in a if h.explain]
        scores_b = [h.explain["keyword"].score for h in b if h.explain]
        assert scores_b == pytest.approx(scores_a, rel=1e-6), query
        # Equal scores may tie; compare which chunk text sits at each score, not raw ids.
        assert [(round(s, 6), h.chunk.text) for s, h in zip(scores_a, a, strict=True)] == [
            (round(s, 6), h.chunk.text) for s, h in zip(scores_b, b, strict=True)
        ]
    lite.close()
    pg.close()


def test_migrate_sqlite_to_postgresql_and_back_without_re_embedding(
    tmp_path: Path, handbook: Path, postgres_url: str, minilm: Any
) -> None:
    source = tmp_path / "source.db"
    with Engine(Config(db=source), embedder=minilm) as engine:
        engine.index([handbook])
        before = engine.search("who approves parental leave", limit=5)
    env = {**os.environ, "RETRIEVO_EMBEDDER": "none"}
    cli = [sys.executable, "-m", "retrievo.surfaces.cli", "migrate"]
    forward = subprocess.run([*cli, "--from", str(source), "--to", postgres_url, "--json"],
                             capture_output=True, text=True, timeout=300, check=True, env=env)  # fmt: skip
    moved = json.loads(forward.stdout)[0]
    assert moved["name"] == "default" and moved["fingerprint"]["chunks"] > 0
    assert moved["fingerprint"]["embeddings"] == moved["fingerprint"]["chunks"]
    with Engine(Config(store=postgres_url), embedder=minilm) as engine:
        assert engine.status().collections[0].missing == 0, "vectors came along; nothing to re-embed"
        after = engine.search("who approves parental leave", limit=5)
    assert [h.chunk.chunk_id for h in after.hits] == [h.chunk.chunk_id for h in before.hits]
    assert [h.chunk.revision_id for h in after.hits] == [h.chunk.revision_id for h in before.hits]
    back = tmp_path / "back.db"
    returned = subprocess.run([*cli, "--from", postgres_url, "--to", str(back), "--json"],
                              capture_output=True, text=True, timeout=300, check=True, env=env)  # fmt: skip
    assert json.loads(returned.stdout)[0]["fingerprint"] == moved["fingerprint"]
    again = subprocess.run([*cli, "--from", str(source), "--to", str(back)],
                           capture_output=True, text=True, timeout=300, check=False, env=env)  # fmt: skip
    assert again.returncode == 1 and "already has collection" in again.stderr


def test_a_second_indexer_of_the_same_collection_is_told_to_wait(make_engine: Any, handbook: Path) -> None:
    first, second = make_engine(), make_engine()
    first.index([handbook])
    store = first._open_store(create=False)
    with store.writer_lock("default"):
        with pytest.raises(IndexLockedError, match="another indexer is writing collection 'default'"):
            second.index([handbook])
        second.index([handbook], collection="other")  # other collections are not blocked
    assert second.index([handbook]).documents_unchanged == 5


def test_readers_keep_answering_while_an_indexer_writes(
    tmp_path: Path, make_engine: Any, handbook: Path
) -> None:
    corpus = tmp_path / "growing"
    corpus.mkdir()
    for i in range(60):
        (corpus / f"note{i}.md").write_text(
            f"# Note {i}\n\nParental leave note number {i} about approvals.\n"
        )
    writer = make_engine()
    writer.index([handbook])
    readers = [make_engine() for _ in range(3)]
    errors: list[BaseException] = []
    done = threading.Event()

    def read(engine: Engine) -> None:
        try:
            for _ in range(200):
                for hit in engine.search("parental leave approvals", mode="keyword", limit=5).hits:
                    assert hit.chunk.text.strip()
                if done.is_set():
                    return
        except BaseException as exc:  # collected and re-raised in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=read, args=(engine,)) for engine in readers]
    for thread in threads:
        thread.start()
    report = writer.index([corpus], embed=False)
    done.set()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors[0]
    assert report.documents_added == 60
    assert len(readers[0].search("note number 59", mode="keyword").hits) > 0


def test_documents_written_together_read_as_if_written_one_by_one(make_engine: Any) -> None:
    """``add_documents`` writes in groups (``Store.write_revisions``): new documents share statements, a
    source given twice is a new revision of itself, one already held is superseded, counts are right."""

    def doc(source: str, text: str) -> LoadedDocument:
        return LoadedDocument(source=source, text=text, title=source)

    engine = make_engine()
    first = engine.add_documents([doc("mem://held", "the old canteen menu lists soup")], "c", embed=False)
    assert first.documents_added == 1
    engine.history.create("before", "c")
    report = engine.add_documents(
        [doc("mem://a", "alpha reactor cooling pumps"), doc("mem://held", "the new canteen menu lists salad"),
         doc("mem://b", "bravo turbine blade inspection"), doc("mem://a", "alpha reactor cooling valves"),
         doc("mem://c", "charlie turbine blade inspection")],
        "c", embed=False,
    )  # fmt: skip
    assert (report.documents_added, report.documents_changed, report.chunks_written) == (3, 2, 5)
    documents = {d.path: d for d in engine.documents("c")}
    assert set(documents) == {"mem://held", "mem://a", "mem://b", "mem://c"}
    assert len({d.document_id for d in documents.values()}) == 4
    found = engine.search("turbine blade reactor canteen", "c", mode="keyword")
    assert {hit.chunk.text for hit in found.hits} == {
        "alpha reactor cooling valves", "the new canteen menu lists salad",
        "bravo turbine blade inspection", "charlie turbine blade inspection",
    }  # fmt: skip
    assert not engine.search("pumps", "c", mode="keyword").hits, "the first mem://a left search"
    then = engine.search("canteen soup salad", "c", mode="keyword", baseline="before").hits
    assert [hit.chunk.text for hit in then] == ["the old canteen menu lists soup"]


def test_searches_see_collections_changed_by_another_engine_and_by_their_own_writes(
    make_engine: Any, handbook: Path
) -> None:
    reader, writer = make_engine(), make_engine()
    writer.index([handbook])
    question = "parental leave approvals"
    before = [hit.chunk.chunk_id for hit in reader.search(question).hits]
    assert before  # the reader's lookups are now remembered, on SQLite
    writer.rename_collection("default", "renamed")
    assert [hit.chunk.chunk_id for hit in reader.search(question, collection="renamed").hits] == before
    # none named and no `default` any more: the collections holding documents are read (issue 66)
    assert [hit.chunk.chunk_id for hit in reader.search(question).hits] == before
    with pytest.raises(CollectionNotFound):
        reader.search(question, collection="second")  # remembered as missing, on SQLite
    writer.index([handbook], collection="second")
    assert reader.search(question, collection="second").hits
    with reader.reading():  # one look at the index, then a write of its own on this thread
        with pytest.raises(CollectionNotFound):
            reader.search(question, collection="third")
        reader.index([handbook], collection="third")
        assert reader.search(question, collection="third").hits, "its own commit is seen at once"
    writer.delete_collection("second")
    with pytest.raises(CollectionNotFound):
        reader.search(question, collection="second")


def test_document_states_of_many_sources_are_each_sources_state(make_engine: Any) -> None:
    """A bulk load reads its group's states in one query: the same as asking source by source."""
    engine = make_engine()
    documents = [
        LoadedDocument(source=f"mem://{n}", text=f"note {n} about pumps", title=str(n)) for n in range(5)
    ]
    engine.add_documents(documents, "c", embed=False)
    engine.add_documents(
        [LoadedDocument(source="mem://1", text="note one, changed", title="1")], "c", embed=False
    )
    engine.add_documents(
        [LoadedDocument(source="mem://9", text="elsewhere", title="9")], "other", embed=False
    )
    store = engine._open_store(create=False)
    store.remove_sources("c", ["mem://3"])
    asked = ["mem://0", "mem://1", "mem://3", "mem://9", "mem://missing", "mem://4", "mem://0"]
    states = store.document_states("c", asked)
    expected = {source: store.document_state("c", source) for source in asked}
    assert states == {source: state for source, state in expected.items() if state is not None}
    assert set(states) == {"mem://0", "mem://1", "mem://4"}, (
        "removed, missing and other collections' left out"
    )
    assert store.document_states("c", []) == {}
    again = engine.add_documents(documents, "c", embed=False)
    assert (again.documents_unchanged, again.documents_changed, again.documents_added) == (3, 1, 1)


def test_content_kinds_and_revision_times_say_what_each_collection_holds(make_engine: Any) -> None:
    """What the MCP server offers tools for (kinds per collection) and when revisions were written."""
    engine = make_engine()
    engine.add_documents([LoadedDocument(source="mem://a", text="pumps", title="a")], "docs", embed=False)
    code = LoadedDocument(source="mem://b.py", text="def pump():\n    return 1\n", title="b", kind=Kind.CODE)
    engine.add_documents([code], "mixed", embed=False)
    engine.add_documents([LoadedDocument(source="mem://c", text="valves", title="c")], "mixed", embed=False)
    engine.add_documents([LoadedDocument(source="mem://d", text="gone", title="d")], "emptied", embed=False)
    store = engine._open_store(create=False)
    store.remove_sources("emptied", ["mem://d"])
    assert store.content_kinds() == {"docs": {"document"}, "mixed": {"code", "document"}}
    assert engine.content_kinds() == store.content_kinds()
    state = store.document_state("docs", "mem://a")
    assert state is not None
    times = store.revision_times([state.revision_id, "rev_missing"])
    assert list(times) == [state.revision_id] and times[state.revision_id].startswith("20")
    assert store.revision_times([]) == {}


def test_a_chunk_whose_revision_text_moved_under_it_is_served_damaged(
    make_engine: Any, handbook: Path
) -> None:
    """Query-time checks cover the revision too: text != revision[start:end] (or another source hash)
    is `damaged`, read with the chunk itself (no other query, no file read)."""
    engine = make_engine()
    engine.index([handbook])
    hit = engine.search("corporate credit card", limit=1).hits[0].chunk
    store = engine._open_store(create=False)
    siblings = store.chunk_ids_of_revision(hit.revision_id)
    assert not any(chunk.drifted for chunk in store.get_chunks(siblings).values())
    change = (
        "UPDATE revisions SET text = 'Moved. ' || text WHERE id = %s"  # every offset now points elsewhere
    )
    if engine.config.store:
        import psycopg

        with psycopg.connect(engine.config.store, autocommit=True) as raw:
            raw.execute(change, (hit.revision_id,))
    else:
        import sqlite3

        with sqlite3.connect(engine.config.db) as raw:
            raw.execute(change.replace("%s", "?"), (hit.revision_id,))
    assert all(chunk.drifted for chunk in store.get_chunks(siblings).values())
    found = {
        h.chunk.chunk_id: h.embedding_status for h in engine.search("corporate credit card", limit=5).hits
    }
    assert found[hit.chunk_id] == "damaged"
    assert {status for chunk_id, status in found.items() if chunk_id not in siblings} <= {"fresh"}


def test_stale_means_one_thing_to_search_verify_and_regenerate(make_engine: Any, handbook: Path) -> None:
    """A chunk whose vector is another text's: search serves it `stale`, verify counts it (embed_key),
    `regenerate --stale` re-embeds exactly it, and then all three say fresh (issue 47 item 6)."""
    engine = make_engine()
    engine.index([handbook])
    first, other = engine.search("corporate credit card", limit=2).hits[:2]
    change = "UPDATE chunks SET embed_key = (SELECT embed_key FROM chunks WHERE id = %s) WHERE id = %s"
    if engine.config.store:
        import psycopg

        with psycopg.connect(engine.config.store, autocommit=True) as raw:
            raw.execute(change, (other.chunk.chunk_id, first.chunk.chunk_id))
    else:
        import sqlite3

        with sqlite3.connect(engine.config.db) as raw:
            raw.execute(change.replace("%s", "?"), (other.chunk.chunk_id, first.chunk.chunk_id))

    def statuses() -> dict[int, str | None]:
        return {
            h.chunk.chunk_id: h.embedding_status for h in engine.search("corporate credit card", limit=5).hits
        }

    assert statuses()[first.chunk.chunk_id] == "stale"
    assert engine.verify().problems["embed_key"] == 1
    report = engine.regenerate(stale=True)
    assert report.chunks_rekeyed == 1  # its own vector was still stored: re-keyed, nothing to embed again
    assert set(statuses().values()) == {"fresh"} and engine.verify().ok


def test_embedding_work_read_a_page_at_a_time_lists_what_the_whole_list_does(make_engine: Any) -> None:
    """Indexing and regenerating read their work in pages by key (memory flat at any size): every slice,
    resumed or not, gives the same keys and texts as the list read at once, and the count agrees."""
    engine = make_engine()
    docs = [
        LoadedDocument(source=f"mem://{i}", text=f"note {i} on turbine {i % 7}", title="") for i in range(57)
    ]
    engine.add_documents(docs, "c", embed=False)
    store = engine._open_store(create=False, collection="c")
    model = "some-model"
    whole = store.embedding_work("c", model)
    assert len(whole) == 57
    middle = whole[20][0]
    for limit, offset, after in [
        (None, 0, None),
        (None, 0, middle),
        (10, 5, None),
        (30, 10, middle),
        (None, 50, None),
    ]:
        expected = whole[offset:][:limit] if limit is not None else whole[offset:]
        expected = [item for item in expected if after is None or item[0] > after]
        pages = list(
            store.embedding_work_pages("c", model, limit=limit, offset=offset, page=8, after_key=after)
        )
        assert [item for page in pages for item in page] == expected, (limit, offset, after)
        assert all(0 < len(page) <= 8 for page in pages)
        assert store.count_embedding_work("c", model, limit=limit, offset=offset, after_key=after) == len(
            expected
        )
    # only what lacks a vector: written vectors leave the list while it is read
    first = whole[:9]
    model_id = engine._pool.default.model_id
    done = engine.embed_texts(model_id, [text for _, text in first])
    store.put_embeddings(model_id, [key for key, _ in first], done)
    missing = store.embedding_work_pages("c", model_id, only_missing=True, page=8)
    assert [key for page in missing for key, _ in page] == [key for key, _ in whole[9:]]
    assert store.count_embedding_work("c", model_id, only_missing=True) == 48


def test_documents_are_listed_past_one_page_and_paged_on_request(
    make_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import retrievo.engine.core

    monkeypatch.setattr(retrievo.engine.core, "DOCUMENTS_PAGE", 3)  # 1,000 in use: the same loop
    engine = make_engine()
    sources = [f"mem://n{i:02d}" for i in range(8)]
    engine.add_documents(
        [LoadedDocument(source=s, text=f"note {s}", title=s) for s in sources], "p", embed=False
    )
    assert [d.path for d in engine.documents("p")] == sources, "every document, not the first page"
    assert [d.path for d in engine.documents("p", limit=3, offset=6)] == sources[6:]
    assert [d.path for d in engine.documents("p", limit=4, offset=1)] == sources[1:5]
    with pytest.raises(Exception, match="offset 0 or more"):
        engine.documents("p", offset=-1)


def test_a_document_listing_says_how_many_lines_each_file_has(make_engine: Any) -> None:
    """Seed 002's ``files.line_count``, on both stores: the current revision's lines, a last line without a
    newline counted too (`retrievo docs` and `docs --json` show it)."""
    engine = make_engine()
    texts = {"mem://three": "a\nb\nc\n", "mem://open": "a\nb", "mem://one": "only"}
    engine.add_documents(
        [LoadedDocument(source=s, text=t, title=s) for s, t in texts.items()], "c", embed=False
    )
    engine.add_documents([LoadedDocument(source="mem://one", text="now\ntwo", title="one")], "c", embed=False)
    counted = {d.path: d.line_count for d in engine.documents("c")}
    assert counted == {"mem://three": 3, "mem://open": 2, "mem://one": 2}


def test_sources_holding_a_word_are_found_by_any_case_on_both_stores(make_engine: Any) -> None:
    """The registry's path lookup (``Store.sources_containing``): current whole sources holding one of the
    words, any case, by source, at most ``limit``; parts (``#``), removed sources and other collections are
    not found."""
    engine = make_engine()
    sources = ["registry:server:/mcpgw/", "registry:server:/mcpgw/#tool:list", "registry:server:/Atlassian/",
               "registry:server:/Atlassian/#tool:mcpgw_proxy"]  # fmt: skip
    engine.add_documents(
        [LoadedDocument(source=s, text=f"entry {s}", title=s) for s in sources], "r", embed=False
    )
    engine.add_documents(
        [LoadedDocument(source="registry:server:/mcpgw-other/", text="x", title="x")], "o", embed=False
    )
    store = engine._open_store(create=False)
    store.remove_sources("r", ["registry:server:/mcpgw/#tool:list"])
    found = store.sources_containing("r", ["MCPGW", "atlassian"], 10)
    assert [source for source, _ in found] == ["registry:server:/Atlassian/", "registry:server:/mcpgw/"]
    assert all(store.document_state("r", source).document_id == doc for source, doc in found)  # type: ignore[union-attr]
    assert store.sources_containing("r", ["mcpgw", "atlassian"], 1) == found[:1]
    assert store.sources_containing("r", [], 10) == []


def test_stored_vectors_are_read_by_chunk_id_in_one_call(make_engine: Any, minilm: Any) -> None:
    """``chunk_vectors`` names each vector's chunk (the re-read, the registry and ``similar`` read several
    at once): in any order asked, duplicates once, chunks with no vector of that model left out."""
    engine = make_engine()
    texts = ["pumps need oil every spring", "the laptop is encrypted", "receipts for meals"]
    engine.add_documents(
        [LoadedDocument(source=f"mem://{n}", text=text, title=str(n)) for n, text in enumerate(texts)], "c"
    )
    engine.add_documents(
        [LoadedDocument(source="mem://later", text="not embedded yet", title="later")], "c", embed=False
    )
    store = engine._open_store(create=False)
    info = store.get_collection("c")
    assert info is not None and info.model_id == minilm.model_id and info.dimensions
    ids = {d.path: store.current_chunk_ids(d.document_id)[0] for d in store.list_documents("c")}
    embedded = [ids[f"mem://{n}"] for n in (2, 0, 1)]
    asked = [*embedded, embedded[0], ids["mem://later"], 10**9]
    found = store.chunk_vectors(asked, info.model_id, info.dimensions)
    assert set(found) == set(embedded), "the unembedded chunk and an id no chunk has are left out"
    chunks = store.get_chunks(embedded)
    made = minilm.embed_documents([embedding_input(chunks[i].context, chunks[i].text) for i in embedded])
    for row, chunk_id in enumerate(embedded):  # each id holds its own chunk's vector
        assert found[chunk_id].shape == (info.dimensions,)
        assert float(found[chunk_id] @ made[row]) > 0.99, chunks[chunk_id].text
    assert store.chunk_vectors(embedded, "another-model", info.dimensions) == {}
    assert store.chunk_vectors([], info.model_id, info.dimensions) == {}
