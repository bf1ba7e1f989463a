"""Indexing in stages (operations/staged.py): a new collection served by the static model when `index`
returns, moved to the bundled model by a real background worker; one stage where stages do not apply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrievo import Config, Engine
from retrievo.embed.local import MODEL_ID as MINILM_ID
from retrievo.embed.local import MiniLMEmbedder
from retrievo.embed.static import MODEL_ID as STATIC_ID
from retrievo.models import Job
from retrievo.operations.jobs import Jobs
from retrievo.operations.staged import in_stages, index_in_stages, migration
from test_jobs import cli, wait_for
from test_static_embedder import write_pages

STAGED = {"RETRIEVO_STAGED": "on"}


def status_of(db: Path) -> dict[str, Any]:
    shown = cli(db, "status", "--json", env=STAGED)
    assert shown.returncode == 0, shown.stderr
    (collection,) = json.loads(shown.stdout)["collections"]
    return dict(collection)


def test_index_serves_the_static_model_at_once_and_a_worker_moves_it_to_the_bundled_one(
    tmp_path: Path,
) -> None:
    db = tmp_path / "i.db"
    indexed = cli(db, "index", str(write_pages(tmp_path / "notes")), "--json", env=STAGED)
    assert indexed.returncode == 0, indexed.stderr
    report = json.loads(indexed.stdout)
    assert report["chunks_embedded"] == report["chunks_written"] > 0
    first = status_of(db)
    assert (
        first["missing"] == 0
    )  # every chunk has a vector (the static model's, or already the bundled one's)
    if first["model_id"] == STATIC_ID:  # the worker had not switched yet: the move is shown (or just ended)
        moving = first["moving_to"]
        assert moving["model_id"] == MINILM_ID if moving else status_of(db)["model_id"] == MINILM_ID
    job = wait_for(db, report["staged_job_id"], lambda j: j["status"] in ("done", "failed"))
    assert job["status"] == "done" and job["kind"] == "regenerate", job
    moved = status_of(db)
    assert moved["model_id"] == MINILM_ID and moved["moving_to"] is None and moved["missing"] == 0
    found = cli(db, "search", "how do I mend a flat on my cycle", "--json", env=STAGED)
    answer = json.loads(found.stdout)
    assert answer["model_id"] == MINILM_ID and answer["results"][0]["path"].endswith("bicycle.md")


class Queued(Jobs):
    """Jobs whose worker is not started: the second stage stays queued while the first is looked at (the
    real worker is the test above's)."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine, spawn=lambda job: None)


def staged_config(tmp_path: Path, kind: str, request: pytest.FixtureRequest) -> Config:
    """Indexing in stages into a fresh index of ``kind`` (sqlite, or postgres: a real server's new database)."""
    store = request.getfixturevalue("postgres_url") if kind == "postgres" else None
    return Config(db=tmp_path / "i.db", store=store, staged="on", cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_between_the_stages_searches_read_the_static_model_and_say_so(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    config = staged_config(tmp_path, kind, request)
    with Engine(config) as engine:
        assert in_stages(engine, None, embed=True)
        done = index_in_stages(engine, [str(write_pages(tmp_path / "notes"))], None, jobs=Queued(engine))
        assert isinstance(done.job, Job) and done.job.kind == "regenerate"
        assert done.job.parameters["model"] == "local" and done.report.chunks_embedded == 3
        assert done.job.parameters["drop_old"] is True  # the static vectors go once the move is done
        moving = migration(engine, config.collection)
        assert moving is not None and moving[0] == MINILM_ID
        engine.warm_up()  # the model that embeds this collection's queries: the static one
        assert isinstance(engine.embedder, MiniLMEmbedder) and engine.embedder._session is None  # not loaded
        found = engine.search("boiling noodles for dinner", explain=True)
        assert found.model_id == STATIC_ID and found.hits[0].chunk.path.endswith("pasta.md")
        moved = engine.regenerate(model="local", drop_old=True)  # what the worker does
        assert moved.switched and moved.vectors_dropped == 3
        assert migration(engine, config.collection) is None
        assert engine.search("boiling noodles for dinner").model_id == MINILM_ID
        assert not in_stages(engine, None, embed=True)  # a collection with vectors: one stage from now on


@pytest.mark.parametrize(
    ("settings", "embed"),
    [({"staged": "off"}, True), ({"embedder": "static"}, True), ({"embedder": "none"}, True), ({}, False)],
)
def test_one_stage_where_stages_do_not_apply(tmp_path: Path, settings: dict[str, str], embed: bool) -> None:
    config = Config(db=tmp_path / "i.db", **({"staged": "on"} | settings))
    with Engine(config) as engine:
        assert not in_stages(engine, None, embed=embed)


def test_no_staged_indexes_with_the_bundled_model_only(tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    indexed = cli(db, "index", str(write_pages(tmp_path / "notes")), "--no-staged", "--json", env=STAGED)
    assert indexed.returncode == 0, indexed.stderr
    assert "staged_job_id" not in json.loads(indexed.stdout)
    assert status_of(db)["model_id"] == MINILM_ID
    assert json.loads(cli(db, "jobs", "--json").stdout)["jobs"] == []


def test_a_bad_setting_is_refused() -> None:
    from retrievo.errors import ConfigError

    with pytest.raises(ConfigError, match="staged is on or off"):
        Config.from_env(staged="sometimes")


def test_watch_indexes_a_new_collection_in_stages_then_keeps_it_current(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys
    import time

    db, notes = tmp_path / "i.db", write_pages(tmp_path / "notes")
    watcher = subprocess.Popen(
        [sys.executable, "-m", "retrievo.surfaces.cli", "watch", str(notes), "--db", str(db)],
        stderr=subprocess.PIPE, text=True, env={**os.environ, **STAGED},
    )  # fmt: skip
    try:
        assert watcher.stderr is not None
        line = watcher.stderr.readline()
        assert line.startswith("indexed 3 file(s); watching"), line
        jobs = json.loads(cli(db, "jobs", "--json").stdout)["jobs"]
        (job,) = [j for j in jobs if j["kind"] == "regenerate"]  # beside the watcher's own row
        assert job["parameters"]["model"] == "local"
        wait_for(db, job["job_id"], lambda j: j["status"] in ("done", "failed"))
        assert status_of(db)["model_id"] == MINILM_ID
        (notes / "kettle.md").write_text(
            "# Descaling a kettle\n\nBoil vinegar and water, rinse twice.", encoding="utf-8"
        )
        deadline = time.monotonic() + 60
        while (now := status_of(db))["documents"] < 4 or now[
            "missing"
        ]:  # indexed and embedded by the watcher
            assert time.monotonic() < deadline, f"the new file was never indexed and embedded: {now}"
            time.sleep(0.5)
        assert now["model_id"] == MINILM_ID
    finally:
        watcher.terminate()
        watcher.communicate(timeout=30)  # reaped, its pipe closed


def test_a_move_that_cannot_load_its_model_fails_says_why_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RETRIEVO_DEVICE", "cuda")  # no GPU here: the bundled model will not load
    config = Config(db=tmp_path / "i.db", staged="on", cache_dir=tmp_path / "cache")
    with Engine(config) as engine:
        jobs = Queued(engine)
        done = index_in_stages(engine, [str(write_pages(tmp_path / "notes"))], None, jobs=jobs)
        assert done.job is not None
        failed = jobs.run(done.job.job_id)
        assert failed.status == "failed" and failed.error is not None, failed
        assert "could not be loaded" in failed.error and f"still serves {STATIC_ID}" in failed.error
        assert migration(engine, config.collection) is not None  # still moving: status says so
        assert engine.search("boiling noodles for dinner").model_id == STATIC_ID  # searches go on
    monkeypatch.setenv("RETRIEVO_DEVICE", "cpu")
    with Engine(config) as engine:
        jobs = Queued(engine)
        resumed = jobs.run(jobs.resume(failed.job_id).job_id)
        assert resumed.status == "done" and resumed.result is not None and resumed.result["switched"]
        assert migration(engine, config.collection) is None
        assert engine.search("boiling noodles for dinner").model_id == MINILM_ID


def test_a_first_stage_that_embeds_nothing_new_still_queues_the_move(tmp_path: Path) -> None:
    config = Config(db=tmp_path / "i.db", staged="on", cache_dir=tmp_path / "cache")
    notes = write_pages(tmp_path / "notes")
    with Engine(config) as engine:
        index_in_stages(engine, [str(notes)], "first", jobs=Queued(engine))
        # the same texts into a second collection: every static vector is reused, none embedded
        again = index_in_stages(engine, [str(notes)], "second", jobs=Queued(engine))
        assert again.report.chunks_embedded == 0 and again.job is not None
        moving = migration(engine, "second")
        assert moving is not None and moving[0] == MINILM_ID
