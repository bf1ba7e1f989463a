"""The structure index read as a graph, and the structural search arm (issue 10, seed 002).

Edges resolve by name at read time: an edge's ``target_name`` names symbols of the collection; when
a language server resolved the edge (``retrievo index --lsp``) its answer wins; otherwise, when several
symbols share the name, a ``self.``/``this.`` call prefers the caller's own class, then a dotted
target's suffix, then the caller's file, and otherwise all of them are kept (the edge is ambiguous).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from retrievo.errors import ConfigError, DocumentNotFound
from retrievo.models import ArmHit, Filters
from retrievo.search.query import MAX_NAMES, Query, spells_names
from retrievo.store.base import Store
from retrievo.store.code_index import EDGE_KINDS, CodeIndex, EdgeHit, SymbolHit, continued

MAX_DEPTH = 3
MAX_EDGES = 500
CLASS_LIKE = frozenset({"class", "interface", "struct", "impl", "enum", "type", "namespace"})
# The seed's weights: a symbol the query names, what it depends on, the tests that exercise it.
DIRECT, DEPENDENCY, TEST = 1.0, 0.8, 0.7
CONTINUED = 0.75  # a long symbol's chunks after its first, relative to its weight
# A query that is only names (``Command.parse_args``): the named definitions' first chunks weigh this much,
# enough that fusion puts them first (STRUCTURE_BONUS × NAMED × spread lifts any chunk above the rest).
NAMED = 4.0
REEXPORTS = 3  # a name defined elsewhere: the re-exports that stand for its definition, at most


@dataclass(frozen=True)
class GraphEdge:
    source: str
    kind: str
    target: str
    resolved: tuple[str, ...]  # qualified names it resolves to inside the collection (empty: external)
    path: str
    line: int
    line_text: str
    depth: int
    is_test: bool
    # A test reached through other code: the symbols between the test and the one asked about, the test's
    # callee first (``executeCommand``, ``Command.Execute``, …); empty when the test calls it directly.
    via: tuple[str, ...] = ()


@dataclass
class SymbolGraph:
    symbol: SymbolHit
    direction: str
    depth: int
    edges: list[GraphEdge] = field(default_factory=list)
    symbols: dict[str, SymbolHit] = field(default_factory=dict)
    tests: list[GraphEdge] = field(default_factory=list)
    truncated: bool = False


def _resolve(edge: EdgeHit, candidates: Sequence[SymbolHit]) -> list[SymbolHit]:
    named = [c for c in candidates if c.name == edge.target_name]
    if edge.resolved:  # a language server said exactly which (index --lsp); "" = it did not know
        exact = [c for c in named if c.qualified_name == edge.resolved]
        if exact:
            return exact
    if len(named) <= 1:
        return named
    if edge.target.startswith(("self.", "this.", "cls.")):
        owner = edge.source.rsplit(".", 1)[0]
        own = [c for c in named if c.qualified_name.startswith(owner + ".")]
        if own:
            return own
    dotted = edge.target.split("(")[0]
    suffix = [c for c in named if "." in dotted and c.qualified_name.endswith(dotted)]
    if suffix:
        return suffix
    same_file = [c for c in named if c.document_id == edge.document_id]
    return same_file or named


def _members(index: CodeIndex, collection: str, symbol: SymbolHit) -> list[str]:
    """A class-like symbol speaks for its methods too."""
    if symbol.kind not in CLASS_LIKE:
        return [symbol.qualified_name]
    members = index.find_symbols(collection, symbol.qualified_name + ".*", limit=500)
    return [
        symbol.qualified_name,
        *(m.qualified_name for m in members if m.document_id == symbol.document_id),
    ]


def one_symbol(index: CodeIndex, collection: str, symbol: str) -> SymbolHit:
    """The symbol a user means: an exact qualified name, else the one symbol of that name."""
    exact = index.symbols_named(collection, [symbol], qualified=True)
    candidates = exact or index.find_symbols(collection, symbol, limit=10)
    named = [c for c in candidates if symbol in (c.qualified_name, c.name)] or candidates
    if not named:
        raise DocumentNotFound(
            f"no symbol {symbol!r} in collection {collection!r}; look names up with find_symbol "
            "(`retrievo symbols PATTERN`)"
        )
    if len(named) > 1 and not exact:
        listed = ", ".join(f"{c.qualified_name} ({c.path}:{c.line_start})" for c in named[:5])
        raise ConfigError(f"{symbol!r} names {len(named)} symbols; give the qualified name of one: {listed}")
    return named[0]


def dependencies(
    index: CodeIndex, collection: str, symbol: SymbolHit, depth: int = 1, kinds: Sequence[str] = EDGE_KINDS
) -> SymbolGraph:
    graph = SymbolGraph(symbol, "dependencies", depth)
    frontier = _members(index, collection, symbol)
    seen = set(frontier)
    for level in range(1, min(depth, MAX_DEPTH) + 1):
        edges = index.edges_from(collection, frontier, kinds)
        candidates = index.symbols_named(collection, sorted({e.target_name for e in edges}))
        frontier = []
        for edge in edges:
            resolved = _resolve(edge, candidates)
            if len(graph.edges) >= MAX_EDGES:
                graph.truncated = True
                return graph
            graph.edges.append(_graph_edge(edge, resolved, level))
            for target in resolved:
                graph.symbols.setdefault(target.qualified_name, target)
                if target.qualified_name not in seen:
                    seen.add(target.qualified_name)
                    frontier.append(target.qualified_name)
        if not frontier:
            break
    return graph


def dependents(
    index: CodeIndex, collection: str, symbol: SymbolHit, depth: int = 1, kinds: Sequence[str] = EDGE_KINDS
) -> SymbolGraph:
    graph = SymbolGraph(symbol, "dependents", depth)
    frontier = [symbol]
    seen = {symbol.qualified_name}
    for level in range(1, min(depth, MAX_DEPTH) + 1):
        wanted = {s.qualified_name for s in frontier}
        edges = index.edges_to(collection, sorted({s.name for s in frontier}), kinds)
        candidates = index.symbols_named(collection, sorted({e.target_name for e in edges}))
        sources = index.symbols_named(collection, sorted({e.source for e in edges}), qualified=True)
        by_name = {s.qualified_name: s for s in sources}
        frontier = []
        for edge in edges:
            resolved = [r for r in _resolve(edge, candidates) if r.qualified_name in wanted]
            if not resolved:
                continue
            if len(graph.edges) >= MAX_EDGES:
                graph.truncated = True
                return graph
            graph_edge = _graph_edge(edge, resolved, level)
            graph.edges.append(graph_edge)
            if edge.is_test:
                graph.tests.append(graph_edge)
            caller = by_name.get(edge.source)
            if caller is not None:
                graph.symbols.setdefault(caller.qualified_name, caller)
                if caller.qualified_name not in seen:
                    seen.add(caller.qualified_name)
                    frontier.append(caller)
        if not frontier:
            break
    return graph


# How far ``tests_for`` walks up from a symbol to the tests that reach it: TEST_DEPTH callers in all, of which
# at most TEST_HOPS are code outside the tests (``Execute`` → ``ExecuteC`` → ``execute``); helpers in test
# files (``executeCommand``) are walked through too. Each level is one query; TEST_FRONTIER bounds its width.
TEST_DEPTH = 5
TEST_HOPS = 3
TEST_FRONTIER = 200
# A test function by its name, where the language names them so: a helper in a test file is walked through.
_TEST_NAMES = {
    "go": re.compile(r"^(Test|Benchmark|Example|Fuzz)([A-Z0-9_]|$)"),
    "python": re.compile(r"^test"),
}


def is_test_function(symbol: SymbolHit) -> bool:
    """Whether a symbol of a test file is a test (not a helper): Go's ``TestX``/``BenchmarkX``/``ExampleX``/
    ``FuzzX``, Python's ``test_x``; in languages that mark tests otherwise (JUnit's ``@Test``, ``it('…')``
    callbacks) every symbol of a test file counts."""
    pattern = _TEST_NAMES.get(symbol.language)
    return symbol.is_test and (pattern is None or bool(pattern.match(symbol.name)))


def tests_for(
    index: CodeIndex, collection: str, symbol: SymbolHit, depth: int = TEST_DEPTH
) -> list[GraphEdge]:
    """Test code that reaches the symbol, nearest first: tests calling it (or using, extending it), and tests
    reaching it through callers — code outside the tests (at most ``TEST_HOPS`` of them) and helpers in test
    files. Each edge is the test's own line; ``via`` names what lies between. A helper in a test file through
    which no test is found within ``depth`` is listed itself."""
    kinds = ("calls", "inherits", "implements", "uses")
    found: dict[tuple[str, str], GraphEdge] = {}
    helpers: dict[tuple[str, str], GraphEdge] = {}
    through_helper: set[str] = set()
    # each frontier symbol with the chain below it (its callee first) and the non-test hops taken
    frontier: list[tuple[SymbolHit, tuple[str, ...], int]] = [(symbol, (), 0)]
    seen = {symbol.qualified_name}
    for level in range(1, max(1, depth) + 1):
        by_name: dict[str, list[tuple[SymbolHit, tuple[str, ...], int]]] = {}
        for item in frontier:
            by_name.setdefault(item[0].name, []).append(item)
        edges = index.edges_to(collection, sorted(by_name), kinds)
        if len(edges) > MAX_EDGES:
            edges = sorted(edges, key=lambda e: (not e.is_test, e.path, e.line))[:MAX_EDGES]
        candidates = index.symbols_named(collection, sorted({e.target_name for e in edges}))
        sources = index.symbols_named(collection, sorted({e.source for e in edges}), qualified=True)
        callers = {s.qualified_name: s for s in sources}
        wanted = {item[0].qualified_name: item for items in by_name.values() for item in items}
        next_frontier: list[tuple[SymbolHit, tuple[str, ...], int]] = []
        for edge in sorted(edges, key=lambda e: (e.path, e.line)):
            reached = [
                wanted[r.qualified_name] for r in _resolve(edge, candidates) if r.qualified_name in wanted
            ]
            if not reached:
                continue
            callee, chain, hops = reached[0]
            via = chain if callee is symbol else (callee.qualified_name, *chain)
            caller = callers.get(edge.source)
            graph_edge = replace(_graph_edge(edge, (callee,), level), via=via)
            key = (edge.source, edge.path)
            if edge.is_test and (caller is None or is_test_function(caller)):
                found.setdefault(key, graph_edge)
                through_helper.update(via)
                continue
            if caller is None or caller.qualified_name in seen:
                continue
            if edge.is_test:
                helpers.setdefault(key, graph_edge)
            elif hops >= TEST_HOPS:
                continue
            seen.add(caller.qualified_name)
            next_frontier.append((caller, via, hops + (not edge.is_test)))
        frontier = next_frontier[:TEST_FRONTIER]
        if not frontier:
            break
    tests = list(found.values()) + [e for e in helpers.values() if e.source not in through_helper]
    return sorted(tests, key=lambda e: (e.depth, e.path, e.line))


def _graph_edge(edge: EdgeHit, resolved: Iterable[SymbolHit], depth: int) -> GraphEdge:
    return GraphEdge(
        edge.source, edge.kind, edge.target, tuple(dict.fromkeys(r.qualified_name for r in resolved)), edge.path,
        edge.line,
        edge.line_text, depth, edge.is_test,
    )  # fmt: skip


def _definitions(index: CodeIndex, collection: str, names: Sequence[str]) -> list[SymbolHit]:
    """The definitions of the names a query spells as code (a dotted name: the one so qualified, where
    one is), at most 10, in ``_definition_order``."""
    direct = index.symbols_named(collection, sorted({n.split(".")[-1] for n in names}))
    dotted = [n for n in names if "." in n]
    if dotted:
        exact = [
            s
            for s in direct
            if any(s.qualified_name == d or s.qualified_name.endswith("." + d) for d in dotted)
        ]
        direct = exact or direct
    return sorted(direct, key=_definition_order)[:10]


def _reexported(
    store: Store, collection: str, names: Sequence[str], direct: Sequence[SymbolHit]
) -> list[int]:
    """The chunks that re-export a name the collection does not define (``pub use axum_core::extract::
    FromRequest``, a package's ``__init__.py`` importing it), at most ``REEXPORTS`` a name, the shallowest
    file first: a dependency's name reached through this code's face."""
    index = store.code_index()
    wanted = {n.split(".")[-1] for n in names} - {s.name for s in direct}
    wanted = {n for n in wanted if re.fullmatch(r"\w+", n)}
    if wanted:  # ``direct`` holds at most 10, a dotted name's only: the others may be defined too
        wanted -= {s.name for s in index.symbols_named(collection, sorted(wanted))}
    if not wanted:
        return []
    missing = sorted(wanted)
    edges = index.reexports(collection, missing)
    chunks = index.chunks_at([(e.document_id, e.line) for e in edges])
    # an import over several lines names its names on the lines after: its chunk's text is read, only its
    over = {
        chunks[e.document_id, e.line] for e in edges if continued(e) and (e.document_id, e.line) in chunks
    }
    texts = {c.chunk_id: c.text for c in store.get_chunks(list(over)).values()} if over else {}
    words = {name: re.compile(rf"\b{re.escape(name)}\b") for name in missing}
    taken: dict[str, list[int]] = {name: [] for name in missing}
    for edge in edges:
        chunk_id = chunks.get((edge.document_id, edge.line))
        if chunk_id is None:
            continue
        said = texts.get(chunk_id, "") if continued(edge) else edge.target + " " + edge.line_text
        for name, word in words.items():
            mine = taken[name]
            if len(mine) < REEXPORTS and chunk_id not in mine and word.search(said):
                mine.append(chunk_id)
    return list(dict.fromkeys(chunk_id for name in missing for chunk_id in taken[name]))


def _definition_order(symbol: SymbolHit) -> tuple[bool, int, int]:
    """A name's definitions, the type first ("Engine": gin's ``type Engine struct`` before a validator's
    ``Engine()`` method), then the shortest qualified name ("Channel": ``Phoenix.Channel`` before
    ``Mix.Tasks.Phx.Gen.Channel``); the answer keeps this order."""
    return symbol.is_test, _FIRST.get(symbol.kind, 3), len(symbol.qualified_name)


def _lead(head: float, place: int | None) -> float:
    """A definition's first chunk: ``head`` for the first of the name's definitions (``direct``'s order), the
    others ``DIRECT`` — the type a bare name asks for leads the fusion, not only this arm's list."""
    return head if place == 0 else min(head, DIRECT)


# the kinds of definition a bare name most often asks for first: a type, then a function, then a method
_FIRST = {"class": 0, "struct": 0, "enum": 0, "interface": 0, "type": 0, "trait": 0, "namespace": 0,
          "function": 1, "method": 2}  # fmt: skip


def structural_arm(
    store: Store, collection: str, query: Query, filters: Filters, limit: int, entities: Sequence[str] = ()
) -> list[ArmHit]:
    """Chunks of the symbols a query names (1.0), what they call or extend (0.8), their tests (0.7).

    ``entities``: more names, from a query rewriter.
    """
    names = list(dict.fromkeys([*query.identifiers, *entities]))[:MAX_NAMES]
    if not names and not query.compounds:
        return []
    index = store.code_index()
    direct = _definitions(index, collection, names) if names else []
    # Names its adjacent words spell ("JSON object": gson's ``JsonObject``): their definitions, after the
    # names it spells as code, without their callees and tests.
    known = {s.qualified_name for s in direct}
    spelled = [
        s
        for s in index.symbols_named(collection, list(query.compounds))
        if s.qualified_name not in known
    ] if query.compounds and not query.names_only else []  # fmt: skip
    spelled = sorted(spelled, key=_definition_order)[: 10 - len(direct)]
    # an issue's text names many things it does not ask about: a re-export stands in for a short query's names
    stand_ins = _reexported(store, collection, names, direct) if spells_names(query.text) else []
    if not direct and not spelled and not stand_ins:
        return []
    order = {s.qualified_name: place for place, s in enumerate([*direct, *spelled])}
    weights: dict[str, tuple[float, SymbolHit]] = {s.qualified_name: (DIRECT, s) for s in [*direct, *spelled]}
    for symbol in direct[:5]:
        graph = dependencies(index, collection, symbol, 1, kinds=("calls", "inherits", "implements"))
        for target in list(graph.symbols.values())[:10]:
            weights.setdefault(target.qualified_name, (DEPENDENCY, target))
        for test in tests_for(index, collection, symbol, depth=1)[:5]:
            for found in index.symbols_named(collection, [test.source], qualified=True):
                weights.setdefault(found.qualified_name, (TEST, found))
    chunks = index.chunks_of_symbols([symbol for _, symbol in weights.values()])
    # A long symbol's later chunks weigh CONTINUED as much: its name finds its head (signature, docstring) first.
    head = NAMED if query.names_only else DIRECT
    ranked = sorted(
        (
            ((_lead(head, order.get(name)) if weight == DIRECT else weight) if i == 0 else weight * CONTINUED,
             order.get(name, len(order)), chunk_id)
            for name, (weight, _) in weights.items()
            for i, chunk_id in enumerate(chunks.get(name, []))
        ),
        key=lambda row: (-row[0], row[1], row[2]),
    )  # fmt: skip
    scored = [(weight, chunk_id) for weight, _, chunk_id in ranked]
    # A name defined outside the collection: where a module re-exports it stands for its definition, after them.
    held = {chunk_id for _, chunk_id in scored}
    for place, chunk_id in enumerate(stand_ins, start=len(order)):
        if chunk_id not in held:
            held.add(chunk_id)
            scored.append((_lead(head, place), chunk_id))
    scored.sort(key=lambda row: -row[0])
    if filters != Filters():
        allowed = store.filter_chunk_ids(collection, [chunk_id for _, chunk_id in scored], filters)
        scored = [(w, c) for w, c in scored if c in allowed]
    return [ArmHit(chunk_id, rank, weight) for rank, (weight, chunk_id) in enumerate(scored[:limit], start=1)]
