"""One exception tree for retrievo; every message says what to do next.

    RetrievoError
    ├── ConfigError            a setting or argument is wrong
    ├── IndexMissingError      there is no index at the path given
    ├── IndexCorruptError      the file is not a readable retrieval index
    ├── StoreUnavailableError  the database server cannot be reached
    ├── CollectionNotFound     a named collection does not exist
    ├── DocumentNotFound       a document, revision or chunk id is not in the index
    ├── ModelMismatchError     the collection was embedded with another model
    ├── IndexLockedError       another process is writing the same collection
    ├── EmbedderUnavailable    the embedding model cannot run (search degrades to keywords)
    │   └── VectorIndexUnavailable  the vector index is being rebuilt (search degrades to keywords)
    ├── SourceError            a path cannot be indexed (outside the root, unreadable …)
    ├── PointInTimeError       a baseline or as_of that cannot be read (unknown, both, before history)
    └── AccessDenied           a request without a valid key, or outside what its key may reach

Surfaces translate these into exit codes (CLI) or tool errors (MCP); they never show tracebacks.
"""

from __future__ import annotations


class RetrievoError(Exception):
    """Base of every error retrievo raises on purpose."""


class ConfigError(RetrievoError):
    pass


class IndexMissingError(RetrievoError):
    pass


class IndexCorruptError(RetrievoError):
    pass


class StoreUnavailableError(RetrievoError):
    pass


class CollectionNotFound(RetrievoError):
    pass


class DocumentNotFound(RetrievoError):
    pass


class ModelMismatchError(RetrievoError):
    pass


class IndexLockedError(RetrievoError):
    pass


class EmbedderUnavailable(RetrievoError):
    pass


class VectorIndexUnavailable(EmbedderUnavailable):
    """Not the model's fault, but the same remedy: answer from keywords and say so."""


class SourceError(RetrievoError):
    pass


class PointInTimeError(RetrievoError):
    """A read context that cannot be answered: unknown baseline, both given, a time before history."""


class AccessDenied(RetrievoError):
    """Says no more than needed: never whether a key, collection or document exists."""


class Cancelled(RetrievoError):
    """Raised inside a worker when its job was asked to stop (between batches: what was done is kept)."""
