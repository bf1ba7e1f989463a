"""Which language a file is (by extension), and the tree-sitter grammar and symbol rules for it.

Grammars come from the per-language PyPI wheels (``tree-sitter-python`` …), imported lazily; none is
downloaded at run time. Languages without a grammar here are still code: indexed as text, by lines.
"""

from __future__ import annotations

import importlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any

# The seed's map, plus the languages whose grammars we ship, plus common code files read as text.
EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
    ".cs": "csharp",
    ".c": "c", ".h": "c",
    ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".rs": "rust",
    ".rb": "ruby", ".php": "php", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".swift": "swift",
    ".lua": "lua", ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".ex": "elixir", ".exs": "elixir",
    ".hs": "haskell", ".dart": "dart", ".zig": "zig",
    # Read as text (no grammar shipped): still kind=code, with their language.
    ".ps1": "powershell", ".sql": "sql", ".r": "r", ".m": "objective-c", ".mm": "objective-c", ".pl": "perl",
    ".pm": "perl", ".erl": "erlang", ".ml": "ocaml", ".fs": "fsharp", ".groovy": "groovy", ".vue": "vue",
    ".svelte": "svelte", ".nim": "nim", ".jl": "julia",
}  # fmt: skip
CODE_SUFFIXES = frozenset(EXTENSIONS)


@dataclass(frozen=True)
class Grammar:
    """How to find symbols in one language's syntax tree."""

    module: str
    function: str = "language"
    # node type → symbol kind; a "function" inside a class-like symbol is reported as "method".
    symbols: dict[str, str] = field(default_factory=dict)
    # Wrappers whose span (decorators, export) belongs to the symbol inside them.
    wrappers: frozenset[str] = frozenset()
    # Node types of a docstring-bearing body's first statement (Python).
    docstring_body: bool = False
    # A child (a keyword or a node type) that says the kind more exactly than the node's type: Swift's
    # ``struct`` or ``extension`` in a ``class_declaration``, Kotlin's ``interface``.
    keywords: dict[str, str] = field(default_factory=dict)
    # Definitions with no name of their own, named for their node type (Swift's ``init``).
    names: dict[str, str] = field(default_factory=dict)
    # node type → the field that names it, when not ``name`` (a Haskell instance by its type); the field's
    # first word is the name.
    name_fields: dict[str, str] = field(default_factory=dict)
    # Splits a name written qualified (Lua's ``Queue.new``, Elixir's ``Phoenix.Router``): its last part is
    # the name, the others join the qualified name.
    qualifier: str = ""
    # Name node types that make a function a method (Lua's ``Queue:push``).
    method_names: frozenset[str] = frozenset()
    # Calls that define (Elixir's ``def name(args) do … end``): the callee's word → kind.
    definers: dict[str, str] = field(default_factory=dict)
    # What stands right above a definition and belongs to it, besides comments: Dart's annotations, a
    # Haskell type signature (which is then the symbol's signature).
    prefixes: frozenset[str] = frozenset()
    # Module attributes that belong to the definition below them (Elixir's ``@doc``, ``@spec``).
    attributes: frozenset[str] = frozenset()
    # A definition's body that stands beside its signature, not inside it (Dart's ``function_body``).
    body_siblings: frozenset[str] = frozenset()
    # Adjacent definitions of one name are one symbol (Haskell's equations, Elixir's function clauses).
    clauses: bool = False
    # The word that closes a block (Ruby's, Elixir's, Lua's ``end``): between symbols, it alone is no chunk.
    closer: str = ""
    # A declaration whose value is a type defines it, named by the declaration (Zig's ``const List = struct
    # {…}``): the value's node type → kind. A declaration holding anything else is no symbol.
    containers: dict[str, str] = field(default_factory=dict)
    # Comments that document the module they are in, not the definition below them (Rust's and Zig's ``//!``;
    # in C and C++ Doxygen reads ``//!`` as the next definition's).
    inner_docs: tuple[bytes, ...] = ()


_CLASSES = {"class_declaration": "class", "interface_declaration": "interface", "enum_declaration": "enum"}
_JS = {
    "function_declaration": "function", "generator_function_declaration": "function",
    "method_definition": "method", "class_declaration": "class",
}  # fmt: skip
_ELIXIR_FUNCTIONS = dict.fromkeys(
    ("def", "defp", "defmacro", "defmacrop", "defguard", "defguardp", "defdelegate", "defn", "defnp"),
    "function",
)
GRAMMARS: dict[str, Grammar] = {
    "python": Grammar(
        "tree_sitter_python",
        symbols={"function_definition": "function", "class_definition": "class"},
        wrappers=frozenset({"decorated_definition"}),
        docstring_body=True,
    ),
    "javascript": Grammar("tree_sitter_javascript", symbols=_JS, wrappers=frozenset({"export_statement"})),
    "typescript": Grammar(
        "tree_sitter_typescript",
        "language_typescript",
        symbols={
            **_JS,
            "abstract_class_declaration": "class",
            "interface_declaration": "interface",
            "type_alias_declaration": "type",
            "enum_declaration": "enum",
            "internal_module": "namespace",
        },
        wrappers=frozenset({"export_statement"}),
    ),
    "tsx": Grammar(
        "tree_sitter_typescript",
        "language_tsx",
        symbols={
            **_JS,
            "abstract_class_declaration": "class",
            "interface_declaration": "interface",
            "type_alias_declaration": "type",
            "enum_declaration": "enum",
        },
        wrappers=frozenset({"export_statement"}),
    ),
    "go": Grammar(
        "tree_sitter_go",
        symbols={"function_declaration": "function", "method_declaration": "method", "type_spec": "type"},
    ),
    "java": Grammar(
        "tree_sitter_java",
        symbols={
            **_CLASSES,
            "record_declaration": "class",
            "method_declaration": "method",
            "constructor_declaration": "method",
        },
    ),
    "csharp": Grammar(
        "tree_sitter_c_sharp",
        symbols={
            **_CLASSES,
            "struct_declaration": "struct",
            "record_declaration": "class",
            "method_declaration": "method",
            "constructor_declaration": "method",
            "namespace_declaration": "namespace",
        },
    ),
    "c": Grammar(
        "tree_sitter_c",
        symbols={"function_definition": "function", "struct_specifier": "struct", "enum_specifier": "enum"},
    ),
    "cpp": Grammar(
        "tree_sitter_cpp",
        symbols={
            "function_definition": "function",
            "class_specifier": "class",
            "struct_specifier": "struct",
            "enum_specifier": "enum",
            "namespace_definition": "namespace",
        },
    ),
    "rust": Grammar(
        "tree_sitter_rust",
        symbols={
            "function_item": "function",
            "struct_item": "struct",
            "enum_item": "enum",
            "trait_item": "interface",
            "impl_item": "impl",
            "mod_item": "namespace",
        },
        inner_docs=(b"//!", b"/*!"),
    ),
    "ruby": Grammar(
        "tree_sitter_ruby",
        symbols={
            "method": "method",
            "singleton_method": "method",
            "class": "class",
            "module": "namespace",
        },
        qualifier="::",
        closer="end",
    ),
    "php": Grammar(
        "tree_sitter_php",
        "language_php",
        symbols={
            **_CLASSES,
            "trait_declaration": "interface",
            "method_declaration": "method",
            "function_definition": "function",
        },
    ),
    "kotlin": Grammar(
        "tree_sitter_kotlin",
        symbols={
            "class_declaration": "class",
            "object_declaration": "class",
            "function_declaration": "function",
            "secondary_constructor": "method",
            "type_alias": "type",
        },
        keywords={"interface": "interface", "enum_class_body": "enum"},
        names={"secondary_constructor": "constructor"},
        prefixes=frozenset({"annotated_expression"}),  # ``@OptIn(…)`` on its own line above a class
    ),
    "scala": Grammar(
        "tree_sitter_scala",
        symbols={
            "class_definition": "class",
            "object_definition": "class",
            "trait_definition": "interface",
            "enum_definition": "enum",
            "function_definition": "function",
            "function_declaration": "function",
            "type_definition": "type",
        },
    ),
    "swift": Grammar(
        "tree_sitter_swift",
        symbols={
            "class_declaration": "class",
            "protocol_declaration": "interface",
            "function_declaration": "function",
            "protocol_function_declaration": "function",
            "init_declaration": "method",
            "deinit_declaration": "method",
            "typealias_declaration": "type",
        },
        keywords={"struct": "struct", "enum": "enum", "extension": "impl"},
        names={"init_declaration": "init", "deinit_declaration": "deinit"},
    ),
    "lua": Grammar(
        "tree_sitter_lua",
        symbols={"function_declaration": "function"},
        qualifier="[.:]",
        method_names=frozenset({"method_index_expression"}),
        closer="end",
    ),
    "shell": Grammar("tree_sitter_bash", symbols={"function_definition": "function"}),
    "elixir": Grammar(
        "tree_sitter_elixir",
        definers={
            "defmodule": "namespace",
            "defprotocol": "interface",
            "defimpl": "impl",
            **_ELIXIR_FUNCTIONS,
        },
        qualifier=r"\.",
        attributes=frozenset({"doc", "spec", "impl", "deprecated"}),
        clauses=True,
        closer="end",
    ),
    "haskell": Grammar(
        "tree_sitter_haskell",
        symbols={
            "function": "function",
            "bind": "function",
            "data_type": "type",
            "newtype": "type",
            "type_synonym": "type",
            "class": "interface",
            "instance": "impl",
        },
        name_fields={"instance": "patterns"},
        prefixes=frozenset({"signature"}),
        clauses=True,
    ),
    "dart": Grammar(
        "tree_sitter_dart",
        symbols={
            "class_definition": "class",
            "mixin_declaration": "class",
            "extension_declaration": "impl",
            "enum_declaration": "enum",
            "function_signature": "function",
            "getter_signature": "function",
            "setter_signature": "function",
            "constructor_signature": "method",
            "constant_constructor_signature": "method",
            "factory_constructor_signature": "method",
        },
        wrappers=frozenset({"method_signature", "declaration"}),
        name_fields={"extension_declaration": "class"},
        prefixes=frozenset({"annotation"}),
        body_siblings=frozenset({"function_body"}),
    ),
    "zig": Grammar(
        "tree_sitter_zig",
        symbols={"function_declaration": "function"},
        # a union or an opaque type holds functions as a struct does: its functions are its methods
        containers={
            "struct_declaration": "struct",
            "union_declaration": "struct",
            "opaque_declaration": "struct",
            "enum_declaration": "enum",
            "error_set_declaration": "enum",
        },
        inner_docs=(b"//!",),
    ),
}
CLASS_LIKE = frozenset({"class", "interface", "struct", "impl", "enum"})

_languages: dict[str, Any] = {}
_lock = threading.Lock()


def language_of(suffix: str, text: str = "") -> str | None:
    """The language a file of ``suffix`` is read as; a ``.h`` header holding C++ (``text``: its start is
    enough) is read as C++: a header is C or C++ by what it holds, not by its name (fmt's are C++)."""
    language = EXTENSIONS.get(suffix.lower())
    if language == "c" and suffix.lower() == ".h" and _CPP.search(text[:HEADER_SNIFF]):
        return "cpp"
    return language


HEADER_SNIFF = 20_000  # the characters of a header read for C++
# what C cannot hold: a namespace, a template, a class with access labels, ``std::``, an ``extern "C++"``, a
# scoped name in a declaration
_CPP = re.compile(
    r"^\s*(namespace\s+[\w:]*\s*\{|template\s*<|class\s+\w+[^;{]*\{|(public|private|protected)\s*:|using\s+"
    r"namespace\b)|\bstd::|\bconstexpr\b|\bnoexcept\b|extern\s+\"C\+\+\"",
    re.MULTILINE,
)


def tree_sitter_language(language: str) -> Any | None:
    """The grammar as a ``tree_sitter.Language``, or None when none is installed for it."""
    grammar = GRAMMARS.get(language)
    if grammar is None:
        return None
    with _lock:
        if language not in _languages:
            try:
                import tree_sitter

                module = importlib.import_module(grammar.module)
                _languages[language] = tree_sitter.Language(getattr(module, grammar.function)())
            except (ImportError, AttributeError, ValueError):
                _languages[language] = None
        return _languages[language]
