"""What a query may be: every surface passes user text through ``clean_query`` before searching.

Hostile text never reaches a tokenizer or FTS5 as is: lone surrogates (not encodable as UTF-8)
become U+FFFD, NUL and other control characters become spaces, and the text is cut at
``MAX_QUERY_CHARS``. The dense arm reads at most ``MAX_EMBED_QUERY_CHARS`` of it (the model sees
256 tokens at most, so more text is work without effect), and the keyword arm at most 64 distinct
terms of at most ``MAX_TERM_CHARS`` characters each.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

# How a search embeds its query: the text -> (model id, vector); raises EmbedderUnavailable.
EmbedQuery = Callable[[str], tuple[str, npt.NDArray[np.float32]]]
MAX_QUERY_CHARS = 10_000
MAX_EMBED_QUERY_CHARS = 2_000
MAX_TERM_CHARS = 100
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_query(text: str) -> str:
    text = text[:MAX_QUERY_CHARS]
    if not text.isascii():
        text = _SURROGATE.sub("\ufffd", text)
    return _CONTROL.sub(" ", text)
