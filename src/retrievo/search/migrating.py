"""The dense arm of a collection moving to another model: each chunk ranked by the best vector it has.

While a collection migrates (the second stage of indexing, ``operations/staged.py``, or `retrievo
regenerate --model NEW`), NEW's vectors are made chunk by chunk beside the served model's. A search then
reads both: NEW's vectors rank the chunks that have one, the served model's rank the rest, so every chunk
the migration has reached is scored by NEW at once, not only after the switch.

The two lists are on different scales (each model its own cosines) and over different chunks, so they
are merged by where each hit would stand among all the collection's chunks:

- the served model's list covers every chunk: a hit's place there is its rank;
- NEW's list covers only the share ``p`` of chunks it has reached, and the migration takes chunks in the
  order of their keys (hashes), a sample that knows nothing of the query: NEW's ``r``-th hit would stand
  about ``r / p``-th among all. ``p`` is read off the served list itself (the share of its hits NEW holds),
  so it costs no count.

A chunk NEW holds keeps only NEW's reading (where the served list has it below NEW's depth, NEW ranked it
lower: it is left out). The merged list is cut to the depth; its scores are on NEW's scale (a hit the
served model ranked takes NEW's score at the same place), so adaptive fusion and calibrated relevance
read one scale, NEW's, which is the collection's after the switch. At ``p = 0`` the arm is the served
model's alone, as before; when NEW holds every chunk, NEW's alone. No parameter is fitted.

Read again (``reread_arm``): until NEW has reached them, the chunks an answer will show are ranked by the
served model, which for the static model is up to 0.14 nDCG@10 below the bundled model's hybrid (CoSQA
dev; SciFact 0.04, the Anthropic set 0.009). So a search reads the fused answer's first ``REREAD_DEPTH``
chunks again with NEW: each one's NEW vector where the move has stored it, else made now from its text
(and kept, a few thousand per process, for the next search that meets it), and fuses again with that
list as its dense arm, the served list's rest below it. Its cost is NEW's model on at most that many
chunks (on one core, the bundled model: ~5–8 ms a CoSQA snippet, ~20–35 ms an abstract or a long code
chunk); nothing is written.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from retrievo.errors import EmbedderUnavailable
from retrievo.models import ArmHit, Chunk, Filters
from retrievo.search.query import EmbedQuery
from retrievo.store.base import Store
from retrievo.text.hashing import embedding_input, embedding_key

log = logging.getLogger(__name__)
# The hits of the merged list whose models set the adaptive fusion's bias (as its agreement is read).
BIAS_TOP = 10
# The fused answer's first chunks read again by NEW (``reread_arm``), chosen from 10 / 20 / 30 on the static
# model's move to the bundled one (benchmarks/static_model/reread_engine.py; docs/configuration.md).
REREAD_DEPTH = 20
REREAD_KEPT = 4096  # NEW's vectors made by re-reads, kept per process (by model and embedding key)
Documents = Callable[[Sequence[str]], npt.NDArray[np.float32]]


@dataclass(frozen=True)
class MigratingQuery:
    """How a search of a collection on the move embeds its query. Called, the served model's reading:
    every reader of one model (locate, re-scorers, similar) takes it as before. ``shadow`` embeds the
    query for ``shadow_model``, the model the collection is moving to; the hybrid search's dense arm
    reads both."""

    served: EmbedQuery
    shadow_model: str
    shadow: EmbedQuery
    shadow_documents: Documents | None = None  # NEW's vectors for chunk texts (``reread_arm``)
    # Whether NEW's own list is read beside the served one (a store reads NEW exactly up to a bound; past
    # it, NEW only reads the answer's first hits again).
    merged: bool = True

    def __call__(self, text: str) -> tuple[str, npt.NDArray[np.float32]]:
        return self.served(text)


@dataclass(frozen=True)
class DenseArm:
    """The dense arm's hits; the model whose scale their scores are on; which model's vector ranked each
    hit (empty when one model served them all); the adaptive fusion's bias for this arm."""

    hits: list[ArmHit]
    model_id: str
    models: dict[int, str]
    bias: float


def dense_arm(
    store: Store,
    collection: str,
    embed_query: EmbedQuery,
    text: str,
    filters: Filters,
    depth: int,
    bias_of: Callable[[str], float],
) -> DenseArm:
    """The dense arm for ``text``: one model's list, or both models' merged while the collection moves
    (``MigratingQuery``, ``merged``) and the move has reached some of the served list's chunks (before,
    NEW's hits would all stand below the depth: the query is not embedded by NEW here). Where
    NEW cannot embed the query now, the served model answers alone, as before the move; where the served
    one cannot, EmbedderUnavailable (the search is lexical-only)."""
    old_model, old_vector = embed_query(text)
    old = store.vector_search(collection, old_model, old_vector, filters, depth)
    alone = DenseArm(old, old_model, {}, bias_of(old_model))
    if not isinstance(embed_query, MigratingQuery) or not embed_query.merged or not old:
        return alone
    reached = store.chunks_with_vector([hit.chunk_id for hit in old], embed_query.shadow_model)
    if not reached:
        return alone
    try:
        new_model, new_vector = embed_query.shadow(text)
    except EmbedderUnavailable:
        return alone
    new = store.vector_search(collection, new_model, new_vector, filters, depth)
    return blended_arm(old, old_model, new, new_model, reached, depth, bias_of)


def blended_arm(
    old: list[ArmHit],
    old_model: str,
    new: list[ArmHit],
    new_model: str,
    reached: frozenset[int],
    depth: int,
    bias_of: Callable[[str], float],
) -> DenseArm:
    """Both models' lists merged by their estimated place among all chunks (the module's docstring);
    ``reached``: the served list's chunks that have a NEW vector."""
    if not new:
        return DenseArm(old, old_model, {}, bias_of(old_model))
    # The share NEW holds: k of the served list's n hits reached, the r-th best of k chunks drawn at
    # random from n stands r (n + 1) / (k + 1)-th among them, on average (exact when the served list
    # holds every chunk; never zero).
    share = (len(reached) + 1) / (len(old) + 1)
    own = {hit.chunk_id: hit.score for hit in new}
    placed: list[tuple[float, int, int, str]] = [
        (hit.rank / share, 0, hit.chunk_id, new_model) for hit in new
    ]
    # A served hit NEW reached (or listed: a batch of the move may have landed since ``reached`` was read)
    # is NEW's to rank.
    placed += [
        (float(hit.rank), 1, hit.chunk_id, old_model)
        for hit in old
        if hit.chunk_id not in reached and hit.chunk_id not in own
    ]
    placed.sort()
    placed = placed[:depth]
    if all(model == new_model for *_, model in placed):
        return DenseArm(new[: len(placed)], new_model, {}, bias_of(new_model))
    score_at = _new_scale([hit.rank / share for hit in new], [h.score for h in new], old)
    hits, models, last = [], {}, float("inf")
    for rank, (place, _, chunk_id, model) in enumerate(placed, start=1):
        score = own[chunk_id] if model == new_model else score_at(place)
        # Strictly falling, so that whatever sorts by score keeps this order (two hits at one place).
        last = min(score, math.nextafter(last, -math.inf))
        hits.append(ArmHit(chunk_id, rank, last))
        models[chunk_id] = model
    top = [models[hit.chunk_id] for hit in hits[:BIAS_TOP]]
    bias = sum(bias_of(model) for model in top) / len(top)
    return DenseArm(hits, new_model, models, bias)


def _new_scale(places: list[float], scores: list[float], old: list[ArmHit]) -> Callable[[float], float]:
    """NEW's score at a place among all chunks: between two of NEW's hits, on the line joining them;
    before NEW's first or past its last, NEW's end score moved as the served model's score moves between
    the two places (so a served hit ranked above all of NEW's scores above them, and below, below)."""

    def curve(xs: list[float], ys: list[float], x: float) -> float:
        return float(np.interp(x, xs, ys))  # on the line between two points, the end's value past them

    ranks, served = [float(h.rank) for h in old], [h.score for h in old]

    def score_at(place: float) -> float:
        if place < places[0]:
            return scores[0] + curve(ranks, served, place) - curve(ranks, served, places[0])
        if place > places[-1]:
            return scores[-1] + curve(ranks, served, place) - curve(ranks, served, places[-1])
        return curve(places, scores, place)

    return score_at


_MADE: OrderedDict[tuple[str, str], npt.NDArray[np.float32]] = OrderedDict()
_MADE_LOCK = threading.Lock()


def reread_arm(
    store: Store,
    embed_query: EmbedQuery,
    text: str,
    head: Sequence[int],
    served: DenseArm,
    fetched: dict[int, Chunk],
    bias_of: Callable[[str], float],
) -> DenseArm | None:
    """The dense arm read again by NEW over ``head``, the fused answer's first chunks (the module's
    docstring): ``head`` ordered by each chunk's cosine to NEW's query vector, on NEW's scale, then the
    rest of the ``served`` arm below them in its order (``_below``: the arm keeps its depth, so an answer
    longer than ``head`` keeps its hits' dense evidence, and calibration reads a whole list). None where it
    does not apply: the collection is not moving, NEW has reached every chunk of ``head`` and the merged
    arm ranks them by NEW already, or NEW cannot embed now (logged; the answer stands as fused). The
    chunks read are left in ``fetched``."""
    if not isinstance(embed_query, MigratingQuery) or not head:
        return None
    read_texts, model = embed_query.shadow_documents, embed_query.shadow_model
    if read_texts is None:
        return None
    reached = store.chunks_with_vector(list(head), model)
    if reached.issuperset(head) and embed_query.merged:
        return None
    fetched.update(store.get_chunks([i for i in head if i not in fetched]))
    head = [i for i in head if i in fetched]
    if not head:  # gone since they were fused (a concurrent delete): the arm stands as it was
        return None
    try:
        _, query = embed_query.shadow(text)
        vectors = _vectors(store, read_texts, model, [fetched[i] for i in head], reached, query.shape[0])
    except EmbedderUnavailable as exc:
        log.warning("the answer is not read again by %s (%s); it stands as fused", model, exc)
        return None
    cosines = vectors @ query
    order = sorted(range(len(head)), key=lambda i: (-float(cosines[i]), i))
    hits = [ArmHit(head[i], rank, float(cosines[i])) for rank, i in enumerate(order, start=1)]
    models = dict.fromkeys(head, model)
    for hit in _below(hits, served.hits):
        hits.append(hit)
        models[hit.chunk_id] = served.models.get(hit.chunk_id, served.model_id)
    return DenseArm(hits, model, models, bias_of(model))


def _below(read: list[ArmHit], served: list[ArmHit]) -> list[ArmHit]:
    """The served arm's hits that were not read again, ranked below those read in the served order, their
    scores put on NEW's scale as the chunks read both ways relate (the served scores' mean and spread over
    those chunks moved onto NEW's), each strictly below the one before and none below -1 (but by a few
    ulps), the least a cosine can be (two close served scores make the ratio of spreads large). Against
    moving the served scores down as one block, SciFact nDCG@10 0.7305 against 0.7212 at 20 read (that
    run's file was not kept: ``reread_engine.py`` measures either)."""
    new = {hit.chunk_id: hit.score for hit in read}
    pairs = [(hit.score, new[hit.chunk_id]) for hit in served if hit.chunk_id in new]
    rest = [hit for hit in served if hit.chunk_id not in new]
    if not rest or not read:
        return []
    old_scores = np.array([p[0] for p in pairs] or [0.0])
    new_scores = np.array([p[1] for p in pairs] or [0.0])
    spread = float(old_scores.std())
    ratio = float(new_scores.std()) / spread if len(pairs) > 1 and spread > 0 else 1.0
    old_mean, new_mean = float(old_scores.mean()), float(new_scores.mean())
    last, out = read[-1].score, []
    for rank, hit in enumerate(rest, start=len(read) + 1):
        score = max(-1.0, new_mean + (hit.score - old_mean) * ratio)
        last = min(score, math.nextafter(last, -math.inf))
        out.append(ArmHit(hit.chunk_id, rank, last))
    return out


def _vectors(
    store: Store,
    read_texts: Documents,
    model: str,
    chunks: Sequence[Chunk],
    reached: frozenset[int],
    dimensions: int,
) -> npt.NDArray[np.float32]:
    """NEW's vector of each chunk: stored where the move reached it (one read for them all), kept from an
    earlier re-read (by the words the model read: the key of the chunk's own text, not the key it is stored
    under, which may be another text's), or made now (one call for all the chunks that need it)."""
    out = np.zeros((len(chunks), dimensions), dtype=np.float32)
    wanted: list[tuple[int, str]] = []
    stored = store.chunk_vectors([c.chunk_id for c in chunks if c.chunk_id in reached], model, dimensions)
    for row, chunk in enumerate(chunks):
        if chunk.chunk_id in stored:
            out[row] = stored[chunk.chunk_id]
            continue
        key = embedding_key(chunk.context, chunk.text)
        with _MADE_LOCK:
            kept = _MADE.get((model, key))
            if kept is not None:
                _MADE.move_to_end((model, key))
        if kept is not None:
            out[row] = kept
        else:
            wanted.append((row, key))
    if wanted:
        rows = [row for row, _ in wanted]
        out[rows] = read_texts([embedding_input(chunks[r].context, chunks[r].text) for r in rows])
        with _MADE_LOCK:
            for row, key in wanted:
                _MADE[(model, key)] = out[row].copy()  # its own row: the batch is not kept alive by it
            while len(_MADE) > REREAD_KEPT:
                _MADE.popitem(last=False)
    return out


def _new_lock() -> None:
    """In a forked child the lock may be held by a thread that does not exist there: a new one."""
    global _MADE_LOCK  # noqa: PLW0603 - one lock per process
    _MADE_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_new_lock)
