"""Run the arms a mode asks for, fuse them, and say how the answer was made.

Three fusions (``SearchOptions.fusion``):
- ``adaptive`` (default): z-score fusion with arm weights set per query from each arm's best match
  (``fusion.adaptive_weights``) and agreement between the arms rewarded as far as those weights are even
  (``fusion.adaptive_fusion``); chosen leave-one-dataset-out (docs/benchmarks.md).
- ``zscore``: the weighted mean of each arm's standardised scores, equal weights.
- ``rrf``: Reciprocal Rank Fusion, k = 60 as the seeds describe it.
``score`` is the fused score (ordering within one answer). ``relevance`` is the calibrated probability
that the hit is relevant (``calibration.py``), the same on both stores; ``min_score`` filters on it.
With ``explain``, each hit carries its arms' ranks and raw scores and the answer its ``fusion_weights``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from retrievo.errors import EmbedderUnavailable
from retrievo.models import AnswerSignals, ArmHit, Chunk, Filters, Hit, Kind, SearchMode, SearchResult
from retrievo.search import exact
from retrievo.search.answer import coverage
from retrievo.search.answer.calibration import calibrated
from retrievo.search.code.structure import structural_arm
from retrievo.search.fusion import (
    DEFAULT_FUSION,
    DEFAULT_K,
    adaptive_fusion,
    max_rrf_score,
    model_bias,
    rrf,
    zscore_fusion,
    zscore_relevance,
)
from retrievo.search.migrating import REREAD_DEPTH, DenseArm, dense_arm, reread_arm
from retrievo.search.query import MAX_EMBED_QUERY_CHARS, EmbedQuery, Query
from retrievo.search.rerank import DEFAULT_DEPTH, Reranker, rerank
from retrievo.search.threads import limit_blas
from retrievo.store.base import Store

KEYWORD, SEMANTIC, STRUCTURE = exact.KEYWORD, exact.SEMANTIC, "structure"
# z-score fusion: a chunk of a symbol the query names rises by this share of the fused scores' range
# (times its weight: 1.0 named, 0.8 its dependencies, 0.7 its tests). 0.5 was chosen on the tune half of
# the Anthropic code set (Pass@10 92.6 % vs 90.9 % at 1.0; held-out half equal): docs/benchmarks.md.
STRUCTURE_BONUS = 0.5
LEXICAL_ONLY = coverage.LEXICAL_ONLY
# Threads that run hybrid searches' keyword and structural arms beside the dense arm (each search
# waits for its own; more concurrent searches than this queue for a thread, the cores being busy anyway).
ARM_THREADS = 8
CORES = os.cpu_count() or 1


@dataclass(frozen=True)
class SearchOptions:
    mode: SearchMode = SearchMode.HYBRID
    limit: int = 10
    filters: Filters = field(default_factory=Filters)
    min_score: float | None = None
    explain: bool = False
    k: int = DEFAULT_K
    fusion: str = DEFAULT_FUSION
    weights: Mapping[str, float] | None = None
    depth: int = 100
    structure: bool = True  # the structural arm (code symbols the query names), hybrid mode only
    # From a query rewriter: names for the structural arm, words for the keyword arm (never the dense arm).
    entities: tuple[str, ...] = ()
    expansions: tuple[str, ...] = ()
    reranker: Reranker | None = None  # reorders the fused top ``rerank_depth`` (off by default)
    threads: int = 1  # threads this search may use (search/threads.py): above 1, arms side by side
    rerank_depth: int = DEFAULT_DEPTH
    reread_depth: int = REREAD_DEPTH  # a collection on the move: its first hits read again (0: off)


def run_search(
    store: Store,
    collection: str,
    query: Query,
    options: SearchOptions,
    embed_query: EmbedQuery | None,
    unavailable_reason: str | None = None,
) -> SearchResult:
    """``query``: the query's one reading (``search/query.py``); ``embed_query`` returns (model_id, vector)
    or raises EmbedderUnavailable."""
    limit_blas(options.threads)
    asked = options.filters.kinds
    kinds = _needed_kinds(store, collection, options.filters)
    if kinds != asked:
        options = replace(options, filters=replace(options.filters, kinds=kinds))
    with _under_way() as searches:
        beside = options.threads > 1 and arms_beside(searches)
        result = _run_search(store, collection, query, options, embed_query, unavailable_reason, beside)
    if kinds != asked:  # what the collection holds may have changed since it was read: the filter, again
        wanted = {str(kind) for kind in asked}
        result = replace(result, hits=tuple(h for h in result.hits if str(h.chunk.kind) in wanted))
    return result


def _needed_kinds(store: Store, collection: str, filters: Filters) -> tuple[Kind, ...]:
    """A kind filter that leaves out nothing the collection holds is no filter: dropped, so that the arms
    take their unfiltered paths (the keyword side index and the HNSW graph rather than an exact scan of
    every row a filter allows: semanticSearch's records filter over 40,000 records, 300 -> 5 ms). Kept at
    a point in time (the collection may have held other kinds then)."""
    if not filters.kinds or filters.as_of is not None:
        return filters.kinds
    held = store.content_kinds().get(collection)
    wanted = {str(kind) for kind in filters.kinds}
    if held and {"record" if kind == "registry" else kind for kind in held} <= wanted:
        return ()
    return filters.kinds


def arms_beside(searches: int, cores: int | None = None) -> bool:
    """Whether a hybrid search runs its keyword and structural arms on another thread while it embeds
    the query: only while each of the ``searches`` under way can have two cores. Beyond, the cores are
    busy anyway and the hand-off only costs (100 concurrent searches at 100k chunks, 2 cores: mean
    446-459 -> 422-438 ms, measured 2026-11-24, 2 cores)."""
    return 2 * searches <= max(cores or CORES, 2)


_SEARCHES = [0]  # hybrid searches under way in this process
_SEARCHES_LOCK = threading.Lock()


@contextmanager
def _under_way() -> Iterator[int]:
    """Counts this search among those under way while it runs; gives the count, this one included."""
    with _SEARCHES_LOCK:
        _SEARCHES[0] += 1
        count = _SEARCHES[0]
    try:
        yield count
    finally:
        with _SEARCHES_LOCK:
            _SEARCHES[0] -= 1


def _run_search(
    store: Store,
    collection: str,
    query: Query,
    options: SearchOptions,
    embed_query: EmbedQuery | None,
    unavailable_reason: str | None,
    arms_on_another_thread: bool,
) -> SearchResult:
    started = time.perf_counter()
    depth = max(options.depth, options.limit)
    arms: dict[str, list[ArmHit]] = {}
    reason = unavailable_reason
    semantic = (
        options.mode in (SearchMode.SEMANTIC, SearchMode.HYBRID)
        and embed_query is not None
        and reason is None
    )
    keyword_text = " ".join([query.text, *options.expansions, *options.entities])

    def keyword_arm() -> list[ArmHit]:
        return store.keyword_search(collection, keyword_text, options.filters, depth)

    def structure_arm() -> list[ArmHit]:
        # The code structure index is kept for HEAD only: at a point in time the arm stays out.
        if options.mode == SearchMode.HYBRID and options.structure and options.filters.as_of is None:
            return structural_arm(store, collection, query, options.filters, depth, options.entities)
        return []

    # Hybrid: the keyword and structural arms run on another thread while this one embeds the query and
    # walks the dense arm (the model, SQLite, tantivy, usearch and psycopg release the GIL), unless the
    # cores are busy with other searches (``arms_beside``).
    beside = (
        _side_by_side(store, keyword_arm, structure_arm)
        if semantic and options.mode == SearchMode.HYBRID and arms_on_another_thread
        else None
    )
    dense = DenseArm([], "", {}, model_bias(None))  # its model: the one moved to, where it read two
    if semantic:
        assert embed_query is not None
        try:
            dense = dense_arm(
                store,
                collection,
                embed_query,
                query.text[:MAX_EMBED_QUERY_CHARS],
                options.filters,
                depth,
                model_bias,
            )
            arms[SEMANTIC] = dense.hits
        except EmbedderUnavailable as exc:
            reason = str(exc)
        except BaseException:
            if beside is not None:
                beside.exception()  # waited for (not left running against a store the caller may close)
            raise
    degraded = options.mode != SearchMode.KEYWORD and SEMANTIC not in arms
    if beside is not None:
        arms[KEYWORD], structural = beside.result()
    else:
        if options.mode in (SearchMode.KEYWORD, SearchMode.HYBRID) or degraded:
            arms[KEYWORD] = keyword_arm()
        structural = structure_arm()
    adaptive = options.fusion == "adaptive" and options.weights is None
    fetched: dict[int, Chunk] = {}
    # Exact-match evidence wherever words are searched (hybrid, keyword, lexical-only) and the adaptive
    # fusion reads it; semantic mode stays the dense arm's reading alone.
    held = (
        exact.read(store, collection, query, options.filters, arms, fetched, adaptive)
        if KEYWORD in arms
        else exact.Exact()
    )
    fused, weights, fallback = _fuse(arms, structural, options, held, dense.bias)
    # A collection on the move: the answer's first chunks read again by the model it moves to, where that
    # model has not reached them (search/migrating.py), and fused again.
    reread = (
        reread_arm(
            store,
            embed_query,
            query.text[:MAX_EMBED_QUERY_CHARS],
            [chunk_id for chunk_id, _ in fused[: options.reread_depth]],
            dense,
            fetched,
            model_bias,
        )
        if arms.get(SEMANTIC) and embed_query is not None
        else None
    )
    if reread is not None:
        dense, arms[SEMANTIC] = reread, reread.hits
        fused, weights, fallback = _fuse(arms, structural, options, held, dense.bias)
    if structural:
        arms[STRUCTURE] = structural

    # Relevance: the calibrated probability of being relevant (search/answer/calibration.py); the fused score's
    # own scale only when neither arm returned anything (hits from the structural arm alone).
    calibrate = calibrated({arm: hits for arm, hits in arms.items() if arm in (KEYWORD, SEMANTIC)})

    def relevance_of(chunk_id: int, score: float) -> float:
        return calibrate(chunk_id) if calibrate is not None else fallback(score)

    ranks = {arm: {hit.chunk_id: hit for hit in hits} for arm, hits in arms.items()}
    if options.reranker is not None and fused:
        depth_ids = [chunk_id for chunk_id, _ in fused[: max(options.rerank_depth, options.limit)]]
        fetched.update(store.get_chunks([i for i in depth_ids if i not in fetched]))
        reranked = rerank(
            options.reranker, query.text, fused, {i: c.text for i, c in fetched.items()}, options.rerank_depth
        )
        if reranked is not None:
            ranks["fused"] = {
                chunk_id: ArmHit(chunk_id, n, score) for n, (chunk_id, score) in enumerate(fused, 1)
            }
            ranks["rerank"] = {
                chunk_id: ArmHit(chunk_id, n, score) for chunk_id, (n, score) in reranked[1].items()
            }
            fused = reranked[0]
    selected, chunks = _select(store, fused, relevance_of, options, fetched)
    # One arm alone (keyword mode, or lexical-only): its own score (BM25 for keyword), which orders the
    # hits as the standardised one does, unless structural evidence or a reranker reordered them.
    alone = [arm for arm in (KEYWORD, SEMANTIC) if arm in arms]
    own = ranks[alone[0]] if len(alone) == 1 and not structural and "rerank" not in ranks else None
    hits = tuple(
        Hit(
            chunk=chunks[chunk_id],
            score=own[chunk_id].score if own is not None and chunk_id in own else score,
            relevance=relevance,
            explain={arm: by_id[chunk_id] for arm, by_id in ranks.items() if chunk_id in by_id}
            if options.explain
            else None,
            model_id=dense.models.get(chunk_id),
        )
        for chunk_id, score, relevance in selected
        if chunk_id in chunks
    )
    mode = LEXICAL_ONLY if degraded else str(options.mode)
    return SearchResult(
        query=query.text,
        search_mode=mode,
        search_duration_ms=round((time.perf_counter() - started) * 1000, 3),
        hits=hits,
        degraded_reason=reason if degraded else None,
        fusion=options.fusion if len([a for a in (KEYWORD, SEMANTIC) if arms.get(a)]) > 1 else None,
        fusion_weights=dict(weights or dict.fromkeys(arms, 1.0))
        if options.explain and len(arms) > 1
        else None,
        model_id=dense.model_id if arms.get(SEMANTIC) else None,
        models=tuple(sorted(set(dense.models.values()))) if arms.get(SEMANTIC) else (),
        signals=AnswerSignals(
            top_cosine=max((h.score for h in arms[SEMANTIC]), default=None) if SEMANTIC in arms else None,
            keyword_ids=frozenset(h.chunk_id for h in arms.get(KEYWORD, ())),
            keyword_ran=KEYWORD in arms,
            missing=held.missing,
        ),
    )


_ARMS: ThreadPoolExecutor | None = None
_ARMS_LOCK = threading.Lock()


def _forget_arm_threads() -> None:
    """In a forked child the pool's threads do not exist: a new pool is made there on first use."""
    global _ARMS, _ARMS_LOCK, _SEARCHES_LOCK
    _ARMS, _ARMS_LOCK = None, threading.Lock()
    _SEARCHES[0], _SEARCHES_LOCK = 0, threading.Lock()


os.register_at_fork(after_in_child=_forget_arm_threads)


def _side_by_side(
    store: Store, keyword_arm: Callable[[], list[ArmHit]], structure_arm: Callable[[], list[ArmHit]]
) -> Future[tuple[list[ArmHit], list[ArmHit]]]:
    """The keyword then the structural arm, on the shared arm threads (made on first use), their reads
    sharing one look at the store (``Store.reading``)."""

    def arms() -> tuple[list[ArmHit], list[ArmHit]]:
        with store.reading():
            return keyword_arm(), structure_arm()

    global _ARMS  # noqa: PLW0603 - one small pool per process, shared by every engine
    with _ARMS_LOCK:
        if _ARMS is None:
            _ARMS = ThreadPoolExecutor(max_workers=ARM_THREADS, thread_name_prefix="retrievo-arm")
    return _ARMS.submit(arms)


def _select(
    store: Store,
    fused: list[tuple[int, float]],
    relevance_of: Callable[[int, float], float],
    options: SearchOptions,
    fetched: dict[int, Chunk],
) -> tuple[list[tuple[int, float, float]], dict[int, Chunk]]:
    """The top ``limit`` (chunk id, score, relevance) above ``min_score``, and their chunks.

    Strategies fused: when a source was chunked several ways, a chunk overlapping a better-ranked chunk
    of another strategy in the same revision says nothing new and is passed over.
    """
    selected: list[tuple[int, float, float]] = []
    taken: dict[str, list[tuple[int, int, str]]] = {}
    position = 0
    while len(selected) < options.limit and position < len(fused):
        window: list[tuple[int, float, float]] = []
        while position < len(fused) and len(window) < options.limit - len(selected):
            chunk_id, score = fused[position]
            position += 1
            relevance = relevance_of(chunk_id, score)
            if options.min_score is None or relevance >= options.min_score:
                window.append((chunk_id, score, relevance))
        missing = [chunk_id for chunk_id, _, _ in window if chunk_id not in fetched]
        if missing:
            fetched.update(store.get_chunks(missing))
        for chunk_id, score, relevance in window:
            chunk = fetched.get(chunk_id)
            if chunk is None:
                continue
            spans = taken.setdefault(chunk.revision_id, [])
            if any(
                start < chunk.end and chunk.start < end and other != chunk.chunker
                for start, end, other in spans
            ):
                continue
            spans.append((chunk.start, chunk.end, chunk.chunker))
            selected.append((chunk_id, score, relevance))
    return selected, fetched


def _fuse(
    arms: dict[str, list[ArmHit]],
    structural: list[ArmHit],
    options: SearchOptions,
    held: exact.Exact,
    bias: float,
) -> tuple[list[tuple[int, float]], Mapping[str, float] | None, Callable[[float], float]]:
    """The arms fused as ``options`` ask (named symbols' chunks raised), the weights used, and the
    fused score's own relevance scale (read where no arm's calibration applies)."""
    weights = options.weights
    if options.fusion == "rrf":
        both = {**arms, STRUCTURE: structural} if structural else arms
        fused = rrf(both, k=options.k, weights=weights)
        ceiling = max_rrf_score(list(both), k=options.k, weights=weights)

        def by_ceiling(score: float) -> float:
            return min(1.0, score / ceiling) if ceiling else 0.0

        return fused, weights, by_ceiling
    if options.fusion == "adaptive" and weights is None:
        fused, weights = adaptive_fusion(arms, held.words, held.evidence, bias)
    else:
        fused = zscore_fusion(arms, weights=weights)
    ran = sum(1 for hits in arms.values() if hits)

    def by_arms(score: float) -> float:
        return zscore_relevance(score, ran)

    return _with_structure(fused, structural), weights, by_arms


def _with_structure(fused: list[tuple[int, float]], structural: list[ArmHit]) -> list[tuple[int, float]]:
    """Raise the chunks of named symbols (and their dependencies and tests) by their weight."""
    if not structural:
        return fused
    floor = min((score for _, score in fused), default=0.0)
    spread = (max((score for _, score in fused), default=0.0) - floor) or 1.0
    scores = dict(fused)
    for hit in structural:
        scores[hit.chunk_id] = scores.get(hit.chunk_id, floor) + STRUCTURE_BONUS * hit.score * spread
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
