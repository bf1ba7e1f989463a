"""`locate`: an issue's text → the files to open, each with the evidence that put it there (issue 35).

The keyword and dense arms' chunks over the whole collection, ranked as files by ``search/code/files.py``
(words, meaning, modules named, identifiers defined, traceback frames, the kind of file). Without vectors (a
keyword-only index, the model out of reach) it ranks on the rest. ``search`` ranks code questions the same
way (``search/code/intent.py``).
"""

from __future__ import annotations

from retrievo.models import Filters
from retrievo.search.code.files import FileHit, rank_files, read_arms
from retrievo.search.code.question import read_question
from retrievo.search.query import EmbedQuery, read_query
from retrievo.store.base import Store

__all__ = ["FileHit", "locate"]


def locate(
    store: Store, collection: str, text: str, limit: int = 10, embed_query: EmbedQuery | None = None
) -> list[FileHit]:
    """Files of ``collection`` for an issue's text, best first (``embed_query``: None for no dense arm)."""
    question = read_question(read_query(text))
    read = read_arms(store, collection, question, Filters(), embed_query)
    return rank_files(store, collection, question, read)[:limit]
