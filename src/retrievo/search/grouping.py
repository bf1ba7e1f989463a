"""An answer as files: one row per file, the unit an agent opens (``group_by: "file"``, issue 35).

A file's score aggregates its passages, not only the best one: the chance that at least one of its best
``FILE_PASSAGES`` passages is relevant, 1 − Π(1 − relevance) (each relevance is a calibrated probability).
Files are ordered by it — unless a code question's re-scorer ranked the answer by file evidence already
(``search/code_intent.py``: its hits say ``why``), whose order and file score are kept. Distinct files count
against ``limit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from retrievo.models import Hit

FILE_PASSAGES = 3


@dataclass(frozen=True)
class FileGroup:
    hit: Hit  # the file's best passage
    score: float  # 1 − Π(1 − relevance) over its best passages; a code question's file score when ranked so
    also: tuple[Hit, ...]  # its other passages in the answer (at most FILE_PASSAGES − 1)


def by_file(hits: Sequence[Hit], limit: int) -> list[FileGroup]:
    """The answer's hits as at most ``limit`` files, best first."""
    ranked = any(hit.why for hit in hits)  # by a code question's file evidence already: kept, its score
    order: dict[str, list[Hit]] = {}
    for hit in hits:
        order.setdefault(hit.chunk.path, []).append(hit)
    groups = []
    for own in order.values():
        best = own[:FILE_PASSAGES]
        missing = 1.0
        for hit in best:
            missing *= 1.0 - min(max(hit.relevance, 0.0), 1.0)
        score = best[0].score if ranked else 1.0 - missing
        groups.append(FileGroup(best[0], round(score, 4), tuple(best[1:])))
    if not ranked:
        groups.sort(key=lambda g: -g.score)  # stable: equal files keep the answer's order
    return groups[:limit]
