"""Stores: one ``Store`` protocol, an embedded SQLite implementation (the default)."""

from retrievo.store.base import CollectionInfo, DocumentState, Store

__all__ = ["CollectionInfo", "DocumentState", "Store"]
