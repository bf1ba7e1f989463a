"""Embedders: one abstract batch method; batching, ordering and normalisation live in the base."""

from retrievo.embed.base import Embedder
from retrievo.embed.factory import make_embedder

__all__ = ["Embedder", "make_embedder"]
