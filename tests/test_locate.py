"""`locate`: an issue's text finds the source file it is about, ahead of the changelog, docs and tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from retrievo import Config, Engine
from retrievo.models import Filters, Kind
from retrievo.search.code.files import (
    Read,
    _same_file,
    keyword_chunks,
    rank_files,
    role_of,
)
from retrievo.search.code.intent import CodeQuestions
from retrievo.search.code.question import read_question, reads_as_code_question
from retrievo.search.code.topics import CodeTopics
from retrievo.search.query import read_query
from serving import create_key, serving
from test_mcp import call, run_client

ISSUE = """OptionParser drops an option whose name holds a dot

When an option is called `--db.url` the option parser silently drops it.

Traceback (most recent call last):
  File "/home/me/venv/lib/python3.11/site-packages/tool/cli.py", line 4, in main
    parse(argv)
  File "/home/me/venv/lib/python3.11/site-packages/tool/parser.py", line 9, in parse
    raise KeyError(name)
KeyError: 'db.url'
"""


@pytest.fixture(scope="module")
def repo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo") / "tool"
    (root / "tool").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "docs").mkdir()
    (root / "tool" / "parser.py").write_text(
        "class OptionParser:\n    def parse(self, argv):\n        for name in argv:\n"
        "            if '.' in name:\n                continue\n            self.options[name] = True\n\n\n"
        "def parse(argv):\n    return OptionParser().parse(argv)\n"
    )
    (root / "tool" / "cli.py").write_text(
        "from tool.parser import parse\n\n\ndef main(argv):\n    parse(argv)\n"
    )
    (root / "tests" / "test_parser.py").write_text(
        "from tool.parser import OptionParser\n\n\ndef test_option_with_a_dot():\n"
        "    # an option whose name holds a dot is dropped by the option parser: --db.url\n"
        "    assert OptionParser().parse(['--db.url'])\n"
    )
    (root / "CHANGES.rst").write_text(
        "Changes\n=======\n\n1.2\n---\n\n- The option parser no longer drops an option whose name holds a dot "
        "(``--db.url``); OptionParser keeps it.\n- Option names with a dot are parsed.\n"
    )
    (root / "docs" / "options.rst").write_text(
        "Options\n=======\n\nAn option name may hold a dot, such as ``--db.url``; the option parser keeps it.\n"
    )
    db = root.parent / "repo.db"
    with Engine(Config(db=db, embedder="none")) as engine:
        engine.index([root])
    return db


def test_the_source_file_comes_first_with_its_evidence(repo_db: Path) -> None:
    with Engine(Config(db=repo_db, embedder="none")) as engine:
        files = engine.locate(ISSUE, limit=5)
    first = files[0]
    assert first.path.endswith("tool/parser.py") and first.role == "source"
    assert _defines(first.why, "OptionParser") and any("traceback (innermost frame)" in w for w in first.why)
    assert {e.symbol for e in first.evidence} & {"OptionParser", "OptionParser.parse", "parse"}, (
        "symbols without the module the path names"
    )
    roles = {Path(f.path).name: f.role for f in files}
    assert roles.get("CHANGES.rst") == "changelog" and roles.get("test_parser.py") == "test"
    ranked = [Path(f.path).name for f in files]
    assert ranked.index("parser.py") < ranked.index("CHANGES.rst") and ranked.index(
        "parser.py"
    ) < ranked.index("test_parser.py")
    with Engine(Config(db=repo_db, embedder="none")) as engine:
        asked = [
            Path(f.path).name for f in engine.locate("which test covers an option name with a dot", limit=3)
        ]
    assert asked[0] == "test_parser.py", "a text that asks for tests is not held back from them"


def _defines(why: tuple[str, ...], name: str) -> bool:
    return any(w.startswith("defines ") and name in w.split(" ", 1)[1].split(", ") for w in why)


@pytest.mark.parametrize(
    ("path", "role"),
    [("src/click/parser.py", "source"), ("tests/test_parser.py", "test"), ("lib/conftest.py", "test"),
     ("docs/usage.rst", "docs"), ("doc/example_google.py", "docs"), ("CHANGES.rst", "changelog"),
     ("HISTORY.md", "changelog"), ("setup.cfg", "other"), ("pkg/util_test.go", "test")],
)  # fmt: skip
def test_what_kind_of_file_a_path_is(path: str, role: str) -> None:
    assert role_of(path) == role


QUESTIONS = [ISSUE, "where are option names parsed", "which test covers an option name with a dot"]


@pytest.fixture(scope="module")
def embedded_repo_db(repo_db: Path) -> Path:
    """The same repository indexed with the bundled model: locate's meaning arm has vectors to read."""
    db = repo_db.parent / "embedded.db"
    with Engine(Config(db=db)) as engine:
        engine.index([repo_db.parent / "tool"])
    return db


def cli_locate(db: Path, text: str, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", "locate", text, "--db", str(db), *options],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_locate_answers_the_same_on_the_cli_over_mcp_and_rest(embedded_repo_db: Path) -> None:
    """One locate: the CLI reads the same arms (keyword, meaning, structure) as MCP and REST and prints the
    same JSON, files with paths relative to the indexed root; a blank text is refused with what to give."""
    printed = []
    for text in QUESTIONS:
        done = cli_locate(embedded_repo_db, text, "--json")
        assert done.returncode == 0, done.stderr[-2000:]
        printed.append(json.loads(done.stdout))
    assert printed[0]["files"][0]["path"] == "tool/parser.py"
    nonsense = json.loads(cli_locate(embedded_repo_db, "xqzv wlmrt plokj", "--json").stdout)["files"]
    scores = [f["score"] for answer in [*printed, {"files": nonsense}] for f in answer["files"]]
    assert all(0 <= s <= 1 for s in scores), "one stated scale, 0-1"
    assert all(nonsense[0]["score"] < answer["files"][0]["score"] for answer in printed), "nonsense ranks low"
    assert printed[0]["roots"] == [str(embedded_repo_db.parent / "tool")]
    assert all(f["uri"].startswith("retrievo://document/") and f["symbols"] for f in printed[0]["files"][:1])
    table = cli_locate(embedded_repo_db, ISSUE)
    assert table.stdout.startswith(" 1. tool/parser.py  (source, ")
    empty = cli_locate(embedded_repo_db, "  ")
    assert empty.returncode == 1 and "issue's text" in empty.stderr

    async def ask(client: Client) -> None:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        assert "locate" in schemas, "offered with the code toolset"
        for text, over_cli in zip(QUESTIONS, printed, strict=True):
            found: dict[str, Any] = await call(client, "locate", {"text": text, "limit": 10}, schemas)
            assert found["files"] == over_cli["files"], text
            assert found["roots"] == over_cli["roots"]
        raw = await client.call_tool("locate", {"text": ISSUE, "limit": 5})
        assert len(raw.content[0].text.encode()) <= 1500  # type: ignore[union-attr]

    run_client(
        StdioServerParameters(
            command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(embedded_repo_db)]
        ),
        ask,
    )
    where = ["--db", str(embedded_repo_db)]
    token = create_key(where, "locate")
    with serving(where) as server:
        for text, over_cli in zip(QUESTIONS, printed, strict=True):
            answer = httpx.post(f"{server.url}/api/locate", json={"text": text, "limit": 10},
                                headers={"Authorization": f"Bearer {token}"}, timeout=60)  # fmt: skip
            assert answer.status_code == 200, answer.text
            assert answer.json()["files"] == over_cli["files"], f"REST answers as the CLI and MCP: {text}"


def test_search_ranks_a_code_question_by_file_evidence(repo_db: Path) -> None:
    """The default search over code: the bug report's source file first, each hit saying why; the
    changelog, docs and test that repeat its words come after; off, the fused order is kept."""
    with Engine(Config(db=repo_db, embedder="none")) as engine:
        result = engine.search(ISSUE, limit=5, explain=True)
    first = result.hits[0]
    assert first.chunk.path.endswith("tool/parser.py") and first.why[0] == "file 1"
    assert _defines(first.why, "OptionParser") and first.explain is not None and "file" in first.explain
    files = list(dict.fromkeys(Path(h.chunk.path).name for h in result.hits))
    assert files[0] == "parser.py" and "CHANGES.rst" not in files[:2]
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True), "score is what the answer is ordered by"
    with Engine(Config(db=repo_db, embedder="none", code_ranking="off")) as engine:
        plain = engine.search(ISSUE, limit=5)
    assert plain.hits and not any(h.why for h in plain.hits)
    prose = read_query("a dot in a module name breaks lookups")  # no code sign: a topic (topics.py)
    assert CodeQuestions().wants(prose, Filters(), frozenset({"code"})) is None
    assert CodeTopics().wants(prose, Filters(), frozenset({"code"})) is not None


def test_modules_named_and_file_names_of_short_questions(repo_db: Path) -> None:
    question = read_question(read_query("see sphinx.ext.viewcode, `pylint/lint/run.py` and Dataset.groupby"))
    assert {"sphinx.ext.viewcode", "pylint/lint/run.py", "Dataset.groupby"} <= set(question.modules)
    assert "viewcode" in question.words, "a short question: its words may name files"
    assert not read_question(read_query(ISSUE)).words, (
        "more than thirty words read as an issue's text: no file names"
    )
    assert reads_as_code_question("where are command line options parsed")
    assert reads_as_code_question('Traceback (most recent call last):\n  File "a.py", line 3, in f')
    assert not reads_as_code_question("Vitamin D deficiency raises the risk of fractures.")
    with Engine(Config(db=repo_db, embedder="none")) as engine:
        named = engine.locate("calling tool.parser.parse on a list drops items", limit=2)
        assert named[0].path.endswith("tool/parser.py") and "module named" in named[0].why
        short = engine.locate("where is the parser", limit=1)
        assert short[0].path.endswith("tool/parser.py") and "file name" in short[0].why


IPYTHON_REPORT = """Parsing drops dotted options since 1.2

After upgrading, options are lost:

~/venv/lib/python3.11/site-packages/tool/options.py in parse(argv)
      8 def parse(argv):
----> 9     return OptionParser().parse(argv)

KeyError: 'db.url'
"""


def test_traceback_frames_of_ipython_and_moved_files(repo_db: Path) -> None:
    """IPython's frames are frames; a frame whose file the repository no longer has (``options.py`` was
    renamed ``parser.py`` since the report) names the file defining its function; the first line is the
    title the dense arm reads on its own; a report with no code in it still reads as a code question."""
    question = read_question(read_query(IPYTHON_REPORT))
    assert question.frames == (("~/venv/lib/python3.11/site-packages/tool/options.py", "parse"),)
    assert question.title == "Parsing drops dotted options since 1.2"
    assert read_question(read_query("where is the parser")).title == "", "one line: no title"
    assert read_question(read_query("### Bug description\n\nIt breaks.")).title == "", "a template's heading"
    folded = read_question(
        read_query("Sum drops units\n\n<details>\ndask: 2.20.0\nnumpy: 1.18.5\n</details>\nsee `sum`")
    )
    assert "dask" not in folded.text and "sum" in folded.identifiers, (
        "the environment's versions are no evidence"
    )
    kept = read_question(
        read_query('Crash\n<details>\nFile "/x/tool/parser.py", line 9, in parse\n</details>')
    )
    assert kept.frames, "a folded traceback is kept"
    with Engine(Config(db=repo_db, embedder="none")) as engine:
        first = engine.locate(IPYTHON_REPORT, limit=3)[0]
    assert first.path.endswith("tool/parser.py") and "in the traceback (innermost frame)" in first.why
    stdlib = read_question(read_query('File "/usr/lib/python3.11/argparse.py", line 9, in parse\n'))
    with Engine(Config(db=repo_db, embedder="none")) as engine:
        store, name = engine._collection_store(None)
        files = rank_files(store, name, stdlib, Read(keyword_chunks(store, name, stdlib, Filters())))
    assert not any("traceback" in w for f in files for w in f.why), "a library's frame names no file of ours"
    words = " ".join(["an index entry starting with a symbol lands in a second Symbols section"] * 4)
    assert reads_as_code_question(words), "an issue's text (over thirty words) asks for code"
    with Engine(Config(db=repo_db, embedder="none")) as engine:
        report = " ".join(["the option parser drops an option whose name holds a dot"] * 4)
        ranked = engine.search(report, limit=3)
        prose = engine.search(report, limit=3, filters=Filters(kinds=(Kind.DOCUMENT,)))
    assert ranked.hits and ranked.hits[0].why, "ranked as a code question"
    assert prose.hits and not any(h.why for h in prose.hits), "asked of the documents: not a code question"


def test_meaning_from_the_bundled_model(tmp_path: Path) -> None:
    """With vectors the dense arm's chunks are evidence too ("meaning"): for the issue's text and its title;
    the same index without the model ranks on the rest."""
    root = tmp_path / "tool"
    (root / "tool").mkdir(parents=True)
    (root / "tool" / "formatting.py").write_text(
        'def summarize(dataset):\n    """The text shown when a dataset is printed: one line per variable."""\n'
        "    return '\\n'.join(f'{name} {var.dims}' for name, var in dataset.items())\n"
    )
    (root / "tool" / "io.py").write_text(
        "def save(dataset, path):\n    path.write_bytes(dataset.to_bytes())\n"
    )
    report = (
        "Show units in the dataset overview\n\nWhen I print a dataset, the units of each variable are missing. "
        "It would be really nice if the units of the coordinates and of the data variables were shown next to "
        "their names, for example in metres or in degrees."
    )  # an issue's text (over thirty words): a code question without any code in it
    db = tmp_path / "m.db"
    with Engine(Config(db=db, embedder="local")) as engine:
        engine.index([root])
        files = engine.locate(report, limit=2)
        result = engine.search(report, limit=3)
        keyword = engine.search(report, limit=3, mode="keyword")
    assert files[0].path.endswith("formatting.py") and "meaning" in files[0].why
    assert result.hits[0].chunk.path.endswith("formatting.py") and "meaning" in result.hits[0].why
    assert keyword.hits and all("meaning" not in h.why for h in keyword.hits), "keyword asked: no vectors"
    with Engine(Config(db=db, embedder="none")) as engine:
        assert all("meaning" not in f.why for f in engine.locate(report, limit=2))


def test_group_by_file_over_the_cli_and_mcp(repo_db: Path) -> None:
    """One row per file: distinct files against limit, the file's score, its other passages named."""
    done = subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", "search", ISSUE, "--db", str(repo_db),
         "--group", "file", "--limit", "3", "--json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    rows = json.loads(done.stdout)["files"]
    paths = [r["path"] for r in rows]
    assert len(paths) == len(set(paths)) == 3 and paths[0].endswith("tool/parser.py")
    assert rows[0]["why"][0] == "file 1" and rows[0]["best"]["path"] == rows[0]["path"]

    async def ask(client: Client) -> None:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        grouped: dict[str, Any] = await call(
            client, "search", {"query": ISSUE, "group_by": "file", "limit": 2, "filters": {"kind": "code"}},
            schemas,
        )  # fmt: skip
        found = [r["path"] for r in grouped["results"]]
        assert len(found) == 2 and found[0].endswith("tool/parser.py")
        assert all(not p.endswith((".rst", "test_parser.py")) for p in found), "kind: code, one value"
        prose: dict[str, Any] = await call(
            client, "search", {"query": "option name dot", "group_by": "file", "limit": 5}, schemas
        )
        scores = [r["score"] for r in prose["results"]]
        assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
        assert len({r["path"] for r in prose["results"]}) == len(scores)

    run_client(
        StdioServerParameters(
            command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(repo_db)]
        ),
        ask,
    )


def test_frames_of_ipython_8_and_pytest() -> None:
    """IPython 8's ``File ~/x.py:3, in C.f(…)`` and pytest's ``x.py:3: in f`` are frames too (the method's
    own name is the function), next to Python's and older IPython's."""
    report = (
        "Color mapping fails with boolean data\n\n"
        "File ~/code/seaborn/seaborn/_core/plot.py:841, in Plot._plot(self, pyplot)\n"
        "--> 841 plotter._setup_scales(self, common, layers)\n"
        "File ~/code/seaborn/seaborn/_core/scales.py:351, in ContinuousBase._setup(self, data, prop)\n"
        "src/_pytest/fixtures.py:571: in getfixturevalue\n"
        "    fixturedef = self._get_active_fixturedef(argname)\n"
        'File "/x/tool/parser.py", line 9, in parse\n'
    )
    assert read_question(read_query(report)).frames == (
        ("~/code/seaborn/seaborn/_core/plot.py", "_plot"),
        ("~/code/seaborn/seaborn/_core/scales.py", "_setup"),
        ("src/_pytest/fixtures.py", "getfixturevalue"),
        ("/x/tool/parser.py", "parse"),
    )
    assert read_question(read_query("see tool/parser.py:9: for the line")).frames == (), (
        "a path and line is no frame"
    )
    node = read_question(
        read_query(
            "HTTPError: Response code 404\n"
            "    at Request._onResponseBase (/app/node_modules/got/dist/source/core/index.js:913:31)\n"
            "    at async Promise.all (index 0)\n"
            "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n"
            "    at file:///home/me/run.mjs:3:1\n"
        )
    )
    assert node.frames == (
        ("/home/me/run.mjs", ""),
        ("/app/node_modules/got/dist/source/core/index.js", "_onResponseBase"),
    ), "Node's frames, a script's and not Node's own, turned round: outermost first, as Python prints them"
    assert _same_file("/app/node_modules/got/dist/source/core/index.js", "/src/got/source/core/index.ts")
    assert not _same_file(
        "/app/node_modules/got/dist/source/core/index.js", "/src/got/source/core/options.ts"
    )
    assert not _same_file("/app/dist/score/index.js", "/src/got/source/core/index.ts"), "whole folder names"
    assert not _same_file("x.py", "/src/max.py") and _same_file("x.py", "/src/x.py")
    windows = read_question(
        read_query("File C:\\work\\seaborn\\_core\\plot.py:841, in Plot._plot(self, pyplot)")
    )
    assert windows.frames == (("C:\\work\\seaborn\\_core\\plot.py", "_plot"),), "IPython 8 on Windows"


def test_an_issues_title_words_weigh_on_their_own(tmp_path: Path) -> None:
    """A long report's example code repeats the words of the file it calls; its title says which file the
    fix is in. The title asked alone adds its files' evidence (``TITLE``), and says so."""
    root = tmp_path / "lib"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "plotting.py").write_text(
        "def plot_frame(frame, axes, colour):\n    '''Plot a frame of values on the axes in a colour.'''\n"
        "    for column in frame:\n        axes.plot(frame[column], colour=colour)\n"
    )
    (root / "lib" / "formatting.py").write_text(
        "def summary_repr(frame):\n    '''The text representation of a frame: its columns and their units.'''\n"
        "    return ', '.join(f'{c} [{u}]' for c, u in frame.units.items())\n"
    )
    report = (
        "Show units in the text representation\n\nWhen I plot a frame of values on the axes in a colour, "
        "then plot the frame again on other axes, the columns are plotted without their units. I would expect "
        "to see each column with the unit it was measured in, as the values on the axes are hard to read.\n"
    )
    db = tmp_path / "lib.db"
    with Engine(Config(db=db, embedder="none")) as engine:
        engine.index([root])
        store, name = engine._collection_store(None)
        question = read_question(read_query(report))
        found = keyword_chunks(store, name, question, Filters())
        without = rank_files(store, name, question, Read(found))
        first = engine.locate(report, limit=2)[0]
    assert question.title == "Show units in the text representation"
    assert without[0].path.endswith("plotting.py"), "the body alone points at the file the example calls"
    assert first.path.endswith("formatting.py") and "title words" in first.why


def test_a_message_the_report_quotes_names_where_it_is_raised(tmp_path: Path) -> None:
    """A warning quoted from the output is held (as a run of words, up to a placeholder) by the file that
    logs it: that file gains ``MESSAGE`` and says why; a quoted path or a two-word string is no message."""
    root = tmp_path / "docs_tool"
    (root / "docs_tool").mkdir(parents=True)
    (root / "docs_tool" / "numbering.py").write_text(
        "def number_of(figure, logger):\n    if figure.number is None:\n"
        "        logger.warning('no number is assigned for %s: %s', figure.kind, figure.label)\n"
        "    return figure.number\n"
    )
    (root / "docs_tool" / "tables.py").write_text(
        "def table_number(table):\n    '''The number assigned to a table in the builds.'''\n"
        "    return table.number\n"
    )
    report = (
        'Upgrade started generating "no number is assigned for table" warnings\n\n'
        "Since the upgrade every build of our tables says\n\n"
        "WARNING: no number is assigned for table: my-table\n\n"
        'although each table has a number. Our conf is in "/home/me/docs/conf.py" and "it fails" too.\n'
    )
    question = read_question(read_query(report))
    assert question.messages == (
        "no number is assigned for table my table",
        "no number is assigned for table",
    ), "the warning's words, and the quoted run; no path, nothing under three words"
    built = read_question(
        read_query(
            "Warning, treated as error:\ndocs/x.rst.inc:4:Malformed option '[on=]P', should be \"opt\""
        )
    )
    assert built.messages == ("Malformed option on P should be opt",), "a builder's file:line: message"
    output = read_question(
        read_query(
            "xarray/core/x.py:400: in _format_the_repr\n"
            "x.py:12: DeprecationWarning: the foo keyword is deprecated\n"
            "index.rst:4: WARNING: no number is assigned for table\n"
            "Exception: the connection was reset by the peer\n"
            "KeyError:\n\nNow I describe what I did next\n"
        )
    )
    assert output.messages == (
        "the foo keyword is deprecated",
        "no number is assigned for table",
        "the connection was reset by the peer",
    ), "pytest's frame is no message, a warning's name is not its text, a message ends with its line"
    with Engine(Config(db=tmp_path / "t.db", embedder="none")) as engine:
        engine.index([root])
        files = engine.locate(report, limit=2)
    assert files[0].path.endswith("numbering.py") and "holds a message quoted" in files[0].why
    assert not any("message" in w for w in files[1].why)


def test_a_node_stack_names_where_it_threw(tmp_path: Path) -> None:
    """Node prints its stack innermost first: the frame where it threw (``parse.js``), not the command that
    called it, is the innermost of the repository's frames."""
    root = tmp_path / "client"
    (root / "lib").mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "lib" / "parse.js").write_text(
        "export function parseHeader(line) {\n  const [name, value] = line.split(':');\n"
        "  if (!value) { throw new Error('bad header ' + name); }\n  return { name, value };\n}\n"
    )
    (root / "lib" / "client.js").write_text(
        "import { parseHeader } from './parse.js';\n\nexport class Client {\n  send(lines) {\n"
        "    return lines.map(parseHeader);\n  }\n}\n"
    )
    (root / "bin" / "cli.js").write_text(
        "import { Client } from '../lib/client.js';\n\nexport function main(argv) {\n"
        "  return new Client().send(argv);\n}\n"
    )
    report = (
        "Error: bad header x-empty\n"
        "    at parseHeader (/srv/app/node_modules/client/lib/parse.js:3:24)\n"
        "    at Array.map (<anonymous>)\n"
        "    at Client.send (/srv/app/node_modules/client/lib/client.js:5:18)\n"
        "    at main (/srv/app/node_modules/client/bin/cli.js:4:29)\n"
    )
    with Engine(Config(db=tmp_path / "c.db", embedder="none")) as engine:
        engine.index([root])
        files = engine.locate(report, limit=3)
    assert files[0].path.endswith("lib/parse.js"), [f.path for f in files]
    assert "in the traceback (innermost frame)" in files[0].why
    assert all("innermost" not in w for f in files[1:] for w in f.why)
