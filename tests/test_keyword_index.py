"""The tantivy keyword side index: FTS5's ranking on real text, kept in step, rebuilt when torn."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrievo.models import Filters, LoadedDocument
from retrievo.store import keyword_index
from retrievo.store.sqlite import SQLiteStore, keyword_tokens, writing
from retrievo.store.sqlite import search as fts5
from retrievo.store.sqlite import searching as sqlite_search
from retrievo.store.tokenizer import FTS5_TOKENIZER, shared_tokenizer

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
ROOT = Path(__file__).resolve().parents[1]


def scifact(count: int) -> tuple[list[LoadedDocument], list[str]]:
    if not SCIFACT.exists():
        pytest.skip("../shared/data/scifact is not beside the repository")
    documents = []
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            documents.append(
                LoadedDocument(source=f"beir://{record['_id']}", text=record["text"], title=record["title"])
            )
            if len(documents) == count:
                break
    with (SCIFACT / "queries.jsonl").open(encoding="utf-8") as handle:
        queries = [json.loads(line)["text"] for line in handle]
    return documents, queries


@pytest.fixture
def indexed(tmp_path: Path, minilm: object) -> tuple[Path, list[str]]:
    """2,500 SciFact abstracts, keyword only (no vectors), one collection; side index built at the end."""
    from retrievo.config import Config
    from retrievo.engine import Engine

    documents, queries = scifact(2500)
    engine = Engine(Config.from_env(db=tmp_path / "kw.db", collection="sci"), embedder=None)
    engine.add_documents(documents, "sci", chunker="whole", embed=False)
    engine.close()
    return tmp_path / "kw.db", queries


def fts5_hits(
    store: SQLiteStore, collection: str, query: str, filters: Filters, limit: int
) -> list[tuple[int, float]]:
    db = store._reader()
    hits = fts5.keyword_search(
        db,
        store._collection_id(collection),
        query,
        filters,
        limit,
        fts5.current_rows(db),
        store._only_collection(),
    )
    return [(hit.chunk_id, hit.score) for hit in hits]


def test_side_index_ranks_as_fts5_does_on_real_text(indexed: tuple[Path, list[str]]) -> None:
    db, queries = indexed
    assert Path(f"{db}.kw.json").exists(), "indexing built the side index (not the first search)"
    store = SQLiteStore(db)
    overlaps, worst = [], 0.0
    for query in queries[:150]:
        side = [(h.chunk_id, h.score) for h in store.keyword_search("sci", query, Filters(), 10)]
        exact = fts5_hits(store, "sci", query, Filters(), 10)
        assert len(side) == len(exact)
        overlaps.append(len({i for i, _ in side} & {i for i, _ in exact}) / max(1, len(exact)))
        exact_scores = dict(fts5_hits(store, "sci", query, Filters(), 1000))
        for chunk_id, score in side:
            worst = max(worst, abs(score - exact_scores[chunk_id]) / exact_scores[chunk_id])
        assert [score for _, score in side] == sorted((score for _, score in side), reverse=True)
    # The same BM25 (FTS5's idf, k1, b, tokens); only tantivy's one-byte document lengths differ.
    assert sum(overlaps) / len(overlaps) >= 0.95
    assert worst < 0.06
    store.close()


def test_side_index_follows_changes_and_collections(
    indexed: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, _ = indexed
    store = SQLiteStore(db)
    unique = "zygomorphic quasicrystal lattice"
    store.ensure_collection("other")
    from retrievo.models import ChunkDraft
    from retrievo.text.hashing import sha256_text

    def write(collection: str, source: str, text: str) -> None:
        draft = ChunkDraft(text, 0, len(text), 1, 1, "", "whole", 1, sha256_text(text))
        store.write_revision(
            collection, LoadedDocument(source, text, source), sha256_text(text), [draft], None
        )

    write("other", "/other.txt", f"{unique} in another collection")
    write("sci", "/new.txt", f"{unique} measured in this one")
    hits = store.keyword_search("sci", unique, Filters(), 10)
    chunks = store.get_chunks([h.chunk_id for h in hits])
    assert [chunks[h.chunk_id].path for h in hits] == ["/new.txt"], (
        "a new chunk is found, only in its collection"
    )
    assert [h.chunk_id for h in hits] == [i for i, _ in fts5_hits(store, "sci", unique, Filters(), 10)]
    store.remove_sources("sci", ["/new.txt"])
    assert store.keyword_search("sci", unique, Filters(), 10) == [], "a removed chunk leaves the side index"
    other = store.keyword_search("other", unique, Filters(), 10)
    assert len(other) == 1 and store.get_chunks([other[0].chunk_id])[other[0].chunk_id].path == "/other.txt"
    # Filters and point-in-time reads go to FTS5, and agree with it.
    filtered = store.keyword_search("sci", "cell", Filters(path_glob="beir://1*"), 10)
    assert [(h.chunk_id, h.score) for h in filtered] == fts5_hits(
        store, "sci", "cell", Filters(path_glob="beir://1*"), 10
    )
    store.close()


def test_torn_or_missing_side_index_is_rebuilt_and_fts5_answers_meanwhile(
    indexed: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, queries = indexed
    for damage in ("meta", "ids", "segments"):
        if damage == "meta":
            Path(f"{db}.kw.json").unlink()
        elif damage == "ids":
            Path(f"{db}.kw.ids.npy").write_bytes(b"not numpy")
        else:
            for segment in Path(f"{db}.kw").glob("*.idx"):
                segment.unlink()  # a new file in its place (tantivy never rewrites a segment in place)
                segment.write_bytes(b"torn")
        monkeypatch.setattr(keyword_index, "INLINE_SYNC_ROWS", 10)  # the rebuild goes to the background
        store = SQLiteStore(db)
        expected = fts5_hits(store, "sci", queries[0], Filters(), 10)
        answered = [(h.chunk_id, h.score) for h in store.keyword_search("sci", queries[0], Filters(), 10)]
        assert answered == expected, f"{damage}: FTS5 answers while the side index is rebuilt"
        store._keywords.wait()
        assert Path(f"{db}.kw.json").exists(), f"{damage}: rebuilt"
        rebuilt = store.keyword_search("sci", queries[0], Filters(), 10)
        assert {h.chunk_id for h in rebuilt} == {i for i, _ in expected}
        store.close()


def test_kill_during_sync_leaves_a_side_index_that_is_rebuilt(indexed: tuple[Path, list[str]]) -> None:
    db, queries = indexed
    Path(f"{db}.kw.json").unlink()  # the next sync rebuilds everything: a long window to kill it in
    script = (
        "import sys; from pathlib import Path; from retrievo.store.sqlite import SQLiteStore\n"
        "from retrievo.store import keyword_index as k\n"
        "k.BATCH = 50\n"
        "s = SQLiteStore(Path(sys.argv[1])); print('syncing', flush=True); s.sync_search_indexes('sci')\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(db)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "syncing"
    time.sleep(0.5)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stdout.close()
    store = SQLiteStore(db)
    expected = fts5_hits(store, "sci", queries[1], Filters(), 10)
    store.sync_search_indexes("sci")
    assert Path(f"{db}.kw.json").exists()
    got = store.keyword_search("sci", queries[1], Filters(), 10)
    assert len({h.chunk_id for h in got} & {i for i, _ in expected}) >= 9
    loaded = store._keywords._loaded
    assert loaded is not None
    current = [
        row[0]
        for row in store._reader().execute("SELECT id FROM chunks WHERE superseded_at IS NULL ORDER BY id")
    ]
    assert loaded.held.tolist() == current and loaded.index.searcher().num_docs == len(current), (
        "whole, no duplicates"
    )
    store.close()


def test_small_indexes_make_no_side_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert sqlite_search.KEYWORD_INDEX_MIN_ROWS >= 1000
    store = SQLiteStore(tmp_path / "small.db", create=True)
    store.ensure_collection("c")
    store.sync_search_indexes("c")
    assert store.keyword_search("c", "anything", Filters(), 10) == []
    assert not list(tmp_path.glob("small.db.kw*"))
    store.close()


def test_a_bulk_load_ends_with_the_side_index_in_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sync at a bulk load's end adds what the load wrote in one commit: one segment holding
    exactly the current chunks (a chunk superseded during the load is left out), ranking as an index
    built from scratch."""
    from retrievo.models import ChunkDraft
    from retrievo.text.hashing import sha256_text

    monkeypatch.setattr(writing, "BATCH_S", 0.0)  # every write commits: many commits, still one segment

    def write(document: LoadedDocument) -> None:
        draft = ChunkDraft(
            document.text, 0, len(document.text), 1, 1, "", "whole", 1, sha256_text(document.text)
        )
        store.write_revision("sci", document, sha256_text(document.text), [draft], None)

    documents, queries = scifact(2500)
    store = SQLiteStore(tmp_path / "load.db", create=True)
    store.ensure_collection("sci")
    with store.bulk_load("sci"):
        for number, document in enumerate(documents, 1):
            write(document)
            if number == 2000:  # a chunk written earlier in the load is superseded
                write(
                    LoadedDocument(
                        documents[0].source, documents[0].text + " zqxwrevised", documents[0].title
                    )
                )
        store.sync_search_indexes("sci")
    loaded = store._keywords._loaded
    assert loaded is not None and loaded.generation == store.generation()
    current = [
        row[0]
        for row in store._reader().execute("SELECT id FROM chunks WHERE superseded_at IS NULL ORDER BY id")
    ]
    searcher = loaded.index.searcher()
    assert loaded.held.tolist() == current and searcher.num_docs == len(current) == 2500
    assert searcher.num_segments == 1, "one commit, one segment"
    revised = store.keyword_search("sci", "zqxwrevised", Filters(), 10)
    (revision,) = store._reader().execute("SELECT id FROM chunks WHERE text LIKE '%zqxwrevised'").fetchone()
    assert [hit.chunk_id for hit in revised] == [revision]
    assert 1 not in current and 1 not in loaded.held, "the superseded chunk is not in the index"
    loaded_hits = [store.keyword_search("sci", query, Filters(), 10) for query in queries[:30]]
    store._keywords.forget()
    store.sync_search_indexes("sci")  # built again from the table in one go
    assert [store.keyword_search("sci", query, Filters(), 10) for query in queries[:30]] == loaded_hits
    store.close()


def fts5_reference(texts: list[str]) -> list[Counter[str]]:
    """Each text's terms as an FTS5 table of the stdlib's SQLite stores them (read through fts5vocab)."""
    import sqlite3

    db = sqlite3.connect(":memory:")
    db.text_factory = lambda raw: raw.decode("utf-8", "replace")  # a cut term can split a character
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='{FTS5_TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    db.executemany(
        "INSERT INTO t (rowid, body) VALUES (?, ?)", [(n + 1, text) for n, text in enumerate(texts)]
    )
    counts: list[Counter[str]] = [Counter() for _ in texts]
    for term, doc in db.execute("SELECT term, doc FROM v"):
        counts[doc - 1][term] += 1
    db.close()
    return counts


def test_side_index_tokens_are_fts5s_tokens(tmp_path: Path) -> None:
    """The side index's tokens (FTS5's tokenizer called directly, through apsw) are the very terms an
    FTS5 table of the stdlib's SQLite holds: real text, an empty chunk, accents, identifiers, and terms
    longer than FTS5 stores (cut at 32,768 bytes, inside a character for a two-byte one)."""
    from retrievo.models import ChunkDraft
    from retrievo.text.hashing import sha256_text

    documents, _ = scifact(300)
    long_terms = ["ü" * 3000 + " tail", "a" * 40_000 + " b", "ж" * 20_000 + " c", "中" * 11_000]
    texts = [d.text for d in documents] + ["", *long_terms, "Ünïcode façade naïve DiffExecutor ﬁnal"]
    store = SQLiteStore(tmp_path / "tokens.db", create=True)
    store.ensure_collection("c")
    for number, text in enumerate(texts):
        draft = ChunkDraft(text, 0, len(text), 1, 1, "", "whole", 1, sha256_text(text))
        store.write_revision("c", LoadedDocument(f"/{number}", text, ""), sha256_text(text), [draft], None)
    db = store._db
    rows = db.execute("SELECT id, collection_id, context, text, keywords FROM chunks ORDER BY id").fetchall()
    import numpy as np

    got = keyword_tokens.token_strings(db, np.array([row[0] for row in rows], dtype=np.int64))
    expected = fts5_reference([f"{r[2]} {r[3]} {r[4]}" for r in rows])
    assert [(chunk_id, collection) for chunk_id, collection, _ in got] == [(r[0], r[1]) for r in rows]
    assert [Counter(body.split()) for _, _, body in got] == expected
    assert got[len(documents)][2] == "", "an empty chunk is indexed, with no tokens"
    assert "a" * 32_768 in got[len(documents) + 2][2].split(), "a 40,000-byte term stored as 32,768"
    store.close()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=200), min_size=1, max_size=8))
def test_fts5_tokens_match_the_stdlib_fts5_on_any_text(texts: list[str]) -> None:
    """Any text (every Unicode category hypothesis draws, surrogates aside: SQLite never stores them)."""
    texts = [text.encode("utf-8", "replace").decode("utf-8") for text in texts]
    assert shared_tokenizer().term_counts(texts) == fts5_reference(texts)


def test_the_rows_left_at_a_sync_are_tokenized_side_by_side_in_order(
    indexed: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pieces tokenized on threads of their own, one a core (here forced to three): the very rows, in the
    very order, that one connection gives."""
    import threading

    import numpy as np

    store = SQLiteStore(indexed[0])
    index = store._keywords
    db = index._source.connect()
    ids = index._source.current_ids(db)
    threads: set[str] = set()
    token_rows = index._source.token_rows

    def watched(connection: object, piece: np.ndarray) -> list[tuple[int, int, str]]:
        threads.add(threading.current_thread().name)
        return token_rows(connection, piece)

    monkeypatch.setattr(keyword_index.os, "cpu_count", lambda: 3)
    monkeypatch.setattr(index._source, "token_rows", watched)
    together = [row for rows in index._tokenized(ids) for row in rows]
    assert together == token_rows(db, ids) and len(together) == 2500
    assert len(threads) == 3 and all(name.startswith("retrievo-keyword-tokens") for name in threads)
    assert list(index._tokenized(ids[:0])) == []
    db.close()
    store.close()
