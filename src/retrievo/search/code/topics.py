"""Topics over code in ``search``: the answer ranked as files, each file's best passage first (issue 68).

A re-scorer (``search/rescore.py``) for a query over a collection holding code that no code question's reading
takes (``CodeQuestions``, ``search/code/intent.py``): a topic ("radix tree path matching", "CORS header handling
middleware"), or a "how" headline ("how the router matches path segments": ``reads_as_headline``). The
unit an agent opens is a file, and ten passages of three files say less than the best passages of ten: on
semble's code-search benchmark the fused answer's ten chunks covered 2–5 files. Not a word or two looked up
(a name: the structural arm puts its definition first), a question put to passages ("How can I append a
column to a ColumnTuple?", "How many weeks of parental leave?"), a passage copied word for word, an answer
of one passage a file (snippets), nor a topic whose evidence is in prose: when the best source file's
evidence is below ``SOURCE`` × the best file's, a handbook's pages answer it, not the one script beside
them. Files are ranked by the fusion of two orders and their names::

    ROLE[kind] × (1 / (K + its place among the fused answer's files)
                  + 1 / (K + its place in ``locate``'s ranking, search/code/files.py)
                  + NAME × the share of its name the query says)

- the fused answer's files: in the order of their best hit (what the words and the meaning say of passages);
- ``locate``'s: every file's evidence summed (its best passages' words and meaning, the names it defines, the
  file names a short question says), tests, examples and docs weighed below source; by the hand weights
  alone, without the learned re-order ``locate`` gives a short text (``ranker.py``: fitted on commits'
  subjects, what a change did; a topic names what code is about — left out, semble's 12 gained in Python,
  TypeScript and Elixir and lost in JavaScript and C++, docs/benchmarks.md);
- the name: the words of the file's name (``JsonElement.java``: json, element; a ``mod.rs``, ``index.ts``,
  ``__init__.py`` reads its folder's), each weighing its rarity among the candidate files' names (``json``
  in every name of gson says nothing), as a share of the name the query holds ("JSON element hierarchy and
  tree model": ``JsonElement.java`` whole, ``JsonTreeReader.java`` a part);
- ROLE: a test, an example, a doc page weighs as ``locate`` weighs it, unless the query asks for that kind.

Each file's best hit stands at the file's place; its further hits follow at ``REPEAT`` × for each before them
in the file (the best file's second passage can still come before a weak file's first). A file ``locate``
ranks that the fused answer missed joins with its best chunk, when its evidence is at least ``JOIN`` × the
best file's (each weighed by its kind). Round values, chosen on 12 repositories of
semble's benchmark with one language left out at a time (docs/benchmarks.md); ``explain`` adds the file's
rank and score as the arm ``file``; every hit says ``why``.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from retrievo.models import ArmHit, Chunk, Filters, Hit, Kind, SearchResult
from retrievo.search.code.files import FileHit, file_roles, kind_weight, rank_files, read_arms
from retrievo.search.code.intent import verbatim
from retrievo.search.code.question import read_question, reads_as_code_question, reads_as_headline, stem
from retrievo.search.query import Query, name_key
from retrievo.search.rescore import Scope
from retrievo.store.base import Store
from retrievo.text.identifiers import split_identifier

ANSWER = 10  # an answer's first hits: when each is another file's, the fused order stands
SOURCE = 0.5  # the best source file below this share of the best file's evidence: the answer is prose
K = 10  # the reciprocal rank's offset: the first file scores 1/11, the tenth 1/20
NAME = 0.02  # a name the query says whole: about the lift of a few places in either order
REPEAT = 0.25  # a file's further passages: × REPEAT for each of its passages before
# a file the fused answer missed joins it only with this share of the best file's evidence, each as ``locate``
# weighs it (its kind's weight in: a guide's many words do not keep the code out): in a repository of seven
# files every file is among ``locate``'s first ten, and its one stray word put ``version.rb``'s one line above
# the second passage of the file the topic is about (sinatra)
JOIN = 0.25
# a file named so says nothing of what it holds: its folder names it
_GENERIC = frozenset({"mod", "index", "init", "main", "lib", "__init__"})
_FOLDERS = frozenset({"src", "lib", "source", "sources", "pkg", "internal", "main", "java", "kotlin"})
_SPLIT = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True)
class TopicReading:
    filters: Filters
    deepen: bool = True


class CodeTopics:
    """The re-scorer: ``wants`` a query over a search that may return code that is no code question."""

    def wants(self, query: Query, filters: Filters, held: frozenset[str]) -> TopicReading | None:
        if "code" not in held or (filters.kinds and Kind.CODE not in filters.kinds):
            return None
        if query.short:
            return None  # a word or two looked up (a name: the structural arm puts its definition first)
        if reads_as_headline(query.text):
            return TopicReading(filters)  # "how the router matches path segments": the mechanism's files
        if query.asks or reads_as_code_question(query.text):
            return None  # a question put to passages ("How many weeks of leave?"), or a code question
        return TopicReading(filters)

    def rescore(self, scope: Scope, reading: TopicReading, result: SearchResult) -> SearchResult:
        if not result.hits or any(h.matched_via for h in result.hits[:3]):
            return result  # nothing to order, or a relationship question answered already
        first = result.hits[:ANSWER]
        if verbatim(scope.query, result.hits):
            return result  # a passage copied: the passages holding it word for word answer
        if len({h.chunk.path for h in first}) == len(first):
            return result  # the answer is files already (one passage each: snippets, short files)
        store, collection = scope.store, scope.collection
        question = read_question(scope.query)
        filters = replace(reading.filters, as_of=scope.point)
        read = read_arms(store, collection, question, filters, scope.embed_query)
        located = rank_files(store, collection, question, read, filters, learned=False)
        source = max((f.raw for f in located if f.weight == 1.0), default=0.0)
        if source < SOURCE * max((f.raw for f in located), default=0.0):
            return result  # the evidence is in prose: a handbook's pages answer, not its one script
        fused = list(dict.fromkeys(h.chunk.path for h in result.hits))
        by_path = {f.path: f for f in located}
        others = {h.chunk.path: h.chunk.document_id for h in result.hits if h.chunk.path not in by_path}
        roles = file_roles(store, collection, [(path, doc, 0.0) for path, doc in others.items()])
        names = name_shares(scope.query, [*fused, *by_path])
        scores: dict[str, float] = defaultdict(float)
        for place, path in enumerate(fused):
            scores[path] += 1 / (K + place + 1)
        for place, f in enumerate(located):
            scores[f.path] += 1 / (K + place + 1)
        for path, score in scores.items():
            kind = kind_weight(by_path.get(path), roles.get(path, "source"), question.asked)
            scores[path] = (score + NAME * names.get(path, 0.0)) * kind
        top = max(scores.values(), default=0.0)
        named = named_files(store, collection, question.spelled, [f for f in located if f.weight == 1.0])
        for place, (path, name) in enumerate(named):  # the file the question names, first
            scores[path] = top * (1 + 0.001 * (len(named) - place))
            by_path[path] = replace(by_path[path], why=(*by_path[path].why, f"named: {name}"))
        if named:
            located = [by_path[f.path] for f in located]
        return replace(result, hits=tuple(_ordered(result.hits, located, scores, read.chunks())))


def named_files(
    store: Store, collection: str, spelled: Iterable[str], files: Sequence[FileHit]
) -> list[tuple[str, str]]:
    """The files among ``files`` (ranked, best first) named after a name the question spells that they
    define ("JSON object": ``JsonObject.java`` defining ``JsonObject``; "type adapter factories":
    ``TypeAdapterFactory``), with that name: the longest first, then in ``files``' order (a name whose words
    run inside a longer one found is not kept: ``TypeAdapter``, ``Route`` beside ``Router`` is). Where a
    topic names a class or module whole, its file is what it is about."""
    wanted = set(spelled)
    for name in spelled:  # a plural the words spell names the singular's file: cookies, indexes, entries
        if name.endswith("ies"):
            wanted.add(name[:-3] + "y")
        if name.endswith("es") and name[:-2].endswith(("s", "x", "z", "ch", "sh")):
            wanted.add(name[:-2])  # indexes, matches: not modes (mod) nor planes (plan)
        if name.endswith("s") and not name.endswith("ss"):
            wanted.add(name[:-1])
    wanted = {name for name in wanted if len(name) >= 2}
    place = {f.path: at for at, f in enumerate(files)}
    found: dict[str, str] = {}
    for symbol in store.code_index().symbols_named(collection, sorted(wanted)) if wanted else []:
        stem = symbol.path.replace("\\", "/").rsplit("/", 1)[-1].split(".", 1)[0]
        if symbol.path in place and name_key(stem) == name_key(symbol.name):
            found[symbol.path] = symbol.name
    words = {name: tuple(w.casefold() for w in split_identifier(name)) for name in found.values()}

    def inside(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
        return 0 < len(short) < len(long) and any(
            long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1)
        )

    kept = [(p, n) for p, n in found.items() if not any(inside(words[n], w) for w in words.values())]
    return sorted(kept, key=lambda item: (-len(name_key(item[1])), place[item[0]]))


def name_words(path: str) -> frozenset[str]:
    """The word stems of a file's name (its folder's for a ``mod.rs``, ``index.ts``, ``__init__.py``: the
    nearest that names something, ``src`` and ``lib`` passed over)."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1].split(".", 1)[0]
    if name.lower() in _GENERIC:  # the nearest folder that names something (``src`` says nothing either)
        name = next((p for p in reversed(parts[:-1]) if p.lower() not in _FOLDERS), "")
    words = (w.lower() for part in _SPLIT.split(name) if part for w in split_identifier(part))
    return frozenset(stem(w) for w in words if len(w) >= 2 and w not in _GENERIC)


def name_shares(query: Query, paths: list[str]) -> dict[str, float]:
    """Each path's share of its name's words the query holds, each word weighing log(1 + files / files whose
    name holds it) over ``paths``: 1 for a name the query says whole, 0 for one it does not touch."""
    said = {stem(w.lower()) for w in _SPLIT.split(query.text) if w for w in (w, *split_identifier(w))}
    words = {path: name_words(path) for path in dict.fromkeys(paths)}
    counts = Counter(w for ws in words.values() for w in ws)
    weight = {w: math.log(1 + len(words) / n) for w, n in counts.items()}
    return {
        path: sum(weight[w] for w in ws if w in said) / sum(weight[w] for w in ws)
        for path, ws in words.items()
        if ws & said
    }


def _ordered(
    hits: tuple[Hit, ...], located: list[FileHit], scores: dict[str, float], read: list[tuple[Chunk, float]]
) -> list[Hit]:
    """The hits by their file's score × ``REPEAT`` per passage of the file before them; a ranked file the
    answer missed brings its best chunk (of ``locate``'s evidence) at the answer's lowest relevance, when its
    evidence is at least ``JOIN`` × the best file's."""
    chunks = {chunk.chunk_id: chunk for chunk, _ in read}
    present = {h.chunk.path for h in hits}
    floor = min(h.relevance for h in hits)
    best = max((f.score for f in located), default=0.0)
    joining = [
        Hit(chunks[e.chunk_id], 0.0, floor)
        for f in located[: len(hits)]
        if f.path not in present
        and f.score >= JOIN * best  # a file with a trace of evidence joins no answer (a small repository's)
        and (e := next((e for e in f.evidence if e.chunk_id in chunks), None))
    ]
    place = {f.path: (i, f) for i, f in enumerate(located)}
    seen: dict[str, int] = defaultdict(int)
    ranked: list[tuple[Hit, float]] = []
    top = max(scores.values(), default=0.0) or 1.0  # scores relative to the best file's: 0-1
    for hit in (*hits, *joining):
        path = hit.chunk.path
        score = scores.get(path, 0.0) / top * REPEAT ** seen[path]
        seen[path] += 1
        at, file = place.get(path, (len(located), None))
        why = (f"file {at + 1}", *file.why) if file is not None else hit.why
        explain = hit.explain
        if explain is not None and file is not None:
            explain = {**explain, "file": ArmHit(hit.chunk.chunk_id, at + 1, file.score)}
        ranked.append((replace(hit, score=round(score, 6), why=why, explain=explain), score))
    ranked.sort(key=lambda r: -r[1])  # stable: a file's passages keep the fused order
    return [hit for hit, _ in ranked[: len(hits)]]
