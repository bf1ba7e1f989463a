"""Keyword tokens exactly as the SQLite store's FTS5 index makes them, for whatever needs them outside
an FTS5 table: the keyword side index, the PostgreSQL store's postings, query terms.

Why SQLite's own code: the PostgreSQL store scores BM25 the way FTS5 does, and keyword rankings on the
two stores must agree. A re-implementation of FTS5's ``porter unicode61 remove_diacritics 2``
tokenizer would drift (its Porter variant differs from snowball's on words like -logy and -bly).
FTS5's tokenizer is called directly, through apsw (its ``fts5_tokenizer``: the same C code as the
stdlib's SQLite, which cannot call one), with what FTS5's index adds: a term is stored cut at
``FTS5_MAX_TOKEN_BYTES``. That they are FTS5's tokens is tested against an FTS5 table of the stdlib's
SQLite, on real and generated text. Before, an FTS5 scratch table was written and read back through
``fts5vocab``: 7x the CPU (20,000 realistic chunks: 1.4 s against 0.2 s).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence

import apsw

from retrievo.text.identifiers import keyword_terms

FTS5_TOKENIZER = "porter unicode61 remove_diacritics 2"
FTS5_MAX_TOKEN_BYTES = 32_768  # FTS5 keeps this many bytes of a longer term (it may cut a character)
_LONG = FTS5_MAX_TOKEN_BYTES // 4  # characters: a term this short cannot exceed the limit in UTF-8


class Fts5Tokenizer:
    """FTS5's tokenizer (``FTS5_TOKENIZER``); one per thread underneath (apsw objects are not shared)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _tokenizer(self) -> Callable[..., list[str]]:
        found: Callable[..., list[str]] | None = getattr(self._local, "tokenize", None)
        if found is None:
            connection = apsw.Connection(":memory:")
            name, *arguments = FTS5_TOKENIZER.split()
            found = connection.fts5_tokenizer(name, arguments)  # type: ignore[assignment]
            self._local.connection, self._local.tokenize = connection, found
        return found  # type: ignore[return-value]

    def tokens(self, text: str) -> list[str]:
        """The terms FTS5 indexes for ``text``, in order, repeated as often as they occur."""
        found = self._tokenizer()(
            text.encode("utf-8", "replace"),
            apsw.FTS5_TOKENIZE_DOCUMENT,
            None,
            include_offsets=False,
            include_colocated=False,
        )
        if found and max(map(len, found)) > _LONG:  # (in C: this runs for every chunk)
            found = [_stored(token) for token in found]
        return found

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """``text``'s terms in order, each with its start and end as UTF-8 byte offsets (where highlighting
        marks it)."""
        tokenize: Callable[..., list[tuple[int, int, str]]] = self._tokenizer()  # type: ignore[assignment]
        return tokenize(
            text.encode("utf-8", "replace"),
            apsw.FTS5_TOKENIZE_DOCUMENT,
            None,
            include_offsets=True,
            include_colocated=False,
        )

    def joined(self, text: str) -> str:
        """``tokens`` joined by spaces (a term never holds one)."""
        return " ".join(self.tokens(text))

    def term_counts(self, texts: Sequence[str]) -> list[Counter[str]]:
        """For each text, how often each (stemmed, folded) term occurs in it."""
        return [Counter(self.tokens(text)) for text in texts]


def _stored(token: str) -> str:
    """A term as FTS5's index stores it: at most FTS5_MAX_TOKEN_BYTES (a cut character reads as U+FFFD)."""
    raw = token.encode("utf-8")
    return raw[:FTS5_MAX_TOKEN_BYTES].decode("utf-8", "replace") if len(raw) > FTS5_MAX_TOKEN_BYTES else token


def holds_run(tokens: Sequence[str], run: Sequence[str]) -> bool:
    """Whether ``tokens`` hold ``run`` word after word (a phrase, by word position)."""
    if not run:
        return False
    first, width, wanted = run[0], len(run), tuple(run)
    listed = tokens if isinstance(tokens, list) else list(tokens)
    start = 0
    while True:
        try:
            at = listed.index(first, start)
        except ValueError:
            return False
        if tuple(listed[at : at + width]) == wanted:
            return True
        start = at + 1


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
