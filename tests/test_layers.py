"""The house's floors, kept: no import circle between modules, nothing importing a floor above its own.

The import graph is read from the source (every ``import`` and ``from … import``, at module level, in
functions and under ``TYPE_CHECKING`` alike; a parent package run implicitly does not count). The floors,
lowest first, are written once, here (docs/architecture.md draws them):
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

from conftest import ROOT

# Lowest first. A module may import its own floor or lower ones; within a floor, no circle.
LAYERS: list[tuple[str, ...]] = [
    ("retrievo.errors", "retrievo.secrets", "retrievo.models", "retrievo.config", "retrievo.text"),
    ("retrievo.embed",),
    ("retrievo.ingest",),
    ("retrievo.store",),
    ("retrievo.search",),
    ("retrievo.engine",),
    ("retrievo.operations", "retrievo.evaluation"),
    ("retrievo.surfaces",),
    ("retrievo",),  # the package's own __init__: ``retrievo.open``, ``retrievo.Engine``
]
MAX_LINES = 500


def modules(src: Path, package: str) -> dict[str, Path]:
    found = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph(src: Path, package: str) -> dict[str, set[str]]:
    """Module → the package's modules it imports (``from pkg import sub`` counts as importing ``sub``)."""
    known = modules(src, package)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named: list[str] = []
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
                subs = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
                named = subs if len(subs) == len(node.names) else [base, *subs]
            for imported in named:
                target = imported
                while target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in known and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def floor_of(module: str, layers: Sequence[tuple[str, ...]]) -> int:
    best, floor = -1, -1
    for number, members in enumerate(layers):
        for prefix in members:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, floor = len(prefix), number
    return floor


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def problems(src: Path, package: str, layers: Sequence[tuple[str, ...]]) -> list[str]:
    graph = import_graph(src, package)
    found = [f"import circle: {' ↔ '.join(group)}" for group in circles(graph)]
    for module, targets in sorted(graph.items()):
        here = floor_of(module, layers)
        if here < 0:
            found.append(f"{module} is on no floor (add it to LAYERS)")
            continue
        for target in sorted(targets):
            there = floor_of(target, layers)
            if there > here:
                found.append(f"{module} (floor {here}) imports {target} (floor {there}), a floor above")
    return found


def test_the_package_has_no_import_circle_and_nothing_imports_a_floor_above() -> None:
    assert problems(ROOT / "src", "retrievo", LAYERS) == []


# search/'s rooms, lowest first: the query's one reading and what needs nothing else of search; exact-match
# evidence, the fusions and the re-scorers' interface; the answer (relevance, calibration, coverage, highlighting) and code
# (the structural arm, files for a code question, locate); the fusion of the arms and context assembly; the
# documents' readings (search_library, similar passages); records (model elements, relationships,
# registries). A room imports rooms of lower floors only (so no circle), and search/'s root keeps at most
# ``MAX_LOOSE`` modules: the reading, the fusion and its arms.
SEARCH_ROOMS: list[tuple[str, ...]] = [
    ("query", "threads", "rewrite", "rerank", "grouping"),
    ("exact", "rescore", "fusion", "migrating"),
    ("answer", "code"),
    ("hybrid", "context"),
    ("documents",),
    ("records",),
]
MAX_LOOSE = 12


def search_problems(src: Path, rooms: Sequence[tuple[str, ...]], max_loose: int) -> list[str]:
    floors = [tuple(f"retrievo.search.{room}" for room in floor) for floor in rooms]

    def room_of(module: str) -> str:
        return ".".join(module.split(".")[:3])

    found = []
    for module, targets in sorted(import_graph(src, "retrievo").items()):
        if not module.startswith("retrievo.search.") or (here := floor_of(module, floors)) < 0:
            if module.startswith("retrievo.search."):
                found.append(f"{module} is in no room of search/ (add it to SEARCH_ROOMS)")
            continue
        for target in sorted(t for t in targets if t.startswith("retrievo.search.")):
            if room_of(target) != room_of(module) and floor_of(target, floors) >= here:
                found.append(f"{module} (floor {here}) imports {target} (floor {floor_of(target, floors)})")
    loose = [p.name for p in (src / "retrievo" / "search").glob("*.py")]
    if len(loose) > max_loose:
        found.append(f"{len(loose)} modules loose at search/'s root (at most {max_loose}): {sorted(loose)}")
    return found


def test_search_is_rooms_each_importing_only_rooms_below_it() -> None:
    assert search_problems(ROOT / "src", SEARCH_ROOMS, MAX_LOOSE) == []


def test_the_search_check_fails_on_a_room_importing_its_own_floor_or_above_and_on_too_many_loose() -> None:
    flat = [("query", "threads", "rewrite", "rerank", "fusion", "grouping", "exact", "rescore")]
    flat += [("answer", "code", "hybrid", "context", "documents", "records")]
    found = search_problems(ROOT / "src", flat, 3)
    assert any("retrievo.search.hybrid" in p and "retrievo.search.code" in p for p in found)
    assert any("retrievo.search.exact" in p and "retrievo.search.query" in p for p in found)
    assert any(p.endswith("']") and "loose" in p for p in found)
    assert any("in no room" in p for p in search_problems(ROOT / "src", SEARCH_ROOMS[:-1], MAX_LOOSE))


def test_modules_stay_under_five_hundred_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in modules(ROOT / "src", "retrievo").values()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


# The surfaces' sub-floors: each surface is a package of its own; one may start another only through that
# package's door (its ``__init__``), and only downward: the CLI launches the MCP server and the HTTP app,
# the HTTP app mounts the MCP server, the MCP server starts nothing. What all three share (access, filters,
# presentation, serialisation) sits in ``surfaces/`` itself and imports no surface.
SURFACE_DOORS: dict[str, frozenset[str]] = {
    "cli": frozenset({"mcp", "http"}),
    "http": frozenset({"mcp"}),
    "mcp": frozenset(),
}
SHARED_BY_SURFACES = frozenset({"__init__", "access", "filters", "present", "serialize"})


def surface_problems(
    graph: dict[str, set[str]],
    root: str = "retrievo.surfaces",
    doors: dict[str, frozenset[str]] = SURFACE_DOORS,
) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        if not module.startswith(root + "."):
            continue
        own = module[len(root) + 1 :].split(".")[0]
        for target in sorted(targets):
            if not target.startswith(root + "."):
                continue
            theirs = target[len(root) + 1 :].split(".")[0]
            if theirs == own or theirs not in doors:
                continue
            if own not in doors:
                found.append(f"{module}, shared by the surfaces, imports the {theirs} surface ({target})")
            elif theirs not in doors[own]:
                found.append(f"{module} imports the {theirs} surface ({target}), which {own} may not start")
            elif target != f"{root}.{theirs}":
                found.append(f"{module} reaches into {target}: import it from {root}.{theirs}, its door")
    return found


def test_each_surface_is_a_package_that_others_enter_only_by_its_door() -> None:
    assert surface_problems(import_graph(ROOT / "src", "retrievo")) == []
    surfaces = ROOT / "src" / "retrievo" / "surfaces"
    assert {path.stem for path in surfaces.glob("*.py")} == SHARED_BY_SURFACES
    assert {path.name for path in surfaces.iterdir() if (path / "__init__.py").is_file()} == set(
        SURFACE_DOORS
    )


def test_the_surface_check_fails_on_a_reach_inside_an_upward_start_and_a_shared_helper_that_starts_one(
    tmp_path: Path,
) -> None:
    toy = _package(tmp_path, {
        "__init__.py": "",
        "surfaces/__init__.py": "",
        "surfaces/shared.py": "from toy.surfaces.cli import app\n",
        "surfaces/cli/__init__.py": "", "surfaces/cli/app.py": "from toy.surfaces.mcp import serve\n",
        "surfaces/cli/run.py": "from toy.surfaces.mcp.server import serve\nfrom toy.surfaces.cli import app\n",
        "surfaces/mcp/__init__.py": "from toy.surfaces.mcp.server import serve\n",
        "surfaces/mcp/server.py": "from toy.surfaces import shared\nfrom toy.surfaces.http import app\n",
        "surfaces/http/__init__.py": "", "surfaces/http/app.py": "from toy.surfaces.mcp import serve\n",
    })  # fmt: skip
    found = surface_problems(import_graph(toy, "toy"), "toy.surfaces", SURFACE_DOORS)
    assert found == [
        "toy.surfaces.cli.run reaches into toy.surfaces.mcp.server: import it from toy.surfaces.mcp, its door",
        "toy.surfaces.mcp.server imports the http surface (toy.surfaces.http.app), which mcp may not start",
        "toy.surfaces.shared, shared by the surfaces, imports the cli surface (toy.surfaces.cli.app)",
    ]


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "toy" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


TOY_LAYERS = [("toy.base",), ("toy.low",), ("toy.high",), ("toy",)]


def test_the_layering_check_fails_on_a_circle_and_on_an_upward_import(tmp_path: Path) -> None:
    """The check above, shown failing: a circle made through a TYPE_CHECKING import, and a low module
    reaching up, each named; a clean toy passes."""
    clean = _package(tmp_path / "clean", {
        "__init__.py": "from toy.high.api import run\n",
        "base.py": "X = 1\n",
        "low/__init__.py": "", "low/a.py": "from toy.base import X\n",
        "high/__init__.py": "", "high/api.py": "from toy.low import a\nfrom . import helper\n",
        "high/helper.py": "from ..base import X\n",
    })  # fmt: skip
    assert problems(clean, "toy", TOY_LAYERS) == []
    broken = _package(tmp_path / "broken", {
        "__init__.py": "",
        "base.py": "X = 1\n",
        "low/__init__.py": "",
        "low/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy.low.b import B\n",
        "low/b.py": "from toy.low.a import A\n\ndef later():\n    from toy.high import api\n",
        "high/__init__.py": "", "high/api.py": "from toy.base import X\n",
    })  # fmt: skip
    found = problems(broken, "toy", TOY_LAYERS)
    assert "import circle: toy.low.a ↔ toy.low.b" in found
    assert "toy.low.b (floor 1) imports toy.high.api (floor 2), a floor above" in found
    assert len(found) == 2


def test_the_architecture_page_draws_the_folders_import_graph_as_the_code_has_it() -> None:
    graph = import_graph(ROOT / "src", "retrievo")

    def folder(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else "retrievo"

    drawn_from_code: dict[str, set[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            if folder(target) != folder(module) and folder(module) != "retrievo":
                drawn_from_code.setdefault(folder(module), set()).add(folder(target))
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = page.split("```text\n", 1)[1].split("```", 1)[0]
    drawn = {
        line.split("→")[0].strip(): set(line.split("→")[1].split())
        for line in block.splitlines()
        if "→" in line
    }
    assert drawn == drawn_from_code
    for name in {folder(m) for m in graph} - {"retrievo", "py"}:
        assert f"{name}" in page, f"{name} is not on the architecture page"


def test_the_architecture_page_names_every_module_of_each_surface() -> None:
    """The page's tree is drawn from the folders: each surface's modules are named under its folder."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    tree = page.split("```\n", 1)[1].split("```", 1)[0]
    surfaces = ROOT / "src" / "retrievo" / "surfaces"
    for package in SURFACE_DOORS:
        drawn = tree.split(f"{package}/", 1)[1].split("/", 1)[0]  # up to the next folder's line
        for path in (surfaces / package).glob("*.py"):
            if not path.stem.startswith("__"):
                assert path.stem in drawn, f"surfaces/{package}/{path.name} is not on the architecture page"
    for stem in SHARED_BY_SURFACES - {"__init__"}:
        assert f"{stem}.py" in tree


def test_every_data_file_beside_a_module_ships_in_the_package() -> None:
    """The weights and models the modules read beside themselves (``Path(__file__).with_name(...)``) are in the
    package data a wheel carries (a subpackage's files need their own glob: ``search/*.json`` missed
    ``search/answer/answerability.json`` once the answer had a room of its own)."""
    import tomllib

    package = ROOT / "src" / "retrievo"
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"
    ]["retrievo"]
    shipped = {path for pattern in globs for path in package.glob(pattern) if path.is_file()}
    data = {path for path in package.rglob("*.json") if "__pycache__" not in path.parts}
    assert data and data <= shipped, sorted(str(p.relative_to(package)) for p in data - shipped)
