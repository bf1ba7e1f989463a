"""Dependencies found in a syntax tree: imports, calls, inherits, implements, uses (per language rules).

Each rule names the node type and the field holding the target; the target is kept as written and
its last identifier is what resolves against symbol names at query time.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_TARGET_CHARS = 200
MAX_ATTRIBUTE_DEPTH = 12  # how far up a call looks for the Elixir module attribute holding it


@dataclass(frozen=True)
class EdgeRules:
    calls: dict[str, str]  # node type → field of the callee ("" = the node's first named child)
    imports: dict[str, str]  # node type → field of the imported name ("" = the node's first named child)
    bases: dict[str, str]  # node type (a base-list node) → edge kind (inherits / implements)
    types: frozenset[str]  # node types that are a use of a type name
    # Callees that define, not call (Elixir's ``def``): neither they nor the head they define are calls, nor
    # is what a module attribute holds (``@spec f(t) :: t``).
    definers: frozenset[str] = frozenset()
    # Callees that import their first argument (Elixir's ``alias``, Ruby's ``require``, the shell's ``source``).
    import_calls: frozenset[str] = frozenset()

    @functools.cached_property
    def kinds(self) -> frozenset[str]:
        """The node types that can make an edge (``edges_of`` is asked of these only: most nodes are not)."""
        bases = {key.partition("@")[0] for key in self.bases}
        return frozenset({*self.calls, *self.imports, *self.types, *bases})


_C_FAMILY_CALLS = {"call_expression": "function"}
_ELIXIR_DEFINERS = frozenset(
    {"defmodule", "defprotocol", "defimpl", "def", "defp", "defmacro", "defmacrop", "defguard", "defguardp",
     "defdelegate", "defn", "defnp", "defstruct", "defexception"}
)  # fmt: skip
RULES: dict[str, EdgeRules] = {
    "python": EdgeRules(
        calls={"call": "function"},
        imports={"import_statement": "name", "import_from_statement": "module_name"},
        bases={"argument_list@class_definition": "inherits"},
        types=frozenset({"type"}),
    ),
    "javascript": EdgeRules(
        calls={**_C_FAMILY_CALLS, "new_expression": "constructor"},
        imports={"import_statement": "source"},
        bases={"class_heritage": "inherits"},
        types=frozenset(),
    ),
    "typescript": EdgeRules(
        calls={**_C_FAMILY_CALLS, "new_expression": "constructor"},
        imports={"import_statement": "source"},
        bases={
            "extends_clause": "inherits",
            "implements_clause": "implements",
            "extends_type_clause": "inherits",
        },
        types=frozenset({"type_identifier"}),
    ),
    "go": EdgeRules(
        calls=_C_FAMILY_CALLS,
        imports={"import_spec": "path"},
        bases={},
        types=frozenset({"type_identifier"}),
    ),
    "java": EdgeRules(
        calls={"method_invocation": "name", "object_creation_expression": "type"},
        imports={"import_declaration": ""},
        bases={"superclass": "inherits", "super_interfaces": "implements", "extends_interfaces": "inherits"},
        types=frozenset({"type_identifier"}),
    ),
    "csharp": EdgeRules(
        calls={"invocation_expression": "function", "object_creation_expression": "type"},
        imports={"using_directive": ""},
        bases={"base_list": "inherits"},
        types=frozenset(),
    ),
    "c": EdgeRules(
        calls=_C_FAMILY_CALLS,
        imports={"preproc_include": "path"},
        bases={},
        types=frozenset({"type_identifier"}),
    ),
    "cpp": EdgeRules(
        calls=_C_FAMILY_CALLS,
        imports={"preproc_include": "path"},
        bases={"base_class_clause": "inherits"},
        types=frozenset({"type_identifier"}),
    ),
    "rust": EdgeRules(
        calls={**_C_FAMILY_CALLS, "macro_invocation": "macro"},
        imports={"use_declaration": "argument"},
        bases={"trait@impl_item": "implements"},
        types=frozenset({"type_identifier"}),
    ),
    "ruby": EdgeRules(
        calls={"call": "method"},
        imports={},
        bases={"superclass": "inherits"},
        types=frozenset(),
        import_calls=frozenset({"require", "require_relative"}),
    ),
    "php": EdgeRules(
        calls={
            "function_call_expression": "function",
            "member_call_expression": "name",
            "nullsafe_member_call_expression": "name",
            "scoped_call_expression": "name",
            "object_creation_expression": "",
        },
        imports={"namespace_use_declaration": ""},
        bases={"base_clause": "inherits", "class_interface_clause": "implements"},
        types=frozenset(),
    ),
    "kotlin": EdgeRules(
        calls={"call_expression": ""},
        imports={"import": ""},
        bases={"delegation_specifiers": "inherits"},
        types=frozenset(),
    ),
    "scala": EdgeRules(
        calls={"call_expression": "function", "instance_expression": ""},
        imports={},
        bases={"extends_clause": "inherits"},
        types=frozenset(),
    ),
    "swift": EdgeRules(
        calls={"call_expression": ""},
        imports={"import_declaration": ""},
        bases={"inheritance_specifier": "inherits"},
        types=frozenset(),
    ),
    "lua": EdgeRules(
        calls={"function_call": "name"},
        imports={},
        bases={},
        types=frozenset(),
        import_calls=frozenset({"require"}),
    ),
    "shell": EdgeRules(
        calls={"command": "name"},
        imports={},
        bases={},
        types=frozenset(),
        import_calls=frozenset({"source", "."}),
    ),
    "elixir": EdgeRules(
        calls={"call": "target"},
        imports={},
        bases={},
        types=frozenset(),
        definers=_ELIXIR_DEFINERS,
        import_calls=frozenset({"alias", "import", "require", "use"}),
    ),
    "haskell": EdgeRules(calls={}, imports={"import": "module"}, bases={}, types=frozenset()),
    "dart": EdgeRules(
        calls={}, imports={}, bases={"superclass": "inherits", "interfaces": "implements"}, types=frozenset()
    ),
    "zig": EdgeRules(
        calls={"call_expression": "function", "builtin_function": ""},
        imports={},
        bases={},
        types=frozenset(),
        import_calls=frozenset({"@import"}),
    ),
}
RULES["tsx"] = RULES["typescript"]


def _text(node: Any, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


def edges_of(node: Any, rules: EdgeRules, data: bytes) -> list[tuple[str, str, int, int]]:
    """(kind, target text, 0-based line, byte column) for the edges this one node makes (not its descendants')."""
    found: list[tuple[str, str, int, int]] = []
    kind = node.type
    line, column = node.start_point
    if kind in rules.calls:
        field = rules.calls[kind]
        callee = node.child_by_field_name(field) if field else next(iter(node.named_children), None)
        if callee is None or "argument" in callee.type or _defines(node, callee, rules, data):
            pass
        elif callee.type == "builtin_identifier" and _text(callee, data) not in rules.import_calls:
            pass  # Zig's ``@intCast(x)``: the language's, not a call of the code's
        elif _text(callee, data) in rules.import_calls:
            imported = _first_argument(node, callee)
            if imported is not None:
                line, column = imported.start_point
                found.append(("imports", _text(imported, data).strip("\"'<>"), line, column))
        else:
            found.append(("calls", _text(callee, data), callee.start_point[0], callee.start_point[1]))
    elif kind in rules.imports:
        field = rules.imports[kind]
        targets = node.children_by_field_name(field) if field else node.named_children[:1]
        found.extend(
            ("imports", _text(t, data).split(" as ")[0].strip("\"'<>"), t.start_point[0], t.start_point[1])
            for t in targets
        )
    elif kind in rules.types and not _declares_or_lists(node):
        found.append(("uses", _text(node, data), line, column))
    parent = node.parent
    for key, edge in rules.bases.items():
        node_type, _, parent_type = key.partition("@")
        if kind != node_type:
            continue
        if parent_type:
            field_node = (
                parent.child_by_field_name("superclasses" if parent_type == "class_definition" else "trait")
                if parent is not None and parent.type == parent_type
                else None
            )
            if field_node is None or field_node.id != node.id:
                continue
        for child in node.named_children or [node]:
            if child.type in ("keyword_argument", "comment"):
                continue
            found.append((edge, _text(child, data), child.start_point[0], child.start_point[1]))
    return [(k, t[:MAX_TARGET_CHARS], ln, col) for k, t, ln, col in found if IDENTIFIER.search(t)]


def _first_argument(node: Any, callee: Any) -> Any:
    following = next((c for c in node.named_children if c.start_byte >= callee.end_byte), None)
    if following is not None and "argument" in following.type:
        return next(iter(following.named_children), None)
    return following


def _defines(node: Any, callee: Any, rules: EdgeRules, data: bytes) -> bool:
    """Elixir's calls that are no calls: a ``def``, the head it defines (``f(x)`` in ``def f(x)``,
    ``def f(x) when …``), what a module attribute holds (``@doc``, ``@spec f(t) :: t``)."""
    if not rules.definers:
        return False
    if _text(callee, data) in rules.definers:
        return True
    outer = node.parent
    for _ in range(MAX_ATTRIBUTE_DEPTH):
        if outer is None or outer.type == "do_block":
            break
        if outer.type == "unary_operator" and data[outer.start_byte : outer.start_byte + 1] == b"@":
            return True
        outer = outer.parent
    outer = node.parent
    while outer is not None and outer.type in ("arguments", "binary_operator"):
        outer = outer.parent
    if outer is None or outer.id == node.id or outer.type not in rules.calls:
        return False
    definer = outer.child_by_field_name(rules.calls[outer.type])
    return definer is not None and _text(definer, data) in rules.definers


def _declares_or_lists(node: Any) -> bool:
    """A type name that is the declaration's own name, or already an inherits/implements edge."""
    parent = node.parent
    if parent is None:
        return False
    named = parent.child_by_field_name("name")
    if named is not None and named.id == node.id:
        return True
    return parent.type in _BASE_TYPES


_BASE_TYPES = frozenset(
    {"class_heritage", "extends_clause", "implements_clause", "extends_type_clause", "superclass",
     "super_interfaces", "extends_interfaces", "base_list", "base_class_clause", "type_list"}
)  # fmt: skip


_GROUPS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|<[^<>]*>")


def target_name(target: str) -> str:
    """The name a target resolves by: ``Invoice().total`` → total, ``a.b<T>(x)`` → b, ``list[str]`` → list."""
    bare = target
    for _ in range(10):  # innermost groups first: f(g(x)).h → f.h
        stripped = _GROUPS.sub("", bare)
        if stripped == bare:
            break
        bare = stripped
    names = IDENTIFIER.findall(bare) or IDENTIFIER.findall(target)
    return names[-1] if names else target
