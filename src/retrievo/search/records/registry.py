"""Registry search (seed 001): candidates from both arms, scored by the seed's profile, grouped per type.

The ``seed`` profile (default): relevance = (cos + 1) / 2 + 0.1 × boost, where the boost
adds, per query keyword, +5 if it is in the entity's path, +3 in its name, +2 in its description, +1.5 in
a tag and +1 for each of a server's tools that mentions it; and once, +5 when the entity's name is exactly
the query's keywords (``jira_create_issue`` for "create a Jira issue", ahead of ``jira_create_issue_link``:
an extension of the seed's boost, issue 56). Keywords: word characters only, stop-words and words under 3
characters dropped. Candidates: the vector arm's top k = max(3 × limit, 50) merged with
the keyword arm's (an entity found by both is scored once). Every candidate is scored before the
top-``limit``-per-type cut. Without the model (lexical-only): relevance = boost / 12.5, said in
``search_mode``. The ``hybrid`` profile ranks by retrievo's own fusion instead (docs/benchmarks.md).
Above ``SOFT`` the score is bent below 1 instead of clamped (``capped``): strictly increasing, so two
entities with strong boosts keep their order and never tie at 1.0 (issue 46).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from retrievo.errors import EmbedderUnavailable
from retrievo.models import Chunk, Filters
from retrievo.search.query import EmbedQuery
from retrievo.store.base import Store

log = logging.getLogger(__name__)
ENTITY_TYPES = ("server", "agent", "tool")
STOPWORDS = frozenset(
    "the and for with that this from into what which who how are was were can you your have has not but all any "
    "use using get find need want does do".split()
)
BOOSTS = {"path": 5.0, "name": 3.0, "description": 2.0, "tag": 1.5, "tool": 1.0, "exact_name": 5.0}
LEXICAL_DIVISOR = 12.5


SOFT, BEND = 0.9, 1.0  # scores above SOFT approach 1 over about BEND


def capped(score: float) -> float:
    """``score`` on [0, 1): itself up to ``SOFT``, then bent towards 1 (1 − 0.1·e^−(score − SOFT)/BEND)."""
    if score <= SOFT:
        return max(0.0, score)
    return 1.0 - (1.0 - SOFT) * float(np.exp(-(score - SOFT) / BEND))


def keywords(query: str) -> list[str]:
    words = re.findall(r"[^\W_]+", query.lower())
    return list(dict.fromkeys(w for w in words if len(w) >= 3 and w not in STOPWORDS))


def name_words(name: str) -> set[str]:
    """A name's words as keywords reads them: ``jira_create_issue``, ``JiraCreateIssue`` → {jira, create, issue}."""
    return set(keywords(re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ")))


def boost_of(meta: dict[str, Any], words: Sequence[str]) -> tuple[float, list[dict[str, str]]]:
    """The seed's cumulative text boost, and (servers) the tools that matched a keyword."""
    total = 0.0
    matched: dict[str, dict[str, str]] = {}
    # a tool's path is its server's ("mcpgw" names the tools of /mcpgw/ too: found with the model off)
    path = str(meta.get("path") or meta.get("server_path") or "").lower()
    name = str(meta.get("name", "")).lower()
    description = str(meta.get("description", "")).lower()
    tags = [str(t).lower() for t in meta.get("tags", []) or []]
    tools = meta.get("tools", []) or []
    if words and name_words(str(meta.get("name", ""))) == set(words):
        total += BOOSTS["exact_name"]
    for word in words:
        total += BOOSTS["path"] * (word in path) + BOOSTS["name"] * (word in name)
        total += BOOSTS["description"] * (word in description) + BOOSTS["tag"] * any(word in t for t in tags)
        for tool in tools:
            if word in str(tool.get("name", "")).lower() or word in str(tool.get("description", "")).lower():
                total += BOOSTS["tool"]
                matched.setdefault(str(tool.get("name")), {"name": str(tool.get("name")),
                                                           "description": str(tool.get("description", ""))})  # fmt: skip
    return total, list(matched.values())


@dataclass
class RegistryHit:
    entity_type: str
    relevance: float
    meta: dict[str, Any]
    chunk: Chunk
    matching_tools: list[dict[str, str]] = field(default_factory=list)
    raw: float = 0.0  # the score before ``capped``: the order (capped rounds strong boosts close together)
    also_at: list[str] = field(default_factory=list)  # the same entity's other paths (one entry an answer)


@dataclass
class RegistryResult:
    query: str
    search_mode: str
    profile: str
    servers: list[RegistryHit]
    agents: list[RegistryHit]
    tools: list[RegistryHit]
    degraded_reason: str | None = None
    baseline_id: str | None = None  # the point in time read (see SearchResult)
    as_of: str | None = None


def once_each(hits: list[RegistryHit], kind: str) -> list[RegistryHit]:
    """Best first, one entry per entity: a server or agent registered at several paths under one name
    (a card at ``/flight-booking`` and at its URL) is its best-ranked entry, the other paths in
    ``also_at``; a tool is one per server name."""
    kept: dict[tuple[str, ...], RegistryHit] = {}
    for hit in hits:
        name = str(hit.meta.get("name", "")).casefold()
        key = (name, str(hit.meta.get("server_name", "")).casefold()) if kind == "tool" else (name,)
        if key not in kept:
            kept[key] = hit
        elif kind != "tool" and (path := str(hit.meta.get("path", ""))) not in kept[key].also_at:
            kept[key].also_at.append(path)
    return list(kept.values())


MAX_PATH_CANDIDATES = 200
# The words every registry source holds (``registry:server:/path/#tool:name``): never a path's evidence.
SOURCE_WORDS = frozenset({"registry", "server", "agent", "tool"})


def path_candidates(
    store: Store, collection: str, words: Sequence[str], as_of: str | None, tools: bool = False
) -> list[int]:
    """Servers and agents whose path holds a keyword ("mcpgw" → ``/mcpgw/``): neither arm reads paths (the
    keyword index holds the embedded text), yet the seed's boost weighs a path match most. ``tools``: a
    server's tools too (without the model no vector brings them)."""
    wanted = [w for w in words if w not in SOURCE_WORDS]
    if as_of is not None or not wanted:  # at a point in time the arms' candidates are what there is
        return []
    found: list[int] = []
    for source, document_id in store.sources_containing(collection, wanted, MAX_PATH_CANDIDATES):
        path = source.split(":", 2)[-1].lower()  # registry:server:/path/ or registry:agent:https://…
        if any(word in path for word in wanted):
            found += store.current_chunk_ids(document_id)
            for tool in (
                [s for s in store.sources_under(collection, source) if "#tool:" in s] if tools else []
            ):
                if len(found) >= MAX_PATH_CANDIDATES:
                    break
                if (state := store.document_state(collection, tool)) is not None:
                    found += store.current_chunk_ids(state.document_id)
    return found[:MAX_PATH_CANDIDATES]


def _said(chunk: Chunk) -> str:
    """An entry's text and, a server's or an agent's, its path, lowered (a tool's path is its server's: the
    server itself is looked up by it)."""
    path = chunk.metadata.get("path", "") if chunk.metadata.get("entity_type") != "tool" else ""
    return f"{chunk.text} {path}".lower()


def search_registry(
    store: Store,
    collection: str,
    query: str,
    embed_query: EmbedQuery | None,
    unavailable_reason: str | None,
    limit: int = 3,
    types: Sequence[str] = ENTITY_TYPES,
    tags: Sequence[str] = (),
    include_disabled: bool = False,
    profile: str = "seed",
    fused: Callable[[int], list[tuple[int, float]]] | None = None,
    as_of: str | None = None,
) -> RegistryResult:
    """``as_of``: read the registry as it was then (None: HEAD)."""
    words = keywords(query)
    k = max(3 * limit, 50)
    # The registry's collection holds registry entries only: no filter, so both arms take their fast paths
    # (a filtered vector search is exact, over every vector). Types, tags and is_enabled apply after scoring.
    scope = Filters(as_of=as_of)
    cosines: dict[int, float] = {}
    reason = unavailable_reason
    vector: npt.NDArray[np.float32] | None = None
    if embed_query is not None and reason is None:
        try:
            model_id, vector = embed_query(query)
            cosines = {
                h.chunk_id: h.score for h in store.vector_search(collection, model_id, vector, scope, k)
            }
        except EmbedderUnavailable as exc:
            reason, vector = str(exc), None
    lexical = vector is None
    keyword_ids = [h.chunk_id for h in store.keyword_search(collection, " ".join(words) or query, scope, k)]
    candidates = list(dict.fromkeys([*cosines, *keyword_ids]))
    chunks = store.get_chunks(candidates)
    # A word no candidate holds may be an entry's path ("mcpgw"), which neither arm reads: only those words
    # are looked up, so a question whose words the arms found pays nothing for it.
    # Without the model every word is looked up: no vector brings a server's tools, which hold its path.
    unheard = [w for w in words if lexical or not any(w in _said(chunk) for chunk in chunks.values())]
    extra = [c for c in path_candidates(store, collection, unheard, as_of, lexical) if c not in chunks]
    if extra:
        chunks.update(store.get_chunks(extra))
        candidates += extra
    if not lexical and vector is not None:
        missing = [c for c in candidates if c not in cosines]
        info = store.get_collection(collection)
        if missing and info is not None and info.model_id and info.dimensions:
            # keyword-only candidates get their cosine too (one read for all): every one is scored
            for chunk_id, found in store.chunk_vectors(missing, info.model_id, info.dimensions).items():
                cosines[chunk_id] = float(found @ vector)
    ranked = dict(fused(k)) if profile == "hybrid" and fused is not None and not lexical else {}
    groups: dict[str, list[RegistryHit]] = {t: [] for t in ENTITY_TYPES}
    wanted_tags = {t.lower() for t in tags}
    for chunk_id in candidates:
        chunk = chunks.get(chunk_id)
        if chunk is None:
            continue
        meta = dict(chunk.metadata)
        kind = str(meta.get("entity_type", ""))
        if kind not in types or (not include_disabled and meta.get("is_enabled") is False):
            continue
        if wanted_tags and not wanted_tags <= {str(t).lower() for t in meta.get("tags", []) or []}:
            continue
        boost, matching = boost_of(meta, words)
        if lexical:
            relevance = boost / LEXICAL_DIVISOR
        elif profile == "hybrid":
            relevance = ranked.get(chunk_id, 0.0)
        else:
            relevance = (cosines.get(chunk_id, -1.0) + 1) / 2 + 0.1 * boost
        raw, relevance = relevance, capped(relevance)
        cosine = cosines.get(chunk_id, float("nan"))
        log.debug(  # seed 001's line for every candidate
            "Score for '%s' (type=%s): vector=%.4f, normalized_vector=%.4f, text_boost=%.1f, boost_contrib=%.4f, "
            "final=%.4f", meta.get("name"), kind, cosine, (cosine + 1) / 2, boost, 0.1 * boost, relevance,
        )  # fmt: skip
        groups[kind].append(RegistryHit(kind, round(relevance, 4), meta, chunk, matching, raw))
    for kind, hits in groups.items():
        hits.sort(key=lambda h: (-h.raw, str(h.meta.get("name"))))
        hits[:] = once_each(hits, kind)[:limit]
    mode = "lexical-only" if lexical else "hybrid"
    return RegistryResult(query, mode, profile, groups["server"], groups["agent"], groups["tool"],
                          reason if lexical else None)  # fmt: skip
