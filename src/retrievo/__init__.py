"""retrievo: hybrid, contextual retrieval for AI agents.

import retrievo
engine = retrievo.open(db="index.db")
engine.index(["docs/"])
for hit in engine.search("how do I rotate keys?").hits:
    print(hit.relevance, hit.chunk.path, hit.chunk.line_start)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from retrievo.config import Config
from retrievo.engine import Engine
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
    return Engine(Config.from_env(db=db, **settings))
