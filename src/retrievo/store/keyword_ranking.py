"""The keyword side index's ranking: FTS5's BM25 computed by tantivy.

Same ranking as FTS5 (docs/benchmarks.md has the measured difference):
- it indexes the very tokens FTS5 makes (``shared_tokenizer``: FTS5's porter + unicode61 called
  directly, with FTS5's cut of very long terms; tested against an FTS5 table), joined by spaces under tantivy's whitespace tokenizer, one field for the three FTS5
  columns (FTS5's ``bm25()`` with equal weights sums the columns' term frequencies and lengths);
- tantivy's idf is ``ln(1 + (N - n + 0.5) / (n + 0.5))`` and FTS5's ``max(ln((N - n + 0.5) / (n + 0.5)),
  1e-6)``: each term's query is boosted by their ratio, so the sum is FTS5's; k1 = 1.2, b = 0.75 in both.
- The one residual difference: tantivy stores a document's length in one byte (exact to 40 tokens,
  then within a few per cent), FTS5 exactly.
"""

from __future__ import annotations

import math
from typing import Any

from retrievo.store.fts_query import prune_common_terms
from retrievo.store.tokenizer import shared_tokenizer


def ranked(index: Any, collection_id: int | None, terms: list[str], limit: int) -> list[tuple[int, float]]:
    """Best-first (chunk id, FTS5's BM25 score) from the tantivy ``index``; ``collection_id`` None: all."""
    import tantivy

    searcher = index.searcher()
    total = int(searcher.num_docs)
    if total == 0 or limit <= 0:
        return []
    stems = _stems(tuple(terms))
    frequency = {term: max((searcher.doc_freq("body", s) for s in stems[term]), default=0) for term in terms}
    kept = prune_common_terms(terms, frequency, total)
    clauses = []
    # One clause per query term, as FTS5 scores each OR-ed phrase: "neurons neuron" counts "neuron" twice.
    for stem in (s for term in kept for s in stems[term]):
        n = int(searcher.doc_freq("body", stem))
        if n == 0:
            continue
        ratio = _fts5_idf(n, total) / _tantivy_idf(n, total)
        term_query = tantivy.Query.term_query(index.schema, "body", stem, index_option="freq")
        clauses.append((tantivy.Occur.Should, tantivy.Query.boost_query(term_query, ratio)))
    if not clauses:
        return []
    query = tantivy.Query.boolean_query(clauses)
    if collection_id is not None:
        only = tantivy.Query.const_score_query(
            tantivy.Query.term_query(index.schema, "col", collection_id), 0.0
        )
        query = tantivy.Query.boolean_query([(tantivy.Occur.Must, query), (tantivy.Occur.Must, only)])
    found = searcher.search(query, limit, count=False).hits
    if not found:
        return []
    ids = searcher.fast_field_values("id", [address for _, address in found])
    hits = [(int(chunk_id), float(score)) for (score, _), chunk_id in zip(found, ids, strict=True)]
    return sorted(hits, key=lambda hit: (-hit[1], hit[0]))


_STEM_CACHE: dict[str, tuple[str, ...]] = {}
STEM_CACHE_SIZE = 50_000


def _stems(terms: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Each query term's FTS5 tokens; the terms not seen before are tokenized in one round trip."""
    missing = [term for term in terms if term not in _STEM_CACHE]
    if missing:
        if len(_STEM_CACHE) > STEM_CACHE_SIZE:
            _STEM_CACHE.clear()
        for term, counts in zip(missing, shared_tokenizer().term_counts(missing), strict=True):
            _STEM_CACHE[term] = tuple(counts)
    return {term: _STEM_CACHE[term] for term in terms}


def _fts5_idf(n: int, total: int) -> float:
    return max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6)


def _tantivy_idf(n: int, total: int) -> float:
    return math.log(1 + (total - n + 0.5) / (n + 0.5))
