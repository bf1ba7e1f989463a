"""Re-scorers: ranking signals applied to a search's answer after fusion, behind one interface.

A re-scorer reads the query (``wants``: its own reading of it, or None when it has nothing to add) and
then reorders or extends the fused hits (``rescore``). When a reading says ``deepen``, the engine asks for
``RESCORE_DEPTH`` candidates without a threshold and applies ``limit`` and ``min_score`` after the
re-scorers; otherwise they see the answer as the search made it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from retrievo.models import Filters, SearchResult
from retrievo.store.base import Store

RESCORE_DEPTH = 20


class Reading(Protocol):
    @property
    def deepen(self) -> bool:
        """Whether the re-scorer needs candidates beyond ``limit``, unthresholded."""
        ...


class Rescorer(Protocol):
    def wants(self, query: str, filters: Filters) -> Reading | None:
        """This re-scorer's reading of the query, or None when it does not apply."""
        ...

    def rescore(
        self, store: Store, collection: str, reading: Any, result: SearchResult, point: str | None
    ) -> SearchResult:  # ``reading``: what this re-scorer's own ``wants`` returned
        """The answer reordered (or extended); ``point``: the time the search read, None at HEAD."""
        ...


def cut(result: SearchResult, limit: int, min_score: float | None) -> SearchResult:
    """The first ``limit`` hits whose relevance reaches ``min_score``."""
    kept = [h for h in result.hits if min_score is None or h.relevance >= min_score]
    return replace(result, hits=tuple(kept[:limit]))
