"""Chunkers cut exact spans: document_text[start:end] == chunk.text, for any text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from retrievo.ingest.chunkers import CHUNKERS, chunk_document
from retrievo.ingest.loaders import load_markdown
from retrievo.models import LoadedDocument

PROSE = st.text(
    alphabet=st.sampled_from(list("abcdefghij KLM.!?\n\n\t\"')é😀#-")) | st.characters(), max_size=3000
)


@settings(max_examples=150, deadline=None)
@given(text=PROSE, chunker=st.sampled_from(sorted(CHUNKERS)))
def test_every_chunk_is_the_exact_slice_of_the_document_text(text: str, chunker: str) -> None:
    document = LoadedDocument(source="/doc.txt", text=text, title="Doc")
    chunks = chunk_document(document, chunker)
    limit = CHUNKERS[chunker].max_chars
    previous_end = 0
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.text.strip() == chunk.text and chunk.text
        assert len(chunk.text) <= limit
        assert chunk.start >= previous_end, "chunks are ordered and never overlap"
        assert chunk.line_start == text.count("\n", 0, chunk.start) + 1
        assert chunk.line_end == text.count("\n", 0, chunk.end - 1) + 1
        previous_end = chunk.end
    covered = "".join(c.text for c in chunks)
    assert "".join(text.split()) == "".join(covered.split()), "no visible character is lost"


@settings(max_examples=100, deadline=None)
@given(
    sections=st.lists(
        st.tuples(st.integers(1, 4), st.text(alphabet="abcxyz ", min_size=1, max_size=20), PROSE), max_size=6
    )
)
def test_markdown_chunks_never_cross_a_heading_after_text(sections: list[tuple[int, str, str]]) -> None:
    parts = []
    for level, title, body in sections:
        clean = body.replace("#", "").replace("`", "").replace("~", "").replace("-", "")
        parts.append(f"{'#' * level} H{title.strip() or 'x'}\n{clean}\n")
    text = "".join(parts) or "empty"
    document = load_markdown("/doc.md", text)
    for chunk in chunk_document(document, "markdown"):
        assert text[chunk.start : chunk.end] == chunk.text
        # Headings only lead a chunk: an empty heading joins the section under it, nothing crosses a later one.
        lines = chunk.text.splitlines()
        leading = next(
            (i for i, line in enumerate(lines) if not line.startswith("#") and line.strip()), len(lines)
        )
        assert not any(line.startswith("#") for line in lines[leading:]), chunk.text


def test_markdown_heading_path_becomes_the_context() -> None:
    text = "# Guide\n\nIntro.\n\n## Install\n\nRun make.\n\n### On Linux\n\nUse apt.\n\n## Use\n\nSearch.\n"
    chunks = chunk_document(load_markdown("/g.md", text), "markdown")
    contexts = {c.text.splitlines()[0]: c.context for c in chunks}
    assert contexts["### On Linux"] == "Guide > Install > On Linux"
    assert contexts["## Use"] == "Guide > Use"
    assert chunks[0].metadata["heading_path"] == ["Guide"]


def test_headings_inside_code_fences_are_not_sections() -> None:
    text = "# Real\n\n```python\n# comment, not a heading\nx = 1\n```\n\nAfter.\n"
    chunks = chunk_document(load_markdown("/c.md", text), "markdown")
    assert len(chunks) == 1 and "# comment" in chunks[0].text


def test_sentence_chunker_keeps_sentences_whole_when_they_fit() -> None:
    sentences = [f"Sentence number {i} says something useful about topic {i}." for i in range(40)]
    text = " ".join(sentences)
    chunks = chunk_document(LoadedDocument(source="/s.txt", text=text, title="S"), "sentence")
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.endswith(".") and chunk.text.startswith("Sentence")
        assert chunk.chunker == "sentence" and chunk.chunker_version == 1
