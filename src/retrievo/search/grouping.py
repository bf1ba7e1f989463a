"""An answer as files: one row per file, the unit an agent opens (``group_by: "file"``, issue 35).

Files come in the answer's order (a file where its best passage ranks), so relevance still falls down the
list (issue 46); a file's score is its best passage's relevance. Its other passages (at most ``FILE_PASSAGES`` − 1)
are named with it. Distinct files count against ``limit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from retrievo.models import Hit

FILE_PASSAGES = 3


@dataclass(frozen=True)
class FileGroup:
    hit: Hit  # the file's best passage
    score: float  # its best passage's relevance (falls down the list, as the files come)
    also: tuple[Hit, ...]  # its other passages in the answer (at most FILE_PASSAGES − 1)


def by_file(hits: Sequence[Hit], limit: int) -> list[FileGroup]:
    """The answer's hits as at most ``limit`` files, in the answer's order."""
    order: dict[str, list[Hit]] = {}
    for hit in hits:
        order.setdefault(hit.chunk.path, []).append(hit)
    groups = [FileGroup(own[0], own[0].relevance, tuple(own[1:FILE_PASSAGES])) for own in order.values()]
    return groups[:limit]
