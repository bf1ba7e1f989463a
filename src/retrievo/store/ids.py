"""Stable identifiers, computed the same way by every store (so an index can move between them)."""

from __future__ import annotations

from collections.abc import Callable

from retrievo.text.hashing import sha256_text


def document_id(collection: str, source: str) -> str:
    return "doc_" + sha256_text(f"{collection}\0{source}")[:16]


def new_document_id(collection: str, source: str, taken: Callable[[str], bool]) -> str:
    """The id for a source new to a collection: ``document_id`` unless another collection's document
    holds it (a renamed collection keeps its documents' ids; a new one under the old name must not
    take them over), then a salted one."""
    candidate, salt = document_id(collection, source), 0
    while taken(candidate):
        salt += 1
        candidate = document_id(f"{collection}\0{salt}", source)
    return candidate


def revision_id(document: str, number: int, source_hash: str) -> str:
    return "rev_" + sha256_text(f"{document}\0{number}\0{source_hash}")[:16]
