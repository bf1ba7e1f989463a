"""PostgreSQL's vector side index (store/postgres/vector_source.py) on a real server: built by
indexing, as good as exact search, in step after every write of chunks or vectors, synced in the
background (pgvector answering) after a large change, never answering a filtered or point-in-time
search, gone with its collection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.models import Filters
from retrievo.store.postgres import search as sql
from retrievo.store.postgres import vector_source
from test_ann import DIMS, MODEL, _write


def _embed(store: Any, keys: list[str], rng: np.random.Generator) -> None:
    vectors = rng.standard_normal((len(keys), DIMS)).astype(np.float32)
    store.put_embeddings(MODEL, keys, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))


def _store(tmp_path: Path, url: str) -> tuple[Engine, Any, Path]:
    """An engine on ``url`` with its cache folder under ``tmp_path``, and its store with collection "c"."""
    cache = tmp_path / "cache"
    engine = Engine(Config.from_env(store=url, collection="c", cache_dir=cache), embedder=None)
    store: Any = engine._open_store(create=True)
    store.ensure_collection("c")
    store.set_collection_model("c", MODEL, DIMS)
    return engine, store, cache


def _unit(rng: np.random.Generator) -> np.ndarray:
    query = rng.standard_normal(DIMS).astype(np.float32)
    return query / np.linalg.norm(query)


def test_side_vector_index_on_postgresql_matches_exact_search_and_keeps_in_step(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_source, "ANN_MIN_VECTORS", 500)
    engine, store, cache = _store(tmp_path, postgres_url)
    rng = np.random.default_rng(0)
    with store.bulk_load("c"):
        _write(store, "a", 800, rng)
        _write(store, "b", 800, rng)
        store.sync_search_indexes("c")  # as `retrievo index` does at the end of a load
    assert list(cache.rglob("ann-*.usearch")), "indexing built the side index in the cache folder"

    asked: list[Filters] = []
    real = sql.vector_search

    def counted(conn: Any, cid: int, dims: int, vector: Any, filters: Filters, limit: int, ef: int) -> Any:
        asked.append(filters)
        return real(conn, cid, dims, vector, filters, limit, ef)

    monkeypatch.setattr(sql, "vector_search", counted)
    with store._conn() as conn:
        rows = conn.execute("SELECT id, vector FROM chunks WHERE superseded_at IS NULL").fetchall()
    ids = np.array([row[0] for row in rows])
    matrix = np.stack([np.asarray(row[1].to_numpy(), dtype=np.float32) for row in rows])
    recalls = []
    for _ in range(20):
        query = _unit(rng)
        hits = store.vector_search("c", MODEL, query, Filters(), 10)
        assert asked == [], "an unfiltered search is answered by the side index"
        exact = ids[np.argsort(-(matrix @ query))[:10]]
        recalls.append(len({h.chunk_id for h in hits} & set(exact.tolist())) / 10)
        assert [h.rank for h in hits] == list(range(1, 11))
        best = max(hits, key=lambda h: h.score)
        assert hits[0] == best and abs(best.score - float(matrix[ids == best.chunk_id][0] @ query)) < 2e-3
    assert np.mean(recalls) >= 0.9

    # Chunks removed leave it before the next search; chunks written now, embedded later, join it.
    store.remove_sources("c", ["/a"])
    late: list[str] = []
    _write(store, "late", 40, rng, keys=late)
    query = _unit(rng)
    paths = {
        c.path
        for c in store.get_chunks(
            [h.chunk_id for h in store.vector_search("c", MODEL, query, Filters(), 50)]
        ).values()
    }
    assert paths == {"/b"}, "superseded chunks left; chunks without a vector are not served"
    _embed(store, late, rng)  # vectors alone: the collection's vector counter, not its change stamp
    with store._conn() as conn:
        (late_id, late_vector) = conn.execute(
            "SELECT c.id, c.vector FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.source = '/late' LIMIT 1"
        ).fetchone()
    hits = store.vector_search("c", MODEL, np.asarray(late_vector.to_numpy(), dtype=np.float32), Filters(), 3)
    assert hits[0].chunk_id == late_id
    assert asked == []

    # Filters and point-in-time reads are pgvector's.
    store.vector_search("c", MODEL, query, Filters(path_glob="/b*"), 5)
    assert len(asked) == 1 and asked[0].path_glob == "/b*"

    # `retrievo verify` checks the side index against chunks.vector; --fix builds it anew.
    assert store.side_index_problems("c") == []
    (entry,) = store._ann._entries.values()
    entry.index.remove(late_id)
    assert store.side_index_problems("c") == ["1 chunks with vectors are missing from the vector side index"]
    store.rebuild_side_index("c")
    assert store.side_index_problems("c") == []
    engine.delete_collection("c")
    assert not list(cache.rglob("ann-*")), "a deleted collection's side index goes with it"
    engine.close()


def test_a_large_change_is_synced_in_the_background_while_pgvector_answers(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_source, "ANN_MIN_VECTORS", 100)
    monkeypatch.setattr(vector_source, "INLINE_SYNC_VECTORS", 50)
    engine, store, _ = _store(tmp_path, postgres_url)
    rng = np.random.default_rng(1)
    _write(store, "a", 200, rng)
    store.sync_search_indexes("c")
    _write(store, "b", 120, rng)  # written by another process, say: more than a search waits for
    asked: list[int] = []
    real = sql.vector_search
    monkeypatch.setattr(sql, "vector_search", lambda *args: asked.append(1) or real(*args))
    query = _unit(rng)
    answered = store.vector_search("c", MODEL, query, Filters(), 10)
    assert asked == [1] and len(answered) == 10, "pgvector answered while the side index catches up"
    thread = store._ann.rebuild_thread
    assert thread is not None
    thread.join(timeout=60)
    again = store.vector_search("c", MODEL, query, Filters(), 10)
    assert asked == [1], "then the side index answers"
    assert len({h.chunk_id for h in again} & {h.chunk_id for h in answered}) >= 8
    engine.close()
