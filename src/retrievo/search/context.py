"""Context assembly: search → neighbours → merged spans → packed best-first under a token budget.

The budget is a hard limit: the final text is counted as a whole and blocks are dropped (or one cut at a
line's end, marked with a last line ``…``) until it fits. Each block cites exact offsets into the
revision it came from, so ``revision_text[start:end]`` is the quoted text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from retrievo.models import Hit, Kind, RevisionText
from retrievo.search.code.files import role_of
from retrievo.store.base import Store


@dataclass(frozen=True)
class Source:
    n: int
    chunk_ids: tuple[int, ...]
    document_id: str
    path: str
    title: str
    start: int
    end: int
    line_start: int
    line_end: int
    revision_id: str
    relevance: float
    symbol: str | None = None  # code: the qualified name and signature of the block's first chunk
    signature: str | None = None
    found: str | None = None  # code: the symbol of the passage the search found, when another one
    cut: bool = False  # the block ends before its span did (budget): rendered with a last line "…"
    kind: str = "document"
    chunk_type: str = "documentation"  # symbol (code with a symbol), code, documentation, record
    token_count: int = 0  # tokens of the block as packed (heading line included)


@dataclass(frozen=True)
class CodeBudget:
    """Seed 002's budget manager for code blocks: tokens kept free, a penalty per repeat of a file, a
    floor. The floor applies to a rank-based score (1 for the search's first hit, falling linearly to 0
    past its last), not to the calibrated relevance, whose scale is another (a code question's hits
    are mostly below 0.3 there, and the floor left answers without code)."""

    reserved_tokens: int = 0
    same_file_penalty: float = 0.7  # per earlier block of the same file
    relevance_floor: float = 0.3
    prose_share: float = 1.0  # of the budget, what blocks that are not code may take (docs beside code)

    @classmethod
    def for_code(cls, max_tokens: int) -> CodeBudget:
        """The one budget for an answer with code (docs/code.md): ``RESERVED_MAX`` tokens kept free — seed
        002's 500 project context + 200 task context + 300 buffer — or a quarter of a smaller budget; prose
        beside code takes at most half of the rest."""
        return cls(reserved_tokens=min(RESERVED_MAX, max_tokens // RESERVED_DIVISOR), prose_share=0.5)


RESERVED_MAX, RESERVED_DIVISOR = 1000, 4


@dataclass(frozen=True)
class AssembledContext:
    query: str
    text: str
    tokens: int
    max_tokens: int
    search_mode: str
    sources: tuple[Source, ...]
    baseline_id: str | None = None  # the point in time read (see SearchResult)
    as_of: str | None = None


@dataclass
class _Span:
    revision: RevisionText
    first: int  # index into the revision's ordered chunk ids
    last: int
    relevance: float
    core: int  # the best hit's own chunk: what is kept when the widened span does not fit
    rank: int = 0  # the search's rank (0-based) of the span's best hit: spans are packed in this order
    chunk_ids: tuple[int, ...] = ()


def _spans(store: Store, hits: tuple[Hit, ...], neighbors: int, tests_last: bool = True) -> list[_Span]:
    """Each hit widened by ±neighbors chunks; overlapping or adjacent spans of a revision merged."""
    by_revision: dict[str, list[_Span]] = {}
    ordered_ids: dict[str, list[int]] = {}
    order: list[str] = []
    strategy_of: dict[int, str] = {}
    for rank, hit in enumerate(hits):
        # Neighbours are taken within the hit's own chunking strategy (a source may be chunked several ways).
        revision_id = f"{hit.chunk.revision_id}|{hit.chunk.chunker}"
        if revision_id not in ordered_ids:
            ordered_ids[revision_id] = store.chunk_ids_of_revision(hit.chunk.revision_id, hit.chunk.chunker)
            by_revision[revision_id] = []
            order.append(revision_id)
        ids = ordered_ids[revision_id]
        position = ids.index(hit.chunk.chunk_id)
        first, last = max(0, position - neighbors), min(len(ids) - 1, position + neighbors)
        spans = by_revision[revision_id]
        revision = (
            spans[0].revision if spans else store.revision_text(hit.chunk.document_id, hit.chunk.revision_id)
        )
        merged = _Span(revision, first, last, hit.relevance, position, rank)
        keep = []
        for span in spans:
            if span.first <= merged.last + 1 and merged.first <= span.last + 1:
                best = span if span.rank <= merged.rank else merged
                merged = _Span(
                    revision,
                    min(span.first, merged.first),
                    max(span.last, merged.last),
                    best.relevance,
                    best.core,
                    best.rank,
                )
            else:
                keep.append(span)
        by_revision[revision_id] = [*keep, merged]
        strategy_of[id(merged)] = hit.chunk.chunker
    all_spans = [span for revision_id in order for span in by_revision[revision_id]]
    all_spans.sort(key=lambda s: s.rank)  # best-first as the search ranked them
    if tests_last:  # the code blocks' places go to the implementation first, then its tests; prose stays put
        slots = [i for i, s in enumerate(all_spans) if s.revision.kind == Kind.CODE]
        code = sorted(
            (all_spans[i] for i in slots), key=lambda s: (role_of(s.revision.path) == "test", s.rank)
        )
        for i, span in zip(slots, code, strict=True):
            all_spans[i] = span
    return [_with_ids(s, ordered_ids[f"{s.revision.revision_id}|{strategy_of[id(s)]}"]) for s in all_spans]


def _with_ids(span: _Span, ids: list[int]) -> _Span:
    span.chunk_ids = tuple(ids[span.first : span.last + 1])
    return span


def _source(store: Store, span: _Span, n: int, chunk_ids: tuple[int, ...]) -> Source:
    core_id = span.chunk_ids[span.core - span.first] if span.chunk_ids else chunk_ids[0]
    core_id = core_id if core_id in chunk_ids else chunk_ids[0]
    chunks = store.get_chunks([chunk_ids[0], chunk_ids[-1], core_id])
    first, last, core = chunks[chunk_ids[0]], chunks[chunk_ids[-1]], chunks[core_id]
    # A block is labelled with the symbol its text opens with; the passage the search found is named
    # beside it when that is another symbol (a neighbour came first).
    symbol, signature = first.metadata.get("symbol"), first.metadata.get("signature")
    found = (
        core.metadata.get("symbol")
        if core.kind == Kind.CODE and core.metadata.get("symbol") != symbol
        else None
    )
    return Source(
        n=n, chunk_ids=chunk_ids, document_id=span.revision.document_id, path=span.revision.path,
        title=span.revision.title, start=first.start, end=last.end, line_start=first.line_start,
        line_end=last.line_end, revision_id=span.revision.revision_id, relevance=round(span.relevance, 4),
        symbol=str(symbol) if symbol and first.kind == Kind.CODE else None,
        signature=str(signature) if signature and first.kind == Kind.CODE else None, kind=str(first.kind),
        chunk_type=CHUNK_TYPES[first.kind] if not (symbol and first.kind == Kind.CODE) else "symbol",
        found=str(found) if found else None,
    )  # fmt: skip


_ASKS_TESTS = re.compile(r"\btest", re.IGNORECASE)  # a question about tests keeps them where they rank
CHUNK_TYPES = {Kind.CODE: "code", Kind.DOCUMENT: "documentation", Kind.RECORD: "record"}


# A block cut to fit the budget must keep at least this many tokens of text to be worth citing.
MIN_EVIDENCE_TOKENS = 12


def assemble(
    store: Store,
    query: str,
    hits: tuple[Hit, ...],
    search_mode: str,
    max_tokens: int,
    neighbors: int,
    count_tokens: Callable[[str], int],
    code_budget: CodeBudget | None = None,
) -> AssembledContext:
    """Best spans first, packed under ``max_tokens`` (never over). Code blocks follow ``code_budget``."""
    blocks: list[tuple[str, Source]] = []
    used = 0
    budget = code_budget or CodeBudget(same_file_penalty=1.0, relevance_floor=0.0)
    available = max(1, max_tokens - budget.reserved_tokens)
    seen_code_files: dict[str, int] = {}
    prose_used, prose_available = 0, int(available * budget.prose_share)
    for span in _spans(store, hits, neighbors, tests_last=not _ASKS_TESTS.search(query)):
        is_code = span.revision.kind == Kind.CODE
        if code_budget is not None and is_code:
            repeats = seen_code_files.get(span.revision.path, 0)
            score = 1.0 - span.rank / max(1, len(hits))  # rank-based, as the seed's candidate scores
            if score * budget.same_file_penalty**repeats <= budget.relevance_floor:
                continue
            seen_code_files[span.revision.path] = repeats + 1
        limit = available if is_code else min(available, used + prose_available - prose_used)
        n = len(blocks) + 1
        source = _source(store, span, n, span.chunk_ids)
        block = _render(source, span.revision.text[source.start : source.end])
        separator = count_tokens("\n\n") if blocks else 0
        cost = count_tokens(block) + separator
        if used + cost > limit:
            # Too big with its neighbours: keep the best hit's own chunk, cut to fit if need be.
            core_id = span.chunk_ids[span.core - span.first]
            source = _source(store, span, n, (core_id,))
            block = _render(source, span.revision.text[source.start : source.end])
            cost = count_tokens(block) + separator
            if used + cost > limit:
                cut = _cut_to_fit(source, span.revision.text, limit - used - separator, count_tokens)
                if cut is None:
                    continue
                source, block = cut
                cost = count_tokens(block) + separator
        blocks.append((block, replace(source, token_count=count_tokens(block))))
        used += cost
        prose_used += 0 if is_code else cost
    text = "\n\n".join(block for block, _ in blocks)
    while blocks and count_tokens(text) > available:  # belt and braces: the whole is what counts
        blocks.pop()
        text = "\n\n".join(block for block, _ in blocks)
    return AssembledContext(
        query=query, text=text, tokens=count_tokens(text) if text else 0, max_tokens=max_tokens,
        search_mode=search_mode, sources=tuple(source for _, source in blocks),
    )  # fmt: skip


CUT_MARK = "…"  # the last line of a block cut to fit the budget


def _render(source: Source, text: str) -> str:
    where = f"{source.path}:{source.line_start}-{source.line_end}"
    tail = f"\n{CUT_MARK}" if source.cut else ""
    if source.symbol:
        # The signature is said when the block does not open with it (a later part of a long symbol).
        shown = source.signature and not text.lstrip().startswith(source.signature[:40])
        signature = f"\n{source.signature}" if shown else ""
        found = f" (found: {source.found})" if source.found else ""
        return f"[{source.n}] {source.symbol}{found} — {where}{signature}\n{text}{tail}"
    return f"[{source.n}] {source.title} — {where}\n{text}{tail}"


def _cut_to_fit(
    source: Source, revision_text: str, budget: int, count_tokens: Callable[[str], int]
) -> tuple[Source, str] | None:
    """The longest prefix of the span, ending at a line's end (at whitespace only when its first line alone
    is too long), whose block — with its last line "…" — fits the budget.

    None when that prefix is too short to be evidence (fewer than ``MIN_EVIDENCE_TOKENS`` tokens of
    text: a lone heading or word) — the budget is then left unused rather than spent on noise.
    """
    low, high = 0, source.end - source.start
    best: tuple[Source, str] | None = None
    while low < high:
        middle = (low + high + 1) // 2
        end = source.start + middle
        newline = revision_text.rfind("\n", source.start, end) if end < source.end else end
        if newline > source.start:
            end = newline
        else:  # one long first line: at whitespace
            while end > source.start and not revision_text[end - 1].isspace() and end < source.end:
                end -= 1
            end = end if end > source.start else source.start + middle
        text = revision_text[source.start : end].rstrip()
        if not text:
            low = middle
            continue
        line_end = source.line_start + text.count("\n")
        trimmed = Source(
            **{
                **source.__dict__,
                "end": source.start + len(text),
                "line_end": line_end,
                "cut": source.start + len(text) < source.end,
            }
        )
        block = _render(trimmed, text)
        if count_tokens(block) <= budget:
            best, low = (trimmed, block), middle
        else:
            high = middle - 1
    if best is not None and count_tokens(revision_text[best[0].start : best[0].end]) < MIN_EVIDENCE_TOKENS:
        return None
    return best
