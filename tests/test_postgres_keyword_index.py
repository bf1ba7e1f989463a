"""PostgreSQL's keyword side index (store/postgres/keyword_source.py) on a real server and real text:
built by indexing, ranking as the SQL arm does, in step after every write, never answering a filtered
or point-in-time search, and naming no credentials in the cache folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.models import Filters, LoadedDocument
from retrievo.store.postgres import search as sql
from test_keyword_index import scifact


def test_side_index_on_postgresql_ranks_as_sql_and_keeps_in_step(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    documents, queries = scifact(2500)
    cache = tmp_path / "cache"
    engine = Engine(Config.from_env(store=postgres_url, collection="sci", cache_dir=cache), embedder=None)
    engine.add_documents(documents, "sci", chunker="whole", embed=False)
    store: Any = engine._open_store(create=False)
    files = [str(path.relative_to(cache)) for path in cache.rglob("*")]
    assert any(name.endswith(".kw.json") for name in files), "indexing built the side index"
    url = urlparse(postgres_url)
    for secret in (url.password, url.username, url.path.strip("/")):
        assert not secret or all(secret not in name for name in files)
    collection_id = store._collection_id("sci")

    def exact(query: str, limit: int, filters: Filters | None = None) -> list[tuple[int, float]]:
        filters = filters or Filters()
        with store._conn() as conn:
            return [
                (h.chunk_id, h.score) for h in sql.keyword_search(conn, collection_id, query, filters, limit)
            ]

    asked: list[str] = []
    real = sql.keyword_search

    def counted(conn: Any, cid: int, query: str, filters: Filters, limit: int) -> Any:
        asked.append(query)
        return real(conn, cid, query, filters, limit)

    monkeypatch.setattr(sql, "keyword_search", counted)
    overlaps, worst = [], 0.0
    for query in queries[:100]:
        side = [(h.chunk_id, h.score) for h in store.keyword_search("sci", query, Filters(), 10)]
        assert asked == [], "an unfiltered search is answered by the side index"
        expected = exact(query, 10)
        asked.clear()
        assert len(side) == len(expected)
        overlaps.append(len({i for i, _ in side} & {i for i, _ in expected}) / max(1, len(expected)))
        scores = dict(exact(query, 1000))
        asked.clear()
        diffs = [abs(score - scores[i]) / scores[i] for i, score in side]
        worst = max([worst, *diffs])
    # The same BM25 (tokens, idf, k1, b); only tantivy's one-byte document lengths differ.
    assert sum(overlaps) / len(overlaps) >= 0.95 and worst < 0.06

    unique = "zygomorphic quasicrystal lattice"
    engine.add_documents([LoadedDocument("/new.txt", f"{unique} measured here", "New")], "sci", embed=False)
    engine.add_documents([LoadedDocument("/other.txt", f"{unique} elsewhere", "Other")], "other", embed=False)
    hits = store.keyword_search("sci", unique, Filters(), 10)
    assert [store.get_chunks([h.chunk_id])[h.chunk_id].path for h in hits] == ["/new.txt"]
    assert asked == [], "a small change is applied to the side index before the search that sees it"
    store.remove_sources("sci", ["/new.txt"])
    assert store.keyword_search("sci", unique, Filters(), 10) == []
    assert asked == []
    # Filters and point-in-time reads are the tables' (and agree with them).
    filtered = store.keyword_search("sci", "cell", Filters(path_glob="beir://1*"), 10)
    assert asked == ["cell"]
    assert [(h.chunk_id, h.score) for h in filtered] == exact("cell", 10, Filters(path_glob="beir://1*"))
    engine.delete_collection("sci")
    assert not list(cache.rglob("*.kw*")), "a deleted collection's side index goes with it"
    engine.close()


def test_a_torn_side_index_on_postgresql_is_rebuilt_while_sql_answers(
    tmp_path: Path, postgres_url: str
) -> None:
    documents, queries = scifact(2100)
    cache = tmp_path / "cache"
    config = Config.from_env(store=postgres_url, collection="sci", cache_dir=cache)
    engine = Engine(config, embedder=None)
    engine.add_documents(documents, "sci", chunker="whole", embed=False)
    before = [h.chunk.chunk_id for h in engine.search(queries[0], "sci", mode="keyword").hits]
    engine.close()
    for meta in cache.rglob("*.kw.json"):
        meta.unlink()
    for ids in cache.rglob("*.kw.ids.npy"):
        ids.write_bytes(b"not numpy")
    engine = Engine(config, embedder=None)
    assert [h.chunk.chunk_id for h in engine.search(queries[0], "sci", mode="keyword").hits] == before
    store: Any = engine._open_store(create=False)
    for index in list(store._keyword_indexes.values()):
        index.wait()  # the rebuild ran in the background while SQL answered
    assert list(cache.rglob("*.kw.json")), "rebuilt"
    assert [h.chunk.chunk_id for h in engine.search(queries[0], "sci", mode="keyword").hits] == before
    engine.close()
