"""Chunking strategies: the seed's semantic chunker, and several strategies over one source at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from retrievo.errors import SourceError
from retrievo.ingest.chunkers import chunk_document
from retrievo.models import Filters, LoadedDocument

CATS = (
    "Cats sleep for most of the day. A kitten learns to hunt by playing with its siblings. "
    "Domestic cats purr when they are content. Their whiskers sense changes in the air. "
)
TAX = (
    "Value added tax is charged on most goods and services. Businesses file their tax return every quarter. "
    "Late filing of the return incurs a penalty. Input tax can be reclaimed on business purchases."
)


def test_semantic_chunks_are_exact_bounded_and_split_where_the_topic_changes() -> None:
    document = LoadedDocument(source="/t.txt", text=CATS + TAX, title="Notes")
    drafts = chunk_document(document, "semantic")
    assert all(document.text[d.start : d.end] == d.text and len(d.text) <= 1000 for d in drafts)
    assert {d.chunker for d in drafts} == {"semantic"}
    boundary = len(CATS.rstrip())
    assert any(d.end == boundary for d in drafts), [d.text for d in drafts]  # cats and tax never share one
    long = LoadedDocument(source="/l.txt", text=" ".join([CATS + TAX] * 8), title="Long")
    assert all(len(d.text) <= 1000 for d in chunk_document(long, "semantic"))


def test_several_strategies_per_source_search_one_or_fuse_them(make_engine: Any, handbook: Path) -> None:
    engine = make_engine()
    engine.index([handbook], chunker="sentence,paragraph")
    document = next(d for d in engine.documents() if d.path.endswith("leave-policy.md"))
    assert {c.chunker for c in engine.chunks(document.document_id)} == {"sentence", "paragraph"}
    fused = engine.search("how many days of annual leave", limit=10)
    spans: dict[str, list[tuple[int, int]]] = {}
    for hit in fused.hits:  # no hit repeats text another strategy's better hit already gave
        chunk = hit.chunk
        assert all(chunk.end <= s or e <= chunk.start for s, e in spans.get(chunk.revision_id, []))
        spans.setdefault(chunk.revision_id, []).append((chunk.start, chunk.end))
    one = engine.search("how many days of annual leave", filters=Filters(strategy="paragraph"))
    assert one.hits and {h.chunk.chunker for h in one.hits} == {"paragraph"}
    around = engine.neighbours(one.hits[0].chunk.chunk_id, before=3, after=3)
    assert {c.chunker for c in around} == {"paragraph"}  # neighbours stay within the strategy
    assembled = engine.context("annual leave", max_tokens=800)
    assert assembled.sources and assembled.text
    with pytest.raises(SourceError, match="unknown chunker"):
        engine.index([handbook], chunker="sentence,bogus")
