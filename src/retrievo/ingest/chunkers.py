"""Chunkers: exact, offset-preserving spans of a document's text.

Every chunk is a slice: ``document.text[chunk.start:chunk.end] == chunk.text``. Chunkers never
rewrite text; they only choose boundaries, trimmed of surrounding whitespace. No chunk crosses a
loader section (a Markdown heading, an HTML heading, a PDF page).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum

from retrievo.errors import SourceError
from retrievo.models import ChunkDraft, Kind, LoadedDocument, Section
from retrievo.text.hashing import sha256_text

# A sentence ends at . ! ? (optionally closed by quotes/brackets) before whitespace, or at a blank line.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n[ \t]*\n\s*")
_PARAGRAPH_END = re.compile(r"\n[ \t]*\n\s*")
_LINE_END = re.compile(r"\n")
# Symbol chunks: most functions fit whole; larger ones are cut at blank lines, then at line ends.
CODE_MAX_CHARS = 1500


class ChunkerName(StrEnum):
    AUTO = "auto"
    SENTENCE = "sentence"
    PARAGRAPH = "paragraph"
    MARKDOWN = "markdown"
    CODE = "code"
    WHOLE = "whole"
    SEMANTIC = "semantic"


@dataclass(frozen=True)
class ChunkerSpec:
    name: str
    version: int
    max_chars: int
    segmenter: Callable[[str, int, int], list[tuple[int, int]]]
    packs: bool = True  # join consecutive segments up to max_chars (semantic segments come packed)


def _segments(pattern: re.Pattern[str], text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans between boundary matches inside [start, end), trimmed of whitespace, non-empty."""
    spans: list[tuple[int, int]] = []
    cursor = start
    for match in pattern.finditer(text, start, end):
        spans.append((cursor, match.start()))
        cursor = match.end()
    spans.append((cursor, end))
    return [trimmed for s, e in spans if (trimmed := _trim(text, s, e))]


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def sentence_segments(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return _segments(_SENTENCE_END, text, start, end)


def paragraph_segments(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return _segments(_PARAGRAPH_END, text, start, end)


def _split_long(text: str, start: int, end: int, max_chars: int) -> Iterator[tuple[int, int]]:
    """Cut an over-long span at the last whitespace before the limit (hard cut if there is none)."""
    while end - start > max_chars:
        window_end = start + max_chars
        cut = max((m.start() for m in re.finditer(r"\s", text[start + 1 : window_end])), default=-1)
        cut = start + 1 + cut if cut >= 0 else window_end
        piece = _trim(text, start, cut)
        if piece:
            yield piece
        next_start = _trim(text, cut, end)
        if next_start is None:
            return
        start = next_start[0]
    yield (start, end)


def code_segments(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Blocks between blank lines, then single lines: a long symbol is cut between statements."""
    segments: list[tuple[int, int]] = []
    for block_start, block_end in paragraph_segments(text, start, end):
        if block_end - block_start <= CODE_MAX_CHARS:
            segments.append((block_start, block_end))
        else:
            segments.extend(_segments(_LINE_END, text, block_start, block_end))
    return segments


def pack(text: str, segments: list[tuple[int, int]], max_chars: int) -> list[tuple[int, int]]:
    """Greedily join consecutive segments into spans of at most ``max_chars`` characters."""
    packed: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for seg_start, seg_end in segments:
        for piece in _split_long(text, seg_start, seg_end, max_chars):
            if current and piece[1] - current[0] <= max_chars:
                current = (current[0], piece[1])
            else:
                if current:
                    packed.append(current)
                current = piece
    if current:
        packed.append(current)
    return packed


def semantic_segments(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentences grouped by topic (``retrievo.ingest.semantic``), each group packed on its own."""
    from retrievo.ingest.semantic import SEMANTIC_MAX_CHARS, semantic_groups

    spans: list[tuple[int, int]] = []
    for group in semantic_groups(text, sentence_segments(text, start, end)):
        spans.extend(pack(text, group, SEMANTIC_MAX_CHARS))
    return spans


CHUNKERS: dict[str, ChunkerSpec] = {
    ChunkerName.SENTENCE: ChunkerSpec("sentence", 1, 500, sentence_segments),
    ChunkerName.PARAGRAPH: ChunkerSpec("paragraph", 1, 1500, paragraph_segments),
    # Sections are already small topical units; pack their sentences into model-sized chunks.
    ChunkerName.MARKDOWN: ChunkerSpec("markdown", 1, 1000, sentence_segments),
    # One chunk per code symbol (sections come from the code loader), long symbols split.
    ChunkerName.CODE: ChunkerSpec("code", 1, CODE_MAX_CHARS, code_segments),
    # For short, already-split sources (records, abstracts, pre-chunked corpora): one chunk each.
    ChunkerName.WHOLE: ChunkerSpec("whole", 1, 20_000, paragraph_segments),
    # The seed's strategy: boundaries where adjacent sentences' meanings diverge, chunks ≤ 1,000 chars.
    ChunkerName.SEMANTIC: ChunkerSpec("semantic", 1, 1000, semantic_segments, packs=False),
}


def parse_strategies(value: str) -> tuple[str, ...]:
    """``auto``, one chunker, or several comma-separated (each source is chunked by every one)."""
    names = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    unknown = [name for name in names if name not in (ChunkerName.AUTO, *CHUNKERS)]
    if not names or unknown:
        raise SourceError(
            f"unknown chunker {', '.join(unknown) or value!r}; choose auto, {', '.join(CHUNKERS)} "
            "or several of them separated by commas (e.g. sentence,semantic)"
        )
    return names


def resolve_chunker(name: str, document: LoadedDocument) -> ChunkerSpec:
    """``auto`` picks markdown for structured text (Markdown, HTML) and sentence for the rest."""
    if name == ChunkerName.AUTO:
        if document.kind == Kind.CODE:
            return CHUNKERS[ChunkerName.CODE]
        structured = document.media_type in ("text/markdown", "text/html")
        return CHUNKERS[ChunkerName.MARKDOWN if structured else ChunkerName.SENTENCE]
    return CHUNKERS[name]


_NEWLINE = re.compile("\n")


class LineIndex:
    """Maps character offsets to 1-based line numbers."""

    def __init__(self, text: str) -> None:
        self.newlines = [match.start() for match in _NEWLINE.finditer(text)]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_left(self.newlines, offset) + 1


def context_line(title: str, heading_path: tuple[str, ...]) -> str:
    """``Title > Heading > Subheading``; a first heading that repeats the title is said once."""
    headings = heading_path[1:] if heading_path and heading_path[0] == title else heading_path
    return " > ".join(part for part in (title, *headings) if part)


def chunk_document(document: LoadedDocument, chunker: str = ChunkerName.AUTO) -> list[ChunkDraft]:
    """Every chunk of every strategy ``chunker`` names (comma-separated), one strategy after another."""
    specs = {spec.name: spec for spec in (resolve_chunker(n, document) for n in parse_strategies(chunker))}
    return [draft for spec in specs.values() for draft in _chunk_with(document, spec)]


def _chunk_with(document: LoadedDocument, spec: ChunkerSpec) -> list[ChunkDraft]:
    text = document.text
    sections = document.sections or (Section(0, len(text)),)
    lines = LineIndex(text)
    drafts: list[ChunkDraft] = []
    for section in sections:
        context = section.context or context_line(document.title, section.heading_path)
        segments = spec.segmenter(text, section.start, section.end)
        for start, end in pack(text, segments, spec.max_chars) if spec.packs else segments:
            chunk_text = text[start:end]
            metadata: dict[str, object] = dict(section.metadata)
            if section.heading_path:
                metadata["heading_path"] = list(section.heading_path)
            if section.page is not None:
                metadata["page"] = section.page
            if isinstance(document.metadata.get("tags"), list):
                metadata["tags"] = list(document.metadata["tags"])  # front matter, shown with every hit
            if isinstance(document.metadata.get("pages"), int):
                metadata["pages"] = document.metadata["pages"]  # a PDF's page count (seed 003's page_count)
            drafts.append(
                ChunkDraft(
                    text=chunk_text,
                    start=start,
                    end=end,
                    line_start=lines.line_of(start),
                    line_end=lines.line_of(end - 1),
                    context=context,
                    chunker=spec.name,
                    chunker_version=spec.version,
                    chunk_hash=sha256_text(chunk_text),
                    metadata=metadata,
                )
            )
    return drafts
