"""Re-scorers: ranking signals applied to a search's answer after fusion, behind one interface.

A re-scorer is handed the search's reading of the query (``search/query.py``) and says what it makes of
it (``wants``: its own reading, or None when it has nothing to add), then reorders or extends the fused
hits (``rescore``). When a reading says ``deepen``, the engine asks for
``RESCORE_DEPTH`` candidates without a threshold and applies ``limit`` and ``min_score`` after the
re-scorers; otherwise they see the answer as the search made it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

from retrievo.models import Filters, SearchResult
from retrievo.search.query import EmbedQuery, Query
from retrievo.store.base import Store

RESCORE_DEPTH = 20


class Reading(Protocol):
    @property
    def deepen(self) -> bool:
        """Whether the re-scorer needs candidates beyond ``limit``, unthresholded."""
        ...


@dataclass(frozen=True)
class Scope:
    """What the search read: a re-scorer reads the same query (its one reading), store, collection and point
    in time (None at HEAD), and embeds with the search's ``embed_query`` (None when the dense arm cannot run;
    cached, so the search's own query costs nothing again)."""

    query: Query
    store: Store
    collection: str
    point: str | None = None
    embed_query: EmbedQuery | None = None


class Rescorer(Protocol):
    def wants(self, query: Query, filters: Filters, held: frozenset[str]) -> Reading | None:
        """This re-scorer's reading of the query, or None when it does not apply; ``held``: the kinds of
        content the collection holds ("document", "code", "record", "registry")."""
        ...

    def rescore(self, scope: Scope, reading: Any, result: SearchResult) -> SearchResult:
        """The answer reordered (or extended). ``reading``: what this re-scorer's own ``wants`` returned."""
        ...


def cut(result: SearchResult, limit: int, min_score: float | None) -> SearchResult:
    """The first ``limit`` hits whose relevance reaches ``min_score``; the first hit stands for the answer
    and is kept while the answer's answerability reaches it (``search/answer/answerability.py``: its own relevance says
    how likely it is itself relevant, the answerability whether the collection answers at all)."""
    kept = [h for h in result.hits if min_score is None or h.relevance >= min_score]
    answered = (
        result.answerability is not None and min_score is not None and result.answerability >= min_score
    )
    if not kept and result.hits and answered:
        kept = [result.hits[0]]
    return replace(result, hits=tuple(kept[:limit]))
