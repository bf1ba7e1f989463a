"""Records (model elements) as the seed's tools see them: element hits, and context with one-hop expansion."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from retrievo.errors import DocumentNotFound
from retrievo.models import Hit, SearchResult
from retrievo.search.answer.answerability import NO_ANSWER
from retrievo.search.documents.library import similarity
from retrievo.store import ids
from retrievo.store.base import Store

TOP_EXPANDED = 3


@dataclass(frozen=True)
class ElementHit:
    element_id: str
    element_name: str
    element_type: str
    layer: str
    score: float
    context: str
    revision_id: str
    document_id: str
    path: str


@dataclass(frozen=True)
class RecordSource:
    n: int
    element_id: str
    element_name: str
    relevance: float
    revision_id: str
    expansion_of: int | None  # the [n] of the element it neighbours, for one-hop expansions


@dataclass(frozen=True)
class RecordContext:
    query: str
    text: str
    tokens: int
    max_tokens: int
    search_mode: str
    sources: tuple[RecordSource, ...]
    baseline_id: str | None = None  # the point in time read (see SearchResult)
    as_of: str | None = None


def element_scores(hits: Sequence[Hit]) -> list[float]:
    """Seed 000's ``score`` for each hit: its relevance on the final order (``search/answer/answerability.py``) — the
    estimated probability that the model answers the question, falling down the list, so that ``min_score``
    keeps a prefix and its default 0.5 answers ``[]`` to a question about another model (docs/records.md).
    A relationship answer is where the re-scorer placed it."""
    return [round(h.relevance, 4) for h in hits]


def similarity_scores(hits: Sequence[Hit]) -> list[float]:
    """The similarity (1 + cosine) / 2 made non-increasing down the list: ``score`` before issue 46, kept
    for ``benchmarks/quality/no_answer.py``'s before/after (a cosine of 0 is 0.5, so nearly any question passed)."""
    cosines = {
        h.chunk.chunk_id: h.explain["semantic"].score for h in hits if h.explain and "semantic" in h.explain
    }
    if not cosines:
        return [round(h.relevance, 4) for h in hits]
    floor = min(cosines.values())
    by_element = {str(h.chunk.metadata.get("element_id", "")): h.chunk.chunk_id for h in hits}
    scores, running = [], 1.0
    for hit in hits:
        cosine = cosines.get(hit.chunk.chunk_id)
        if hit.matched_via is not None:
            cosine = cosines.get(by_element.get(hit.matched_via.from_element_id, -1), cosine)
        running = min(running, similarity(floor if cosine is None else cosine))
        scores.append(running)
    return scores


def element_hit(hit: Hit) -> ElementHit:
    chunk = hit.chunk
    meta = chunk.metadata
    name = str(meta.get("element_name") or chunk.title)  # the read revision's name, as its text and type
    return ElementHit(
        str(meta.get("element_id", "")), name, str(meta.get("element_type", "")), str(meta.get("layer", "")),
        round(hit.relevance, 4), chunk.text, chunk.revision_id, chunk.document_id, chunk.path,
    )  # fmt: skip


def record_context(
    store: Store,
    result: SearchResult,
    collection: str,
    max_tokens: int,
    include_relationships: bool,
    count_tokens: Callable[[str], int],
) -> RecordContext:
    """Best elements first under ``max_tokens`` (never over); then the top elements' neighbours, marked.
    Nothing for a question the model does not answer (answerability below ``NO_ANSWER``: before, "zzqx
    flibbertigibbet" was given 1,375 tokens of elements, every one at relevance 0)."""
    if result.answerability is not None and result.answerability < NO_ANSWER:
        result = replace(result, hits=())
    # Neighbours are read as they were at the search's point (at HEAD that is their current revision).
    point = result.as_of
    blocks: list[str] = []
    sources: list[RecordSource] = []
    included: set[str] = set()

    def add(block: str, source: RecordSource, budget: int) -> bool:
        text = "\n\n".join([*blocks, block])
        if count_tokens(text) > budget:
            return False
        blocks.append(block)
        sources.append(source)
        included.add(source.element_id)
        return True

    def add_direct(hit: Hit, budget: int) -> None:
        element = element_hit(hit)
        if not element.element_id or element.element_id in included:
            return
        n = len(sources) + 1
        header = (
            f"[{n}] {element.element_name} ({element.element_type}, {element.layer}) — {element.element_id}"
        )
        if hit.matched_via is not None:  # a relationship answer: the path that reached it is the evidence
            header += f"\nReached by: {hit.matched_via.path}"
        add(f"{header}\n{element.context}", RecordSource(n, element.element_id, element.element_name,
                                                          element.score, element.revision_id, None), budget)  # fmt: skip

    # With relationships: the best elements take at most half the budget, their neighbours come next,
    # and the remaining elements fill what is left.
    first_budget = max_tokens // 2 if include_relationships else max_tokens
    for hit in result.hits[:TOP_EXPANDED]:
        add_direct(hit, first_budget)
    if include_relationships:
        for anchor in list(sources):
            hit = next(h for h in result.hits if h.chunk.metadata.get("element_id") == anchor.element_id)
            model_path = hit.chunk.path.rsplit("#", 1)[0]
            relations = hit.chunk.metadata.get("relations") or []
            for relation in relations if isinstance(relations, list) else []:
                neighbour = str(relation.get("element_id", ""))
                if not neighbour or neighbour in included:
                    continue
                state = store.document_state(collection, f"{model_path}#{neighbour}")
                document_id = (
                    state.document_id if state else ids.document_id(collection, f"{model_path}#{neighbour}")
                )
                try:
                    revision_id = store.revision_at(document_id, point) if point else None
                    if point and revision_id is None:
                        continue
                    revision = store.revision_text(document_id, revision_id)
                except DocumentNotFound:
                    continue
                n = len(sources) + 1
                header = f"[{n}] {revision.title} — one hop from [{anchor.n}] ({relation.get('type')}) — {neighbour}"
                add(f"{header}\n{revision.text}", RecordSource(n, neighbour, revision.title, 0.0,
                                                               revision.revision_id, anchor.n), max_tokens)  # fmt: skip
    for hit in result.hits:
        add_direct(hit, max_tokens)
    text = "\n\n".join(blocks)
    return RecordContext(
        result.query, text, count_tokens(text) if text else 0, max_tokens, result.search_mode, tuple(sources),
        result.baseline_id, result.as_of,
    )  # fmt: skip


@dataclass(frozen=True)
class ElementRow:
    element_id: str
    name: str
    element_type: str
    layer: str
    capability: str | None
    source: str
    document_id: str
    relations: tuple[dict[str, str], ...]


def list_elements(
    store: Store,
    collection: str,
    layer: str | None = None,
    element_type: str | None = None,
    capability: str | None = None,
) -> list[ElementRow]:
    rows = []
    for document_id, source, title, meta in store.list_records(collection):
        if not meta.get("element_id"):  # a relationship's own record
            continue
        relations = meta.get("relations")
        related = tuple(r for r in relations if isinstance(r, dict)) if isinstance(relations, list) else ()
        row = ElementRow(
            str(meta.get("element_id", "")), title, str(meta.get("element_type", "")), str(meta.get("layer", "")),
            str(meta["capability"]) if meta.get("capability") else None, source, document_id,
            related,
        )  # fmt: skip
        if layer and row.layer != layer.lower():
            continue
        if element_type and row.element_type.lower() != element_type.lower():
            continue
        if capability and row.capability != capability:
            continue
        rows.append(row)
    return rows


FACETS = ("layer", "element_type")  # the record filters whose values a model defines


def facet_values(store: Store, collection: str) -> dict[str, list[str]]:
    """The layers and element types the collection's current elements have, sorted."""
    rows = list_elements(store, collection)
    return {
        "layer": sorted({row.layer for row in rows if row.layer}),
        "element_type": sorted({row.element_type for row in rows if row.element_type}),
    }
