"""Which language a file is (by extension), and the tree-sitter grammar and symbol rules for it.

Grammars come from the per-language PyPI wheels (``tree-sitter-python`` …), imported lazily; none is
downloaded at run time. Languages without a grammar here are still code: indexed as text, by lines.
"""

from __future__ import annotations

import importlib
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
    # Read as text (no grammar shipped): still kind=code, with their language.
    ".rb": "ruby", ".php": "php", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".swift": "swift",
    ".lua": "lua", ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".ps1": "powershell", ".sql": "sql",
    ".r": "r", ".m": "objective-c", ".mm": "objective-c", ".pl": "perl", ".pm": "perl", ".ex": "elixir",
    ".exs": "elixir", ".erl": "erlang", ".hs": "haskell", ".ml": "ocaml", ".fs": "fsharp", ".dart": "dart",
    ".groovy": "groovy", ".vue": "vue", ".svelte": "svelte", ".zig": "zig", ".nim": "nim", ".jl": "julia",
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


_CLASSES = {"class_declaration": "class", "interface_declaration": "interface", "enum_declaration": "enum"}
_JS = {
    "function_declaration": "function", "generator_function_declaration": "function",
    "method_definition": "method", "class_declaration": "class",
}  # fmt: skip
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
    ),
}
CLASS_LIKE = frozenset({"class", "interface", "struct", "impl", "enum"})

_languages: dict[str, Any] = {}
_lock = threading.Lock()


def language_of(suffix: str) -> str | None:
    return EXTENSIONS.get(suffix.lower())


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
