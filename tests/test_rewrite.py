"""The optional query rewriter, against a local OpenAI-compatible chat server (no LLM runs here).

The real thing is any chat endpoint; what is tested is our side of the protocol, the cache, the way
entities reach the structural arm, and that every failure falls back to the query as typed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import JsonServer
from retrievo import Config, Engine
from retrievo.search.rewrite import QueryRewriter, Rewrite


class ChatServer(JsonServer):
    def __init__(self, answer: str) -> None:
        self.reply, self.requests, self.status = answer, [], 200
        super().__init__()
        self.url = f"{self.base}/v1"

    def answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        self.requests.append((path, headers, body))
        return self.status, {"choices": [{"message": {"role": "assistant", "content": self.reply}}]}


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    server = ChatServer(
        'Sure:\n```json\n{"entities": ["Invoice.total", "not an identifier!"], "rephrasings": ["sum of lines"]}\n```'
    )
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def test_entities_and_rephrasings_are_read_and_cached(chat: ChatServer) -> None:
    rewriter = QueryRewriter(chat.url, "m", api_key="sk-secret")
    assert rewriter.rewrite("how is the amount computed") == Rewrite(("Invoice.total",), ("sum of lines",))
    rewriter.rewrite("how is the amount computed")
    assert len(chat.requests) == 1, "cached"
    path, headers, body = chat.requests[0]
    assert path == "/v1/chat/completions" and headers["Authorization"] == "Bearer sk-secret"
    assert body["messages"][1]["content"] == "how is the amount computed" and "sk-secret" not in repr(
        rewriter
    )


def test_a_failing_rewriter_leaves_the_query_as_typed(chat: ChatServer) -> None:
    chat.status = 500
    assert QueryRewriter(chat.url, "m").rewrite("q") == Rewrite()
    chat.status, chat.reply = 200, "no json here"
    assert QueryRewriter(chat.url, "m").rewrite("q") == Rewrite()
    assert QueryRewriter("http://127.0.0.1:9/v1", "m", timeout_s=1).rewrite("q") == Rewrite()


def test_entities_reach_the_structural_arm(chat: ChatServer, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "billing.py").write_text("class Invoice:\n    def total(self):\n        return 42\n")
    (repo / "notes.md").write_text("# Amounts\n\nHow the amount is computed is described elsewhere.\n")
    plain = Engine(Config(db=tmp_path / "i.db", embedder="none"))
    plain.index([repo])
    as_typed = plain.search("how is the amount computed", limit=5).hits
    assert [h.chunk.path.rsplit("/", 1)[1] for h in as_typed] == ["notes.md"], (
        "the code shares no word with it"
    )
    plain.close()
    with Engine(
        Config(db=tmp_path / "i.db", embedder="none", rewrite_url=chat.url, rewrite_model="m")
    ) as engine:
        hits = engine.search("how is the amount computed", limit=5, explain=True).hits
        code = [h for h in hits if h.chunk.metadata.get("symbol") == "billing.Invoice.total"]
        assert code and code[0].explain and "structure" in code[0].explain
