"""`retrievo regenerate`: re-embedding by slice, kind and staleness, and model migration without downtime,
on both stores; the migration job killed with SIGKILL and resumed for real."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from benchmarks.common import write_notes

from retrievo.errors import ConfigError
from retrievo.models import Kind, LoadedDocument
from serving import job_over_mcp

ROOT = Path(__file__).resolve().parent.parent
MINILM = "all-MiniLM-L6-v2-int8"


def test_regenerate_re_embeds_by_slice_kind_and_missing(make_engine: Any, handbook: Path) -> None:
    engine = make_engine()
    engine.index([handbook])
    store = engine._open_store(create=False)
    keys = [key for key, _ in store.embedding_work("default", MINILM)]
    assert len(keys) == len(set(keys)) > 4
    everything = engine.regenerate()
    assert everything.chunks_embedded == len(keys) and everything.model_id == MINILM
    first = [key for key, _ in store.embedding_work("default", MINILM, limit=2)]
    rest = [key for key, _ in store.embedding_work("default", MINILM, limit=100, offset=2)]
    assert first + rest == keys  # slices in key order: --limit/--offset walk the collection in batches
    assert engine.regenerate(limit=2, offset=1).chunks_embedded == 2
    assert engine.regenerate(kinds=[Kind.CODE]).chunks_embedded == 0  # the handbook has no code
    assert engine.regenerate(only_missing=True).chunks_embedded == 0
    engine.add_documents(
        [LoadedDocument(source="/x/new.md", text="Parking permits renew each May.", title="P")], embed=False
    )
    assert engine.regenerate(only_missing=True).chunks_embedded == 1
    assert engine.verify().ok


def test_stale_keys_are_found_by_verify_and_fixed_by_regenerate(make_engine: Any, handbook: Path) -> None:
    engine = make_engine()
    engine.index([handbook])
    store = engine._open_store(create=False)
    chunk_id = store.current_chunk_ids(engine.documents()[0].document_id)[0]
    store.rekey_chunks([(chunk_id, "0" * 64)])  # the chunk now points at a vector of other text
    report = engine.verify()
    assert report.problems["embed_key"] == 1 and report.problems["missing_vector"] == 1
    assert [stale_id for stale_id, _ in store.stale_chunks("default")] == [chunk_id]
    fixed = engine.regenerate(stale=True)
    assert fixed.chunks_rekeyed == 1 and fixed.chunks_embedded == 0  # its right vector was still stored
    assert engine.verify().ok and store.stale_chunks("default") == []


def test_a_model_migration_serves_the_old_model_until_it_switches_at_once(
    make_engine: Any, handbook: Path, embedding_server: Any
) -> None:
    engine = make_engine(embed_url=embedding_server.url + "/v1")
    engine.index([handbook])
    engine.history.create("before", "default")
    engine.add_documents([LoadedDocument(source="/x/gone.md", text="Old parking rules.", title="G")])
    engine.add_documents([LoadedDocument(source="/x/gone.md", text="New parking rules.", title="G")])
    server = make_engine(embed_url=embedding_server.url + "/v1")  # a long-running server opened before
    assert server.search("annual leave").hits
    errors: list[BaseException] = []
    stop = threading.Event()

    def keep_searching() -> None:
        while not stop.is_set():
            try:
                assert server.search("annual leave days").hits
            except BaseException as exc:
                errors.append(exc)

    searcher = threading.Thread(target=keep_searching)
    searcher.start()
    try:
        report = engine.regenerate(model="openai:toy", drop_old=True)
    finally:
        stop.set()
        searcher.join()
    assert errors == [] and report.switched and report.previous_model_id == MINILM
    assert report.chunks_embedded > 0 and report.vectors_dropped > 0
    info = engine._open_store(create=False).get_collection("default")
    assert (info.model_id, info.dimensions, info.shadow_model_id) == ("openai:toy", 8, None)
    after = server.search("annual leave days", explain=True)
    assert after.search_mode == "hybrid" and after.hits
    assert embedding_server.requests[-1]["input"] == ["annual leave days"]  # queries now embed with toy
    assert server.search("parking", baseline="before").search_mode == "hybrid"  # history was migrated too
    assert engine.verify().ok
    with pytest.raises(ConfigError, match="whole collection"):
        engine.regenerate(model="local", limit=3)


def test_an_interrupted_migration_keeps_serving_and_resumes(
    make_engine: Any, handbook: Path, embedding_server: Any
) -> None:
    engine = make_engine(embed_url=embedding_server.url + "/v1")
    engine.index([handbook])
    total = len(engine._open_store(create=False).embedding_work("default", MINILM, history=True))
    store = engine._open_store(create=False)
    store.set_shadow_model("default", "openai:toy", 8)  # as a migration that died before its first vector
    embedding_server.down = True
    failed = engine.regenerate(model="openai:toy")
    assert not failed.switched and failed.embed_error and "still serves" in failed.embed_error
    info = store.get_collection("default")
    assert (info.model_id, info.shadow_model_id) == (MINILM, "openai:toy")
    assert engine.search("annual leave").search_mode == "hybrid"  # the old model still answers
    with pytest.raises(ConfigError, match="no vector"):
        engine._open_store(create=False).switch_model("default")  # never switched while incomplete
    embedding_server.down = False
    done = engine.regenerate(model="openai:toy")
    assert done.switched and done.chunks_embedded == total
    with pytest.raises(ConfigError, match="still used"):
        engine.drop_model("openai:toy")
    assert engine.drop_model(MINILM) > 0


def cli(db: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", *args, "--db", str(db)],
        capture_output=True, text=True, cwd=ROOT, check=False, timeout=300, env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_kill_9_during_a_migration_job_then_resume_switches_and_verifies(
    tmp_path: Path, embedding_server: Any, store_kind: str, request: pytest.FixtureRequest
) -> None:
    db, docs = tmp_path / "i.db", write_notes(tmp_path / "docs", 120)
    env = {"RETRIEVO_EMBED_URL": embedding_server.url + "/v1"}
    if store_kind == "postgres":
        env["RETRIEVO_STORE"] = request.getfixturevalue("postgres_url")
    assert cli(db, "index", str(docs), env=env).returncode == 0
    embedding_server.stall_after = embedding_server.batches + 1  # one batch embedded, the next waits
    submitted = cli(db, "regenerate", "--model", "openai:toy", "--background", "--json", env=env)
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["job_id"]
    deadline = time.monotonic() + 120
    while True:
        job = json.loads(cli(db, "job", job_id, "--json", env=env).stdout)
        if job["status"] == "running" and job["done"] > 0:
            break
        assert time.monotonic() < deadline and job["status"] in ("queued", "running"), job
        time.sleep(0.2)
    os.kill(job["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while json.loads(cli(db, "job", job_id, "--json", env=env).stdout)["status"] != "interrupted":
        assert time.monotonic() < deadline, "a killed worker's job must become interrupted"
        time.sleep(0.3)
    serving = json.loads(cli(db, "search", "note", "--json", env=env).stdout)
    assert serving["search_mode"].startswith("hybrid")  # still served by the old model
    embedding_server.stall_after = None
    embedding_server.released.set()
    assert cli(db, "job", "resume", job_id, env=env).returncode == 0
    followed = cli(db, "job", job_id, "--follow", "--json", env=env)
    assert followed.returncode == 0, followed.stderr
    final = json.loads(cli(db, "job", job_id, "--json", env=env).stdout)
    assert final["status"] == "done" and final["result"]["switched"] is True
    verified = cli(db, "verify", "--json", env=env)
    assert verified.returncode == 0, verified.stdout
    status = json.loads(cli(db, "status", "--json", env=env).stdout)
    assert status["collections"][0]["model_id"] == "openai:toy"


def test_a_killed_re_embedding_job_resumes_after_what_it_wrote(tmp_path: Path, embedding_server: Any) -> None:
    """A full re-embedding (same model) killed with SIGKILL half-way and resumed embeds only the rest."""
    db, docs = tmp_path / "i.db", write_notes(tmp_path / "docs", 200)
    env = {"RETRIEVO_EMBEDDER": "openai", "RETRIEVO_EMBED_URL": embedding_server.url + "/v1",
           "RETRIEVO_EMBED_MODEL": "toy"}  # fmt: skip
    assert cli(db, "index", str(docs), env=env).returncode == 0
    chunks = json.loads(cli(db, "status", "--json", env=env).stdout)["collections"][0]["chunks"]
    embedding_server.stall_after = embedding_server.batches + 5  # past the first write of 256, not the end
    submitted = cli(db, "regenerate", "--background", "--json", env=env)
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["job_id"]
    deadline = time.monotonic() + 120
    while True:
        job = json.loads(cli(db, "job", job_id, "--json", env=env).stdout)
        if job["status"] == "running" and (job.get("result") or {}).get("resume_after_key"):
            break
        assert time.monotonic() < deadline and job["status"] in ("queued", "running"), job
        time.sleep(0.2)
    os.kill(job["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while (job := json.loads(cli(db, "job", job_id, "--json", env=env).stdout))["status"] != "interrupted":
        assert time.monotonic() < deadline, "a killed worker's job must become interrupted"
        time.sleep(0.3)
    written = job["result"]["written"]
    assert 0 < written < chunks
    embedding_server.stall_after = None
    embedding_server.released.set()
    assert cli(db, "job", "resume", job_id, env=env).returncode == 0
    assert cli(db, "job", job_id, "--follow", "--json", env=env).returncode == 0
    final = json.loads(cli(db, "job", job_id, "--json", env=env).stdout)
    assert final["status"] == "done" and final["result"]["chunks_embedded"] == chunks - written
    assert cli(db, "verify", "--json", env=env).returncode == 0


def test_mcp_migrates_in_a_job_and_verifies_over_the_official_client(
    tmp_path: Path, embedding_server: Any
) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    db, docs = tmp_path / "i.db", write_notes(tmp_path / "docs", 8)
    env = {"RETRIEVO_EMBED_URL": embedding_server.url + "/v1"}
    assert cli(db, "index", str(docs), env=env).returncode == 0
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db), "--tools", "all"], cwd=str(ROOT),
        env={**os.environ, **env},
    )  # fmt: skip

    async def main() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]:
        async with Client(server) as client:
            started = await client.call_tool("regenerate_embeddings", {"model": "openai:toy"})
            assert started.structured_content is not None, started.content
            finished = await job_over_mcp(client, started.structured_content["job_id"])
            status = await client.call_tool("index_status", {})
            assert status.structured_content is not None
            verified = await client.call_tool("verify_index", {})
            assert verified.structured_content is not None
            bad = await client.call_tool("regenerate_embeddings", {"model": "nonsense:model", "limit": -1})
            return finished, verified.structured_content, status.structured_content, bad.content[0].text  # type: ignore[union-attr]

    finished, verified, status, bad = anyio.run(main)
    assert finished["status"] == "done" and finished["kind"] == "regenerate"
    assert verified["ok"] and verified["model_id"] == "openai:toy" and verified["chunks"] > 0
    assert status["collections"][0]["model_id"] == "openai:toy"
    assert "limit" in bad  # refused by the schema before any job is made


def test_chunks_are_embedded_in_slices_that_span_the_stores_pages(make_engine: Any, handbook: Path) -> None:
    """A model is handed as many chunks at once as it keeps in flight (a GPU's 1,024 × 4), across the
    store's pages (here 2 chunks a page), in key order, each slice's size asked anew (a model settles its
    batches when it loads)."""
    from retrievo.engine.embedding import _slices

    engine = make_engine()
    engine.index([handbook])
    store = engine._open_store(create=False)
    keys = [key for key, _ in store.embedding_work("default", MINILM)]
    assert len(keys) >= 9
    slices: list[list[tuple[str, str]]] = []
    for piece in _slices(
        store.embedding_work_pages("default", MINILM, page=2), lambda: 3 if not slices else 5
    ):
        slices.append(piece)
    assert [key for piece in slices for key, _ in piece] == keys
    assert [len(piece) for piece in slices[:-1]] == [3] + [5] * (len(slices) - 2)
    assert 0 < len(slices[-1]) <= 5


def test_a_re_keyed_chunk_leaves_no_old_vector_in_the_side_index(
    make_engine: Any, handbook: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk re-keyed (its key computed anew, as after an upgrade) reads the vector of its new key; the HNSW
    side index syncs by chunk ids, so ``regenerate --stale`` and ``verify --fix`` build it again rather than
    leave it the old vector (verify found it out of step after either)."""
    from retrievo.store.postgres import vector_source
    from retrievo.store.sqlite import embeddings as sqlite_embeddings
    from retrievo.store.sqlite import searching as sqlite_search

    for module in (sqlite_search, sqlite_embeddings, vector_source):
        monkeypatch.setattr(module, "ANN_MIN_VECTORS", 1)
    engine = make_engine()
    engine.index([handbook])
    store = engine._open_store(create=False)
    first, second = store.current_chunk_ids(engine.documents()[0].document_id)[:2]
    chunks = store.get_chunks([first, second])
    for fix in ("regenerate", "verify"):
        store.rekey_chunks([(first, chunks[second].embed_key)])  # its key names the other chunk's vector
        store.rebuild_side_index("default")  # the side index built while it read so (an old key's vector)
        assert engine.search("parental leave", mode="semantic").hits
        assert engine.verify().problems == {**engine.verify().problems, "embed_key": 1, "side_index": 0}
        if fix == "regenerate":
            assert engine.regenerate(stale=True).chunks_rekeyed == 1
        else:
            assert engine.verify(fix=True).fixed["embed_key"] == 1
        assert engine.verify().ok  # the side index holds the chunk's own vector again
