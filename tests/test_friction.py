"""What a new user hit on real material (issue 15): one test per friction point fixed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from retrievo.search.query import read_query
from retrievo.text.identifiers import keyword_terms


def test_ligatures_and_full_width_forms_match_plain_words(make_engine: Any, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    source = "# Lecture notes\n\nDeﬁnition 3. A ﬁeld is a set with two operations. Ｕｎｉｃｏｄｅ forms.\n"
    (docs / "script.txt").write_text(source)
    (docs / "other.txt").write_text("Nothing about algebra here at all.\n")
    engine = make_engine()
    engine.index([docs])
    for query in ("Definition field", "Deﬁnition", "unicode"):
        hits = engine.search(query, mode="keyword").hits
        assert hits and hits[0].chunk.path.endswith("script.txt"), query
        chunk = hits[0].chunk
        # The chunk's text is the file's, unchanged: citations stay exact.
        assert source[chunk.start : chunk.end] == chunk.text and "ﬁ" in chunk.text


def test_ligatures_in_a_pdf_are_found_by_plain_words(make_engine: Any, tmp_path: Path) -> None:
    from pdf_maker import write_ligature_pdf

    docs = tmp_path / "pdfs"
    docs.mkdir()
    write_ligature_pdf(docs / "algebra.pdf", "Deﬁnition 3. A ﬁeld is a set with two operations that ﬂow.")
    engine = make_engine()
    engine.index([docs])
    hits = engine.search("definition field flow", mode="keyword").hits
    assert hits and "Deﬁnition" in hits[0].chunk.text  # the extracted text keeps its ligatures
    revision = engine.document(hits[0].chunk.document_id)
    assert revision.text[hits[0].chunk.start : hits[0].chunk.end] == hits[0].chunk.text


def test_keyword_terms_fold_only_what_differs() -> None:
    assert keyword_terms("plain ascii words") == ""
    assert keyword_terms("a ﬁne ﬂow", "Ｔｉｔｌｅ").split() == ["Title", "fine", "flow"]


CLI = [sys.executable, "-m", "retrievo.surfaces.cli"]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as a user pipes it: no terminal, default 80 columns."""
    base = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env={**base, **(env or {})}, timeout=300, check=False
    )


def test_piped_output_keeps_whole_citations_and_reports_say_what_happened(tmp_path: Path) -> None:
    root = tmp_path / "data"
    deep = root / "a_rather_long_folder_name" / "another_quite_long_folder_name" / "and_one_more_level"
    deep.mkdir(parents=True)
    (deep / "remote_work_policy_for_everyone.md").write_text(
        "# Remote\n\nRemote work needs a manager's approval.\n"
    )
    for number in range(13):
        (deep / f"blob{number}.bin").write_bytes(b"\x00binary")
    db = str(tmp_path / "i.db")
    none = {"RETRIEVO_EMBEDDER": "none"}
    indexed = _cli("index", str(root), "--db", db, env={**none, "RETRIEVO_PROGRESS_EVERY_S": "0"})
    assert indexed.returncode == 0, indexed.stderr
    # Off a terminal: progress lines on stderr; an honest sentence about vectors; skipped files named.
    assert "file(s) read" in indexed.stderr
    assert "no chunk embedded (1 without a vector)" in indexed.stdout and "reused" not in indexed.stdout
    assert "blob0.bin" in indexed.stdout and "… and 3 more" in indexed.stdout, indexed.stdout
    progress = _cli(
        "index",
        str(tmp_path),
        "--db",
        db,
        "--json",
        "--force",
        env={**none, "RETRIEVO_PROGRESS_EVERY_S": "0"},
    )
    events = [json.loads(line) for line in progress.stderr.splitlines() if line.startswith("{")]
    assert events and events[0]["event"] == "progress" and "files" in events[0]
    stages = [event["stage"] for event in events]
    assert stages[0] == "reading" and stages[-1] == "building the side indexes", stages
    found = _cli("search", "remote approval", "--db", db, "--mode", "keyword", env=none)
    flat = "".join(found.stdout.split())  # a folded path is whole once line breaks and borders go
    for part in ("a_rather_long_folder_name", "remote_work_policy_for_everyone.md:1-3"):
        assert part in flat.replace("│", ""), found.stdout
    assert "…" not in found.stdout.split("remote_work")[0][-40:]
    embedded = _cli("embed", "--db", db, env=none)
    assert "Embedded 0 chunk(s)" in embedded.stdout and "Indexed into" not in embedded.stdout


def test_excerpt_marks_words_not_anchors_html_or_link_targets() -> None:
    from retrievo.search.answer.highlight import highlight

    text = '## Dependencies with yield { #dependencies-with-yield }\n<a href="yield.html">yield</a> [see](docs/yield.md)'
    marked = highlight(text, read_query("yield"))
    assert (
        "{ #dependencies-with-yield }" in marked
        and 'href="yield.html"' in marked
        and "(docs/yield.md)" in marked
    )
    assert marked.count("**yield**") == 2  # the heading's word and the link's text


@pytest.mark.parametrize(
    "text",
    [
        "Ärger über_das foo_bar Straße {#anchor} <b>tag</b> [x](http://y) keyboard Keyboarding KEYBOARD",
        "İstanbul keyboard tag",  # İ lowers to two characters: the regex path
        "tagtag tag-tag _tag tag_ 9tag tag9",
    ],
)
def test_words_are_matched_as_the_keyword_arm_indexes_them(text: str) -> None:
    from retrievo.search.answer import highlight as excerpts
    from retrievo.store.tokenizer import shared_tokenizer

    found = excerpts._terms(text)
    assert [term for _, _, term in found] == shared_tokenizer().tokens(text) and found
    for start, end, term in found:  # each place holds exactly its term (offsets in characters)
        assert shared_tokenizer().tokens(text[start:end]) == [term], (text[start:end], term)


def test_context_never_ends_with_a_block_too_small_to_be_evidence(make_engine: Any, handbook: Path) -> None:
    from retrievo.search.context import MIN_EVIDENCE_TOKENS

    engine = make_engine()
    engine.index([handbook])
    tokens = engine._tokens.count
    for budget in range(60, 400, 23):
        context = engine.context("remote work equipment allowance", max_tokens=budget)
        assert context.tokens <= budget
        for block in context.text.split("\n\n["):
            body = block.split("\n", 1)[1] if "\n" in block else ""
            assert tokens(body) >= MIN_EVIDENCE_TOKENS or not body, (budget, block)


def test_a_heading_is_chunked_with_the_text_under_it(tmp_path: Path) -> None:
    from retrievo.ingest.chunkers import chunk_document
    from retrievo.ingest.loaders import load_file

    page = tmp_path / "cookies.md"
    page.write_text(
        "# Response Cookies\n\n## Use a Response parameter\n\nDeclare a parameter of type Response.\n"
    )
    loaded = load_file(page, 10_000_000)
    chunks = chunk_document(loaded)
    assert all(c.text.strip() not in ("# Response Cookies", "## Use a Response parameter") for c in chunks)
    assert chunks[0].text.startswith("# Response Cookies") and "Declare a parameter" in chunks[0].text
    assert all(page.read_text()[c.start : c.end] == c.text for c in chunks)


def test_mcp_argument_errors_name_the_argument_and_what_is_allowed(tmp_path: Path, handbook: Path) -> None:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from retrievo import Config, Engine

    db = tmp_path / "m.db"
    with Engine(Config(db=db, embedder="none")) as engine:
        engine.index([handbook])
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db)],
        env={**os.environ, "RETRIEVO_EMBEDDER": "none"},
    )  # fmt: skip

    async def main() -> None:
        async with Client(server) as client:
            cases = [
                ({"query": "leave", "limt": 3}, ["unknown argument 'limt'", "search takes:", "limit"]),
                (
                    {"query": "leave", "mode": "fuzzy"},
                    ["argument 'mode'", "'hybrid', 'keyword' or 'semantic'", "'fuzzy'"],
                ),
                ({"query": "leave", "filters": {"kind": ["pdf"]}}, ["argument 'filters.kind[0]'"]),
                ({"query": "leave", "limit": 0}, ["argument 'limit'", "greater than or equal to 1"]),
                (
                    {"query": "leave", "filters": {"collection": "nope"}},
                    ["collection 'nope' does not exist", "default"],
                ),
            ]
            for arguments, expected in cases:
                result = await client.call_tool("search", arguments)
                text = result.content[0].text  # type: ignore[union-attr]
                assert result.is_error, text
                assert "pydantic" not in text and "https://" not in text, text
                for part in expected:
                    assert part in text, (part, text)

    anyio.run(main)


def test_hits_carry_front_matter_tags_as_the_docs_say(make_engine: Any, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.md").write_text(
        "---\ntags: [security, ops]\n---\n# Keys\n\nRotate API keys every quarter.\n"
    )
    engine = make_engine()
    engine.index([docs])
    hit = engine.search("rotate keys", mode="keyword").hits[0]
    assert hit.chunk.metadata["tags"] == ["security", "ops"]
    assert "front-matter tags" in (Path(__file__).parent.parent / "docs" / "concepts.md").read_text()


def test_mcp_answers_are_compact_capped_and_brief_on_request(tmp_path: Path, handbook: Path) -> None:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from retrievo import Config, Engine

    db = tmp_path / "m.db"
    with Engine(Config(db=db, embedder="none")) as engine:
        engine.index([handbook])
    env = {**os.environ, "RETRIEVO_EMBEDDER": "none"}

    def server(cap: int) -> StdioServerParameters:
        args = ["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db)]
        return StdioServerParameters(
            command=sys.executable, args=args, env={**env, "RETRIEVO_MCP_MAX_BYTES": str(cap)}
        )

    async def main() -> None:
        async with Client(server(90_000)) as client:
            full = await client.call_tool("search", {"query": "leave policy", "limit": 3, "detail": "full"})
            brief = await client.call_tool(
                "search", {"query": "leave policy", "limit": 3}
            )  # brief by default
            full_text = full.content[0].text  # type: ignore[union-attr]
            # the data once, in structuredContent; the text a short reading citing each hit (issue 66)
            assert full.structured_content is not None
            assert all(r["path"] in full_text for r in full.structured_content["results"]), full_text
            assert full.structured_content and full.structured_content["results"][0]["text"]
            assert brief.structured_content and "text" not in brief.structured_content["results"][0]
            assert len(brief.content[0].text) < len(full_text)  # type: ignore[union-attr]
        async with Client(server(1_800)) as client:
            capped = await client.call_tool("search", {"query": "leave policy", "limit": 10})
            data = capped.structured_content
            assert data is not None and not capped.is_error
            assert len(capped.content[0].text.encode()) <= 1_800  # type: ignore[union-attr]
            assert data["cut"] and "left out" in data["cut"] and len(data["results"]) < 10
            document = await client.call_tool(
                "get_document", {"uri": data["results"][0]["uri"], "max_chars": 20_000}
            )
            if document.is_error:
                assert "lower max_chars" in document.content[0].text  # type: ignore[union-attr]

    anyio.run(main)


def _noisy_pdf(path: Path) -> None:
    import re

    from pdf_maker import write_pdf

    write_pdf(path, ["Ring theory lecture one", "Ideals and quotients"])
    # A wrong startxref pointer: pypdf recovers, and warns about it.
    path.write_bytes(re.sub(rb"startxref\n\d+", b"startxref\n12", path.read_bytes()))


def test_pdf_warnings_stay_quiet_unless_verbose_and_unchanged_pdfs_are_not_parsed(tmp_path: Path) -> None:
    docs = tmp_path / "pdfs"
    docs.mkdir()
    _noisy_pdf(docs / "rings.pdf")
    db = str(tmp_path / "i.db")
    none = {"RETRIEVO_EMBEDDER": "none"}
    quiet = _cli("index", str(docs), "--db", db, env=none)
    assert quiet.returncode == 0 and "1 added" in quiet.stdout, quiet.stdout + quiet.stderr
    assert "startxref" not in quiet.stderr, quiet.stderr
    verbose = _cli("-v", "index", str(docs), "--db", db, "--force", env=none)
    assert "startxref" in verbose.stderr and "pypdf" in verbose.stderr


def test_an_unchanged_pdf_is_skipped_by_its_bytes(make_engine: Any, tmp_path: Path, monkeypatch: Any) -> None:
    from retrievo.ingest import loaders

    docs = tmp_path / "pdfs"
    docs.mkdir()
    _noisy_pdf(docs / "rings.pdf")
    engine = make_engine()
    assert engine.index([docs]).documents_added == 1
    parsed: list[str] = []
    real = loaders.load_pdf
    monkeypatch.setattr(loaders, "load_pdf", lambda *a: parsed.append(a[0]) or real(*a))
    again = engine.index([docs])
    assert again.documents_unchanged == 1 and parsed == []
    (docs / "rings.pdf").write_bytes((docs / "rings.pdf").read_bytes() + b"\n% touched\n")
    assert engine.index([docs]).documents_unchanged == 1 and len(parsed) == 1  # same text: re-parsed once


RST = """.. _deploy:

==========
Deploying
==========

Gunicorn is a WSGI HTTP server.

Behind a proxy
==============

.. code-block:: nginx

    proxy_pass http://app;

Using systemd
-------------

Write a unit file and enable it.
"""

ADOC = """= Operator Guide
:toc:

Intro text.

== Installing

----
= not a heading inside a listing
----

Run the installer.

=== On Linux

Use the package.
"""


def test_rst_asciidoc_and_notebooks_get_titles_and_heading_paths(make_engine: Any, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deploy.rst").write_text(RST)
    (docs / "guide.adoc").write_text(ADOC)
    notebook = {
        "metadata": {"kernelspec": {"language": "python"}},
        "cells": [
            {"cell_type": "markdown", "source": ["# Model training\n", "\n", "We fit a ridge regression."]},
            {
                "cell_type": "code",
                "source": "model = Ridge(alpha=0.5).fit(X, y)",
                "outputs": [{"text": "SECRET OUTPUT"}],
            },
            {"cell_type": "markdown", "source": "## Evaluation\n\nR squared on the held-out fold."},
        ],
    }
    (docs / "train.ipynb").write_text(json.dumps(notebook))
    (docs / "broken.ipynb").write_text("{not json")
    engine = make_engine()
    report = engine.index([docs])
    assert any("broken.ipynb" in s.path and "unreadable notebook" in s.reason for s in report.skipped)
    systemd = engine.search("unit file systemd", mode="keyword").hits[0].chunk
    assert systemd.title == "Deploying" and systemd.context == "Deploying > Behind a proxy > Using systemd"
    assert RST[systemd.start : systemd.end] == systemd.text and ".. code-block::" not in systemd.text
    proxy = engine.search("proxy_pass", mode="keyword").hits[0].chunk
    assert ".. code-block:: nginx" in proxy.text  # directives stay text
    linux = engine.search("package Linux", mode="keyword").hits[0].chunk
    assert linux.title == "Operator Guide" and linux.context == "Operator Guide > Installing > On Linux"
    listing = engine.search("installer", mode="keyword").hits[0].chunk
    assert "= not a heading" in listing.text and listing.context == "Operator Guide > Installing"
    ridge = engine.search("ridge regression alpha", mode="keyword").hits[0].chunk
    assert ridge.title == "Model training" and "Ridge(alpha=0.5)" in ridge.text
    assert not engine.search("SECRET OUTPUT", mode="keyword").hits
    evaluation = engine.search("held-out fold", mode="keyword").hits[0].chunk
    assert evaluation.context == "Model training > Evaluation"


def _rotation_note(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nQuarterly key rotation for the payment service.\n")
    return docs


def test_collections_delete_and_rename_keep_ids_and_lose_nothing_else(
    make_engine: Any, tmp_path: Path
) -> None:
    from retrievo.errors import CollectionNotFound

    docs = _rotation_note(tmp_path)
    engine = make_engine()
    engine.index([docs], collection="team")
    engine.index([docs], collection="other")
    engine.history.create("v1", collection="team")
    before = engine.search("key rotation", collection="team").hits[0].chunk
    engine.rename_collection("team", "platform")
    after = engine.search("key rotation", collection="platform").hits[0].chunk
    assert after.document_id == before.document_id and after.chunk_id == before.chunk_id
    assert engine.search("key rotation", collection="platform", baseline="v1").hits
    (docs / "a.md").write_text("# Alpha\n\nMonthly key rotation for the payment service.\n")
    report = engine.index([docs], collection="platform")
    assert report.documents_changed == 1 and report.documents_added == 0  # same document, new revision
    with pytest.raises(CollectionNotFound, match="platform"):
        engine.search("x", collection="team")
    with pytest.raises(Exception, match="already exists"):
        engine.rename_collection("platform", "other")
    assert engine.delete_collection("platform") == 1
    assert [c.name for c in engine.status().collections] == ["other"]
    assert engine.search("key rotation", collection="other").hits  # the other collection is untouched
    assert [d.path for d in engine.documents()] == [str(docs / "a.md")]
    chunks = engine.chunks(engine.documents()[0].document_id)
    assert chunks and chunks[0].text.startswith("# Alpha")


def test_a_new_collection_under_a_renamed_ones_old_name_takes_nothing_from_it(
    make_engine: Any, tmp_path: Path
) -> None:
    docs = _rotation_note(tmp_path)
    engine = make_engine()
    engine.index([docs], collection="team")
    engine.rename_collection("team", "platform")
    report = engine.index([docs], collection="team")  # same source, same old name: a new document
    assert report.documents_added == 1
    old = engine.search("key rotation", collection="platform", mode="keyword").hits
    new = engine.search("key rotation", collection="team", mode="keyword").hits
    assert old and new and old[0].chunk.document_id != new[0].chunk.document_id
    assert sorted(d.collection for d in engine.documents()) == ["platform", "team"]
    (docs / "a.md").write_text("# Alpha\n\nMonthly key rotation for the payment service.\n")
    assert engine.index([docs], collection="team").documents_changed == 1
    assert (
        "Quarterly" in engine.search("key rotation", collection="platform", mode="keyword").hits[0].chunk.text
    )


def test_docs_chunks_and_collection_commands(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nKey rotation.\n")
    db = str(tmp_path / "i.db")
    none = {"RETRIEVO_EMBEDDER": "none"}
    assert _cli("index", str(docs), "--db", db, "-c", "team", env=none).returncode == 0
    listed = json.loads(_cli("docs", "--db", db, "--json", env=none).stdout)
    assert [d["collection"] for d in listed] == ["team"]
    shown = _cli("chunks", listed[0]["document_id"], "--db", db, env=none)
    assert "Key rotation." in shown.stdout and "lines 1-3" in shown.stdout
    assert "renamed" in _cli("collection", "rename", "team", "ops", "--db", db, env=none).stdout
    refused = _cli("collection", "delete", "ops", "--db", db, env=none)  # no terminal to confirm on
    assert refused.returncode != 0 and json.loads(_cli("docs", "--db", db, "--json", env=none).stdout)
    gone = _cli("collection", "delete", "ops", "--yes", "--db", db, env=none)
    assert "deleted collection 'ops' (1 document(s))" in gone.stdout


def test_words_are_true_license_is_spdx_and_scores_are_described_as_they_are() -> None:
    import tomllib

    root = Path(__file__).parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert isinstance(project["license"], str)  # the SPDX form: no setuptools deprecation warning
    from retrievo.surfaces.mcp.schemas import SearchHit

    score = SearchHit.model_fields["score"].description or ""
    assert "ordered by" in score and "keyword score" in score and "Reciprocal Rank Fusion score." not in score
    index = (root / "docs" / "index.md").read_text()
    assert "fusion (adaptive by default" in index and "z-score fusion (default)" not in index


def test_query_embeddings_are_cached_and_outages_remembered() -> None:
    import numpy as np

    from retrievo.embed.base import Embedder
    from retrievo.embed.queries import QueryEmbedder
    from retrievo.errors import EmbedderUnavailable

    class Counting(Embedder):
        model_id = "counting"
        calls = 0
        down = False

        @property
        def dimensions(self) -> int:
            return 4

        def embed_batch(self, texts: Any) -> Any:
            Counting.calls += 1
            if Counting.down:
                raise EmbedderUnavailable("down")
            return np.ones((len(texts), 4), dtype=np.float32)

    queries = QueryEmbedder(Counting(), retry_after_s=60, size=2)
    first = queries.embed("alpha")[1]
    assert queries.embed("alpha")[1] is first and Counting.calls == 1  # served from the cache
    queries.embed("beta"), queries.embed("gamma")  # "alpha" falls out (size 2)
    queries.embed("alpha")
    assert Counting.calls == 4
    Counting.down = True
    with pytest.raises(EmbedderUnavailable):
        queries.embed("delta")
    assert queries.cooling_down() == "down" and queries.embed("alpha")[0] == "counting"  # cached still works


def test_progress_says_the_stage_the_rate_and_how_long_embedding_has_left(
    tmp_path: Path, embedding_server: Any
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(30):
        (docs / f"n{n}.md").write_text(f"# Note {n}\n\nLeave rule {n} applies.\n", encoding="utf-8")
    env = {"RETRIEVO_EMBEDDER": "openai", "RETRIEVO_EMBED_URL": embedding_server.url + "/v1",
           "RETRIEVO_EMBED_MODEL": "m", "RETRIEVO_PROGRESS_EVERY_S": "0"}  # fmt: skip
    done = _cli("index", str(docs), "--db", str(tmp_path / "i.db"), "--json", env=env)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    embedding = [event for event in events if event["stage"] == "embedding" and event["embedded"]]
    assert embedding and embedding[-1]["to_embed"] == 30 and embedding[-1]["chunks_per_s"] > 0
    assert embedding[-1]["eta_s"] is not None and embedding[-1]["embedded"] == 30
    assert events[-1]["stage"] == "building the side indexes" and events[0]["files_per_s"] >= 0
    plain = _cli("index", str(docs), "--db", str(tmp_path / "j.db"), env=env)
    assert "embedding:" in plain.stderr and "chunks embedded (" in plain.stderr and "s left)" in plain.stderr
