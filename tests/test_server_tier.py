"""Many servers on one PostgreSQL (issue 39): jobs taken once and taken over from a killed server, keys shared."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
from benchmarks.common import write_notes

from retrievo import Config, Engine
from retrievo.models import Job
from retrievo.operations.jobs import STALE_AFTER_S, now
from serving import cli, create_key, serving


def _tier_job(job_id: str) -> Job:
    return Job(job_id=job_id, kind="embed", collection="default", status="queued",
               parameters={"paths": []}, created_at=now(), owner="")  # fmt: skip


def test_each_tier_job_goes_to_one_claimer_and_a_dead_owners_job_is_taken_over(make_engine: Any) -> None:
    """Eight threads claiming at once (both stores): every job taken exactly once; a job whose owner
    stopped beating is taken over by another, attempts counting; jobs of a CLI worker are never taken."""
    engine = make_engine()
    store = engine._open_store(create=True)
    for n in range(6):
        store.save_job(_tier_job(f"job_tier{n}"))
    store.save_job(replace(_tier_job("job_cli"), owner=None))  # `retrievo index --background`'s own worker
    taken: list[tuple[str, str]] = []
    lock = threading.Lock()

    def claim(owner: str) -> None:
        while (job := store.claim_job(owner, now(), "1970-01-01T00:00:00.000Z")) is not None:
            with lock:
                taken.append((job.job_id, owner))

    threads = [threading.Thread(target=claim, args=(f"host:{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(job for job, _ in taken) == [f"job_tier{n}" for n in range(6)], "each once, none missed"
    first = store.get_job("job_tier0")
    assert first is not None and first.status == "running" and first.attempts == 1
    assert store.get_job("job_cli").status == "queued"  # type: ignore[union-attr]
    assert store.claim_job("other:1", now(), "1970-01-01T00:00:00.000Z") is None, "beating: not taken"
    store.update_job("job_tier0", heartbeat_at="2000-01-01T00:00:00.000Z")  # its owner died long ago
    again = store.claim_job("other:1", now(), now())
    assert again is not None and again.job_id == "job_tier0" and again.owner == "other:1"
    assert again.attempts == 2


def test_two_servers_share_keys_and_a_killed_servers_job_is_finished_by_the_other(
    postgres_url: str, embedding_server: Any, tmp_path: Path
) -> None:
    """Two `retrievo serve` on one PostgreSQL: a key revoked through one is refused by the other within
    5 s; a re-embedding job submitted to one, killed with it (SIGKILL) half-way, is finished by the other
    after the last key the first wrote — once, every chunk embedded."""
    env = {"RETRIEVO_EMBEDDER": "openai", "RETRIEVO_EMBED_URL": embedding_server.url + "/v1",
           "RETRIEVO_EMBED_MODEL": "toy", "RETRIEVO_JOB_STALE_S": "3"}  # fmt: skip
    where = ["--store", postgres_url]
    docs = write_notes(tmp_path / "docs", 200)
    indexed = cli("index", str(docs), *where, env=env)
    assert indexed.returncode == 0, indexed.stderr
    admin = create_key(where, "ops", "admin")
    reader = create_key(where, "reader")
    with (
        serving(where, "--tools", "all", env=env) as first,
        serving(where, "--tools", "all", env=env) as second,
    ):
        headers = {"Authorization": f"Bearer {admin}"}
        asked = {"Authorization": f"Bearer {reader}"}
        assert (
            httpx.post(f"{second.url}/api/index_status", json={}, headers=asked, timeout=30).status_code
            == 200
        )
        revoked = httpx.delete(f"{first.url}/api/keys/reader", headers=headers, timeout=30)
        assert revoked.status_code == 200, revoked.text
        deadline = time.monotonic() + 5.5
        while (
            httpx.post(f"{second.url}/api/index_status", json={}, headers=asked, timeout=30).status_code
            == 200
        ):
            assert time.monotonic() < deadline, (
                "a key revoked on one server still worked on the other after 5 s"
            )
            time.sleep(0.25)

        embedding_server.stall_after = embedding_server.batches + 5  # past the first write, not the end
        answer = httpx.post(f"{first.url}/api/regenerate_embeddings", json={}, headers=headers, timeout=60)
        assert answer.status_code == 200, answer.text
        job_id = answer.json()["job_id"]
        with Engine(Config(store=postgres_url, embedder="none")) as engine:
            store = engine._open_store(create=False)
            deadline = time.monotonic() + 120
            while True:
                job = store.get_job(job_id)
                assert job is not None and time.monotonic() < deadline, job
                if job.status == "running" and (job.result or {}).get("resume_after_key"):
                    break
                time.sleep(0.2)
            pids = {first.process.pid: first, second.process.pid: second}
            assert job.owner is not None and int(job.owner.rsplit(":", 1)[1]) in pids, job.owner
            holder = pids.pop(int(job.owner.rsplit(":", 1)[1]))  # the one it was sent to, or the quicker one
            survivor = next(iter(pids.values()))
            holder.process.kill()  # SIGKILL: no goodbye, its heartbeat just stops
            holder.process.wait()
            written = job.result["written"]  # type: ignore[index]
            embedding_server.stall_after = None
            embedding_server.released.set()
            deadline = time.monotonic() + 120 + STALE_AFTER_S
            while (job := store.get_job(job_id)) is not None and job.status != "done":  # type: ignore[assignment]
                assert time.monotonic() < deadline and job.status == "running", job
                time.sleep(0.3)
            assert (
                job is not None and job.owner is not None and job.owner.endswith(f":{survivor.process.pid}")
            )
            assert job.attempts == 2, "taken once by each server"
            chunks = store.status().collections[0].chunks
            assert 0 < written < chunks and job.result["chunks_embedded"] == chunks - written  # type: ignore[index]
        verified = cli("verify", "--json", *where, env=env)
        assert verified.returncode == 0 and json.loads(verified.stdout)["ok"], verified.stdout


def test_one_watcher_per_folder_through_a_lease_in_the_store(make_engine: Any, tmp_path: Path) -> None:
    """A watch holds a lease row in the store: a second watcher of the same folder (any host) is
    refused while the first beats, takes over once it stopped beating, and a released lease is free."""
    import pytest

    from retrievo.errors import ConfigError
    from retrievo.operations.watch import Watcher

    folder = tmp_path / "watched"
    folder.mkdir()
    engine = make_engine()
    store = engine._open_store(create=True)
    first, second = Watcher(engine, [folder]).lease(), Watcher(engine, [folder]).lease()
    second.owner = "another-host:1"
    with first.held():
        with pytest.raises(ConfigError, match="watched already by"):
            second.take(store)
        store.update_job(first.lease_id, heartbeat_at="2000-01-01T00:00:00.000Z")  # its holder went silent
        second.take(store)
        assert store.get_job(first.lease_id).owner == "another-host:1"  # type: ignore[union-attr]
        store.update_job(first.lease_id, owner=first.owner)  # (the first one's end releases it below)
    assert store.get_job(first.lease_id).status == "done"  # type: ignore[union-attr]
    second.take(store)  # free again
    assert store.claim_job("server:1", now(), now()) is None, "a watch lease is never run as a job"


def test_a_keys_rate_is_shared_by_the_servers_of_one_store(make_engine: Any) -> None:
    """Two servers' buckets on one store: what one served lowers the other's refill rate for that key
    (never below a tenth), other keys untouched; usage older than the window no longer counts."""
    from retrievo.surfaces.access import SharedRate, TokenBucket

    engine = make_engine()
    store = engine._open_store(create=True)
    first, second = TokenBucket(rate=10, burst=100), TokenBucket(rate=10, burst=10)
    one = SharedRate(first, lambda: store, "host-a:1")
    two = SharedRate(second, lambda: store, "host-b:2")
    assert all(first.take("rtv_busy") == 0.0 for _ in range(10)) and first.take("rtv_other") == 0.0
    one.sync(now=1_000_000.2)
    two.sync(now=1_000_000.4)
    assert second.rates["rtv_busy"] == 10 - 10 / SharedRate.WINDOW_S  # the other's 10 over 2 s
    assert second.rates["rtv_other"] == 9.5 and "rtv_busy" not in first.rates, "own usage is not counted"
    assert all(first.take("rtv_busy") == 0.0 for _ in range(40))
    one.sync(now=1_000_001.1)
    two.sync(now=1_000_001.3)
    assert second.rates["rtv_busy"] == 10 * SharedRate.FLOOR, "50 in 2 s elsewhere: never below a tenth"
    slow = second.take("rtv_busy")
    assert slow == 0.0, "the burst stays the server's own"
    two.sync(now=1_000_010.0)
    assert second.rates == {}, "usage older than the window no longer counts"
