"""The facade: ``Engine`` and the parts it is composed of.

``core`` (the ``Engine`` class: open, index, search, context) mixes in ``routes`` (which store holds a
collection), ``embedding`` (embed, verify, regenerate, migrate a model), ``code``, ``library`` and
``similar`` (their queries); it writes through ``indexing`` (files and documents into a store),
``lsp_refine`` (language-server answers on code edges) and checks with ``verify``. ``history`` and
``registry`` are the facades ``engine.history`` / ``engine.registry``: they are handed the engine's
public methods and never import it. Nothing here imports ``operations`` or ``surfaces``.
"""

from retrievo.engine.core import Engine

__all__ = ["Engine"]
