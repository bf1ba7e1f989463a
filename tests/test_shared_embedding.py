"""Indexing at the tier's speed (issue 45): one job's embedding shared by two real servers on one real
PostgreSQL, one killed with SIGKILL mid-batch; an HTTP embedder with several requests in flight to a real
``retrievo serve`` answering the OpenAI embeddings API over the bundled model."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
from benchmarks.common import write_notes

from retrievo import Config, Engine
from retrievo.embed.http import OpenAIEmbedder
from retrievo.embed.local import MiniLMEmbedder
from retrievo.models import Job
from retrievo.operations.jobs import now
from serving import cli, create_key, serving


def _batches(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT batch_no, chunks, done_by, done_at, embedded FROM embed_batches"
        ).fetchall()


def test_two_servers_embed_one_job_and_a_server_killed_mid_batch_loses_only_that_batch(
    postgres_url: str, embedding_server: Any, tmp_path: Path
) -> None:
    """An embed job queued for the tier: both servers claim its batches; the job's server is killed
    (SIGKILL) while each server holds a batch; the other takes the job over, retakes the lost batch and
    finishes: done once, every chunk embedded, no text embedded twice but the lost batch's, verify clean."""
    env = {"RETRIEVO_EMBEDDER": "openai", "RETRIEVO_EMBED_URL": embedding_server.url + "/v1",
           "RETRIEVO_EMBED_MODEL": "toy", "RETRIEVO_JOB_STALE_S": "3",
           "RETRIEVO_EMBED_CONCURRENCY": "1"}  # fmt: skip
    where = ["--store", postgres_url]
    docs = write_notes(tmp_path / "docs", 300)
    indexed = cli("index", str(docs), "--no-embed", *where, env=env)
    assert indexed.returncode == 0, indexed.stderr
    embedding_server.delay_s = 0.02
    embedding_server.stall_after = 4  # the 5th and 6th batches wait: one held by each server
    with (
        serving(where, env=env) as first,
        serving(where, env=env) as second,
        Engine(Config(store=postgres_url, embedder="none")) as engine,
    ):
        store = engine._open_store(create=False)
        chunks = store.status().collections[0].chunks
        assert chunks > 6 * 64, "enough batches to share"
        store.save_job(Job(job_id="job_shared", kind="embed", collection="default", status="queued",
                           parameters={"paths": []}, created_at=now(), owner=""))  # fmt: skip
        deadline = time.monotonic() + 120
        while embedding_server.batches < 6:  # both servers are mid-batch now
            assert time.monotonic() < deadline, embedding_server.batches
            time.sleep(0.05)
        job = store.get_job("job_shared")
        assert job is not None and job.status == "running" and job.owner
        servers = {first.process.pid: first, second.process.pid: second}
        holder = servers.pop(int(job.owner.rsplit(":", 1)[1]))
        survivor = next(iter(servers.values()))
        holder.process.kill()  # SIGKILL mid-batch: its transaction, and its batch, roll back
        holder.process.wait()
        embedding_server.stall_after = None
        embedding_server.released.set()
        deadline = time.monotonic() + 180
        while (job := store.get_job("job_shared")) is not None and job.status != "done":  # type: ignore[assignment]
            assert time.monotonic() < deadline and job.status in ("running", "queued"), job
            time.sleep(0.3)
        assert job is not None and job.owner is not None and job.owner.endswith(f":{survivor.process.pid}")
        assert job.attempts == 2, "taken once by each server"
        assert store.coverage("default") == (chunks, chunks), "every chunk has its vector"
        # the taken-over job planned what was still missing then, after the batches already closed:
        # every batch is closed, none left open, and the result says what each server embedded
        assert all(done_at is not None for _, _, _, done_at, _ in _batches(postgres_url))
        shares = job.result["embedded_by"] if job.result else {}
        assert set(shares) == {f"{socket.gethostname()}:{first.process.pid}",
                               f"{socket.gethostname()}:{second.process.pid}"}, shares  # fmt: skip
        assert sum(shares.values()) == job.result["chunks_embedded"] == chunks  # type: ignore[index]
    sent = Counter(text for body in embedding_server.requests for text in body["input"]
                   if text.startswith("Note "))  # the chunks' inputs (not the servers' warm-up query)  # fmt: skip
    twice = [text for text, count in sent.items() if count > 1]
    assert len(sent) == chunks, "every chunk's text was sent"
    assert len(twice) <= 64, "only the killed server's batch (64 chunks) was embedded again"
    verified = cli("verify", "--json", *where, env=env)
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"], verified.stdout


def test_the_servers_of_a_tier_each_embed_a_share_of_one_job(postgres_url: str, embedding_server: Any,
                                                              tmp_path: Path) -> None:  # fmt: skip
    """Without a failure: the job's server and an idle one both close batches of the same job."""
    env = {"RETRIEVO_EMBEDDER": "openai", "RETRIEVO_EMBED_URL": embedding_server.url + "/v1",
           "RETRIEVO_EMBED_MODEL": "toy", "RETRIEVO_EMBED_CONCURRENCY": "1"}  # fmt: skip
    where = ["--store", postgres_url]
    assert (
        cli("index", str(write_notes(tmp_path / "docs", 200)), "--no-embed", *where, env=env).returncode == 0
    )
    embedding_server.delay_s = 0.5  # a batch takes a while, as a real model's does
    with (
        serving(where, env=env),
        serving(where, env=env),
        Engine(Config(store=postgres_url, embedder="none")) as engine,
    ):
        store = engine._open_store(create=False)
        store.save_job(Job(job_id="job_split", kind="embed", collection="default", status="queued",
                           parameters={"paths": []}, created_at=now(), owner=""))  # fmt: skip
        deadline = time.monotonic() + 120
        while (job := store.get_job("job_split")) is not None and job.status != "done":
            assert time.monotonic() < deadline and job.status in ("running", "queued"), job
            time.sleep(0.2)
        assert job is not None and job.result is not None
        shares = job.result["embedded_by"]
        assert len(shares) == 2 and all(count > 0 for count in shares.values()), shares
        chunks = store.status().collections[0].chunks
        assert sum(shares.values()) == job.result["chunks_embedded"] == chunks


def test_an_openai_client_keeps_several_requests_in_flight_to_retrievo_serves_embeddings_api(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    """`retrievo serve` answers POST /v1/embeddings (OpenAI's shape, float lists or base64) over the bundled
    model behind its keys; retrievo's own OpenAI embedder sends it four batches at once and gets the bundled
    model's vectors."""
    db = tmp_path / "index.db"
    where = ["--db", str(db)]
    assert cli("index", str(write_notes(tmp_path / "docs", 3)), *where).returncode == 0
    key = create_key(where, "indexer")
    texts = [f"note {n} on {'parental leave ' * (n % 7)}expenses and travel" for n in range(64)]
    with serving(where) as server:
        refused = httpx.post(f"{server.url}/v1/embeddings", json={"input": "x"}, timeout=30)
        assert refused.status_code == 401
        wrong = httpx.post(f"{server.url}/v1/embeddings", json={"input": "x", "model": "gpt-x"},
                           headers={"Authorization": f"Bearer {key}"}, timeout=30)  # fmt: skip
        assert wrong.status_code == 404 and "local" in wrong.json()["error"]["message"]
        auth = {"Authorization": f"Bearer {key}"}
        odd = httpx.post(f"{server.url}/v1/embeddings", json={"input": "x", "encoding_format": "int4"},
                         headers=auth, timeout=30)  # fmt: skip
        assert odd.status_code == 400 and "base64" in odd.json()["error"]["message"]
        floats = httpx.post(
            f"{server.url}/v1/embeddings", json={"input": texts[:2]}, headers=auth, timeout=60
        )
        float_rows = np.asarray([row["embedding"] for row in floats.json()["data"]], dtype=np.float32)
        client = OpenAIEmbedder(f"{server.url}/v1", "local", api_key=key, batch_size=4, concurrency=4)
        in_flight, peak, lock = [0], [0], threading.Lock()
        post = client._client.post

        def counting_post(*args: Any, **kwargs: Any) -> httpx.Response:
            with lock:
                in_flight[0] += 1
                peak[0] = max(peak[0], in_flight[0])
            try:
                return post(*args, **kwargs)
            finally:
                with lock:
                    in_flight[0] -= 1

        client._client.post = counting_post  # type: ignore[method-assign]
        try:
            vectors = client.embed_documents(texts)
        finally:
            client.close()  # its kept-alive connections to the server
    assert peak[0] >= 2, "several batches in flight"
    assert peak[0] <= 4, "never more than the configured concurrency"
    local = minilm.embed_documents(texts)
    assert float(np.min(np.sum(vectors * local, axis=1))) > 0.9999  # base64, what retrievo asks for
    assert float(np.min(np.sum(float_rows * local[:2], axis=1))) > 0.9999  # float lists, the default
