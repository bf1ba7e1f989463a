"""`locate`: an issue's text → the files to open, each with the evidence that put it there (issue 35).

A bug report pasted over a whole repository names symbols, options and error messages, and mentions the
docs, the changelog and the tests that repeat its words. Files are ranked, not passages:

- **Words**: the keyword arm over every chunk (BM25, the query's rare words weigh most); a file scores the
  sum of its best ``TOP_CHUNKS`` chunks' scores, relative to the best file's.
- **Identifiers**: names the text spells as code (``query_identifiers``: backticked, dotted, CamelCase,
  snake_case) that a file *defines* (the structure index) add ``DEFINES`` each (at most three).
- **Traceback frames**: a file named in ``File "…/x.py", line N`` adds ``FRAME``; the innermost of the
  repository's frames (where it broke, below it only libraries) ``INNERMOST`` instead.
- **What kind of file**: source as it is, tests × ``ROLE["test"]``, docs and examples × ``ROLE["docs"]``,
  changelogs × ``ROLE["changelog"]`` — unless the text asks for them ("test", "changelog", "docs").

Chosen on ../shared/data/swe_loc_dev (docs/benchmarks.md "Locating the code an issue is about"): few
parameters, each a round value; the kinds' weights are priors, not fitted. Tried and left out: a bonus for
a file whose own name is one of the text's words (click's parser.py for "options parsed" rose to second,
but swe_loc_dev's hit@5 fell 0.742 → 0.677), ranks instead of BM25 scores in the sum (hit@5 ≤ 0.677).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from retrievo.models import Filters
from retrievo.search.query_text import clean_query
from retrievo.search.structure import query_identifiers
from retrievo.store.base import Store

DEPTH = 1000  # chunks the keyword arm returns for the aggregation
TOP_CHUNKS = 3
DEFINES, FRAME, INNERMOST = 0.2, 0.25, 1.0
ROLE = {"source": 1.0, "test": 0.5, "docs": 0.3, "changelog": 0.2, "other": 0.3}
_TEST = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*$|_tests?\.[a-z]+$|(^|/)conftest\.py$")
_DOCS = re.compile(r"(^|/)(docs?|examples?|tutorials?)/|\.(rst|md|txt|adoc)$")
_CHANGES = re.compile(r"(^|/)(CHANGES|CHANGELOG|HISTORY|NEWS|RELEASE)[^/]*$", re.IGNORECASE)
_SOURCE = re.compile(r"\.(py|pyi|js|jsx|ts|tsx|go|java|cs|c|h|cc|cpp|hpp|rs|rb|php|kt|swift|scala)$")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_ASKS = {
    "test": re.compile(r"\btests?\b|\btest case|\bunit test", re.IGNORECASE),
    "changelog": re.compile(r"\bchange ?log|\brelease notes?\b|\bchanges\.rst\b", re.IGNORECASE),
    "docs": re.compile(r"\bdocumentation\b|\bdocs\b", re.IGNORECASE),
}


def role_of(path: str) -> str:
    """source, test, docs, changelog or other, from the path alone."""
    if _CHANGES.search(path):
        return "changelog"
    if _TEST.search(path):
        return "test"
    if _DOCS.search(path):
        return "docs"
    return "source" if _SOURCE.search(path) else "other"


@dataclass(frozen=True)
class Evidence:
    symbol: str  # the best chunk's symbol or heading (empty for a plain passage)
    line_start: int
    line_end: int


@dataclass(frozen=True)
class FileHit:
    path: str
    score: float
    role: str
    why: tuple[str, ...]  # the evidence in words: "words: 3 passages", "defines DatasetGroupBy", …
    evidence: tuple[Evidence, ...]  # the file's best chunks
    document_id: str


def locate(store: Store, collection: str, query: str, limit: int = 10) -> list[FileHit]:
    """Files of ``collection`` for an issue's text, best first (see the module's docstring)."""
    text = clean_query(query)
    hits = store.keyword_search(collection, text, Filters(), DEPTH)
    chunks = store.get_chunks([h.chunk_id for h in hits])
    scores: dict[str, list[float]] = defaultdict(list)
    best: dict[str, list[Evidence]] = defaultdict(list)
    documents: dict[str, str] = {}
    for hit in hits:
        chunk = chunks.get(hit.chunk_id)
        if chunk is None:
            continue
        scores[chunk.path].append(hit.score)
        documents.setdefault(chunk.path, chunk.document_id)
        if len(best[chunk.path]) < 2:
            label = str(chunk.metadata.get("symbol") or "")
            best[chunk.path].append(Evidence(label, chunk.line_start, chunk.line_end))
    names = list(dict.fromkeys(name.split(".")[-1] for name in query_identifiers(query)))
    defined: dict[str, set[str]] = defaultdict(set)
    for symbol in store.code_index().symbols_named(collection, names) if names else []:
        defined[symbol.path].add(symbol.name)
        documents.setdefault(symbol.path, symbol.document_id)
    frames = [m.group(1) for m in _FRAME.finditer(query)]
    asked = {kind for kind, pattern in _ASKS.items() if pattern.search(query)}
    top = max((sum(sorted(v, reverse=True)[:TOP_CHUNKS]) for v in scores.values()), default=0.0) or 1.0
    candidates = set(scores) | set(defined)
    framed = {path: [i for i, frame in enumerate(frames) if _same_file(frame, path)] for path in candidates}
    innermost = max((i for found in framed.values() for i in found), default=-1)  # the last frame of ours
    ranked: list[FileHit] = []
    for path in candidates:
        own = sorted(scores.get(path, []), reverse=True)
        score = sum(own[:TOP_CHUNKS]) / top
        why = [f"words: {len(own)} passage{'s' if len(own) != 1 else ''}"] if own else []
        if defined.get(path):
            score += DEFINES * min(len(defined[path]), 3)
            why.append("defines " + ", ".join(sorted(defined[path])[:3]))
        if framed[path]:
            deepest = framed[path][-1] == innermost
            score += INNERMOST if deepest else FRAME
            why.append("in the traceback" + (" (innermost frame)" if deepest else ""))
        role = role_of(path)
        if role not in asked:
            score *= ROLE[role]
        ranked.append(
            FileHit(path, round(score, 4), role, tuple(why), tuple(best.get(path, ())), documents[path])
        )
    ranked.sort(key=lambda f: (-f.score, f.path))
    return ranked[:limit]


_COMMON = frozenset(
    {"init", "main", "test", "tests", "util", "utils", "core", "base", "common", "setup", "conf"}
)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "er", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _same_file(frame: str, path: str) -> bool:
    """A traceback's path (often another machine's, site-packages) names this indexed file: the longer of
    the two ends with the other's last two parts."""
    tail = "/".join(frame.replace("\\", "/").split("/")[-2:])
    return path.replace("\\", "/").endswith(tail)
