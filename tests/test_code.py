"""Code files: tree-sitter symbols in nine languages, one chunk per symbol, exact offsets, hostile input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SHARED_DATA, index_tree
from retrievo import Config, Engine
from retrievo.ingest.chunkers import chunk_document
from retrievo.ingest.code import load_code
from retrievo.ingest.code.symbols import parse_symbols
from retrievo.ingest.loaders import Skip, load_file
from retrievo.models import Kind
from retrievo.surfaces.filters import filters_from_pairs

SAMPLES: dict[str, tuple[str, str, set[tuple[str, str]]]] = {
    "python": (
        "m.py",
        'import os\n\nclass Store(Base):\n    """Keeps things."""\n\n    @property\n    def size(self) -> int:\n'
        "        return 1\n\ndef load(path):\n    return os.path\n",
        {("m.Store", "class"), ("m.Store.size", "method"), ("m.load", "function")},
    ),
    "javascript": (
        "m.js",
        "/** Adds. */\nfunction add(a, b) { return a + b }\nclass Cart { total() { return 1 } }\n"
        "export const mul = (a, b) => a * b\n",
        {("m.add", "function"), ("m.Cart", "class"), ("m.Cart.total", "method"), ("m.mul", "function")},
    ),
    "typescript": (
        "m.ts",
        "interface Shape { area(): number }\nexport class Square implements Shape {\n  area(): number { return 1 }\n}\n"
        "type Id = string\nenum Colour { Red }\n",
        {
            ("m.Shape", "interface"),
            ("m.Square", "class"),
            ("m.Square.area", "method"),
            ("m.Id", "type"),
            ("m.Colour", "enum"),
        },
    ),
    "go": (
        "m.go",
        "package m\n\n// Server serves.\ntype Server struct{ port int }\n\nfunc (s *Server) Run() error { return nil }\n\n"
        "func New() *Server { return &Server{} }\n",
        {("m.Server", "type"), ("m.Server.Run", "method"), ("m.New", "function")},
    ),
    "java": (
        "M.java",
        "public class Parser {\n  public Parser() {}\n  int parse(String s) { return 0; }\n}\ninterface Node {}\n",
        {
            ("M.Parser", "class"),
            ("M.Parser.Parser", "method"),
            ("M.Parser.parse", "method"),
            ("M.Node", "interface"),
        },
    ),
    "csharp": (
        "M.cs",
        "namespace App {\n  public class Repo {\n    public int Count() { return 0; }\n  }\n  struct Point { int X; }\n}\n",
        {
            ("M.App", "namespace"),
            ("M.App.Repo", "class"),
            ("M.App.Repo.Count", "method"),
            ("M.App.Point", "struct"),
        },
    ),
    "c": (
        "m.c",
        "#include <stdio.h>\nstruct point { int x; };\nstatic int square(int x) { return x * x; }\n",
        {("m.point", "struct"), ("m.square", "function")},
    ),
    "cpp": (
        "m.cpp",
        "namespace geo {\nclass Circle {\n public:\n  double area() const { return 3.14; }\n};\n}\n"
        "int main() { return 0; }\n",
        {
            ("m.geo", "namespace"),
            ("m.geo.Circle", "class"),
            ("m.geo.Circle.area", "method"),
            ("m.main", "function"),
        },
    ),
    "rust": (
        "m.rs",
        "pub struct Cache { size: usize }\nimpl Cache {\n    pub fn new() -> Self { Cache { size: 0 } }\n}\n"
        "fn helper() {}\n",
        {("m.Cache", "struct"), ("m.Cache.new", "method"), ("m.helper", "function")},
    ),
}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_symbols_in_every_shipped_language(language: str, tmp_path: Path) -> None:
    name, source, expected = SAMPLES[language]
    path = tmp_path / name
    path.write_text(source)
    loaded = load_file(path, 10**7)
    assert not isinstance(loaded, Skip) and loaded.kind == Kind.CODE
    symbols = parse_symbols(source, loaded.media_type.removeprefix("text/x-"), path.stem)
    assert symbols is not None
    assert {(s.qualified_name, s.kind) for s in symbols} >= expected
    drafts = chunk_document(loaded)
    assert all(source[d.start : d.end] == d.text for d in drafts)
    assert all(
        d.metadata["language"] == language and d.context.startswith(f"Language: {language}") for d in drafts
    )
    chunked = {(d.metadata["symbol"], d.metadata["symbol_kind"]) for d in drafts}
    assert chunked >= expected, chunked


def test_the_header_carries_signature_and_docstring_but_not_the_offsets() -> None:
    text = 'def load(path: str) -> bytes:\n    """Read a file whole.\n\n    More."""\n    return b""\n'
    (draft,) = chunk_document(load_code("/repo/pkg/io.py", text, "python"))
    assert draft.text == text.rstrip() and draft.start == 0
    assert "Signature: def load(path: str) -> bytes" in draft.context
    assert "Doc: Read a file whole." in draft.context and "File: repo/pkg/io.py" in draft.context


def test_a_long_function_is_split_between_statements() -> None:
    body = "".join(
        f"    value_{i} = compute({i})\n\n" if i % 5 == 0 else f"    value_{i} = compute({i})\n"
        for i in range(300)
    )
    text = f"def huge():\n{body}"
    drafts = chunk_document(load_code("/r/h.py", text, "python"))
    assert len(drafts) > 3 and all(len(d.text) <= 1500 for d in drafts)
    assert all(d.metadata["symbol"] == "h.huge" and text[d.start : d.end] == d.text for d in drafts)
    assert all(d.text.endswith(")") for d in drafts), "cuts fall at line ends"


FRAGMENTS = st.sampled_from(
    [
        "def f(x):\n    return x\n",
        "class C:\n    '''Doc ü.'''\n    def m(self):\n        pass\n",
        "import os\n",
        "@decorator\ndef g():\n    '''Ω doc'''\n    yield 1\n",
        "x = {'a': [1, 2]}\n",
        "def broken(:\n",
        "    \n\n",
        "# comment 中文\n",
        "async def h():\n    await x\n",
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(FRAGMENTS, max_size=12), st.sampled_from(["python", "javascript", "go", "rust"]))
def test_code_chunks_are_exact_slices_whatever_the_source(parts: list[str], language: str) -> None:
    text = "".join(parts)
    document = load_code("/r/prop.x", text, language)
    drafts = chunk_document(document)
    for draft in drafts:
        assert text[draft.start : draft.end] == draft.text and draft.text.strip()
        assert draft.line_start == text.count("\n", 0, draft.start) + 1
    covered = "".join(text[d.start : d.end] for d in drafts)
    assert "".join(covered.split()) == "".join(text.split()), "every non-blank character is in a chunk"


def test_hostile_code_is_indexed_as_far_as_it_can_be_or_skipped_with_a_reason(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "binary.py").write_bytes(b"\x7fELF\x00\x01" * 200)
    (folder / "latin1.go").write_bytes("// caf\xe9\npackage m\n".encode("latin-1"))
    (folder / "broken.py").write_text("def ok():\n    return 1\n\ndef broken(:\n    pass\nclass Half(\n")
    (folder / "deep.js").write_text("function deep() { return " + "[" * 20_000 + "1" + "]" * 20_000 + " }\n")
    (folder / "min.js").write_text(
        "var a=1;" + ";".join(f"function f{i}(){{return {i}}}" for i in range(250_000))
    )
    (folder / "script.rb").write_text('def greet(name)\n  puts "hello #{name}"\nend\n')
    with Engine(Config(db=tmp_path / "c.db", embedder="none")) as engine:
        report = engine.index([folder])
        reasons = {Path(s.path).name: s.reason for s in report.skipped}
        assert reasons["binary.py"].startswith("binary") and reasons["latin1.go"].startswith("undecodable")
        assert report.documents_added == 4
        assert engine.search("broken ok", mode="keyword", filters=filters_from_pairs(["kind=code"])).hits
        deep = engine.search("deep", mode="keyword").hits
        assert deep and deep[0].chunk.metadata["symbol"] == "deep.deep"
        assert engine.search("f249999", mode="keyword").hits, "a file too large to parse is still indexed"
        ruby = engine.search("greet", mode="keyword").hits
        assert ruby and ruby[0].chunk.metadata["language"] == "ruby"


@pytest.mark.skipif(not (SHARED_DATA / "code" / "click").exists(), reason="../shared/data not present")
def test_the_click_repository_is_searchable_by_symbol_and_language(tmp_path: Path) -> None:
    with Engine(Config(db=tmp_path / "click.db", embedder="none")) as engine:
        report = engine.index([SHARED_DATA / "code" / "click" / "src"])
        assert report.documents_added >= 15 and [Path(s.path).name for s in report.skipped] == ["py.typed"]
        code = filters_from_pairs(["kind=code", "language=python", "symbol_kind=method"])
        hits = engine.search("parse_args", mode="keyword", filters=code, limit=5).hits
        assert hits and all(h.chunk.metadata["symbol_kind"] == "method" for h in hits)
        assert any(h.chunk.metadata["symbol"] == "core.Command.parse_args" for h in hits)
        top = hits[0].chunk
        assert Path(top.path).read_text()[top.start : top.end] == top.text
        assert not engine.search(
            "parse_args", mode="keyword", filters=filters_from_pairs(["language=go"])
        ).hits


DOCUMENTED = {
    "go": (
        "command.go",
        "package command\n\n// Command is one verb.\n// It holds its flags.\ntype Command struct {\n\tUse string\n}\n\n"
        "var x = 1 // trailing\n// Run runs it.\nfunc (c *Command) Run() error {\n\treturn nil\n}\n",
        [
            "// Command is one verb.\n// It holds its flags.\ntype Command struct",
            "// Run runs it.\nfunc (c *Command) Run()",
        ],
    ),
    "rust": (
        "lib.rs",
        "/// A point.\n#[derive(Debug)]\npub struct Point {\n    x: i32,\n}\n\n/// Adds.\nfn add(a: i32) -> i32 {\n    a\n}\n",
        ["/// A point.\n#[derive(Debug)]\npub struct Point", "/// Adds.\nfn add("],
    ),
    "java": (
        "Cart.java",
        "class Cart {\n    /** The total, in cents. */\n    int total() { return 1; }\n}\n",
        ["/** The total, in cents. */\n    int total()"],
    ),
}


@pytest.mark.parametrize("language", sorted(DOCUMENTED))
def test_a_doc_comment_travels_with_the_symbol_it_documents(language: str) -> None:
    """A Go ``// Foo does X`` above ``func Foo`` was a chunk of its own (222 of a repository's 1,050 chunks),
    and ``type`` was cut from its ``Foo struct``; a comment ending a line of code stays with that line."""
    name, text, starts = DOCUMENTED[language]
    chunks = [c.text for c in chunk_document(load_code(f"/repo/{name}", text, language), "auto")]
    for start in starts:
        assert any(chunk.startswith(start) for chunk in chunks), (start, chunks)
    assert not any(
        chunk.strip().startswith(("//", "///", "/**")) and "\n" not in chunk.strip() for chunk in chunks
    )
    if language == "go":
        assert "var x = 1 // trailing" in next(c for c in chunks if "var x" in c)
        symbols = {s.qualified_name: s for s in parse_symbols(text, "go", "command")}
        assert symbols["command.Command"].docstring == "Command is one verb."


RESIDUE = {
    # (file, text, the line, what stands in the passage that takes it)
    "ruby": (
        "base.rb",
        "class Base\n  def run!(options = {})\n    start_server(options)\n  end\n\n  alias start! run!\n\n"
        "  # Stops the server.\n  def quit!\n    stop_server\n  end\n\n  private\n\n  def start_server(o)\n"
        "    serve(o)\n  end\nend\n",
        "alias start! run!",
        "def run!",
    ),
    "cpp": (
        "cart.hpp",
        "class Cart {\n  int total() const {\n    return sum_;\n  }\n\n public:\n  void add(int cents) {\n"
        "    sum_ += cents;\n  }\n};\n",
        "public:",
        "void add(int cents)",
    ),
    "typescript": (
        "widget.ts",
        "class Widget {\n  render(): string {\n    return 'w';\n  }\n\n  @HostListener('click')\n"
        "  onClick(): void {\n    this.render();\n  }\n}\n",
        "@HostListener('click')",
        "onClick(): void",
    ),
}


@pytest.mark.parametrize("language", sorted(RESIDUE))
def test_a_class_bodys_one_line_between_members_joins_a_member(language: str) -> None:
    """Ruby's ``alias start! run!`` or ``private``, C++'s ``public:``, a decorator between two methods had
    been passages of one line, put first by one word of a question ("application startup":
    ``alias start! run!``). A line with no blank line below it belongs to the member below (a decorator, an
    access specifier); else it ends the passage of the member before it. Its words are found there."""
    name, text, line, holder = RESIDUE[language]
    chunks = [c.text for c in chunk_document(load_code(f"/repo/{name}", text, language), "auto")]
    assert not any(chunk.strip() == line for chunk in chunks), chunks
    holding = next(chunk for chunk in chunks if line in chunk)
    assert holder in holding, (line, holding)


def test_a_class_bodys_last_line_joins_the_member_before_it_past_the_closing_word() -> None:
    """``attr_reader :x`` after the last method, then the class's ``end``: one line said, not two."""
    text = "class R\n  def a\n    1\n  end\n\n  attr_reader :x\nend\n"
    chunks = [c.text for c in chunk_document(load_code("/repo/r.rb", text, "ruby"), "auto")]
    assert not any(chunk.strip().startswith("attr_reader") for chunk in chunks), chunks
    assert "attr_reader :x" in next(chunk for chunk in chunks if "def a" in chunk)


def test_a_functions_own_lines_around_a_function_nested_in_it_stay_its_own() -> None:
    """``return inner`` is ``outer``'s: it joins no passage of ``inner``."""
    text = "def outer(a):\n    x = compute(a)\n    def inner():\n        return x\n    return inner\n"
    drafts = chunk_document(load_code("/repo/f.py", text, "python"), "auto")
    holding = next(d for d in drafts if "return inner" in d.text)
    assert holding.metadata["symbol"] == "f.outer", (holding.metadata, holding.text)


def test_a_line_of_a_class_goes_to_no_passage_of_a_member_nested_deeper() -> None:
    """``y = 2`` belongs to ``A``: after ``B`` (whose last passage is ``B.m``'s) it stays ``A``'s own."""
    text = "class A:\n    class B:\n        def m(self):\n            return 1\n        x = 1\n    y = 2\n\n"
    text += "    def n(self):\n        return 2\n"
    drafts = chunk_document(load_code("/repo/a.py", text, "python"), "auto")
    holding = next(d for d in drafts if "y = 2" in d.text)
    assert holding.metadata["symbol"] in ("a.A", "a.A.n"), (holding.metadata, holding.text)
    with_m = next(d for d in drafts if "return 1" in d.text)
    assert "x = 1" in with_m.text and "y = 2" not in with_m.text, with_m.text


def test_a_modules_own_line_between_its_functions_stays_a_passage() -> None:
    """A Go ``var`` between two functions is the module's, not a member's remainder: its own passage."""
    text = 'package p\n\nfunc A() int {\n\treturn 1\n}\n\nvar ErrGone = New("gone")\n\nfunc B() {}\n'
    chunks = [c.text for c in chunk_document(load_code("/repo/p.go", text, "go"), "auto")]
    assert any(chunk.strip() == 'var ErrGone = New("gone")' for chunk in chunks), chunks


def test_a_go_name_belongs_to_its_package_not_its_file() -> None:
    text = (
        '// Package cobra is a commander.\npackage cobra // import "x/cobra"\n\nfunc (c *Command) Run() {}\n'
    )
    assert [s.qualified_name for s in parse_symbols(text, "go", "command") or []] == ["cobra.Command.Run"]
    edges = load_code("/r/command.go", text + "func Execute() { run() }\n", "go").structure
    assert edges is not None and ("cobra.Execute", "run") in {(e.source, e.target) for e in edges.edges}
    fragment = "func Orphan() {}\n"  # no package clause (a snippet): the file's stem, as before
    assert [s.qualified_name for s in parse_symbols(fragment, "go", "snippet") or []] == ["snippet.Orphan"]


def test_the_header_names_the_path_below_the_root_and_why_a_file_has_no_symbols() -> None:
    text = "package cobra\n\nfunc Execute() {}\n"
    drafts = chunk_document(load_code("/tmp/tmpab12/cobra/command.go", text, "go", "command.go"))
    assert drafts and all("File: command.go\n" in d.context and "tmpab12" not in d.context for d in drafts)
    deep = load_code("/tmp/tmpab12/cobra/a/b/c/d.go", text, "go", "a/b/c/d.go").sections[0].context
    assert "File: b/c/d.go\n" in deep, "the last parts, as before"
    assert load_code("/r/gen.nim", "proc main() = discard\n", "nim").metadata["symbols"] == (
        "none: no grammar for nim: read as text"
    )
    huge = load_code("/r/big.go", "package big\n" + "// x\n" * 500_000, "go").metadata["symbols"]
    assert huge == "none: too large to parse: 2500012 characters > 2000000: read as text"


def test_a_bare_name_puts_the_type_it_names_first(tmp_path: Path) -> None:
    """A bare name ("Engine") asks for gin's ``type Engine struct``, not a validator's ``Engine()`` method whose
    file repeats the word: of a name's definitions, the type's first chunk leads the answer (structure.py)."""
    files = {
        "engine.go": "package web\n\n// Engine is the framework's instance: the router, the middleware and the "
        "settings.\ntype Engine struct {\n\tRouterGroup\n\ttrees methodTrees\n}\n\n"
        "// New returns a blank instance without any middleware attached.\nfunc New() *Engine {\n"
        "\treturn &Engine{}\n}\n",
        "validator.go": "package web\n\n// defaultValidator validates with the validation engine.\n"
        "type defaultValidator struct {\n\tvalidate *engine\n}\n\n"
        "// Engine returns the underlying validation engine, engine of the engine.\n"
        "func (v *defaultValidator) Engine() any {\n\tv.lazyinit()\n\treturn v.validate // the engine\n}\n",
    }
    db = index_tree(tmp_path / "web", files, tmp_path / "web.db")
    with Engine(Config(db=db, embedder="none")) as engine:
        hits = engine.search("Engine", limit=3).hits
    symbols = [h.chunk.metadata.get("symbol") for h in hits]
    assert symbols[0] == "web.Engine", symbols
