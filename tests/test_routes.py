"""Collections across databases (issue 39): a routing table, one fused ranking, a collection moved."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import psycopg

from retrievo import Config, Engine
from serving import cli

HR_QUESTION, IT_QUESTION = (
    "How many weeks of parental leave?",
    "Is multi-factor authentication mandatory for email?",
)


def _split_handbook(base: Path) -> tuple[Path, Path]:
    from conftest import HANDBOOK

    hr, it = base / "hr", base / "it"
    hr.mkdir(), it.mkdir()
    for name in ("leave-policy.md", "expenses.md"):
        shutil.copy(HANDBOOK / name, hr / name)
    for name in ("security.md", "remote-work.txt"):
        shutil.copy(HANDBOOK / name, it / name)
    return hr, it


def test_collections_on_two_databases_are_searched_together(
    postgres_url: str, minilm: Any, tmp_path: Path
) -> None:
    """hr in the default SQLite file, it routed to PostgreSQL: each written where its route says, both
    listed, one search over both ranked by relevance; a document found by id wherever it is."""
    hr, it = _split_handbook(tmp_path)
    config = Config(db=tmp_path / "default.db", routes=(("it", postgres_url),), cache_dir=tmp_path / "cache")
    with Engine(config, embedder=minilm) as engine:
        engine.index([hr], collection="hr")
        engine.index([it], collection="it")
        assert engine.collections() == ["hr", "it"]
        assert {c.name for c in engine.status().collections} == {"hr", "it"}
        both = engine.search(IT_QUESTION, collection="hr,it", limit=6)
        assert {h.chunk.collection for h in both.hits} == {"hr", "it"}, "one answer from both databases"
        relevances = [h.relevance for h in both.hits]
        assert relevances == sorted(relevances, reverse=True), "one ranking, by calibrated relevance"
        assert both.hits[0].chunk.path.endswith("security.md")
        assert (
            engine.search(HR_QUESTION, collection="hr,it", limit=3)
            .hits[0]
            .chunk.path.endswith("leave-policy.md")
        )
        found = both.hits[0].chunk
        assert "Information Security" in engine.document(found.document_id).text, (
            "a routed document by its id"
        )
    with psycopg.connect(postgres_url) as conn:  # where each collection was written
        held = {r[0] for r in conn.execute("SELECT name FROM collections")}
    assert held == {"it"}
    with Engine(Config(db=tmp_path / "default.db", embedder="none")) as unrouted:
        assert unrouted.collections() == ["hr"]

    # `retrievo search --collection hr,it` with the routes in the environment
    env = {"RETRIEVO_ROUTES": f"it={postgres_url}", "RETRIEVO_CACHE_DIR": str(tmp_path / "cache")}
    done = cli("search", IT_QUESTION, "--db", str(tmp_path / "default.db"), "--collection", "hr,it",
               "--json", "--limit", "3", env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["path"].endswith("security.md")
    assert postgres_url.split("@", maxsplit=1)[0] not in done.stdout + done.stderr


def test_migrate_move_carries_one_collection_to_another_store(
    postgres_url: str, minilm: Any, tmp_path: Path
) -> None:
    hr, it = _split_handbook(tmp_path)
    with Engine(Config(db=tmp_path / "default.db"), embedder=minilm) as engine:
        engine.index([hr], collection="hr")
        engine.index([it], collection="it")
    refused = cli("migrate", "--from", str(tmp_path / "default.db"), "--to", postgres_url, "--move")
    assert refused.returncode != 0 and "--collection" in refused.stderr, "--move names what it moves"
    moved = cli("migrate", "--from", str(tmp_path / "default.db"), "--to", postgres_url,
                "--collection", "it", "--move")  # fmt: skip
    assert moved.returncode == 0 and "moved collection 'it'" in moved.stdout, moved.stderr
    with Engine(Config(db=tmp_path / "default.db", embedder="none")) as before:
        assert before.collections() == ["hr"], "gone from the source once its copy was verified"
    routed = Config(db=tmp_path / "default.db", routes=(("it", postgres_url),), cache_dir=tmp_path / "cache")
    with Engine(routed, embedder=minilm) as engine:
        answer = engine.search(IT_QUESTION, collection="it", limit=3)
        assert answer.hits[0].chunk.path.endswith("security.md"), "served from its new home, vectors kept"


def test_the_config_file_holds_routes_and_replicas(tmp_path: Path) -> None:
    from retrievo.config import Config as Settings
    from retrievo.errors import ConfigError
    from retrievo.surfaces.http import settings as serve_settings

    path = tmp_path / "retrievo.toml"
    path.write_text('[serve]\nport = 9000\nstore = "postgresql://a/main"\nread_store = ["postgresql://b/main"]\n'
                    'max_replica_lag = 5\n\n[routes]\nit = "postgresql://c/it"\narchive = "/data/archive.db"\n')  # fmt: skip
    loaded = serve_settings.load(path, {})
    assert loaded.port == 9000 and loaded.extra["read_store"] == ["postgresql://b/main"]
    assert loaded.extra["routes"] == {"it": "postgresql://c/it", "archive": "/data/archive.db"}
    config = Settings.from_env(store="postgresql://a/main", routes=loaded.extra["routes"],
                               read_stores=loaded.extra["read_store"])  # fmt: skip
    assert config.routes == (("archive", "/data/archive.db"), ("it", "postgresql://c/it"))
    assert "secret" not in repr(Settings(routes=(("it", "postgresql://u:secret@c/it"),))), "URLs redacted"
    for wrong in ("it", "=postgresql://c/it", "it="):
        try:
            Settings.from_env(routes=wrong)
        except ConfigError as exc:
            assert "COLLECTION=STORE" in str(exc)
        else:
            raise AssertionError(f"{wrong!r} was taken as a route")
