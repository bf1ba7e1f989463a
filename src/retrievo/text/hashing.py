"""Content hashes: the identity of chunks, sources and embeddings."""

from __future__ import annotations

import hashlib


def sha256_text(text: str) -> str:
    # surrogatepass: text from the Python API may hold lone surrogates; hashing must not fail on them.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def embedding_key(context: str, text: str) -> str:
    """What an embedding is keyed by: the exact words the model saw (context and text)."""
    return sha256_text(embedding_input(context, text))


def embedding_input(context: str, text: str) -> str:
    """The text handed to the embedding model for a chunk: its context first, then its words."""
    return f"{context}\n{text}" if context else text
