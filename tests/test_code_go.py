"""A Go CLI library as a newcomer meets it (issue 66): a cobra-shaped module indexed and asked through the CLI.

The module is written here, small and realistic: package ``cobra`` at the root (``command.go``, ``args.go``),
its tests reaching ``Command.validateArgs`` only through a helper that calls the public ``Execute``, and a
package named ``doc`` (``doc/man_docs.go``: the man-page generator), which is code although its folder's
name says docs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrievo import Config, Engine
from serving import cli as run_cli

MODULE = {
    "go.mod": "module github.com/example/cobra\n\ngo 1.21\n",
    "command.go": """// Copyright 2024 The Example Authors.

package cobra

import (
\t"fmt"
\t"os"
)

// Command is just that, a command for your application.
type Command struct {
\tUse  string
\tArgs PositionalArgs
\targs []string
\tcommands []*Command
}

// AddCommand adds one or more commands to this parent command.
func (c *Command) AddCommand(cmds ...*Command) {
\tc.commands = append(c.commands, cmds...)
}

// SetArgs sets arguments for the command.
func (c *Command) SetArgs(a []string) {
\tc.args = a
}

// Execute uses the args (os.Args[1:] by default) and runs through the command tree.
func (c *Command) Execute() error {
\t_, err := c.ExecuteC()
\treturn err
}

// ExecuteC executes the command and returns the command it ran.
func (c *Command) ExecuteC() (*Command, error) {
\targs := c.args
\tif args == nil {
\t\targs = os.Args[1:]
\t}
\treturn c, c.execute(args)
}

func (c *Command) execute(a []string) error {
\tif err := c.validateArgs(a); err != nil {
\t\treturn fmt.Errorf("invalid arguments: %w", err)
\t}
\treturn nil
}

// validateArgs checks the positional arguments against the command's Args rule.
func (c *Command) validateArgs(args []string) error {
\tif c.Args == nil {
\t\treturn nil
\t}
\treturn c.Args(c, args)
}
""",
    "args.go": """package cobra

import "fmt"

// PositionalArgs validates the positional arguments of a command.
type PositionalArgs func(cmd *Command, args []string) error

// ExactArgs returns an error if there are not exactly n args.
func ExactArgs(n int) PositionalArgs {
\treturn func(cmd *Command, args []string) error {
\t\tif len(args) != n {
\t\t\treturn fmt.Errorf("accepts %d arg(s), received %d", n, len(args))
\t\t}
\t\treturn nil
\t}
}
""",
    "command_test.go": """package cobra

import "testing"

func executeCommand(root *Command, args ...string) error {
\troot.SetArgs(args)
\treturn root.Execute()
}

func TestExactArgsWithInvalidCount(t *testing.T) {
\tc := &Command{Use: "c", Args: ExactArgs(2)}
\tif err := executeCommand(c, "a"); err == nil {
\t\tt.Fatal("expected an error")
\t}
}
""",
    "doc/man_docs.go": """// Copyright 2024 The Example Authors.

package doc

import (
\t"fmt"
\t"io"

\t"github.com/example/cobra"
)

// GenMan writes the man page of a command and its subcommands to w.
func GenMan(cmd *cobra.Command, w io.Writer) error {
\t_, err := fmt.Fprintf(w, ".TH %s 1\\n", cmd.Use)
\treturn err
}
""",
    "doc/README.md": "# Generating documentation\n\nUse `doc.GenMan` to write man pages for a command.\n",
    "tools/gen.nim": "import std/os\nproc main() = echo paramStr(1)\n",
}


@pytest.fixture(scope="module")
def cobra(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the module's folder, an index of it made by `retrievo index --no-embed`)."""
    base = tmp_path_factory.mktemp("tmpdir")
    root = base / "cobra"
    for name, text in MODULE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    db = base / "cobra.db"
    cli(db, "index", str(root), "--no-embed", "--json")
    return root, db


def cli(db: Path, *args: str) -> str:
    done = run_cli(*args, "--db", str(db))
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_go_symbols_are_qualified_by_their_package_not_their_file(cobra: tuple[Path, Path]) -> None:
    _, db = cobra
    found = json.loads(cli(db, "symbols", "cobra.Command.Execute", "--json"))  # names match in any case
    assert [(s["qualified_name"], s["kind"], Path(s["path"]).name) for s in found] == [
        ("cobra.Command.Execute", "method", "command.go"),
        ("cobra.Command.execute", "method", "command.go"),
    ]
    assert "command.go:" in cli(db, "symbols", "cobra.Command.ExecuteC")
    assert "cobra.ExactArgs" in cli(db, "symbols", "ExactArgs"), "the short name still finds it"
    assert "cobra.Command.Execute" in cli(db, "symbols", "Command.Execute")
    assert "doc.GenMan" in cli(db, "symbols", "doc.GenMan"), "a package in a folder of its own"
    assert "no symbol matches" in cli(db, "symbols", "command.Command.Execute"), "the file is no package"


def test_tests_for_follows_a_helper_to_the_test_and_says_how(cobra: tuple[Path, Path]) -> None:
    _, db = cobra
    tests = json.loads(cli(db, "tests-for", "Command.validateArgs", "--json"))
    assert [(t["source"], Path(t["path"]).name, t["line_text"]) for t in tests] == [
        (
            "cobra.TestExactArgsWithInvalidCount",
            "command_test.go",
            'if err := executeCommand(c, "a"); err == nil {',
        )
    ]
    assert tests[0]["via"] == [
        "cobra.executeCommand", "cobra.Command.Execute", "cobra.Command.ExecuteC", "cobra.Command.execute"
    ]  # fmt: skip
    assert tests[0]["depth"] == 5
    shown = cli(db, "tests-for", "cobra.Command.validateArgs")
    assert (
        "via cobra.executeCommand → cobra.Command.Execute → cobra.Command.ExecuteC → cobra.Command.execute"
        in (shown)
        and "→ cobra.Command.validateArgs" in shown
    )
    direct = json.loads(cli(db, "tests-for", "cobra.ExactArgs", "--json"))
    assert [(t["source"], t["via"]) for t in direct] == [("cobra.TestExactArgsWithInvalidCount", [])]


def test_a_test_helper_with_no_test_above_it_is_still_listed(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "m.go").write_text("package m\n\nfunc Parse(s string) int { return len(s) }\n")
    (tmp_path / "m" / "m_test.go").write_text(
        'package m\n\nimport "testing"\n\nfunc mustParse(t *testing.T, s string) int { return Parse(s) }\n'
    )
    with Engine(Config(db=tmp_path / "m.db", embedder="none")) as engine:
        engine.index([tmp_path / "m"])
        tests = engine.symbol_graph("m.Parse", direction="dependents").tests
    assert [(t.source, t.depth, t.via) for t in tests] == [("m.mustParse", 1, ())]


def test_status_shows_the_code_languages_symbols_edges_and_files_without_symbols(
    cobra: tuple[Path, Path],
) -> None:
    root, db = cobra
    state = json.loads(cli(db, "status", "--json"))
    (collection,) = state["collections"]
    code: dict[str, Any] = collection["code"]
    assert code["files"] == {"go": 4, "nim": 1} and code["test_files"] == 1
    assert code["symbols"]["go"] >= 11 and set(code["symbols"]) == {"go"}
    assert code["edges"]["calls"] >= 8 and code["edges"]["imports"] >= 5
    assert code["without_symbols"] == [[str(root / "tools" / "gen.nim"), "no grammar for nim: read as text"]]
    table = cli(db, "status")
    assert "code in 'default': 5 files (go 4, nim 1), 1 of them tests; " in table
    assert f"; {code['symbols']['go']} symbols (go {code['symbols']['go']}); " in table
    assert f"calls {code['edges']['calls']}, " in table and "read as text, without symbols (1):" in table
    assert "gen.nim — no grammar for nim: read as text" in table


def test_a_go_package_named_doc_is_source_not_docs(cobra: tuple[Path, Path]) -> None:
    _, db = cobra
    files = json.loads(cli(db, "locate", "GenMan writes the man page of a command", "--json"))["files"]
    roles = {Path(f["path"]).name: f["role"] for f in files}
    assert roles["man_docs.go"] == "source"
    assert roles.get("README.md", "docs") == "docs"


def test_the_header_names_the_file_below_its_root_never_the_folders_above(cobra: tuple[Path, Path]) -> None:
    root, db = cobra
    with Engine(Config(db=db, embedder="none")) as engine:
        documents = {Path(d.path).relative_to(root).as_posix(): d for d in engine.documents(limit=100)}
        contexts = {name: [c.context for c in engine.chunks(d.document_id)] for name, d in documents.items()}
    assert all("File: command.go\n" in context for context in contexts["command.go"])
    assert all("File: doc/man_docs.go\n" in context for context in contexts["doc/man_docs.go"])
    assert contexts["go.mod"] == ["go.mod"]
    words = " ".join(context for group in contexts.values() for context in group)
    assert root.parent.name not in words and "cobra/command.go" not in words
