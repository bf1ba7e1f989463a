"""The learned file ranker: it reads the features it was fitted on, re-orders only the hand-weighted ranking's
best files, and leaves `locate` as it was while it is off."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from retrievo import Config, Engine
from retrievo.search.code import files as code_files
from retrievo.search.code import ranker as file_ranker
from retrievo.search.code.ranker import FEATURES, FileRanker, features, query, rerank


@dataclass(frozen=True)
class Signal:
    words: float = 0.0
    meaning: float = 0.0
    defines: float = 0.0
    module: bool = False
    frame: bool = False
    innermost: bool = False
    named: bool = False
    passages: tuple[float, ...] = ()


@dataclass(frozen=True)
class Hit:
    path: str
    role: str
    score: float


def test_the_shipped_model_reads_only_features_this_version_computes() -> None:
    model = file_ranker.load()
    assert model is not None, "src/retrievo/search/code/ranker.json ships with the package"
    assert set(model.names) <= set(FEATURES) and len(model.names) == len(model.weights)
    assert model.window >= 10
    weights = dict(zip(model.names, model.weights, strict=True))
    # what the mined commits teach: a test file is not the file a fix edits; the words still count
    assert weights["test"] < 0 and weights["words"] > 0


def test_a_file_the_text_names_by_its_module_or_folder_says_so() -> None:
    q = query("Fix `shell_completion` for options in the click package", best_hand=2.0, best_passage=10.0)
    named = features(q, "src/click/shell_completion.py", Signal(words=1.0, passages=(10.0, 5.0)), "source",
                     hand=2.0, rank=1, chunks=40)  # fmt: skip
    assert named["stem_named"] == 1.0 and named["folder_named"] == 1.0 and named["name_overlap"] == 1.0
    assert named["hand"] == 1.0 and named["hand_rank"] == 0.0 and named["words_best"] == 1.0
    other = features(q, "src/click/__init__.py", Signal(), "source", hand=0.5, rank=3, chunks=2)
    assert other["stem_named"] == 0.0 and other["init"] == 1.0 and other["hand"] == 0.25
    assert features(q, "tests/test_basic.py", Signal(), "test", 0.1, 9, 3)["test"] == 1.0
    assert set(named) == set(FEATURES)


def test_rerank_moves_only_the_window_and_keeps_the_rest_in_order() -> None:
    ranked = [Hit(f"pkg/m{i}.py", "source", 10.0 - i) for i in range(6)]
    signals = {h.path: Signal(words=1.0, passages=(1.0,)) for h in ranked}
    signals["pkg/m2.py"] = Signal(words=1.0, defines=1.0, passages=(1.0,))
    model = FileRanker(("defines", "hand"), (5.0, 1.0), window=4)
    relative = {h.path: h.path for h in ranked}
    order = rerank(model, "text", ranked, signals, relative, dict.fromkeys(relative, 3), best_passage=1.0)
    assert [h.path for h in order] == [
        "pkg/m2.py",
        "pkg/m0.py",
        "pkg/m1.py",
        "pkg/m3.py",
        "pkg/m4.py",
        "pkg/m5.py",
    ]
    assert rerank(model, "text", [], {}, {}, {}, 1.0) == []


@pytest.fixture()
def learned() -> Iterator[None]:
    shipped = code_files.LEARNED_WORDS
    code_files.LEARNED_WORDS = 10**9
    yield
    code_files.LEARNED_WORDS = shipped


@pytest.fixture(scope="module")
def repo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo") / "tool"
    (root / "tool").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "tool" / "parser.py").write_text(
        "class OptionParser:\n    def parse(self, argv):\n        return [a for a in argv if '.' not in a]\n"
    )
    (root / "tool" / "cli.py").write_text("from tool.parser import OptionParser\n\n\ndef main(argv):\n"
                                          "    return OptionParser().parse(argv)\n")  # fmt: skip
    (root / "tests" / "test_parser.py").write_text(
        "from tool.parser import OptionParser\n\n\ndef test_dot():\n"
        "    # the option parser drops an option with a dot\n    assert OptionParser().parse(['--a.b'])\n"
    )
    db = root.parent / "repo.db"
    with Engine(Config(db=db, embedder="none")) as engine:
        engine.index([root])
    return db


def test_locate_with_the_learned_ranker_finds_the_same_files_in_falling_score(
    repo_db: Path, learned: None
) -> None:
    text = "OptionParser drops an option whose name holds a dot: the option parser ignores --db.url"
    with Engine(Config(db=repo_db, embedder="none")) as engine:
        on = engine.locate(text, limit=10)
        code_files.LEARNED_WORDS = 0
        off = engine.locate(text, limit=10)
    assert {f.path for f in on} == {f.path for f in off}
    assert on[0].path.endswith("tool/parser.py"), "the file defining the class the text names comes first"
    assert [f.score for f in on] == sorted((f.score for f in on), reverse=True)
    assert sorted(f.score for f in on) == sorted(f.score for f in off), (
        "scores stay on the hand-weighted scale"
    )


def test_the_learned_ranker_reorders_short_texts_only(repo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """By default the learned ranker re-orders a one-line statement (a commit's subject, at most
    ``LEARNED_WORDS`` words: better there, held out) and leaves an issue's text and a question to the
    hand-weighted ranking."""
    asked: list[str] = []
    real = file_ranker.rerank

    def spy(model: file_ranker.FileRanker, text: str, *rest: Any, **named: Any) -> Any:
        asked.append(text)
        return real(model, text, *rest, **named)

    monkeypatch.setattr(file_ranker, "rerank", spy)
    short = "the option parser drops an option whose name holds a dot"
    long = " ".join([short] * 8)  # 96 words
    with Engine(Config(db=repo_db, embedder="none")) as engine:
        assert engine.locate(short, limit=3) and engine.locate(long, limit=3)
        assert engine.locate(f"Dotted options\n\n{short}", limit=3), "a title: an issue's text"
        assert engine.locate(f'{short}\nFile "/x/tool/parser.py", line 3, in parse', limit=3), "a traceback"
        assert engine.locate("how does the option parser drop an option with a dot?", limit=3), "a question"
        assert engine.locate(f"Summary\n{short}", limit=3), "two lines (a template's heading, no title)"
        engine.locate("io: fd 2", limit=3)  # no word of three letters: nothing for the model to weigh
    assert asked == [short], "the one-line statement re-ordered; the long text, the issues', the question not"
