"""Counting tokens with a real tokenizer: the bundled MiniLM (BERT WordPiece) tokenizer.

Why this one: it ships with retrievo (no download), and WordPiece splits on whitespace and
punctuation first, so counts add up across the blocks of an assembled context. It is a stand-in
for an LLM's tokenizer: on English prose it counts within a few percent of common BPE tokenizers.
"""

from __future__ import annotations

import threading
from functools import cache
from importlib import resources
from typing import Any


@cache
def bundled_tokenizer_json() -> str:
    return (resources.files("retrievo.embed") / "data" / "minilm" / "tokenizer.json").read_text(
        encoding="utf-8"
    )


class TokenCounter:
    def __init__(self) -> None:
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        with self._lock:
            if self._tokenizer is None:
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_str(bundled_tokenizer_json())
                tokenizer.no_padding()
                tokenizer.no_truncation()
                self._tokenizer = tokenizer
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)
