"""`locate`: an issue's text → the files to open, each with the evidence that put it there (issue 35).

The keyword arm's chunks over the whole collection, ranked as files by ``search/code_files.py`` (words,
modules named, identifiers defined, traceback frames, the kind of file). No vectors are needed: it answers
the same on a keyword-only index. ``search`` ranks code questions the same way, with the dense arm's
evidence added (``search/code_intent.py``).
"""

from __future__ import annotations

from retrievo.models import Filters
from retrievo.search.code_files import FileHit, keyword_chunks, rank_files, read_question
from retrievo.store.base import Store

__all__ = ["FileHit", "locate"]


def locate(store: Store, collection: str, text: str, limit: int = 10) -> list[FileHit]:
    """Files of ``collection`` for an issue's text, best first."""
    question = read_question(text)
    found = keyword_chunks(store, collection, question, Filters())
    return rank_files(store, collection, question, found)[:limit]
