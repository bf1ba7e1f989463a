"""Large collections search an HNSW index that stays in step with the chunks (SQLite store)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retrievo.models import ChunkDraft, Filters, LoadedDocument
from retrievo.store.sqlite import SQLiteStore
from retrievo.store.sqlite import searching as sqlite_search
from retrievo.text.hashing import embedding_key, sha256_text

DIMS = 32
MODEL = "test-random-32"


def _write(
    store: SQLiteStore, name: str, count: int, rng: np.random.Generator, keys: list[str] | None = None
) -> np.ndarray:
    """One document of ``count`` chunks with random unit vectors (returned); with ``keys``, the chunks'
    embedding keys are put there and no vector is stored."""
    texts = [f"chunk {name} {i} words" for i in range(count)]
    body = "\n".join(texts)
    drafts, offset = [], 0
    for text in texts:
        drafts.append(ChunkDraft(text, offset, offset + len(text), 1, 1, name, "test", 1, sha256_text(text)))
        offset += len(text) + 1
    store.write_revision(
        "c", LoadedDocument(source=f"/{name}", text=body, title=name), sha256_text(body), drafts, None
    )
    if keys is not None:
        keys.extend(embedding_key(d.context, d.text) for d in drafts)
        return np.zeros((0, DIMS), dtype=np.float32)
    vectors = rng.standard_normal((count, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.put_embeddings(MODEL, [embedding_key(d.context, d.text) for d in drafts], vectors)
    return vectors


def test_ann_search_matches_exact_search_and_follows_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_search, "ANN_MIN_VECTORS", 1000)
    rng = np.random.default_rng(0)
    store = SQLiteStore(tmp_path / "ann.db", create=True)
    store.ensure_collection("c")
    store.set_collection_model("c", MODEL, DIMS)
    _write(store, "a", 1500, rng)
    _write(store, "b", 1500, rng)
    queries = rng.standard_normal((20, DIMS)).astype(np.float32)
    recalls = []
    for query in queries / np.linalg.norm(queries, axis=1, keepdims=True):
        approximate = store.vector_search("c", MODEL, query, Filters(), 10)
        exact = store.vector_search("c", MODEL, query, Filters(path_glob="*"), 10)  # filtered → exact path
        recalls.append(len({h.chunk_id for h in approximate} & {h.chunk_id for h in exact}) / 10)
        assert [h.rank for h in approximate] == list(range(1, 11))
    assert np.mean(recalls) >= 0.9
    assert list(tmp_path.glob("ann.db.ann-*.usearch")), "the HNSW index is persisted beside the file"
    removed = store.remove_sources("c", ["/a"])
    assert removed == 1
    for query in queries[:5]:
        hits = store.vector_search("c", MODEL, query / np.linalg.norm(query), Filters(), 20)
        chunks = store.get_chunks([h.chunk_id for h in hits])
        assert hits and all(chunks[h.chunk_id].path == "/b" for h in hits), "superseded chunks left the graph"
    store.close()
    reopened = SQLiteStore(tmp_path / "ann.db")
    again = reopened.vector_search("c", MODEL, queries[0] / np.linalg.norm(queries[0]), Filters(), 5)
    assert len(again) == 5
    reopened.close()


def test_a_reopened_ann_index_searches_with_the_configured_breadth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrievo.store import ann

    monkeypatch.setattr(sqlite_search, "ANN_MIN_VECTORS", 100)
    rng = np.random.default_rng(1)
    store = SQLiteStore(tmp_path / "ann.db", create=True)
    store.ensure_collection("c")
    store.set_collection_model("c", MODEL, DIMS)
    _write(store, "a", 300, rng)
    store.vector_search("c", MODEL, np.ones(DIMS, dtype=np.float32) / DIMS**0.5, Filters(), 5)
    store.close()
    reopened = SQLiteStore(tmp_path / "ann.db")
    reopened.vector_search("c", MODEL, np.ones(DIMS, dtype=np.float32) / DIMS**0.5, Filters(), 5)
    entry = next(iter(reopened._ann._entries.values()))
    assert entry.index.expansion_search == ann.expansion_search(300) == ann.EXPANSION_SEARCH
    reopened.close()


def test_a_bigger_graph_is_searched_wider() -> None:
    from retrievo.store import ann

    efforts = [ann.expansion_search(n) for n in (30_000, 100_000, 200_000, 1_000_000, 10_000_000)]
    assert efforts[:2] == [ann.EXPANSION_SEARCH] * 2
    assert efforts[2] == ann.EXPANSION_SEARCH + ann.EXPANSION_SEARCH_PER_DOUBLING
    assert (
        efforts == sorted(efforts) and 360 <= efforts[3] <= 390
    )  # recall@10 0.97-0.99 at 1M (benchmarks.md)


def test_the_ann_index_and_the_bundled_model_live_in_one_process(tmp_path: Path) -> None:
    # A native clash crashes the interpreter when usearch loads before onnxruntime; run it apart.
    import subprocess
    import sys

    script = f"""
import numpy as np
from pathlib import Path
from retrievo.store.sqlite import searching as sqlite_search
from retrievo.store.sqlite import SQLiteStore
import test_ann
sqlite_search.ANN_MIN_VECTORS = 10
store = SQLiteStore(Path({str(tmp_path / "p.db")!r}), create=True)
store.ensure_collection("c")
store.set_collection_model("c", test_ann.MODEL, test_ann.DIMS)
test_ann._write(store, "a", 50, np.random.default_rng(0))
assert store.vector_search("c", test_ann.MODEL, np.ones(test_ann.DIMS, dtype=np.float32) / 6, test_ann.Filters(), 3)
from retrievo.embed.local import MiniLMEmbedder
print(MiniLMEmbedder().embed_query("still alive").shape)
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False,
        cwd=Path(__file__).parent,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "(384,)" in proc.stdout


def test_verify_finds_a_side_index_out_of_step_and_fix_rebuilds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrievo.engine.verify import verify
    from retrievo.store.sqlite import embeddings as sqlite_embeddings

    monkeypatch.setattr(sqlite_search, "ANN_MIN_VECTORS", 1000)
    monkeypatch.setattr(sqlite_embeddings, "ANN_MIN_VECTORS", 1000)
    rng = np.random.default_rng(1)
    store = SQLiteStore(tmp_path / "ann.db", create=True)
    store.ensure_collection("c")
    store.set_collection_model("c", MODEL, DIMS)
    _write(store, "a", 1200, rng)
    query = rng.standard_normal(DIMS).astype(np.float32)
    assert store.vector_search("c", MODEL, query, Filters(), 5)  # builds the HNSW file
    assert store.side_index_problems("c") == [] and verify(store, "c").ok
    keys = [key for key, _ in store.embedding_work("c", MODEL)]
    other = rng.standard_normal((len(keys), DIMS)).astype(np.float32)
    store.put_embeddings(MODEL, keys, other, replace=True)  # vectors changed under the file
    report = verify(store, "c")
    assert report.problems["side_index"] == 1 and "differ" in report.examples["side_index"][0]
    store.rebuild_side_index("c")
    assert verify(store, "c").ok
    store.close()
