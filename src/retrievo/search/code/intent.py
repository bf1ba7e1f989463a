"""Code questions in ``search``: the answer ranked with its files' evidence, implementation first (issue 35).

A re-scorer (``search/rescore.py``). It reads a query as a code question when it holds a traceback, code, an
error's name, a call, asks "where is / how does / which function …", or is an issue's text
(``reads_as_code_question``), and the collection holds code. Files are ranked by ``search/code/files.py``
(the keyword and dense arms' chunks at depth, an issue's title words and the messages it quotes, modules
named, identifiers defined, traceback frames, file names of a short question). Each hit then scores

    ROLE[its file's kind] × (its fused score, min-max over the answer + FILE × its evidence / the best file's)

with the file's evidence × ``REPEAT`` for each further hit of the same file (more distinct files in the
answer). ROLE (the file's role, ``search/code/role.py``: from its path and the start of its text, in every
language read) puts source before tests, examples, benchmarks, docs, generated files and changelogs unless
the text asks for them ("how is X tested", "where are the docs for X"). A function that does no work — its
body only throws or raises ("option does not exist", ``NotImplementedError``, ``panic!``), it is marked
deprecated (``@deprecated``, ``[Obsolete]``, ``DeprecationWarning``), or its whole body is one call
(``return other(…)``: a forwarder) — scores × ``STUB`` (``stub_of``: a forwarder the question names, such as
``setPixel`` for "how does set pixel work", is the answer): the code that does the work comes first
(a deprecated getter that throws was the first hit for "where are redirects followed"). A short "how does /
where is" question weighs the kinds it does not ask for ``HOW`` × more, and for every code question the best
``WANTED`` files of the kind it asks for (source unless it says otherwise) join an answer that missed them
with their best chunk: over a JavaScript or TypeScript repository the fused answer can be all bundles, tests
and README passages. An issue's text is about files (FILE 4, and the best files the fused answer missed, or holds
only by stubs, join it with their best chunk that does the work); a short question is about a passage (FILE
0.25, no other file joins): on the Anthropic code set's questions a strong file term costs more passages
than it places (docs/benchmarks.md). ``explain`` adds the file's rank
and score as the arm ``file``; every hit says ``why``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from retrievo.models import ArmHit, Chunk, Filters, Hit, Kind, SearchResult
from retrievo.search import exact
from retrievo.search.code.files import (
    DEPTH,
    FileHit,
    file_roles,
    kind_weight,
    rank_files,
    read_arms,
)
from retrievo.search.code.question import (
    CodeQuestion,
    read_question,
    reads_as_code_question,
    reads_as_headline,
)
from retrievo.search.code.role import role as file_role
from retrievo.search.query import Query, stems
from retrievo.search.rescore import Scope
from retrievo.text.identifiers import split_identifier

# An issue's text (more than SHORT_WORDS words) is about files: its file evidence weighs four times a hit's own
# score, and the best files the fused answer missed join it. A short question is about a passage: the
# passage's own score leads, its file's evidence a quarter as much, nothing joins.
# A "where is / which file" question asks for a place: its file evidence weighs as much as the passage's own
# score and the best files the answer missed join it (click: parser.py for "where are command line options
# parsed", docs/benchmarks.md "Tokens to the answer").
FILE = {"issue": 4.0, "question": 0.25, "where": 1.0}
# of the best files, those the answer missed bring their best chunk
INJECT = {"issue": 10, "question": 0, "where": 3}
# of the best files of the kind the text asks for (source, unless it asks for tests, docs, …), those the answer
# missed bring their best chunk: an answer filled with bundles, tests or a README still shows the code
WANTED = 3
REPEAT = 0.7  # the file's evidence for its second, third … hit (seed 002's repeated-file factor)
# keyword chunks read for the files' evidence: an issue's text as deep as ``locate``; a short question less
SEARCH_DEPTH = {"issue": DEPTH, "question": 300, "where": 300}
# a stub's or a forwarder's score (``stub_of``): below the code doing the work, still in the answer
STUB = 0.25
# a short "how does / where is" question asks for the code doing the work: the kinds it does not ask for
# (tests, docs, bundles …) weigh ``HOW`` × their ROLE more
HOW = 0.5
_HOW = re.compile(r"^\W*(how|where)\b", re.IGNORECASE)
_WHERE = re.compile(
    r"^\W*(where\b|which (file|module|class|function)\b|in (which|what) (file|module)\b)", re.IGNORECASE
)


@dataclass(frozen=True)
class CodeReading:
    question: CodeQuestion
    filters: Filters
    deepen: bool = True


class CodeQuestions:
    """The re-scorer: ``wants`` a code question over a search that may return code."""

    def wants(self, query: Query, filters: Filters, held: frozenset[str]) -> CodeReading | None:
        if "code" not in held or (filters.kinds and Kind.CODE not in filters.kinds):
            return None  # not asked of code (a long text over documents is not deepened for nothing)
        if not reads_as_code_question(query.text) or reads_as_headline(query.text):
            return (
                None  # a headline ("how the router matches paths") is a topic's (``search/code/topics.py``)
            )
        return CodeReading(read_question(query), filters)

    def rescore(self, scope: Scope, reading: CodeReading, result: SearchResult) -> SearchResult:
        store, collection = scope.store, scope.collection
        if not result.hits:
            return result
        if any(h.matched_via for h in result.hits[:3]):  # a relationship question answered already
            return result
        filters = replace(reading.filters, as_of=scope.point)
        question = reading.question
        regime = ("where" if _WHERE.search(question.text) else "question") if question.words else "issue"
        # the dense arm's evidence for files: an issue's (a short question's passages have it in the fused
        # score already; as a file term too, the Anthropic code set loses Pass@10 90.1 -> 89.5 %)
        embed = scope.embed_query if regime == "issue" else None
        read = read_arms(store, collection, question, filters, embed, SEARCH_DEPTH[regime])
        files = rank_files(store, collection, question, read, filters)
        ranked = {f.path for f in files}
        unranked = {h.chunk.path: h.chunk.document_id for h in result.hits if h.chunk.path not in ranked}
        roles = file_roles(store, collection, [(path, doc, 0.0) for path, doc in unranked.items()])
        how = HOW if regime != "issue" and _HOW.search(question.text) else 1.0
        ordered = _ordered(
            result.hits, files, read.chunks(), FILE[regime], INJECT[regime], question.asked, roles, how,
            verbatim(scope.query, result.hits), holding_every_word(scope.query, result.hits), scope.query,
        )  # fmt: skip
        return replace(result, hits=tuple(ordered))


def _explained(hit: Hit, file: FileHit | None, rank: int) -> dict[str, ArmHit] | None:
    """With ``explain``: the file's rank and score beside the arms'."""
    if hit.explain is None or file is None:
        return hit.explain
    return {**hit.explain, "file": ArmHit(hit.chunk.chunk_id, rank + 1, file.score)}


def _ordered(
    hits: tuple[Hit, ...],
    files: list[FileHit],
    read: Sequence[tuple[Chunk, float]],
    weight: float,
    inject: int,
    asked: frozenset[str] = frozenset(),
    roles: dict[str, str] | None = None,
    how: float = 1.0,
    verbatim_ids: frozenset[int] = frozenset(),
    exempt_ids: frozenset[int] = frozenset(),
    query: Query | None = None,
) -> list[Hit]:
    """Each hit scored ``ROLE × (own + FILE × its file's evidence × REPEAT^(k−1))`` (``own``: its fused score
    min-max scaled over the answer; the evidence relative to the best file's; k: the hit's place in its file), ×
    ``STUB`` for a stub or a forwarder the query does not name (``stub_of``), best first; a ranked file the
    answer missed or holds only by stubs (of the first ``inject``, or of the first ``WANTED`` of the kind asked
    for) brings its best chunk (keyword, else dense; the best that is no stub), on its file evidence alone.
    ``how``: the further weight of the kinds not asked for (``HOW`` for "how/where"). ``roles``: the roles of
    the hits' files the ranking left out (else read from their paths). ``verbatim_ids``: hits that hold the
    query word for word (``verbatim``): whatever their file, they come first; ``exempt_ids``: hits holding every
    word of a one- or two-word query (``holding_every_word``): their file's role costs nothing."""
    rank_of = {f.path: (i, f) for i, f in enumerate(files)}
    top_file = max((f.score for f in files), default=0.0) or 1.0
    high, low = max(h.score for h in hits), min(h.score for h in hits)
    span = (high - low) or 1.0
    chunks = {chunk.chunk_id: chunk for chunk, _ in read}
    seen: dict[str, int] = defaultdict(int)
    candidates: list[tuple[Hit, float]] = []
    stubs = {h.chunk.chunk_id for h in hits if stub_of(query, h.chunk)}
    present = {h.chunk.path for h in hits}
    working = {h.chunk.path for h in hits if h.chunk.chunk_id not in stubs}  # present by code that works
    extra = [f for f in files[:inject] if f.path not in working]
    wanted = [f for f in files if f.weight == 1.0][:WANTED]  # the best files of the kind asked for
    extra += [f for f in wanted if f.path not in working and f not in extra]
    floor = min(h.relevance for h in hits)
    held = {h.chunk.chunk_id for h in hits}
    # a joining file's best chunk, the best that is no stub when it has one (a one-call ``__call__`` says less
    # than the code it calls); a file the answer holds only by a stub joins by such a chunk, or not at all
    joining = []
    for f in extra:
        led = [chunks[e.chunk_id] for e in f.evidence if e.chunk_id in chunks and e.chunk_id not in held]
        lead = next(
            (c for c in led if not stub_of(query, c)), None if f.path in present else next(iter(led), None)
        )
        if lead is not None:
            joining.append(lead)
            stubs |= {lead.chunk_id} if stub_of(query, lead) else set()
    for hit in (*hits, *(Hit(chunk, 0.0, floor) for chunk in joining)):
        path = hit.chunk.path
        place, file = rank_of.get(path, (len(files), None))
        evidence = (file.raw if file is not None else 0.0) / top_file
        own = (hit.score - low) / span if hit.chunk.chunk_id in held and hit.score > low else 0.0
        # a file the ranking left out still weighs as its kind (docs, tests) unless the question asks for it
        role = (roles or {}).get(path) or file_role(path)
        kind = kind_weight(file, role, asked)
        kind *= how if kind < 1.0 else 1.0
        if hit.chunk.chunk_id in exempt_ids:
            kind = 1.0
        stub = hit.chunk.chunk_id in stubs
        score = (own + weight * evidence * REPEAT ** seen[path]) * kind * (STUB if stub else 1.0)
        if hit.chunk.chunk_id in verbatim_ids:
            score += VERBATIM
        seen[path] += 0 if stub else 1  # a stub, demoted, takes no place from its file's working code
        why = (f"file {place + 1}", *file.why) if file is not None else ()
        candidates.append(
            (replace(hit, score=round(score, 4), why=why, explain=_explained(hit, file, place)), score)
        )
    candidates.sort(key=lambda c: -c[1])
    return [hit for hit, _ in candidates[: len(hits)]]


VERBATIM = 10.0  # above any score a file's evidence gives (its terms are at most ~1 + FILE)
VERBATIM_WORDS = 3  # a run this long, copied whole, is a quotation rather than a question


def verbatim(query: Query, hits: Sequence[Hit]) -> frozenset[int]:
    """The hits that hold the query's quoted phrases, or the whole query of at least ``VERBATIM_WORDS``
    words, word for word in its order (``search/exact.py``): a passage copied or quoted, not a question."""
    if query.empty or (not query.quoted and len(query.tokens) < VERBATIM_WORDS):
        return frozenset()
    if not query.quoted and query.asks:
        return frozenset()  # a question a page repeats word for word (a FAQ's heading) is still a question
    held = set()
    for hit in hits:
        found = exact.evidence(query, exact.passage_tokens(hit.chunk.context, hit.chunk.text))
        if (found.quoted == 1.0) if query.quoted else found.phrase == 1.0:
            held.add(hit.chunk.chunk_id)
    return frozenset(held)


def holding_every_word(query: Query, hits: Sequence[Hit]) -> frozenset[int]:
    """For a query of at most ``SHORT_WORDS`` content words (a rare word, a name, two words), the hits that
    hold every one of them: the word asked for is the evidence, whatever kind of file holds it. Not for a
    question ("how does dependency injection work"): it asks for the code, and the guide that holds its
    two words still weighs as docs (fastapi with its docs indexed: the guide's index page came first)."""
    if query.empty or not query.short or query.asks:
        return frozenset()
    return frozenset(
        hit.chunk.chunk_id
        for hit in hits
        if exact.evidence(query, exact.passage_tokens(hit.chunk.context, hit.chunk.text)).coverage == 1.0
    )


_DEPRECATED = re.compile(
    r"@deprecated\b|\[Obsolete\b|#\[deprecated\b|\bDeprecationWarning\b|^\s*(//|#)\s*Deprecated:",
    re.IGNORECASE | re.MULTILINE,
)
_COMMENTS = re.compile(
    r"/\*.*?\*/|(\"\"\"|''').*?\1|(^|\s)//[^\n]*|^\s*#(?![\[!]|include|define)[^\n]*", re.DOTALL | re.M
)
_THROWS = re.compile(
    r"^(throw|raise)\b[^;]*;?$|^(panic!?|unimplemented!|todo!|unreachable!)\s*\(.*\)\s*;?$", re.DOTALL
)
_CALL = re.compile(r"^(return\s+)?(await\s+)?(new\s+)?[\w$]+(?:(?:\.|::|->|\?\.)[\w$]+)*\s*\(")
STUB_LINES = 15  # a function longer than this is no stub, whatever it says


def is_stub(chunk: Chunk) -> bool:
    """A function or method chunk that does no work: marked deprecated, or its body (comments left out) is
    one ``throw``/``raise``/``panic!`` or one call (``return other(…)``, ``delegate.run(x);``). Regular
    expressions over the text, the same for every language; a chunk that is no function is never one."""
    return bool(_stub(chunk))


def _stub(chunk: Chunk) -> str:
    """Why a chunk is a stub (``is_stub``): "deprecated", "throws", "forwards", or "" (it is none)."""
    if chunk.metadata.get("symbol_kind") not in ("function", "method"):
        return ""
    text = _COMMENTS.sub(" ", chunk.text)
    if len([line for line in text.splitlines() if line.strip()]) > STUB_LINES:
        return ""
    if _DEPRECATED.search(chunk.text):
        return "deprecated"
    body = " ".join(_body(text).split()).rstrip(";").strip()
    if not body:
        return ""
    return "throws" if _THROWS.match(body) else "forwards" if _one_call(body) else ""


def stub_of(query: Query | None, chunk: Chunk) -> bool:
    """Whether a hit is a stub to pass over for this query: a one-call function the query names ("how does
    set pixel work": ``setPixel``, every word of its name in the query) is the function asked about — when
    the collection holds it alone (CoSQA's snippets: ``return max(map(width, lines))``, a forwarder to a
    C extension), nothing else does its work; a one-word name ("get", "run") is a word, not a name asked for;
    one that throws or is deprecated stays a stub, named or not."""
    reason = _stub(chunk)
    if reason != "forwards":
        return bool(reason)
    name = str(chunk.metadata.get("symbol") or "").rsplit(".", 1)[-1]
    parts = stems(" ".join(split_identifier(name))) if name else ()
    asked = query.tokens if query is not None else ()
    return not (len(parts) >= 2 and set(parts) <= set(asked))  # "run", "get": a word, not a name


def _body(text: str) -> str:
    """A function's body: between its first ``{`` and its last ``}``; a Python ``def``'s after the line
    ending its header; an arrow function's after ``=>``."""
    python = re.search(r"^\s*(async\s+)?def\b[^\n]*?\)[^\n]*?:[ \t]*(.*)$", text, re.MULTILINE | re.DOTALL)
    if python:
        return python.group(2)
    if "{" in text and text.rstrip().endswith("}"):
        return text[text.index("{") + 1 : text.rstrip().rindex("}")]
    return text.split("=>", 1)[1] if "=>" in text else ""


def _one_call(body: str) -> bool:
    """The body is one call from its first ``(`` to the end (``return a(b) + c(d)`` is not)."""
    start = _CALL.match(body)
    if not start:
        return False
    depth = 0
    for i in range(start.end() - 1, len(body)):
        depth += {"(": 1, ")": -1}.get(body[i], 0)
        if depth == 0:
            return i == len(body) - 1
    return False
