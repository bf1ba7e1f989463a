"""Moving a collection between stores without re-embedding, verified by counts and hashes.

A dump is a stream of (kind, row) records — one ``collection``, then its ``document``,
``revision``, ``chunk``, ``embedding``, ``root``, ``code_symbol``, ``code_edge`` and ``baseline`` rows — in a store-neutral shape: ids are kept (so
citations stay valid), keyword statistics are rebuilt by the target, vectors travel as float32.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from retrievo.errors import ConfigError, IndexCorruptError

Record = tuple[str, dict[str, Any]]
DOCUMENT_FIELDS = ("id", "source", "kind", "title", "media_type", "current_revision_id", "metadata",
                   "modified_at", "created_at", "deleted_at")  # fmt: skip
REVISION_FIELDS = ("id", "document_id", "number", "source_hash", "text", "created_at", "superseded_at")
CHUNK_FIELDS = ("id", "document_id", "revision_id", "ordinal", "text", "context", "start_offset", "end_offset",
                "line_start", "line_end", "chunk_hash", "source_hash", "chunker", "chunker_version", "embed_key",
                "metadata", "created_at", "superseded_at")  # fmt: skip


class Transferable(Protocol):
    def list_collections(self) -> list[str]: ...

    def dump(self, collection: str) -> Iterator[Record]: ...

    def restore(self, records: Iterable[Record]) -> None: ...


@dataclass(frozen=True)
class Fingerprint:
    documents: int
    revisions: int
    chunks: int
    embeddings: int
    digest: str


@dataclass(frozen=True)
class MovedCollection:
    name: str
    fingerprint: Fingerprint


def fingerprint(records: Iterable[Record]) -> Fingerprint:
    """Counts and one SHA-256 over every row in a canonical order (vectors compared as float16)."""
    rows: dict[str, list[bytes]] = {"document": [], "revision": [], "chunk": [], "embedding": []}
    for kind, row in records:
        if kind in ("collection", "root", "code_symbol", "code_edge", "baseline"):
            continue
        if kind == "embedding":
            vector = np.asarray(row["vector"], dtype=np.float16).tobytes()
            rows[kind].append(f"{row['embed_key']}|{row['model_id']}|".encode() + vector)
        else:
            fields = {"document": DOCUMENT_FIELDS, "revision": REVISION_FIELDS, "chunk": CHUNK_FIELDS}[kind]
            rows[kind].append("|".join(_canonical(row[f]) for f in fields).encode())
    digest = hashlib.sha256()
    for kind in ("document", "revision", "chunk", "embedding"):
        for item in sorted(rows[kind]):
            digest.update(item + b"\n")
    return Fingerprint(
        documents=len(rows["document"]), revisions=len(rows["revision"]), chunks=len(rows["chunk"]),
        embeddings=len(rows["embedding"]), digest=digest.hexdigest(),
    )  # fmt: skip


def _canonical(value: Any) -> str:
    if isinstance(value, dict | list):
        import json

        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return "" if value is None else str(value)


def move(
    source: Transferable, target: Transferable, collections: list[str] | None = None
) -> list[MovedCollection]:
    """Copy collections; each is written in one transaction and verified before the next."""
    names = collections or source.list_collections()
    unknown = sorted(set(names) - set(source.list_collections()))
    if unknown:
        raise ConfigError(f"the source has no collection(s) {', '.join(unknown)}")
    clashes = sorted(set(names) & set(target.list_collections()))
    if clashes:
        raise ConfigError(
            f"the target already has collection(s) {', '.join(clashes)}; nothing was copied. "
            "Migrate into an empty index, or pass --collection for the others"
        )
    moved = []
    for name in names:
        target.restore(source.dump(name))
        expected, actual = fingerprint(source.dump(name)), fingerprint(target.dump(name))
        if expected != actual:
            raise IndexCorruptError(
                f"collection {name!r} differs after copying ({expected} vs {actual}); the target is not usable"
            )
        moved.append(MovedCollection(name, actual))
    return moved
