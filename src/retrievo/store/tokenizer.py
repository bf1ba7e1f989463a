"""Keyword tokens exactly as the SQLite store's FTS5 index makes them, for stores without FTS5.

Why SQLite itself: the PostgreSQL store scores BM25 the way FTS5 does, and keyword rankings on the
two stores must agree. A re-implementation of FTS5's ``porter unicode61 remove_diacritics 2``
tokenizer would drift (its Porter variant differs from snowball's on words like -logy and -bly),
so we ask FTS5 to tokenize, through an in-memory table and its ``fts5vocab`` instance view.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator, Sequence

from retrievo.ingest.identifiers import keyword_terms

FTS5_TOKENIZER = "porter unicode61 remove_diacritics 2"
BATCH = 500
RESET_AFTER = 2_000  # texts tokenized before the scratch table is made anew


class Fts5Tokenizer:
    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        # FTS5 truncates a very long term at a byte limit, which can split a UTF-8 character.
        self._db.text_factory = lambda raw: raw.decode("utf-8", "replace")
        self._lock = threading.Lock()
        self._written = 0
        self._reset()

    def _reset(self) -> None:
        """A new, empty scratch table. FTS5 keeps deleted rows as tombstones until its segments merge,
        so after many texts every later read of the vocabulary walks them: 10 ms for one query's terms
        after 20,000 texts went through (measured). Dropping the table forgets them."""
        self._db.execute("DROP TABLE IF EXISTS scratch_terms")
        self._db.execute("DROP TABLE IF EXISTS scratch")
        self._db.execute(f"CREATE VIRTUAL TABLE scratch USING fts5(body, tokenize='{FTS5_TOKENIZER}')")
        self._db.execute("CREATE VIRTUAL TABLE scratch_terms USING fts5vocab(scratch, 'instance')")
        self._written = 0

    def _empty_scratch(self, coming: int) -> None:
        """Before ``coming`` texts are written: the scratch table emptied (made anew now and then)."""
        if self._written > RESET_AFTER:
            self._reset()
        else:
            self._db.execute("DELETE FROM scratch")
        self._written += coming

    def _scratch_batches(self, texts: Sequence[str]) -> Iterator[int]:
        """Writes ``texts`` into the scratch table a batch at a time (rowid = 1 + position in ``texts``);
        yields after each batch, for the caller to read the vocabulary. Call with the lock held."""
        for begin in range(0, len(texts), BATCH):
            batch = texts[begin : begin + BATCH]
            self._empty_scratch(len(batch))
            self._db.executemany(
                "INSERT INTO scratch (rowid, body) VALUES (?, ?)",
                [(begin + i + 1, text) for i, text in enumerate(batch)],
            )
            yield begin

    def term_counts(self, texts: Sequence[str]) -> list[Counter[str]]:
        """For each text, how often each (stemmed, folded) term occurs in it."""
        counts: list[Counter[str]] = [Counter() for _ in texts]
        with self._lock:
            for _ in self._scratch_batches(texts):
                for term, row in self._db.execute("SELECT term, doc FROM scratch_terms"):
                    counts[row - 1][term] += 1
            self._db.execute("DELETE FROM scratch")
        return counts

    def terms(self, text: str) -> list[str]:
        return list(self.term_counts([text])[0])


def keyword_source(context: str, text: str) -> str:
    """What keyword search indexes for a chunk: the same three columns the SQLite FTS5 table holds."""
    return f"{context} {text} {keyword_terms(text, context)}"


_shared: Fts5Tokenizer | None = None
_shared_lock = threading.Lock()


def shared_tokenizer() -> Fts5Tokenizer:
    global _shared  # noqa: PLW0603 - one in-memory tokenizer per process is enough
    with _shared_lock:
        if _shared is None:
            _shared = Fts5Tokenizer()
        return _shared
