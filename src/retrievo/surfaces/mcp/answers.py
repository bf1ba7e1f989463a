"""The shape of the MCP tools' answers: brief or full hits, document pages, document uris, and the
server's ``instructions`` — what agents read, kept small (tools/list and answers cost tokens)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ToolError

from retrievo.models import SearchResult
from retrievo.search.answer.highlight import highlight
from retrievo.search.grouping import FileGroup
from retrievo.search.query import read_query
from retrievo.surfaces.mcp.schemas import DocumentOutput, SearchHit, SearchOutput
from retrievo.surfaces.present import label, passage_label, short_context
from retrievo.surfaces.serialize import document_uri, explain_to_dict, matched_via_of

if TYPE_CHECKING:
    from retrievo.surfaces.mcp.scope import Shown

TOOL_ROLES = {
    "document": "search finds passages (brief; detail=full for text), get_context packs cited evidence "
    "under a token budget, get_document reads a cited uri",
    "code": "locate finds the files an issue is about; find_symbol and symbol_graph look code up by name, "
    "callers and tests",
    "record": "semanticSearch and getContext answer over model elements and relations",
    "registry": "search_registry finds MCP servers, agents and tools for a need",
}
MAX_INSTRUCTIONS = 600


def holdings(kinds: frozenset[str], collections: Sequence[str] | None) -> str:
    """The ``instructions`` of ``initialize``: what this server holds and which tool answers what."""
    held = [kind for kind in ("document", "code", "record", "registry") if kind in kinds]
    names = ", ".join(list(collections or [])[:5]) or "none yet"
    if collections and len(collections) > 5:
        names += f" and {len(collections) - 5} more"
    text = (
        f"retrievo: retrieval over this user's indexed {', '.join(held) if held else 'content (nothing yet)'}"
        f" (collections: {names}). "
        + "; ".join(TOOL_ROLES[kind] for kind in ["document", *(k for k in held if k != "document")])
        + ". Cite path:lines."
    )
    return text[: MAX_INSTRUCTIONS - 1] + "…" if len(text) > MAX_INSTRUCTIONS else text


URI = re.compile(r"retrievo://document/([^/]{1,100})(?:/revision/([^/]{1,100}))?")


def parse_uri(uri: str, document_id: str | None) -> tuple[str, str | None]:
    """(document id, revision id or None) of a document uri; a tool error for anything else."""
    named = URI.fullmatch(uri)
    if named is None:
        raise ToolError(
            f"uri {uri[:120]!r} is not a retrievo document uri (retrievo://document/ID/revision/REV)"
        )
    if document_id is not None:
        raise ToolError("give uri (as a search hit has it) or document_id, not both")
    return named.group(1), named.group(2)


BRIEF_EXCERPT = 120  # characters of excerpt in a brief hit (a 3-hit answer stays well under 1.5 kB)


def search_output(
    result: SearchResult,
    query_for_highlight: str,
    detail: str = "brief",
    files: list[FileGroup] | None = None,
    shown: Shown | None = None,
) -> SearchOutput:
    """Brief: excerpt and citation (what an agent reads first; ``uri`` is the one id a follow-up needs);
    full: exact text, offsets, chunk id and metadata, never both. Null and empty fields are left out; a
    fresh vector is the norm, said only in full. ``files``: one row per file (its best passage, the file's
    score, its other passages in ``also``)."""
    hits = []
    rows = files if files is not None else [FileGroup(hit, hit.score, ()) for hit in result.hits]
    marked = read_query(query_for_highlight)
    for row in rows:
        hit = row.hit
        chunk = hit.chunk
        data: dict[str, Any] = {
            "uri": document_uri(chunk.document_id, chunk.revision_id), "collection": chunk.collection,
            "path": shown.path(chunk.path) if shown else chunk.path, "line_start": chunk.line_start, "line_end": chunk.line_end, "context": chunk.context,
            "score": round(row.score, 3), "relevance": round(hit.relevance, 3),
        }  # fmt: skip
        if row.also:
            data["also"] = [passage_label(h) for h in row.also]
        if detail == "brief":  # a code hit by its symbol, not its embedding header
            data["context"] = short_context(label(chunk))
            data["excerpt"] = highlight(chunk.text, marked, width=BRIEF_EXCERPT)
            if hit.embedding_status not in (None, "fresh"):
                data["embedding_status"] = hit.embedding_status
        else:
            data.update(
                chunk_id=chunk.chunk_id, chunk_index=chunk.ordinal, chunk_strategy=chunk.chunker,
                text=chunk.text, start=chunk.start, end=chunk.end, kind=str(chunk.kind), title=label(chunk),
                metadata=chunk.metadata or None,
                embedding_status=hit.embedding_status,
            )  # fmt: skip
        if hit.explain is not None:
            data["explain"] = explain_to_dict(hit)
        data["matched_via"] = matched_via_of(hit)
        hits.append(SearchHit.model_validate(data))
    weights = result.fusion_weights
    return SearchOutput(
        query=result.query, search_mode=result.search_mode, search_duration_ms=result.search_duration_ms,
        total_results=len(hits), degraded_reason=result.degraded_reason, results=hits,
        baseline_id=result.baseline_id, as_of=result.as_of, fusion=result.fusion,
        fusion_weights={arm: round(w, 4) for arm, w in weights.items()} if weights else None,
        coverage=result.coverage if result.coverage is not None and result.coverage < 1 else None,
        roots=shown.listed() if shown else None,
        answerability=round(result.answerability, 3) if result.answerability is not None else None,
    )  # fmt: skip


def page_of(
    revision: Any,
    start: int | None,
    end: int | None,
    line_start: int | None,
    line_end: int | None,
    max_chars: int,
    shown: Shown | None = None,
) -> DocumentOutput:
    text: str = revision.text
    line_offsets = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    if line_start is not None or line_end is not None:
        if start is not None or end is not None:
            raise ToolError("give either start/end or line_start/line_end, not both")
        first = (line_start or 1) - 1
        last = min(line_end or len(line_offsets), len(line_offsets))
        if first >= len(line_offsets) or last <= first:
            raise ToolError(f"line range is outside the document, which has {len(line_offsets)} lines")
        start = line_offsets[first]
        end = line_offsets[last] if last < len(line_offsets) else len(text)
    begin = min(start or 0, len(text))
    stop = min(len(text) if end is None else end, len(text))
    if stop < begin:
        raise ToolError(f"end ({stop}) is before start ({begin})")
    page_end = min(stop, begin + max_chars)
    return DocumentOutput(
        uri=document_uri(revision.document_id, revision.revision_id), is_current=revision.is_current,
        valid_from=revision.created_at, valid_to=revision.valid_to, baseline_id=revision.baseline_id,
        as_of=revision.as_of, path=shown.path(revision.path) if shown else revision.path, title=revision.title, kind=str(revision.kind), total_chars=len(text),
        total_lines=len(line_offsets), start=begin, end=page_end, line_start=text.count("\n", 0, begin) + 1,
        line_end=text.count("\n", 0, max(begin, page_end - 1)) + 1, text=text[begin:page_end],
        next_start=page_end if page_end < stop else None,
    )  # fmt: skip


LINE_TEXT = 240  # characters of a list item's text in the text rendering (the structured answer has it all)
WHERE = ("path", "source_path", "qualified_name", "name", "uri")  # the first one an item has
LABEL = ("context", "title", "element_type", "kind", "role", "type")
SAID = ("score", "similarity_score", "relevance")
BODY = ("excerpt", "why", "summary", "description", "text")
UNSAID = frozenset(
    {"as_of", "search_duration_ms", "fusion", "roots", "search_mode", "uri"}
)  # structured only


def rendering(tool: str, data: dict[str, Any]) -> str:
    """The text content beside ``structuredContent``: a short reading of the answer, not its JSON again.

    Scalars on one line each, each list item on one line (where, what, score, its text cut to
    ``LINE_TEXT``), a long text (``get_document``'s, ``get_context``'s) as it is. Uris, timings and
    nested detail (explain, fusion weights, metadata) stay in the structured answer only.
    """
    lines = [f"{tool}:"]
    texts: list[str] = []
    for key, value in data.items():
        if key in UNSAID:
            continue
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            lines.append(f"{key} ({len(value)}):")
            lines.extend(f"{n}. {_item(item)}" for n, item in enumerate(value, 1))
        elif isinstance(value, list):
            lines.append(f"{key}: {', '.join(map(str, value))}")
        elif isinstance(value, str) and (len(value) > LINE_TEXT or "\n" in value):
            texts.append(value)
        elif not isinstance(value, dict):
            lines.append(f"{key}: {value}")
    return "\n".join([*lines, *texts])


def _item(item: dict[str, Any]) -> str:
    where = next((str(item[key]) for key in WHERE if item.get(key) is not None), "")
    if where and "line_start" in item:
        where += f":{item['line_start']}" + (f"-{item['line_end']}" if item.get("line_end") else "")
    parts = [where] if where else []
    parts += [str(item[key]) for key in LABEL if isinstance(item.get(key), str)][:1]
    parts += [f"{key} {item[key]}" for key in SAID if isinstance(item.get(key), int | float)][:1]
    body = next((str(item[key]) for key in BODY if isinstance(item.get(key), str)), None)
    if body is not None:
        flat = " ".join(body.split())  # an exact text (detail: full) is given whole: it was asked for
        cut = len(flat) > LINE_TEXT and "text" not in item
        parts.append(flat[: LINE_TEXT - 1] + "…" if cut else flat)
    if not parts:  # an item without a known shape: its scalar fields
        parts = [f"{k}: {v}" for k, v in item.items() if isinstance(v, str | int | float | bool)]
    return " — ".join(parts)
