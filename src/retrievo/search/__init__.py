"""Search: the query read once (``query``), the arms the store runs fused (``hybrid``), re-scorers, and rooms for the answer, code, documents and records."""
