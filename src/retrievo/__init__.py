"""retrievo: hybrid, contextual retrieval for AI agents.

import retrievo
engine = retrievo.open(db="index.db")
engine.index(["docs/"])
for hit in engine.search("how do I rotate keys?").hits:
    print(hit.relevance, hit.chunk.path, hit.chunk.line_start)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrievo.config import Config
from retrievo.errors import (
    CollectionNotFound,
    ConfigError,
    EmbedderUnavailable,
    IndexCorruptError,
    IndexLockedError,
    IndexMissingError,
    ModelMismatchError,
    RetrievoError,
    SourceError,
)
from retrievo.models import Chunk, Filters, Hit, IndexReport, IndexStatus, Kind, SearchMode, SearchResult

if TYPE_CHECKING:
    from retrievo.engine import Engine

__all__ = [
    "Chunk",
    "CollectionNotFound",
    "Config",
    "ConfigError",
    "EmbedderUnavailable",
    "Engine",
    "Filters",
    "Hit",
    "IndexCorruptError",
    "IndexLockedError",
    "IndexMissingError",
    "IndexReport",
    "IndexStatus",
    "Kind",
    "ModelMismatchError",
    "RetrievoError",
    "SearchMode",
    "SearchResult",
    "SourceError",
    "open",
]


def open(db: str | Path | None = None, **settings: Any) -> Engine:
    """Open (lazily) the index at ``db`` (default: $RETRIEVO_DB, else ~/.retrievo/index.db)."""
    from retrievo.engine import Engine

    return Engine(Config.from_env(db=db, **settings))


def __getattr__(name: str) -> Any:
    """``retrievo.Engine`` is imported on first use (the engine pulls in NumPy, the stores, the search
    arms), so that ``import retrievo`` and ``retrievo --version`` stay fast."""
    if name == "Engine":
        from retrievo.engine import Engine

        return Engine
    raise AttributeError(f"module 'retrievo' has no attribute {name!r}")
