"""retrievo: hybrid, contextual retrieval for AI agents.

import retrievo
engine = retrievo.open(db="index.db")
engine.index(["docs/"])
for hit in engine.search("how do I rotate keys?").hits:
    print(hit.relevance, hit.chunk.path, hit.chunk.line_start)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from pathlib import Path

    from retrievo.config import Config
    from retrievo.engine import Engine
    from retrievo.models import Chunk, Filters, Hit, IndexReport, IndexStatus, Kind, SearchMode, SearchResult

# Imported on first use: the command line's first module (``surfaces/cli/resident.py``) sits in this
# package, and a call handed to the resident process should not pay for the data model and settings.
_LAZY = {
    "Config": "retrievo.config", "Engine": "retrievo.engine", "Chunk": "retrievo.models",
    "Filters": "retrievo.models", "Hit": "retrievo.models", "IndexReport": "retrievo.models",
    "IndexStatus": "retrievo.models", "Kind": "retrievo.models", "SearchMode": "retrievo.models",
    "SearchResult": "retrievo.models",
}  # fmt: skip

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
    from retrievo.config import Config
    from retrievo.engine import Engine

    return Engine(Config.from_env(db=db, **settings))


def __getattr__(name: str) -> Any:
    """``retrievo.Engine``, the settings and the data model are imported on first use (the engine pulls
    in NumPy, the stores, the search arms), so that ``import retrievo`` and a CLI call stay fast."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'retrievo' has no attribute {name!r}")
