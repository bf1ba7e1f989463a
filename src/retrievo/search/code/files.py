"""Files for code questions: what a question's text says about each file of the repositories indexed (issue 35).

A bug report pasted over a whole repository names symbols, modules, options and error messages, and shares
words with the docs, the changelog and the tests that repeat it. The unit an agent opens is a file, so files
are ranked, each from its evidence:

- **Words**: the keyword arm over every chunk (BM25: the text's rare words weigh most); a file scores the sum
  of its best ``TOP_CHUNKS`` chunks' scores, relative to the best file's (0–1).
- **The title's words**: an issue's title line (``question._title``) asked of the keyword arm alone adds
  ``TITLE`` × its files' sums the same way: the ten words that say what a long report is about ("Trailing
  whitespace in DatasetGroupBy text representation") are not drowned by its example code and environment.
- **Modules named**: a dotted name the text spells (``sphinx.ext.viewcode``, ``xarray.core.groupby``) or a
  file name with its folder (``pylint/lint/run.py``) that is a file of the repository adds ``MODULE``.
- **Identifiers defined**: names the text spells as code (backticked, dotted, CamelCase, snake_case; a short
  question's adjacent words: "JSON object", ``JsonObject``) that a file *defines* (the structure index) add
  ``DEFINES`` each (at most three): a symbol's defining file outranks the files that merely mention it.
- **Meaning**: the dense arm's chunks at depth (when the collection has vectors), for the text and, for an
  issue, its title line alone (the model reads 256 tokens: the title says what the issue is about in ten
  words): a file adds ``SEMANTIC`` × the sum of its best ``TOP_CHUNKS`` similarities (min-max over the depth
  read), relative to the best file's, averaged over the two. An issue's words often are not the code's
  ("show units in the dataset overview" is ``formatting.py``).
- **Messages quoted**: an error's or warning's text the report quotes (``question._said``) that one to
  ``MESSAGE_FILES`` files hold as a run of words (``Store.chunks_with_phrase``: the whole message, else a run
  of ``MESSAGE_RUN`` of its words: a placeholder such as ``%s`` breaks it) adds ``MESSAGE`` to those of them
  that have other evidence: where the message is raised or logged.
- **Traceback frames**: a file named in a frame (``question._FRAME``: Python's, IPython's, pytest's,
  Node's; a compiled ``dist/…/x.js`` names its ``x.ts``) adds ``FRAME``; the innermost of the repository's
  frames (where it broke; below it only libraries) ``INNERMOST`` instead. A frame whose file the repository
  no longer has (moved, renamed since the report) names the one or two files defining its function.
- **File names** (short questions only, "where are options parsed"): a file whose name shares a word stem
  with the question adds ``NAMED``. In a long issue text most words match some file name: noise there.
- **What kind of file** (``search/code/role.py``: from the path relative to its indexed root, and for the
  best ``CONTENT_FILES`` files the start of the text — a generator's mark, a test framework): the sum ×
  ``ROLE``: source as it is, tests, examples and benchmarks × 0.5, docs and generated files (bundles,
  ``*.d.ts``, ``dist/``, ``vendor/``) × 0.3, changelogs × 0.2 — unless a short question asks for them
  ("test", "changelog", "docs", "benchmark", "generated").

The weights are round values chosen on ../shared/data/swe_loc_dev (docs/benchmarks.md "Locating the code an
issue is about" has each signal's share); the kinds' weights are priors, not fitted. ``file_signals`` gives
each signal's raw value; for a one-line text of at most ``LEARNED_WORDS`` words ``ranker.py``'s weights
fitted on mined commits re-order the best files (better held out on short texts, not on issues: ranker.json,
docs/benchmarks.md).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from retrievo.errors import EmbedderUnavailable
from retrievo.models import ArmHit, Chunk, Filters
from retrievo.search.code import ranker
from retrievo.search.code.question import CodeQuestion, stem
from retrievo.search.code.role import reads_text, relative_path, role
from retrievo.search.query import ASKS, MAX_EMBED_QUERY_CHARS, EmbedQuery, name_key
from retrievo.store.base import Store

DEPTH = 1000  # chunks the keyword arm returns for the aggregation
DENSE_DEPTH = 300  # chunks the dense arm returns for it
TOP_CHUNKS = 3
DEFINES, MODULE, FRAME, INNERMOST, NAMED, SEMANTIC, TITLE, MESSAGE = 0.2, 0.2, 0.25, 1.0, 0.3, 1.0, 0.25, 0.6
MESSAGE_FILES, MESSAGE_RUN, MESSAGE_LOOKUPS = 3, 5, 24  # files a message may name; a run's words; lookups
# The most evidence a file can show: its words at the best file's level, full meaning, three rare names it
# defines, its module named, the innermost traceback frame, its file name (a short question's; an issue's
# title words and the message it quotes, 0.85 together, take its place and then some: an issue's best file
# can reach 1 sooner). Surfaces show a file's score over this, one scale for every query (0-1): a question
# with no evidence but meaning stays low.
MAX_EVIDENCE = 1.0 + SEMANTIC + 3 * DEFINES + MODULE + INNERMOST + NAMED
ROLE: dict[str, float] = {"source": 1.0, "test": 0.5, "example": 0.5, "benchmark": 0.5, "docs": 0.3,
                          "generated": 0.3, "changelog": 0.2, "other": 0.3}  # fmt: skip
# the learned ranker (``ranker.py``, fitted on mined commits) re-orders the best files of a one-line
# statement of at most this many words (a commit's subject, "retry drops the body of a stream"; 0: never):
# held out, it places more gold files first there (Python commits of another repository, TypeScript ones),
# not on issues nor on questions ("how does … work": the Anthropic set's, hit@1 0.89 -> 0.84); a text with a
# title, a message quoted or a traceback is an issue's, evidence it was not fitted on: the weights above
LEARNED_WORDS = 60
CONTENT_FILES = 30  # the best files (by their evidence) whose role their text's start may change
_FILE_SUFFIX = re.compile(r"\.(py|pyi|js|ts|go|java|rs|rb|c|h|cpp|cfg|toml|ini|rst|md|txt)$")


def role_of(path: str) -> str:
    """A file's role from its path alone (``role.role``)."""
    return role(path)


@dataclass(frozen=True)
class Evidence:
    symbol: str  # the chunk's symbol or heading (empty for a plain passage)
    line_start: int
    line_end: int
    chunk_id: int


@dataclass(frozen=True)
class FileHit:
    path: str
    score: float
    role: str
    why: tuple[str, ...]  # the evidence in words: "words: 3 passages", "defines DatasetGroupBy", …
    evidence: tuple[Evidence, ...]  # the file's best chunks (the keyword arm's; else the dense arm's)
    document_id: str
    raw: float = 0.0  # the evidence before the kind of file weighs in (score = raw × weight)
    weight: float = 1.0  # ROLE[role], or 1 when the text asks for this kind


def keyword_chunks(
    store: Store, collection: str, question: CodeQuestion, filters: Filters, depth: int = DEPTH
) -> list[tuple[Chunk, float]]:
    """The keyword arm's chunks for the text, with their BM25 scores, best first."""
    return _with_chunks(store, [store.keyword_search(collection, question.text, filters, depth)])[0]


@dataclass(frozen=True)
class Read:
    """What the arms return for a text, each list best first: the keyword arm's chunks (``found``, with their
    BM25 scores), the dense arm's for the text and for its title (``near``, one list each; none without
    vectors), the keyword arm's for an issue's title line alone (``titled``; none without a title)."""

    found: Sequence[tuple[Chunk, float]]
    near: Sequence[Sequence[tuple[Chunk, float]]] = ()
    titled: Sequence[tuple[Chunk, float]] = ()

    def chunks(self) -> list[tuple[Chunk, float]]:
        """Every chunk read, keyword first."""
        return [*self.found, *self.titled, *(pair for near in self.near for pair in near)]


def read_arms(
    store: Store,
    collection: str,
    question: CodeQuestion,
    filters: Filters,
    embed_query: EmbedQuery | None,
    depth: int = DEPTH,
) -> Read:
    """The keyword arm for the text and its title (``depth`` chunks each; their chunks fetched at once) and
    the dense arm (``embed_query`` None: not read)."""
    texts = [question.text, *([question.title] if question.title else [])]
    keyword = _with_chunks(store, [store.keyword_search(collection, t, filters, depth) for t in texts])
    near = dense_chunks(store, collection, question, filters, embed_query)
    return Read(keyword[0], near, keyword[1] if question.title else [])


def dense_chunks(
    store: Store,
    collection: str,
    question: CodeQuestion,
    filters: Filters,
    embed_query: EmbedQuery | None,
    depth: int = DENSE_DEPTH,
) -> list[list[tuple[Chunk, float]]]:
    """The dense arm's chunks with their similarities, best first, for the text and (an issue's) its title
    line: one list per text read; none without vectors."""
    if embed_query is None:
        return []
    reads: list[list[ArmHit]] = []
    for text in dict.fromkeys(t for t in (question.text, question.title) if t):
        try:
            model_id, vector = embed_query(text[:MAX_EMBED_QUERY_CHARS])
        except EmbedderUnavailable:
            return []
        reads.append(store.vector_search(collection, model_id, vector, filters, depth))
    return _with_chunks(store, reads)


def _with_chunks(store: Store, reads: Sequence[Sequence[ArmHit]]) -> list[list[tuple[Chunk, float]]]:
    """Each read's hits as (chunk, score), best first; the chunks of all the reads fetched at once."""
    chunks = store.get_chunks(list(dict.fromkeys(h.chunk_id for hits in reads for h in hits)))
    return [[(chunks[h.chunk_id], h.score) for h in hits if h.chunk_id in chunks] for hits in reads]


@dataclass(frozen=True)
class FileSignals:
    """What ``rank_files`` reads of one file, before any weight: the raw signals a learned ranker reads too."""

    path: str
    document_id: str
    words: float  # the sum of its best ``TOP_CHUNKS`` keyword chunks' scores, relative to the best file's
    meaning: float  # the dense arm's evidence (0-1; 0 without vectors)
    defines: float  # the sum of 1/(files defining it) over the (at most three) names it defines
    module: bool  # named as a module or folder/file
    frame: bool  # in a traceback frame, not the innermost
    innermost: bool  # the innermost frame of the repository's
    named: bool  # a short question's word stem is in its file name
    passages: tuple[float, ...]  # its keyword chunks' BM25 scores, best first
    why: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    title: float = 0.0  # the title's words: its best chunks' scores for the title alone, relative (0-1)
    message: bool = False  # holds a message the text quotes


def rank_files(
    store: Store,
    collection: str,
    question: CodeQuestion,
    read: Read,
    filters: Filters | None = None,
    learned: bool = True,
) -> list[FileHit]:
    """Every file with evidence in ``read`` (``read_arms``), best first. ``filters``: the search's (the quoted
    messages are looked up within them); ``learned``: a short text's files re-ordered by the learned ranker."""
    signals = file_signals(store, collection, question, read, filters)
    ranked = weigh_files(store, collection, question, signals)
    model = ranker.load() if learned and _short(question) else None
    if model is None:
        return ranked
    return _learned(store, collection, question, read.found, signals, ranked, model)


def _short(question: CodeQuestion) -> bool:
    """A text the learned ranker re-orders: short, no issue's and no question (``LEARNED_WORDS``)."""
    issue = question.title or question.messages or question.frames or "\n" in question.text.strip()
    return 0 < question.length <= LEARNED_WORDS and not issue and not ASKS.search(question.text)


def _learned(
    store: Store,
    collection: str,
    question: CodeQuestion,
    found: Sequence[tuple[Chunk, float]],
    signals: Sequence[FileSignals],
    ranked: list[FileHit],
    model: ranker.FileRanker,
) -> list[FileHit]:
    """``ranked``'s best files re-ordered by the learned ranker (``ranker.py``); each keeps its evidence
    and takes the score of the place it moves to, so scores still fall down the list, on the same scale."""
    window = ranked[: model.window]
    roots = store.roots(collection)
    relative = {h.path: relative_path(h.path, roots).split("/", 1)[-1] for h in window}
    chunks = {h.path: len(store.current_chunk_ids(h.document_id)) for h in window}
    best = max((score for _, score in found), default=0.0)
    by_path = {s.path: s for s in signals}
    order = ranker.rerank(model, question.text, ranked, by_path, relative, chunks, best)
    return [replace(h, score=at.score, raw=at.score / at.weight) for h, at in zip(order, ranked, strict=True)]


def kind_weight(file: FileHit | None, role: str, asked: frozenset[str]) -> float:
    """A file's kind as the ranking weighs it: its ``FileHit``'s weight, else ``ROLE[role]`` (1 if asked)."""
    return file.weight if file is not None else 1.0 if role in asked else ROLE[role]


def weigh_files(
    store: Store, collection: str, question: CodeQuestion, signals: Sequence[FileSignals]
) -> list[FileHit]:
    """The files ``signals`` describe, each scored by the weights above and its kind, best first."""
    scored: list[tuple[FileSignals, float]] = []
    for s in signals:
        score = s.words
        if s.meaning:
            score += SEMANTIC * s.meaning
        if s.title:
            score += TITLE * s.title
        if s.message:
            score += MESSAGE
        if s.defines:
            score += DEFINES * s.defines
        if s.module:
            score += MODULE
        if s.frame or s.innermost:
            score += INNERMOST if s.innermost else FRAME
        if s.named:
            score += NAMED
        scored.append((s, score))
    roles = file_roles(store, collection, [(s.path, s.document_id, score) for s, score in scored])
    ranked: list[FileHit] = []
    for s, score in scored:
        kind = roles[s.path]
        weight = 1.0 if kind in question.asked else ROLE[kind]
        ranked.append(
            FileHit(s.path, round(score * weight, 4), kind, s.why, s.evidence, s.document_id, score, weight)
        )
    ranked.sort(key=lambda f: (-f.score, f.path))
    return ranked


def file_signals(
    store: Store,
    collection: str,
    question: CodeQuestion,
    read: Read,
    filters: Filters | None = None,
) -> list[FileSignals]:
    """Every file with evidence and what each signal says of it (``rank_files`` weighs them)."""
    scores: dict[str, list[float]] = defaultdict(list)
    best: dict[str, list[Evidence]] = defaultdict(list)
    documents: dict[str, str] = {}
    for chunk, score in read.found:
        scores[chunk.path].append(score)
        documents.setdefault(chunk.path, chunk.document_id)
        if len(best[chunk.path]) < 2:
            best[chunk.path].append(_evidence(chunk))
    meaning = _by_meaning(read.near)
    title = _by_title(read.titled)
    # a file only the title or the dense arm found: its best
    for chunk, _ in read.chunks()[len(read.found) :]:
        documents.setdefault(chunk.path, chunk.document_id)
        if chunk.path not in scores and len(best[chunk.path]) < 2:
            best[chunk.path].append(_evidence(chunk))
    index = store.code_index()
    spelled = question.spelled
    functions = {f for _, f in question.frames if f.isidentifier()}  # libraries' too: they only place frames
    defined: dict[str, set[str]] = defaultdict(set)  # file → the names it defines that the text spells
    defining: dict[str, set[str]] = defaultdict(set)  # name → the files defining it
    for symbol in index.symbols_named(collection, sorted(spelled | functions)) if spelled | functions else []:
        defining[symbol.name].add(symbol.path)
        documents.setdefault(symbol.path, symbol.document_id)
        if symbol.name in spelled:
            defined[symbol.path].add(symbol.name)
    named = _modules(store, collection, question.modules) if question.modules else set()
    top = max((sum(sorted(v, reverse=True)[:TOP_CHUNKS]) for v in scores.values()), default=0.0) or 1.0
    candidates = set(scores) | set(title) | set(defined) | set(meaning) | {p for p in named if p in documents}
    said = _said_in(store, collection, question.messages, filters or Filters())
    framed = _framed(question.frames, candidates, defining)
    candidates |= {path for path, at in framed.items() if at}  # a moved file's function names its new file
    innermost = max((i for found_at in framed.values() for i in found_at), default=-1)  # the last of ours
    signals: list[FileSignals] = []
    for path in candidates:
        own = sorted(scores.get(path, []), reverse=True)
        why = [f"words: {len(own)} passage{'s' if len(own) != 1 else ''}"] if own else []
        if title.get(path):
            why.append("title words")
        if meaning.get(path):
            why.append("meaning")
        rare = 0.0
        if defined.get(path):  # a name few files define says more (``__init__`` says nothing)
            rare = sum(sorted({name_key(n): 1 / len(defining[n]) for n in defined[path]}.values())[-3:])
            why.append("defines " + ", ".join(sorted(defined[path], key=lambda n: len(defining[n]))[:3]))
        if path in named:
            why.append("module named")
        if path in said:
            why.append("holds a message quoted")
        deepest = bool(framed[path]) and framed[path][-1] == innermost
        if framed[path]:
            why.append("in the traceback" + (" (innermost frame)" if deepest else ""))
        in_name = bool(question.words and _file_words(path) & question.words)
        if in_name:
            why.append("file name")
        signals.append(
            FileSignals(path, documents[path], sum(own[:TOP_CHUNKS]) / top, meaning.get(path, 0.0), rare,
                        path in named, bool(framed[path]) and not deepest, deepest, in_name, tuple(own),
                        tuple(why), tuple(best.get(path, ())), title.get(path, 0.0),
                        path in said)
        )  # fmt: skip
    return signals


def file_roles(store: Store, collection: str, files: Sequence[tuple[str, str, float]]) -> dict[str, str]:
    """Each file's role (``role.role``) from its path relative to its indexed root; the best
    ``CONTENT_FILES`` of ``files`` (path, document id, evidence) whose path reads as source (or as a source
    file under a docs folder) also from their first chunk (the header and imports: a generator's mark, a test
    framework, a ``package doc`` clause)."""
    roots = store.roots(collection)
    relative = {path: relative_path(path, roots) for path, _, _ in files}
    roles: dict[str, str] = {path: role(relative[path]) for path, _, _ in files}
    readable = sorted((f for f in files if reads_text(relative[f[0]])), key=lambda f: -f[2])
    # a source file under a docs folder takes no source file's place: each kind its own CONTENT_FILES
    best = [f for f in readable if roles[f[0]] == "source"][:CONTENT_FILES]
    best += [f for f in readable if roles[f[0]] != "source"][:CONTENT_FILES]
    first = {path: ids[0] for path, document, _ in best if (ids := store.current_chunk_ids(document))}
    chunks = store.get_chunks(list(first.values())) if first else {}
    for path, chunk_id in first.items():
        if chunk_id in chunks:
            roles[path] = role(relative[path], chunks[chunk_id].text)
    return roles


def _modules(store: Store, collection: str, written: Sequence[str]) -> set[str]:
    """The indexed files that dotted names (``a.b.c``: ``a/b/c.py`` or ``a/b/c/__init__.py``, the longest
    prefix that is a module) and folder/file names (``lint/run.py``) written in the text name."""
    paths = [p for root in store.roots(collection) for p in store.sources_under(collection, root)]
    by_tail: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        parts = path.replace("\\", "/").split("/")
        stem = parts[-1].rsplit(".", 1)[0]
        module = parts[:-1] if stem == "__init__" else [*parts[:-1], stem]
        for k in range(2, min(len(module), 6) + 1):  # at least two parts: "run" alone names nothing
            by_tail[".".join(module[-k:])].append(path)
        if stem != "__init__":
            by_tail["/".join(parts[-2:])].append(path)
    named: set[str] = set()
    for name in written:
        if "/" in name:
            found = by_tail.get("/".join(name.split("/")[-2:]), [])
            if len(found) <= 2:
                named.update(found)
            continue
        parts = _FILE_SUFFIX.sub("", name).split(".")
        for k in range(len(parts), 1, -1):  # the longest prefix that is a module: a.b.Class.method → a/b.py
            found = by_tail.get(".".join(parts[:k]), [])
            if found:
                if len(found) <= 2:
                    named.update(found)
                break
    return named


_COMMON = frozenset(
    {"init", "main", "test", "tests", "util", "utils", "core", "base", "common", "setup", "conf", "index"}
)


def _file_words(path: str) -> frozenset[str]:
    name = path.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()
    return frozenset(stem(w) for w in re.split(r"[_\-.]+", name) if len(w) >= 3 and w not in _COMMON)


def _evidence(chunk: Chunk) -> Evidence:
    """A chunk as evidence: its symbol without the module the path already names (``Parser.parse``, not
    ``parser.Parser.parse``)."""
    module = chunk.path.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
    symbol = str(chunk.metadata.get("symbol") or "").removeprefix(module + ".")
    return Evidence(symbol, chunk.line_start, chunk.line_end, chunk.chunk_id)


def _said_in(store: Store, collection: str, messages: Sequence[str], filters: Filters) -> set[str]:
    """The files holding a quoted message: the whole message as a run of words, else its first run of
    ``MESSAGE_RUN`` words that one to ``MESSAGE_FILES`` files hold (a run more files hold says nothing); at
    most ``MESSAGE_LOOKUPS`` lookups in all (each reads up to 2,000 chunks on PostgreSQL)."""
    said: set[str] = set()
    lookups = MESSAGE_LOOKUPS
    for message in messages:
        words = message.split()
        runs = [words] + [words[i : i + MESSAGE_RUN] for i in range(len(words) - MESSAGE_RUN + 1)]
        for run in runs:
            lookups -= 1
            if lookups < 0:
                return said
            ids = store.chunks_with_phrase(collection, " ".join(run), filters, MESSAGE_FILES * 20)
            files = {chunk.path for chunk in store.get_chunks(ids).values()} if ids else set()
            if 0 < len(files) <= MESSAGE_FILES:
                said |= files
                break
            if run is words and files:
                break  # the whole message, held by many files: no run of it says more
    return said


def _by_title(titled: Sequence[tuple[Chunk, float]]) -> dict[str, float]:
    """Each file's title evidence: the sum of its best ``TOP_CHUNKS`` chunks' scores relative to the best
    file's (0–1)."""
    scores: dict[str, list[float]] = defaultdict(list)
    for chunk, score in titled:
        scores[chunk.path].append(score)
    sums = {path: sum(sorted(v, reverse=True)[:TOP_CHUNKS]) for path, v in scores.items()}
    top = max(sums.values(), default=0.0) or 1.0
    return {path: total / top for path, total in sums.items() if total > 0}


def _by_meaning(near: Sequence[Sequence[tuple[Chunk, float]]]) -> dict[str, float]:
    """Each file's dense evidence: for each text read, the sum of the file's best ``TOP_CHUNKS`` similarities,
    min-max scaled over the chunks read, relative to the best file's (0–1); the mean over the texts."""
    meaning: dict[str, float] = defaultdict(float)
    for read in (r for r in near if r):
        high, low = read[0][1], read[-1][1]
        span = (high - low) or 1.0
        scaled: dict[str, list[float]] = defaultdict(list)
        for chunk, score in read:
            scaled[chunk.path].append((score - low) / span)
        sums = {path: sum(sorted(v, reverse=True)[:TOP_CHUNKS]) for path, v in scaled.items()}
        top = max(sums.values()) or 1.0
        for path, total in sums.items():
            meaning[path] += total / top / len(near)
    return {path: value for path, value in meaning.items() if value > 0}


def _framed(
    frames: Sequence[tuple[str, str]], candidates: set[str], defining: dict[str, set[str]]
) -> dict[str, list[int]]:
    """For each file, the places of the traceback's frames that are in it: the frame's path names it, or
    (a path no file has: moved or renamed since the report) it is one of at most two files defining the
    frame's function."""
    framed: dict[str, list[int]] = {path: [] for path in candidates}
    for i, (frame, function) in enumerate(frames):
        files = [path for path in candidates if _same_file(frame, path)]
        if not files and _in_project(frame, candidates) and 0 < len(defining.get(function, ())) <= 2:
            files = sorted(defining[function])
        for path in files:
            framed.setdefault(path, []).append(i)
    return framed


def _in_project(frame: str, candidates: set[str]) -> bool:
    """A frame in the repository's package (its folder is one of the candidates' folders: ``seaborn/`` for
    ``site-packages/seaborn/_core.py``), not in the standard library or another package."""
    parts = frame.replace("\\", "/").split("/")
    folder = f"/{parts[-2]}/" if len(parts) >= 2 else ""
    return bool(folder) and any(folder in path.replace("\\", "/") for path in candidates)


def _same_file(frame: str, path: str) -> bool:
    """A traceback's path (often another machine's, site-packages) names this indexed file: the longer of
    the two ends with the other's last two parts; a script's suffix aside (``dist/core/index.js``, compiled,
    is ``source/core/index.ts``)."""
    tail = "/".join(_SCRIPT.sub("", frame.replace("\\", "/")).split("/")[-2:])
    return ("/" + _SCRIPT.sub("", path.replace("\\", "/"))).endswith("/" + tail)


_SCRIPT = re.compile(r"\.[cm]?[jt]sx?$")
