"""Code as a corpus: language detection, tree-sitter symbols, one chunk per symbol (issue 10)."""

from retrievo.ingest.code.languages import CODE_SUFFIXES, language_of
from retrievo.ingest.code.loader import load_code

__all__ = ["CODE_SUFFIXES", "language_of", "load_code"]
