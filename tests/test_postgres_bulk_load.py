"""PostgreSQL first loads build the HNSW index once at the end, and never at another collection's expense."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from conftest import ROOT
from retrievo import Config, Engine
from retrievo.models import ChunkDraft, Filters, LoadedDocument
from retrievo.store.postgres.store import PostgresStore
from retrievo.store.postgres.vector_index import index_name
from retrievo.text.hashing import embedding_key, sha256_text

DIMS = 4
MODEL = "toy-4"


def _has_vector_index(url: str, dims: int = DIMS) -> bool:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT to_regclass(%s)", (index_name(dims),)).fetchone()[0] is not None  # type: ignore[index]


def _write(store: PostgresStore, collection: str, texts: list[str]) -> None:
    body = "\n".join(texts)
    drafts, offset = [], 0
    for text in texts:
        drafts.append(ChunkDraft(text=text, start=offset, end=offset + len(text), line_start=1, line_end=1,
                                 context="", chunker="test", chunker_version=1, chunk_hash=sha256_text(text)))  # fmt: skip
        offset += len(text) + 1
    store.write_revision(collection, LoadedDocument(source=f"/{collection}.txt", text=body, title=collection),
                         sha256_text(body), drafts, None)  # fmt: skip
    vectors = np.eye(DIMS, dtype=np.float32)[: len(texts)]
    store.put_embeddings(MODEL, [embedding_key("", t) for t in texts], vectors)


def test_a_first_load_drops_the_empty_index_and_builds_it_at_the_end(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, create=True)
    store.ensure_collection("a")
    store.set_collection_model("a", MODEL, DIMS)
    assert _has_vector_index(postgres_url)
    with store.bulk_load("a"):
        assert not _has_vector_index(postgres_url), "an empty index is not fed row by row"
        _write(store, "a", ["north", "east", "south"])
    assert _has_vector_index(postgres_url)
    hits = store.vector_search("a", MODEL, np.array([0, 1, 0, 0], dtype=np.float32), Filters(), 3)
    assert store.get_chunks([hits[0].chunk_id])[hits[0].chunk_id].text == "east"
    store.close()


def test_an_index_holding_vectors_is_kept_and_a_failed_load_still_rebuilds(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, create=True)
    for name in ("a", "b"):
        store.ensure_collection(name)
        store.set_collection_model(name, MODEL, DIMS)
    _write(store, "a", ["north", "east"])
    with store.bulk_load("b"):
        assert _has_vector_index(postgres_url), "collection a's searches keep their index"
    store.remove_sources("a", ["/a.txt"])
    with pytest.raises(RuntimeError), store.bulk_load("b"):
        assert not _has_vector_index(postgres_url)
        raise RuntimeError("crash mid-load")
    assert _has_vector_index(postgres_url)
    store.close()


def test_indexing_into_postgresql_leaves_a_vector_index(postgres_url: str, minilm: object) -> None:
    with Engine(Config(store=postgres_url), embedder=minilm) as engine:  # type: ignore[arg-type]
        engine.index([ROOT / "examples" / "handbook"])
        top = engine.search("who approves parental leave", mode="semantic", limit=3).hits
    assert top and "leave" in top[0].chunk.path
    assert _has_vector_index(postgres_url, minilm.dimensions)  # type: ignore[attr-defined]


def test_the_cli_says_when_it_builds_the_vector_index(
    postgres_url: str, handbook: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from retrievo.store.postgres import vector_index
    from retrievo.surfaces.cli import main

    monkeypatch.setattr(vector_index, "ANNOUNCE_MIN_VECTORS", 1)  # the handbook is small
    result = CliRunner().invoke(main, ["index", str(handbook), "--store", postgres_url])
    assert result.exit_code == 0, result.output
    assert "retrievo: building the HNSW index over" in result.stderr
