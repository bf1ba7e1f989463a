"""Language servers for compiler-accurate references (seed 002 §3): one protocol, a registry by language.

``retrievo index --lsp`` asks a language server where ambiguous calls really go and records its answers
in the structure index; without ``--lsp``, or when no server can run, the tree-sitter graph stands.
"""

from retrievo.ingest.code.lsp.base import (
    LSPAdapter,
    LSPDefinition,
    LSPDiagnostic,
    LSPReference,
    LSPRegistry,
    LSPSymbol,
    LSPUnavailable,
)
from retrievo.ingest.code.lsp.jedi import JediAdapter

LSPRegistry.register("python", JediAdapter)

__all__ = [
    "JediAdapter",
    "LSPAdapter",
    "LSPDefinition",
    "LSPDiagnostic",
    "LSPReference",
    "LSPRegistry",
    "LSPSymbol",
    "LSPUnavailable",
]
