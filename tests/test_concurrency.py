"""Searches run side by side: per-thread read connections, one model call for the queries waiting."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from retrievo.config import Config
from retrievo.embed.base import Embedder, Vectors
from retrievo.embed.local import MiniLMEmbedder
from retrievo.embed.queries import QueryEmbedder
from retrievo.engine import Engine
from retrievo.errors import CollectionNotFound, ConfigError

QUESTIONS = [
    "How do I request parental leave?",
    "who approves expenses",
    "laptop security policy",
    "travel reimbursement limits",
    "password rotation rules",
    "remote work equipment",
    "onboarding checklist for new hires",
    "what is the retention period for records",
]


class SlowEmbedder(Embedder):
    """Deterministic vectors; each model call takes a while and is recorded with its batch size."""

    model_id = "slow-8"

    def __init__(self) -> None:
        self.batches: list[int] = []

    @property
    def dimensions(self) -> int:
        return 8

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(len(texts))
        time.sleep(0.05)
        return np.array(
            [[len(t) % 7 + 1, sum(map(ord, t)) % 11 + 1, *range(1, 7)] for t in texts], dtype=np.float32
        )


def test_concurrent_queries_share_model_calls_and_get_their_own_vectors() -> None:
    slow = SlowEmbedder()
    queries = QueryEmbedder(slow, retry_after_s=0)
    texts = [f"question number {i}" for i in range(12)]
    with ThreadPoolExecutor(12) as pool:
        results = list(pool.map(queries.embed, texts))
    assert len(slow.batches) < len(texts), "queries waiting together went in one model call"
    assert sum(slow.batches) == len(texts)
    for text, (model_id, vector) in zip(texts, results, strict=True):
        assert model_id == "slow-8"
        np.testing.assert_allclose(vector, slow.embed_query(text), rtol=1e-6)
    before = len(slow.batches)
    assert queries.embed(texts[3])[1] is results[3][1], "then cached"
    assert len(slow.batches) == before


class Overlapping(SlowEmbedder):
    """Records how many model calls run at once and the texts of each call."""

    model_id = "overlapping-8"

    def __init__(self, parallel: int) -> None:
        super().__init__()
        self.parallel_queries = parallel
        self.calls: list[list[str]] = []
        self.running = 0
        self.most = 0
        self._count = threading.Lock()

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        with self._count:
            self.running += 1
            self.most = max(self.most, self.running)
            self.calls.append(list(texts))
        try:
            return super().embed_batch(texts)
        finally:
            with self._count:
                self.running -= 1


@pytest.mark.parametrize("parallel", [1, 2])
def test_query_batches_run_side_by_side_up_to_the_embedders_word(parallel: int) -> None:
    model = Overlapping(parallel)
    queries = QueryEmbedder(model, retry_after_s=0)
    texts = [f"question {'x' * (i % 3)} number {i}" for i in range(24)]
    with ThreadPoolExecutor(24) as pool:
        results = list(pool.map(queries.embed, texts))
    assert model.most == parallel, "as many model calls at once as the embedder says, never more"
    assert sorted(t for call in model.calls for t in call) == sorted(texts), "each query embedded once"
    for text, (_, vector) in zip(texts, results, strict=True):
        np.testing.assert_allclose(vector, model.embed_query(text), rtol=1e-6)


def test_queries_of_different_lengths_go_to_the_model_in_groups_of_similar_length() -> None:
    model = Overlapping(1)
    texts = ["short one", "a" * 200, "short two", "b" * 210, "tiny", "c" * 40]
    vectors = model.embed_queries(texts)
    for call in model.calls:
        lengths = [len(t) for t in call]
        assert max(lengths) <= min(lengths) * 1.25 + 12, call
    assert len(model.calls) == 3
    for text, row in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(row, model.embed_query(text), rtol=1e-6)


def test_a_batch_of_queries_embeds_as_each_query_alone(minilm: MiniLMEmbedder) -> None:
    together = minilm.embed_queries(QUESTIONS)
    for row, question in zip(together, QUESTIONS, strict=True):
        np.testing.assert_allclose(row, minilm.embed_query(question), atol=2e-3)
        assert float(row @ minilm.embed_query(question)) > 0.9999
    # queries and documents run on one graph (integer kernels): a query embeds as a document does
    as_documents = minilm.embed_documents(QUESTIONS)
    assert minilm.kernels in ("u8s8", "u8u8")
    assert float(np.min(np.sum(together * as_documents, axis=1))) > 0.9999
    # on the float graph too
    exact = MiniLMEmbedder(integer=False)
    np.testing.assert_allclose(exact.embed_queries(QUESTIONS), exact.embed_documents(QUESTIONS), atol=1e-5)
    assert exact.kernels == "float"


def test_parallel_searches_answer_as_serial_ones_while_a_writer_writes(
    tmp_path: Path, handbook: Path, minilm: MiniLMEmbedder
) -> None:
    engine = Engine(Config.from_env(db=tmp_path / "index.db"), embedder=minilm)
    engine.index([handbook])
    # Another collection is written while the searches run. BM25's statistics span the store's current
    # chunks (FTS5's N and mean length), so the writer rewrites notes of the same length: every state the
    # searches can see ranks alike, and any difference is the threads' or the writer's doing.
    extra = tmp_path / "extra"
    extra.mkdir()
    for number in range(5):
        (extra / f"note{number}.md").write_text(f"# Note {number}\n\nCanteen menu for day {number}.\n")
    engine.index([extra], collection="other")
    serial = [[hit.chunk.chunk_id for hit in engine.search(q).hits] for q in QUESTIONS * 3]
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer() -> None:
        try:
            for number in range(5):
                (extra / f"note{number}.md").write_text(
                    f"# Note {number}\n\nCanteen menu for day {number + 5}.\n"
                )
                engine.index([extra], collection="other")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    with ThreadPoolExecutor(8) as pool:
        parallel = list(
            pool.map(lambda q: [hit.chunk.chunk_id for hit in engine.search(q).hits], QUESTIONS * 3)
        )
    thread.join()
    assert not errors
    assert parallel == serial, "the same answers, whatever the threads and the writer do"
    menus = engine.search("canteen menu", collection="other", limit=10).hits
    assert {h.chunk.text.strip().rsplit(" ", 1)[-1] for h in menus} >= {"5.", "9."}, (
        "the writer's work is seen"
    )
    engine.close()


class WaitingEmbedder(Embedder):
    """Embeds a query only once the search's keyword arm has begun (or after two seconds)."""

    model_id = "waiting-8"

    def __init__(self) -> None:
        self.keyword_started = threading.Event()
        self.waiting = False
        self.saw_keyword_arm: list[bool] = []

    @property
    def dimensions(self) -> int:
        return 8

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        if self.waiting:
            self.saw_keyword_arm.append(self.keyword_started.wait(timeout=2))
        return np.array([[len(t) % 7 + 1, *range(1, 8)] for t in texts], dtype=np.float32)


def test_with_two_query_threads_the_keyword_arm_runs_while_the_query_is_embedded(
    tmp_path: Path, handbook: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiting = WaitingEmbedder()
    engine = Engine(Config.from_env(db=tmp_path / "index.db", query_threads=2), embedder=waiting)
    engine.index([handbook])
    expected = [hit.chunk.chunk_id for hit in engine.search("parental leave approval").hits]
    store = engine._open_store(create=False)
    keyword_search = store.keyword_search
    threads: list[str] = []

    def keyword_arm(*args: object, **kwargs: object) -> object:
        threads.append(threading.current_thread().name)
        waiting.keyword_started.set()
        return keyword_search(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "keyword_search", keyword_arm)
    waiting.waiting = True
    found = engine.search("who approves parental leave?")
    assert waiting.saw_keyword_arm == [True], "the keyword arm began before the query vector was made"
    assert threads and threads[0] != threading.current_thread().name
    assert found.search_mode == "hybrid" and found.hits
    waiting.waiting = False
    assert [hit.chunk.chunk_id for hit in engine.search("parental leave approval").hits] == expected
    engine.close()


def test_a_forked_child_searches_with_arm_threads_of_its_own(tmp_path: Path, handbook: Path) -> None:
    """A process forked after a hybrid search (a server's workers, say) gets a new arm pool; with the
    parent's, whose threads do not exist in the child, its first hybrid search would wait forever."""
    import subprocess
    import sys

    script = f"""
import os, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from pathlib import Path
from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.errors import CollectionNotFound
from test_concurrency import WaitingEmbedder
engine = Engine(Config.from_env(db=Path({str(tmp_path / "index.db")!r})), embedder=WaitingEmbedder())
engine.index([Path({str(handbook)!r})])
assert engine.search("parental leave").hits
pid = os.fork()
if pid == 0:
    os._exit(0 if engine.search("who approves expenses").search_mode == "hybrid" else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and "child 0" in done.stdout, done.stderr


def test_a_server_runs_a_few_searches_at_once_and_other_tools_beside_them(
    tmp_path: Path, handbook: Path, minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio

    from retrievo.surfaces.mcp import calls as mcp_calls
    from retrievo.surfaces.mcp import server as mcp_server

    monkeypatch.setattr(mcp_calls, "SEARCH_SLOTS", 2)
    engine = Engine(Config.from_env(db=tmp_path / "index.db"), embedder=minilm)
    engine.index([handbook])
    real = engine.search
    release = threading.Event()
    count = threading.Lock()
    running, most = 0, 0

    def held_search(*args: object, **kwargs: object) -> object:
        nonlocal running, most
        with count:
            running += 1
            most = max(most, running)
        try:
            release.wait(10)
            return real(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            with count:
                running -= 1

    engine.search = held_search  # type: ignore[method-assign]
    server = mcp_server.build_server(engine, toolsets=["all"])
    answers: list[object] = []

    async def main() -> None:
        async def one(question: str) -> None:
            answers.append(await server.call_tool("search", {"query": question}))

        async with anyio.create_task_group() as group:
            for question in QUESTIONS[:5]:
                group.start_soon(one, question)
            await anyio.sleep(0.3)
            with anyio.fail_after(10):  # the searches hold every search slot; other tools still answer
                status = await server.call_tool("index_status", {})
            assert not getattr(status, "is_error", False)
            assert running == 2, "two searches under way, the others waiting on the event loop"
            release.set()

    anyio.run(main)
    assert most == 2 and len(answers) == 5
    engine.close()


def test_hybrid_arms_go_beside_only_while_each_search_can_have_two_cores() -> None:
    from retrievo.search.hybrid import arms_beside

    assert arms_beside(1, cores=2) and not arms_beside(2, cores=2)
    assert arms_beside(4, cores=8) and not arms_beside(5, cores=8)
    assert arms_beside(1, cores=1), "alone, a search embeds while its keyword arm runs"


def hand_offs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time a search hands its arms to another thread."""
    from retrievo.search import hybrid

    handed: list[int] = []
    real = hybrid._side_by_side

    def spy(*arms: Any) -> Any:
        handed.append(1)
        return real(*arms)

    monkeypatch.setattr(hybrid, "_side_by_side", spy)
    return handed


def test_busy_searches_run_their_arms_inline_with_the_same_answers(
    tmp_path: Path, handbook: Path, minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrievo.search import hybrid

    engine = Engine(Config.from_env(db=tmp_path / "index.db", query_threads=2), embedder=minilm)
    engine.index([handbook])
    handed = hand_offs(monkeypatch)
    monkeypatch.setattr(hybrid, "CORES", 64)
    beside = [[(h.chunk.chunk_id, h.score) for h in engine.search(q).hits] for q in QUESTIONS]
    assert len(handed) == len(QUESTIONS), "alone on many cores: the arms went to another thread"
    monkeypatch.setattr(hybrid, "CORES", 1)
    with hybrid._under_way():  # another search under way on one core: this one keeps its arms
        inline = [[(h.chunk.chunk_id, h.score) for h in engine.search(q).hits] for q in QUESTIONS]
    assert len(handed) == len(QUESTIONS) and inline == beside and all(beside)
    with pytest.raises(CollectionNotFound):
        engine.search("anything", collection="no-such-collection")
    assert hybrid._SEARCHES[0] == 0, "every search, failed ones too, left the count"
    engine.close()


def test_a_search_uses_one_thread_by_default(
    tmp_path: Path, handbook: Path, minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RETRIEVO_QUERY_THREADS unset: no arm hand-off even alone on many cores, BLAS on one thread; the
    answers are those of a search with two threads."""
    from threadpoolctl import threadpool_info

    from retrievo.search import hybrid

    handed = hand_offs(monkeypatch)
    monkeypatch.setattr(hybrid, "CORES", 64)
    monkeypatch.delenv("RETRIEVO_QUERY_THREADS", raising=False)
    with Engine(Config.from_env(db=tmp_path / "index.db"), embedder=minilm) as engine:
        assert engine.config.query_threads == 1
        engine.index([handbook])
        alone = [[(h.chunk.chunk_id, h.score) for h in engine.search(q).hits] for q in QUESTIONS]
        assert not handed and all(alone)
        blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
        assert blas and all(pool["num_threads"] == 1 for pool in blas)
    monkeypatch.setenv("RETRIEVO_QUERY_THREADS", "2")
    with Engine(Config.from_env(db=tmp_path / "index.db"), embedder=minilm) as engine:
        assert [[(h.chunk.chunk_id, h.score) for h in engine.search(q).hits] for q in QUESTIONS] == alone
        assert handed, "two threads: the arms went beside"
    monkeypatch.setenv("RETRIEVO_QUERY_THREADS", "0")
    with pytest.raises(ConfigError, match="query_threads must be 1-64"):
        Config.from_env()


def test_a_typed_tool_answer_is_the_sdks_structured_content_with_compact_text(
    tmp_path: Path, handbook: Path, minilm: MiniLMEmbedder
) -> None:
    import json

    from mcp.server.mcpserver import MCPServer

    from retrievo.surfaces.mcp import server as mcp_server

    engine = Engine(Config.from_env(db=tmp_path / "index.db"), embedder=minilm)
    engine.index([handbook])
    server = mcp_server.build_server(engine, toolsets=["all"])

    async def both() -> tuple[Any, Any]:
        arguments = {"query": QUESTIONS[0], "limit": 3}
        return await server.call_tool("search", arguments), await MCPServer.call_tool(
            server, "search", arguments
        )

    def without_nulls(value: Any) -> Any:  # our answers leave null fields out; the SDK's carry them
        if isinstance(value, dict):
            return {k: without_nulls(v) for k, v in value.items() if v is not None}
        return [without_nulls(v) for v in value] if isinstance(value, list) else value

    ours, sdks = anyio.run(both)
    for answer in (ours.structured_content, sdks.structured_content):
        assert answer.pop("search_duration_ms") >= 0  # the one field that differs between two searches
    expected = without_nulls(sdks.structured_content)
    assert ours.structured_content == expected and ours.structured_content["results"]
    (text,) = ours.content
    shown = json.loads(text.text)
    shown.pop("search_duration_ms")
    assert shown == expected and "\n" not in text.text, "compact text, the same data"
    engine.close()


def test_a_search_looks_at_the_collections_table_once(
    tmp_path: Path, handbook: Path, minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each statement lets the GIL go and waits to get it back under load: a search's lookups of the
    collection come from memory for the generation it looked at once (ten of a search's twelve
    statements were such lookups at 100k chunks)."""
    from retrievo.search import hybrid

    engine = Engine(Config.from_env(db=tmp_path / "index.db"), embedder=minilm)
    engine.index([handbook])
    engine.search(QUESTIONS[0])  # the model loaded, the side indexes synced
    store = engine._open_store(create=False)
    statements: list[str] = []
    traced: set[int] = set()
    readers = store._readers.get  # type: ignore[attr-defined]

    def traced_reader() -> Any:
        connection = readers()
        if id(connection) not in traced:
            traced.add(id(connection))
            connection.set_trace_callback(statements.append)
        return connection

    monkeypatch.setattr(store._readers, "get", traced_reader)  # type: ignore[attr-defined]
    monkeypatch.setattr(hybrid, "CORES", 1)
    with hybrid._under_way():  # busy: the arms run on this thread
        for question in QUESTIONS:
            statements.clear()
            assert engine.search(question).hits
            lookups = [sql for sql in statements if "FROM collections" in sql or "FROM meta" in sql]
            assert lookups == ["SELECT value FROM meta WHERE key = 'generation'"], statements
    engine.close()


def test_the_tool_list_is_made_once_and_again_when_the_tools_change(tmp_path: Path) -> None:
    from retrievo.surfaces.mcp import server as mcp_server

    engine = Engine(Config.from_env(db=tmp_path / "index.db"))
    server = mcp_server.build_server(engine, toolsets=["all"])
    first = anyio.run(server.list_tools)
    again = anyio.run(server.list_tools)
    assert again == first and again is not first and len(first) > 5
    assert all('"title"' not in str(tool.input_schema).replace("'", '"') for tool in first)

    @server.tool(description="A tool registered after the first listing.")
    def added() -> str:
        return "added"

    listed = anyio.run(server.list_tools)
    assert [tool.name for tool in listed] == [tool.name for tool in first] + ["added"]
    engine.close()
