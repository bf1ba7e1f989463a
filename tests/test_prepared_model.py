"""The bundled model's serving graph saved once per machine (embed/prepared.py): a later load reads it
without the probes and the rewrite and gives the same vectors; a damaged or foreign file is not used."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from retrievo import Config
from retrievo.embed import integer
from retrievo.embed.factory import make_embedder
from retrievo.embed.local import MiniLMEmbedder
from retrievo.embed.prepared import Prepared

TEXTS = ["how does the router match path parameters", "def handler(request): return render(request)"]


def _vectors(embedder: MiniLMEmbedder) -> np.ndarray:
    return np.asarray(embedder.embed_documents(TEXTS), dtype=np.float32)


@pytest.fixture(scope="module")
def unsaved() -> np.ndarray:
    """The vectors of a model built from the shipped file, nothing saved."""
    return _vectors(MiniLMEmbedder())


def _no_rewrite(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("the graph was built again instead of read")

    monkeypatch.setattr(integer, "integer_model", refused)
    monkeypatch.setattr(integer, "float_model", refused)


def test_a_second_load_reads_the_saved_graph_and_gives_the_same_vectors(
    tmp_path: Path, unsaved: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = MiniLMEmbedder(prepared_dir=tmp_path)
    assert np.array_equal(_vectors(first), unsaved)
    records = list(tmp_path.glob("*.json"))
    graphs = list(tmp_path.glob("*.onnx"))
    assert len(records) == 1 and len(graphs) == 1 and not list(tmp_path.glob(".*"))  # no temporary left
    assert json.loads(records[0].read_text())["kernels"] == first.kernels

    _no_rewrite(monkeypatch)
    second = MiniLMEmbedder(prepared_dir=tmp_path)
    assert np.array_equal(_vectors(second), unsaved)
    assert second.kernels == first.kernels


def test_a_damaged_graph_is_said_removed_and_built_again(
    tmp_path: Path, unsaved: np.ndarray, caplog: pytest.LogCaptureFixture
) -> None:
    _vectors(MiniLMEmbedder(prepared_dir=tmp_path))
    graph = next(tmp_path.glob("*.onnx"))
    size = graph.stat().st_size
    graph.write_bytes(graph.read_bytes()[: size // 2])
    with caplog.at_level(logging.WARNING, logger="retrievo.embed.prepared"):
        again = MiniLMEmbedder(prepared_dir=tmp_path)
        assert np.array_equal(_vectors(again), unsaved)
    assert "is not used" in caplog.text
    assert graph.stat().st_size == size  # saved whole again


def test_a_graph_whose_check_differs_is_not_used(
    tmp_path: Path, unsaved: np.ndarray, caplog: pytest.LogCaptureFixture
) -> None:
    _vectors(MiniLMEmbedder(prepared_dir=tmp_path))
    record = next(tmp_path.glob("*.json"))
    saved = json.loads(record.read_text())
    saved["check"][0][0] += 1e-3  # as if another runtime had computed a different vector
    record.write_text(json.dumps(saved))
    with caplog.at_level(logging.WARNING, logger="retrievo.embed.prepared"):
        assert np.array_equal(_vectors(MiniLMEmbedder(prepared_dir=tmp_path)), unsaved)
    assert "check vector differs" in caplog.text
    assert json.loads(record.read_text())["check"] != saved["check"]  # the fresh build's, saved again


def test_each_kernels_setting_has_its_own_graph(tmp_path: Path) -> None:
    integer_key = Prepared(tmp_path, "sha", "integer", "1.0").key
    assert integer_key != Prepared(tmp_path, "sha", "float", "1.0").key
    assert integer_key != Prepared(tmp_path, "sha", "integer", "1.1").key  # another ONNX Runtime
    assert integer_key != Prepared(tmp_path, "other", "integer", "1.0").key  # another model file
    float_model = MiniLMEmbedder(prepared_dir=tmp_path, kernels="float")
    float_model.embed_query("parental leave")
    (record,) = tmp_path.glob("*.json")
    assert record.name.startswith("minilm-float-")
    assert json.loads(record.read_text())["kernels"] == "float"


def test_a_folder_that_cannot_be_written_only_means_no_saving(tmp_path: Path, unsaved: np.ndarray) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be")
    assert np.array_equal(_vectors(MiniLMEmbedder(prepared_dir=blocked / "models")), unsaved)
    assert blocked.read_text() == "a file where the folder would be"


def test_the_configured_cache_folder_holds_the_graph(tmp_path: Path) -> None:
    embedder = make_embedder(Config(db=tmp_path / "i.db", cache_dir=tmp_path / "cache"))
    assert isinstance(embedder, MiniLMEmbedder)
    embedder.embed_query("parental leave")
    assert len(list((tmp_path / "cache" / "models").glob("*.onnx"))) == 1


def test_describe_reads_the_saved_kernels_without_probing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrievo.embed import local

    loaded = MiniLMEmbedder(prepared_dir=tmp_path)
    loaded.embed_query("parental leave")

    def refused(setting: str) -> str:
        raise AssertionError("the kernels were probed again")

    monkeypatch.setattr(local, "choose", refused)
    described = MiniLMEmbedder(prepared_dir=tmp_path).describe()
    assert described["kernels"] == loaded.kernels
    assert described["cpu"]["exact"] == loaded.describe()["cpu"]["exact"]


def test_a_fallback_graph_is_not_saved_as_the_one_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The integer rewrite failing once (here: refused) serves the float graph, which is not saved under the
    integer setting's name: the next load tries the integer graph again."""

    def refused(*args: object, **kwargs: object) -> bytes:
        raise RuntimeError("a passing failure")

    monkeypatch.setattr(integer, "integer_model", refused)
    fallback = MiniLMEmbedder(prepared_dir=tmp_path, kernels="integer")
    fallback.embed_query("parental leave")
    assert fallback.kernels == "float"
    assert not list(tmp_path.glob("*.onnx")) and not list(tmp_path.glob(".*"))  # nothing saved, nothing left
