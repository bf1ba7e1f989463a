"""A topic asked of code: the answer ranked as files, each file's best passage first (search/code/topics.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import index_tree
from retrievo import Config, Engine
from retrievo.models import Chunk, Filters, Hit, Kind
from retrievo.search.code import ranker
from retrievo.search.code.files import Evidence, FileHit
from retrievo.search.code.question import read_question, reads_as_headline, stem
from retrievo.search.code.topics import CodeTopics, _ordered, name_shares, name_words, named_files
from retrievo.search.query import read_query

ROUTER = """\
package web

// Router routes each request to its handler; every handler writes the response headers.
type Router struct {
\troutes map[string]Handler
}

// Handle registers a handler for a path; the handler sets the response header values.
func (r *Router) Handle(path string, h Handler) {
\tr.routes[path] = h
}

// ServeHTTP finds the handler of the request's path; the header of a missing route is written here.
func (r *Router) ServeHTTP(w ResponseWriter, req *Request) {
\th, ok := r.routes[req.Path]
\tif !ok {
\t\tw.Header().Set("Content-Type", "text/plain")
\t\tw.WriteHeader(404)
\t\treturn
\t}
\th.ServeHTTP(w, req)
}

// Use adds a middleware in front of every handler: header handling, logging, recovery.
func (r *Router) Use(middleware func(Handler) Handler) {
\tfor path, h := range r.routes {
\t\tr.routes[path] = middleware(h)
\t}
}
"""

CORS = """\
package middleware

// Cors answers a preflight request and marks every response as shareable across origins.
func Cors(next Handler) Handler {
\treturn HandlerFunc(func(w ResponseWriter, req *Request) {
\t\tw.Header().Set("Access-Control-Allow-Origin", "*")
\t\tif req.Method == "OPTIONS" {
\t\t\tw.WriteHeader(204)
\t\t\treturn
\t\t}
\t\tnext.ServeHTTP(w, req)
\t})
}
"""

LOGGER = """\
package middleware

// Logger is a middleware that logs each request's method, path and the time its handler took.
func Logger(next Handler) Handler {
\treturn HandlerFunc(func(w ResponseWriter, req *Request) {
\t\tstart := Now()
\t\tnext.ServeHTTP(w, req)
\t\tPrintf("%s %s %v", req.Method, req.Path, Since(start))
\t})
}
"""

ROUTER_TEST = """\
package web

// TestHeaderHandlingMiddleware checks the header handling middleware: the header, the header, the header.
func TestHeaderHandlingMiddleware(t *T) {
\tr := &Router{}
\tr.Use(Cors)
\tif r.Header("Access-Control-Allow-Origin") != "*" {
\t\tt.Fatal("header handling middleware: no header")
\t}
}
"""


MIDDLEWARE_DOCS = """\
# Middleware

The CORS middleware handles the CORS headers: CORS header handling for every route. Add the CORS middleware
with `Use(Cors)`; the logger middleware logs each request.
"""


@pytest.fixture(scope="module")
def web_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("topics") / "web"
    files = {"router.go": ROUTER, "middleware/cors.go": CORS, "middleware/logger.go": LOGGER,
             "router_test.go": ROUTER_TEST, "docs/middleware.md": MIDDLEWARE_DOCS}  # fmt: skip
    return index_tree(root, files, root.parent / "web.db")


def _files(db: Path, query: str, ranking: str = "on") -> list[str]:
    with Engine(Config(db=db, embedder="none", code_ranking=ranking)) as engine:
        return [Path(h.chunk.path).name for h in engine.search(query, limit=6).hits]


def test_a_topic_is_answered_by_files_each_with_its_best_passage_first(web_db: Path) -> None:
    topic = "CORS header handling middleware"
    fused = _files(web_db, topic, ranking="off")
    assert fused[0] in ("router_test.go", "middleware.md"), "the test and the guide repeat the topic's words"
    assert len(set(fused)) < len(fused), "the fused answer's passages share files"
    files = _files(web_db, topic)
    assert files[0] == "cors.go", "the file the topic names comes first"
    assert files.index("router_test.go") > files.index("router.go"), "the test weighs below the source"
    assert files.index("middleware.md") > files.index("logger.go"), "the guide weighs below the source"
    assert len(set(files[:3])) == 3, "each file's best passage before any file's second"


def test_a_topics_files_are_ranked_by_the_hand_weights_not_the_learned_re_order(
    web_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The learned ranker was fitted on commits' subjects; a topic names what code is about. ``locate`` of
    the same short text still reads it (the real weights, counted as they load)."""
    loads: list[object] = []
    real = ranker.load

    def counted(*args: Any) -> ranker.FileRanker | None:
        model = real(*args)
        loads.append(model)
        return model

    monkeypatch.setattr(ranker, "load", counted)
    topic = "CORS header handling middleware"
    with Engine(Config(db=web_db, embedder="none")) as engine:
        hits = engine.search(topic, limit=3).hits
        assert hits[0].why[0] == "file 1" and Path(hits[0].chunk.path).name == "cors.go"
        assert loads == [], "the topic's file ranking did not read the learned ranker"
        assert Path(engine.locate(topic, limit=3)[0].path).name == "cors.go"
    assert loads and loads[0] is not None, "locate re-orders a short text with the fitted weights"


def test_the_answer_says_why_each_hit_stands_where_it_does(web_db: Path) -> None:
    with Engine(Config(db=web_db, embedder="none")) as engine:
        hits = engine.search("CORS header handling middleware", limit=3, explain=True).hits
    assert hits[0].why[0] == "file 1"
    assert hits[0].explain is not None and hits[0].explain["file"].rank == 1


def test_a_files_name_is_read_in_words_and_a_generic_name_by_its_folder() -> None:
    def stems(*words: str) -> set[str]:
        return {stem(w) for w in words}

    assert name_words("gson/JsonElement.java") == stems("json", "element")
    assert name_words("lib/phoenix/channel_server.ex") == stems("channel", "server")
    assert name_words("axum/src/extract/mod.rs") == stems("extract")
    assert name_words("packages/server/src/index.ts") == stems("server")


def test_a_name_the_query_says_whole_counts_more_than_one_it_touches() -> None:
    paths = ["JsonElement.java", "JsonTreeReader.java", "JsonObject.java", "Gson.java", "JsonParser.java"]
    shares = name_shares(read_query("JSON element hierarchy and tree model"), paths)
    assert shares["JsonElement.java"] == pytest.approx(1.0)
    assert 0 < shares["JsonTreeReader.java"] < shares["JsonElement.java"]
    assert shares["JsonObject.java"] < shares["JsonTreeReader.java"], "json is in every name: it says little"
    assert "Gson.java" not in shares


@pytest.mark.parametrize(
    ("text", "headline"),
    [
        ("how the router matches path segments to handlers", True),
        ("how middleware chains context transformations between procedures", True),
        ("how does the router match path segments?", False),
        ("how to parse a date", False),
        ("How do I retry a request", False),
        ("how routing", False),
        ("how the router matches\nTraceback (most recent call last):", False),
    ],
)
def test_a_how_headline_reads_as_a_topic_a_how_question_does_not(text: str, headline: bool) -> None:
    assert reads_as_headline(text) is headline


def test_prose_answers_a_topic_its_pages_hold_though_the_collection_holds_code(tmp_path: Path) -> None:
    """A handbook with one script: the pages hold the evidence, and the script does not come first because
    it is the one file of the kind a code search asks for."""
    pages = {
        "allowances.md": "# Allowances\n\n## Home office\n\nThe home office allowance is 500 euros a year: a desk, a "
        "chair.\n\n## Claims\n\nClaim the home office allowance with a receipt; claims are paid monthly.\n\n"
        "## Screens\n\nA second screen is part of the home office allowance.\n",
        "travel.md": "# Travel\n\n## Trains\n\nTrain tickets are booked by the office.\n\n"
        "## Hotels\n\nHotels up to 120 euros a night; claims with a receipt.\n",
        "tools/claims.py": "def total_claims(claims):\n    # the sum of every claim's amount\n"
        "    return sum(c.amount for c in claims)\n\n\n"
        "def office_claims(claims):\n    # the home office claims\n    return [c for c in claims if c.office]\n",
    }
    db = index_tree(tmp_path / "handbook", pages, tmp_path / "handbook.db")
    assert _files(db, "home office allowance claims")[0] == "allowances.md"


@pytest.mark.parametrize(
    ("query", "held", "kinds", "wanted"),
    [
        ("radix tree path matching", {"code"}, (), True),
        ("Mux", {"code"}, (), False),  # a name looked up: the structural arm's
        ("radix tree", {"code"}, (), False),  # two words looked up
        ("radix tree path matching", {"document"}, (), False),
        ("radix tree path matching", {"code", "document"}, (Kind.DOCUMENT,), False),
        ("where are command line options parsed", {"code"}, (), False),  # a code question's
        ("How can I append a column to a ColumnTuple?", {"code"}, (), False),  # a question put to passages
        ("How many weeks of parental leave?", {"code", "document"}, (), False),
        ("how the router matches path segments", {"code"}, (), True),  # a headline: a topic
        ("", {"code"}, (), False),
    ],
)
def test_which_queries_are_read_as_topics(
    query: str, held: set[str], kinds: tuple[Kind, ...], wanted: bool
) -> None:
    reading = CodeTopics().wants(read_query(query), Filters(kinds=kinds), frozenset(held))
    assert (reading is not None) is wanted


def test_an_answer_of_one_passage_a_file_keeps_the_fused_order(tmp_path: Path) -> None:
    """Snippets, one function a file: the answer is files already, and the fused order stands."""
    snippets = {
        "empty.py": "def is_empty(items):\n    # check if a list is empty\n    return not items\n",
        "first.py": "def first_item(items):\n    # the first item of a list, or None when the list is empty\n"
        "    return items[0] if items else None\n",
        "length.py": "def count(items):\n    # how many items a list holds\n    return len(items)\n",
    }
    db = index_tree(tmp_path / "snippets", snippets, tmp_path / "snippets.db")
    query = "check if a python list is empty"
    assert _files(db, query) == _files(db, query, ranking="off")
    with Engine(Config(db=db, embedder="none")) as engine:
        hits = engine.search(query, limit=6).hits
    assert hits and not any(h.why for h in hits), "no file ranking said why: the fused answer as it was"


def test_a_file_with_a_trace_of_evidence_does_not_join_a_small_repositorys_answer(tmp_path: Path) -> None:
    """Seven files: each is among ``locate``'s first ten. One stray word of the topic does not put a file's one
    line above the second passage of the file the topic is about (sinatra's ``version.rb``)."""
    router = "package web\n\n" + "\n".join(
        f"// compileRoute{n} compiles route pattern {n} and matches request paths against the compiled pattern.\n"
        f"func compileRoute{n}(pattern string) *Pattern {{\n\treturn compile(pattern, {n})\n}}\n"
        for n in range(24)
    )
    strays = {
        f"{name}.go": f"package web\n\n// {name}: what this file keeps, changed with each route release.\n"
        f"const {name.title()} = {n}\n"
        for n, name in enumerate(["version", "logger", "hash", "errors", "server", "config"])
    }
    db = index_tree(tmp_path / "small", {"router.go": router, **strays}, tmp_path / "small.db")
    topic = "how route patterns are compiled and matched"
    assert reads_as_headline(topic)
    with Engine(Config(db=db, embedder="none")) as engine:
        hits = engine.search(topic, limit=4, explain=True).hits
    assert [Path(h.chunk.path).name for h in hits] == ["router.go"] * 4
    assert hits[0].explain is not None and hits[0].explain["file"].rank == 1, "the topic's file ranking ran"


def _chunk(chunk_id: int, path: str) -> Chunk:
    return Chunk(
        chunk_id, path, "r", "c", 0, "text", "", 0, 4, 1, 1, "h", "s", "code", 1, {}, path, path, Kind.CODE
    )


def _file(path: str, raw: float, weight: float, chunk_id: int) -> FileHit:
    return FileHit(path, raw * weight, "docs" if weight < 1 else "source", (), (Evidence("", 1, 1, chunk_id),),
                   path, raw, weight)  # fmt: skip


def test_a_missed_file_joins_by_its_evidence_as_the_ranking_weighs_it() -> None:
    """The join share reads each file's evidence at its kind's weight: a guide's many words (docs, × 0.3) do
    not keep out a source file with a seventh of them (axum with its docs indexed: the middleware file a topic
    was about fell out of the answer), and a source file with a tenth of the best file's evidence stays out."""
    answer = tuple(
        Hit(_chunk(n, path), 1.0 - n / 10, 0.5)
        for n, path in enumerate(["guide.md", "router.rs"] * 3, start=1)
    )  # six passages of two files: room for four more files
    located = [
        _file("guide.md", 3.0, 0.3, 1),  # weighed 0.9
        _file("router.rs", 0.8, 1.0, 2),
        _file("layer.rs", 0.4, 1.0, 13),  # a seventh of the guide's words, half the router's as weighed
        _file("version.rs", 0.08, 1.0, 14),  # one stray word
    ]
    read = [
        (_chunk(n, path), 1.0)
        for n, path in [(1, "guide.md"), (2, "router.rs"), (13, "layer.rs"), (14, "version.rs")]
    ]
    scores = {f.path: f.score for f in located}
    paths = [h.chunk.path for h in _ordered(answer, located, scores, read)]
    assert "layer.rs" in paths and "version.rs" not in paths, paths


def _java(name: str, doc: str, members: list[tuple[str, str]], kind: str = "class") -> str:
    body = "".join(
        f"    /** {text} */\n    public Object {member}(Object value) {{\n        return value;\n    }}\n\n"
        for member, text in members
    )
    return f"package com.example;\n\n/** {doc} */\npublic {kind} {name} {{\n{body}}}\n"


NAMED_FILES = {
    "JsonObject.java": _java(
        "JsonObject",
        "Members of a name and a value, in order.",
        [("add", "Adds a member."), ("remove", "Removes a member."), ("keySet", "The members' keys.")],
    ),
    "FieldNamingPolicy.java": _java(
        "FieldNamingPolicy",
        "How named fields are written: each field's name changed to the JSON object's key.",
        [
            ("translateName", "The JSON name of a named field of an object."),
            ("upperCamel", "Field names with the first letter of each named field upper case."),
        ],
    ),
    "ExclusionStrategy.java": _java(
        "ExclusionStrategy",
        "Decides whether a field or a class is skipped.",
        [
            ("shouldSkipField", "Whether a field is skipped."),
            ("shouldSkipClass", "Whether a class is skipped."),
        ],
        kind="interface",
    ),
    "Excluder.java": _java(
        "Excluder",
        "Skips what the registered strategies of exclusion say to skip.",
        [
            ("excludeField", "Every exclusion strategy asked of a field."),
            ("excludeClass", "Every exclusion strategy asked of a class."),
        ],
    ),
    "HttpCookie.java": _java("HttpCookie", "A cookie.", [("name", "Its name."), ("value", "Its value.")]),
    "Mod.java": _java("Mod", "A modulus.", [("of", "The remainder.")]),
    "Mode.java": _java("Mode", "A mode.", [("on", "Whether on.")]),
    "DataType.java": _java("DataType", "A column's type.", [("width", "Its width.")]),
    "MetadataType.java": _java("MetadataType", "A metadata entry's type.", [("key", "Its key.")]),
    "TypeAdapter.java": _java(
        "TypeAdapter", "Reads and writes one type.", [("read", "Reads."), ("write", "Writes.")]
    ),
    "TypeAdapterFactory.java": _java(
        "TypeAdapterFactory",
        "Makes type adapters.",
        [("create", "A type adapter for a type, or null.")],
        "interface",
    ),
}


def test_the_file_a_topic_names_is_the_one_named_after_a_name_it_spells_and_defining_it(
    tmp_path: Path,
) -> None:
    """ "JSON object" spells ``JsonObject``, which ``JsonObject.java`` defines (``FieldNamingPolicy.java`` only
    says the words); a plural spells its singular ("exclusion strategies": ``ExclusionStrategy``); a name
    inside a longer one found gives way ("type adapter factories": ``TypeAdapterFactory``, not
    ``TypeAdapter``); a file must be among those ranked."""
    db = index_tree(tmp_path / "gson", NAMED_FILES, tmp_path / "gson.db")
    with Engine(Config(db=db, embedder="none")) as engine:
        store = engine._open_store(create=False)
        collection = engine.config.collection
        ranked = [
            FileHit(str(tmp_path / "gson" / name), 1.0, "source", (), (), "doc") for name in NAMED_FILES
        ]

        def named(text: str, files: list[FileHit] = ranked) -> list[tuple[str, str]]:
            spelled = read_question(read_query(text)).spelled
            return [(Path(path).name, name) for path, name in named_files(store, collection, spelled, files)]

        assert named("JSON object with named fields") == [("JsonObject.java", "JsonObject")]
        assert named("exclusion strategies for fields and classes") == [
            ("ExclusionStrategy.java", "ExclusionStrategy")
        ]
        assert named("how type adapter factories are registered") == [
            ("TypeAdapterFactory.java", "TypeAdapterFactory")
        ]
        assert named("http cookies sent by the server") == [("HttpCookie.java", "HttpCookie")]
        assert named("metadata type and data type of columns") == [
            ("MetadataType.java", "MetadataType"),
            ("DataType.java", "DataType"),
        ], "a name is inside another only word for word, not letter for letter"
        modes = named_files(store, collection, ["Modes"], ranked)
        assert [Path(path).name for path, _ in modes] == ["Mode.java"], "Modes: Mode, not Mod"
        assert named("how named fields are written") == [], "no name the words spell is a file's"
        assert named("JSON object with named fields", ranked[1:]) == [], "JsonObject.java is not ranked"
        hits = engine.search("JSON object with named fields", limit=6).hits
    assert Path(hits[0].chunk.path).name == "JsonObject.java"
    assert "named: JsonObject" in hits[0].why, "the answer says why the file stands first"
