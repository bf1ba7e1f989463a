"""Stable identifiers, computed the same way by every store (so an index can move between them)."""

from __future__ import annotations

from retrievo.ingest.hashing import sha256_text


def document_id(collection: str, source: str) -> str:
    return "doc_" + sha256_text(f"{collection}\0{source}")[:16]


def revision_id(document: str, number: int, source_hash: str) -> str:
    return "rev_" + sha256_text(f"{document}\0{number}\0{source_hash}")[:16]
