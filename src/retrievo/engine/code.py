"""The engine's code-structure queries (``find_symbol``, ``symbol_graph``), mixed into ``Engine``."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable

from retrievo.errors import ConfigError, RetrievoError
from retrievo.search.code.locate import FileHit, locate
from retrievo.search.code.structure import (
    MAX_DEPTH,
    SymbolGraph,
    dependencies,
    dependents,
    one_symbol,
    tests_for,
)
from retrievo.search.query import EmbedQuery
from retrievo.store.base import Store
from retrievo.store.code_index import CodeStats, SymbolHit


class CodeQueries:
    @abstractmethod
    def _collection_store(self, collection: str | None) -> tuple[Store, str]:
        """The open store and the collection's name; CollectionNotFound when it does not exist."""

    # how to embed a query for the collection, and why the dense arm cannot run (engine/embedding.py)
    _query_fn: Callable[[Store, str], tuple[EmbedQuery, str | None]]

    def find_symbol(
        self,
        pattern: str,
        collection: str | None = None,
        kind: str | None = None,
        language: str | None = None,
        limit: int = 20,
    ) -> list[SymbolHit]:
        """Symbols by name, qualified name or glob (``*Parser``, ``core.Command.*``), exact names first."""
        if not pattern.strip():
            raise ConfigError("give a symbol name or pattern, e.g. parse_args or *Parser")
        store, name = self._collection_store(collection)
        return store.code_index().find_symbols(name, pattern.strip(), kind, language, limit)

    def symbol_graph(
        self, symbol: str, collection: str | None = None, direction: str = "dependencies", depth: int = 1
    ) -> SymbolGraph:
        """What a symbol depends on (or what depends on it) to ``depth`` levels, and the tests reaching it."""
        if direction not in ("dependencies", "dependents"):
            raise ConfigError(f"direction must be dependencies or dependents, got {direction!r}")
        if not 1 <= depth <= MAX_DEPTH:
            raise ConfigError(f"depth must be between 1 and {MAX_DEPTH}, got {depth}")
        store, name = self._collection_store(collection)
        index = store.code_index()
        found = one_symbol(index, name, symbol)
        walk_graph = dependencies if direction == "dependencies" else dependents
        graph = walk_graph(index, name, found, depth)
        graph.tests = tests_for(index, name, found)
        return graph

    def code_stats(self, collection: str | None = None) -> CodeStats | None:
        """What the collection holds of code (files per language, symbols, edges, files read without symbols
        and why); None when it holds none."""
        store, name = self._collection_store(collection)
        stats = store.code_index().stats(name)
        return stats if stats.files else None

    def locate(self, text: str, collection: str | None = None, limit: int = 10) -> list[FileHit]:
        """The files an issue's text is about (a bug report, a traceback, "where is X handled"), best first,
        each with why (words, symbols it defines, traceback frames) and its best passages."""
        if not text.strip():
            raise ConfigError(
                "give the issue's text (a bug report, an error message, a question about the code)"
            )
        if not 1 <= limit <= 100:
            raise ConfigError(f"limit must be between 1 and 100, got {limit}")
        store, name = self._collection_store(collection)
        embed_query, unavailable = self._query_fn(store, name)
        return locate(store, name, text, limit, None if unavailable else embed_query)

    def roots(self, collection: str | None = None) -> list[str]:
        """The folders (and files) indexed into the collection: what paths are shown relative to."""
        try:
            store, name = self._collection_store(collection)
        except RetrievoError:
            return []
        return store.roots(name)
