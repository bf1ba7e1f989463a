"""A collection on the move (search/migrating.py): each chunk ranked by the best vector it has, the models
that served the answer named, on both stores; the merge itself on lists made by hand."""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

import pytest

from retrievo import Config, Engine
from retrievo.embed.local import MODEL_ID as MINILM_ID
from retrievo.embed.local import MiniLMEmbedder
from retrievo.embed.pool import ModelPool, build_embedder
from retrievo.embed.static import MODEL_ID as STATIC_ID
from retrievo.embed.static import StaticEmbedder
from retrievo.errors import ConfigError, EmbedderUnavailable
from retrievo.models import ArmHit, Filters
from retrievo.operations.staged import index_in_stages
from retrievo.search import migrating
from retrievo.search.migrating import BIAS_TOP, blended_arm
from retrievo.store.postgres import searching
from retrievo.surfaces.serialize import result_to_dict
from retrievo.text.hashing import embedding_input
from test_jobs import cli
from test_staged_index import Queued, staged_config
from test_static_embedder import write_pages


def bias_of(model: str) -> float:
    return {"old": -1.0, "new": 0.5}[model]


def ranked(ids: list[int], top: float, step: float) -> list[ArmHit]:
    return [ArmHit(chunk_id, rank, top - step * rank) for rank, chunk_id in enumerate(ids, start=1)]


def test_a_chunk_the_move_reached_is_ranked_by_the_new_model_alone_the_rest_by_the_old() -> None:
    old = ranked(list(range(1, 11)), top=0.9, step=0.05)  # the served model's list over every chunk
    reached = frozenset({2, 4, 6, 8, 10})  # half of them have a new vector
    new = ranked([10, 4, 20, 8, 30], top=0.7, step=0.1)  # the new model's, over the chunks it reached
    arm = blended_arm(old, "old", new, "new", reached, 10, bias_of)
    ids = [hit.chunk_id for hit in arm.hits]
    assert len(ids) == len(set(ids)) == 10  # each chunk once, cut to the depth
    assert not (set(ids) & (reached - {10, 4, 8}))  # reached, but the new model ranked them below: left out
    assert {arm.models[i] for i in (10, 4, 20, 8, 30) if i in arm.models} == {"new"}
    assert {arm.models[i] for i in ids if i not in reached and i < 20} == {"old"}
    # The new model's r-th hit stands about r (n + 1) / (k + 1) among all (11/6): 10 at 1.8, 4 at 3.7.
    assert ids[:4] == [1, 10, 3, 4]
    assert arm.model_id == "new" and [h.rank for h in arm.hits] == list(range(1, 11))
    scores = [hit.score for hit in arm.hits]
    assert all(a > b for a, b in itertools.pairwise(scores))  # one scale, strictly by place
    assert {hit.chunk_id: hit.score for hit in arm.hits}[10] == new[0].score  # its own cosine, kept
    # Above the new model's first hit, its top score moved as the old model's moves (0.85 - 0.808).
    assert scores[0] == pytest.approx(new[0].score + 0.05 * (11 / 6 - 1))
    top = [arm.models[h.chunk_id] for h in arm.hits[:BIAS_TOP]]
    assert arm.bias == pytest.approx(sum(bias_of(m) for m in top) / len(top))


def test_a_chunk_both_lists_hold_is_the_new_models_and_no_two_hits_tie() -> None:
    old = ranked([1, 2, 3, 4], top=0.8, step=0.1)
    # 2 got its new vector after ``reached`` was read (a batch of the move landed meanwhile): listed once.
    new = ranked([2, 4], top=0.7, step=0.1)
    arm = blended_arm(old, "old", new, "new", frozenset({4}), 10, bias_of)
    ids = [hit.chunk_id for hit in arm.hits]
    assert sorted(ids) == [1, 2, 3, 4] and arm.models[2] == arm.models[4] == "new"
    # share 2/5: new hits at 2.5 and 5; 1 and 3 before and between; one new hit alone still orders them.
    assert ids == [1, 2, 3, 4]
    single = blended_arm(old, "old", new[:1], "new", frozenset({2}), 10, bias_of)
    scores = [hit.score for hit in single.hits]
    assert [h.chunk_id for h in single.hits] == [1, 2, 3, 4]  # 2 at (4 + 1) / 2 = 2.5
    assert all(a > b for a, b in itertools.pairwise(scores))


def test_at_either_end_of_the_move_one_model_answers_alone() -> None:
    old = ranked([1, 2, 3], top=0.8, step=0.1)
    alone = blended_arm(old, "old", [], "new", frozenset(), 10, bias_of)
    assert alone.hits == old and alone.model_id == "old" and alone.models == {} and alone.bias == -1.0
    new = ranked([3, 1, 2], top=0.6, step=0.1)  # every chunk reached
    done = blended_arm(old, "old", new, "new", frozenset({1, 2, 3}), 10, bias_of)
    assert done.hits == new and done.model_id == "new" and done.models == {} and done.bias == 0.5


def test_the_served_arms_rest_follows_the_hits_read_again_on_the_new_scale() -> None:
    served = ranked([1, 2, 3, 4, 5, 6], top=0.9, step=0.1)  # 0.8 … 0.3, the served model's scale
    # 1, 2 and 7 (a keyword hit the served arm lacks) read again by NEW: 7 first, then 2, then 1.
    read = [ArmHit(7, 1, 0.6), ArmHit(2, 2, 0.5), ArmHit(1, 3, 0.4)]
    below = migrating._below(read, served)
    assert [hit.chunk_id for hit in below] == [3, 4, 5, 6] and [h.rank for h in below] == [4, 5, 6, 7]
    scores = [hit.score for hit in read + below]
    assert all(a > b for a, b in itertools.pairwise(scores))  # one list, strictly falling
    # 1 and 2 read 0.8 / 0.7 served, 0.4 / 0.5 by NEW: the same spread, the mean moved by -0.3 (3 at
    # 0.6 - 0.3, under NEW's last reading, 0.4).
    assert [round(h.score, 6) for h in below] == [0.3, 0.2, 0.1, 0.0]
    wide = migrating._below([ArmHit(1, 1, 0.9), ArmHit(2, 2, 0.5)], served)  # NEW spreads them 4x wider
    assert [round(h.score, 6) for h in wide] == [0.1, -0.3, -0.7, -1.0]  # (none below -1)
    # Two served scores a hair apart: the ratio of spreads is huge; the scores stay a cosine's.
    close = migrating._below([ArmHit(1, 1, 0.6), ArmHit(2, 2, 0.4)], ranked([1, 2, 3], 0.5000002, 1e-7))
    assert [h.chunk_id for h in close] == [3] and -1.0 <= close[0].score < 0.4
    assert migrating._below(read, [ArmHit(7, 1, 0.9)]) == []  # nothing left over


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_search_during_the_move_reads_both_models_and_says_which_ranked_each_hit(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    # The merge alone: no re-read (the next test), which would read every chunk of this small answer again.
    config = replace(staged_config(tmp_path, kind, request), reread_depth=0)
    question = "boiling noodles for dinner"
    with Engine(config) as engine:
        index_in_stages(engine, [str(write_pages(tmp_path / "notes"))], None, jobs=Queued(engine))
        store = engine.open_store(create=False, collection=config.collection)
        before = engine.search(question, explain=True)
        assert before.model_id == STATIC_ID and before.models == ()
        assert all(hit.model_id is None for hit in before.hits)
        # No chunk moved yet: the bundled model is not even loaded to read the query.
        assert isinstance(engine.embedder, MiniLMEmbedder) and engine.embedder._session is None
        # The move reaches the pasta page first (what the worker does a batch at a time).
        work = dict(store.embedding_work(config.collection, MINILM_ID, only_missing=True))
        pasta = next(key for key, text in work.items() if "spaghetti" in text)
        bundled = engine.require_model("local")
        store.put_embeddings(MINILM_ID, [pasta], bundled.embed_documents([work[pasta]]))
        during = engine.search(question, explain=True)
        assert during.model_id == MINILM_ID and set(during.models) == {STATIC_ID, MINILM_ID}
        by_model = {hit.chunk.path.rsplit("/", 1)[-1]: hit.model_id for hit in during.hits}
        assert by_model["pasta.md"] == MINILM_ID and during.hits[0].chunk.path.endswith("pasta.md")
        assert {m for page, m in by_model.items() if page != "pasta.md"} <= {STATIC_ID}
        meaning = engine.search(question, mode="semantic")  # the dense arm alone: its order, not flat
        assert meaning.hits[0].chunk.path.endswith("pasta.md") and meaning.hits[0].model_id == MINILM_ID
        assert len({hit.score for hit in meaning.hits}) == len(meaning.hits) == 3
        held = store.chunks_with_vector([hit.chunk.chunk_id for hit in during.hits], MINILM_ID)
        assert {hit.chunk.chunk_id for hit in during.hits if hit.model_id == MINILM_ID} == held
        shown = result_to_dict(during)
        assert shown["models"] == sorted([STATIC_ID, MINILM_ID])
        assert {r["path"].rsplit("/", 1)[-1]: r["model_id"] for r in shown["results"]} == by_model
        json.dumps(shown)
        # The other model's own list: only the chunks it reached, on both stores.
        vector = bundled.embed_query(question)
        only = store.vector_search(config.collection, MINILM_ID, vector, Filters(), 10)
        assert [hit.chunk_id for hit in only] == sorted(held)
        # NEW failed lately (its server down, say): left alone for a while, the serving model answers.
        queries = engine._pool.queries(MINILM_ID)
        assert queries is not None
        queries.failed("the model's server is down")
        cooled = engine.search("noodles boiled for supper", explain=True)
        assert cooled.model_id == STATIC_ID and cooled.models == () and cooled.hits
        assert (MINILM_ID, "noodles boiled for supper") not in queries._cache
        queries._failed_at = None  # (its retry time passed)
        moved = engine.regenerate(model="local", drop_old=True)  # the rest, then the switch
        assert moved.switched
        after = engine.search(question, explain=True)
        assert after.model_id == MINILM_ID and after.models == ()
        assert all(hit.model_id is None for hit in after.hits)


def test_on_postgresql_past_the_exact_bound_the_new_model_only_reads_the_answers_first_hits_again(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = staged_config(tmp_path, "postgres", request)
    with Engine(config) as engine:
        index_in_stages(engine, [str(write_pages(tmp_path / "notes"))], None, jobs=Queued(engine))
        store = engine.open_store(create=False, collection=config.collection)
        work = store.embedding_work(config.collection, MINILM_ID, only_missing=True)
        bundled = engine.require_model("local")
        store.put_embeddings(MINILM_ID, [k for k, _ in work], bundled.embed_documents([t for _, t in work]))
        every = engine.search("boiling noodles for dinner")  # every chunk reached: the new model alone
        assert every.model_id == MINILM_ID and every.models == ()
        monkeypatch.setattr(searching.PostgresSearch, "unserved_search_max", 2)  # it has 3 chunks
        vector = bundled.embed_query("boiling noodles for dinner")
        assert store.vector_search(config.collection, MINILM_ID, vector, Filters(), 10) == []
        read: list[str] = []
        search = searching.PostgresSearch.vector_search

        def recorded(self: searching.PostgresSearch, collection: str, model_id: str, *rest: Any) -> Any:
            read.append(model_id)
            return search(self, collection, model_id, *rest)

        monkeypatch.setattr(searching.PostgresSearch, "vector_search", recorded)

        # NEW's own list is not read (each search would scan every one of its vectors); the answer's
        # first hits are read again from the vectors the move stored: the model reads none of them.
        def never(texts: Sequence[str], **_: object) -> NoReturn:
            raise AssertionError(f"the model was asked to read {len(texts)} stored chunks")

        monkeypatch.setattr(engine._pool.get(MINILM_ID), "embed_documents", never)
        found = engine.search("noodles boiled for supper", explain=True)
        assert read == [STATIC_ID] and found.hits[0].chunk.path.endswith("pasta.md")
        assert found.model_id == MINILM_ID and found.models == (MINILM_ID,)
    with Engine(replace(config, reread_depth=0)) as engine:  # the re-read off: the serving model alone
        asked = "a pot of salted water"
        found = engine.search(asked, explain=True)
        assert found.model_id == STATIC_ID and found.models == () and found.hits
        queries = engine._pool.queries(MINILM_ID)
        assert queries is not None and (MINILM_ID, asked) not in queries._cache  # NEW never read it


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_before_the_move_reaches_them_the_first_hits_are_read_again_by_the_model_moved_to(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = staged_config(tmp_path, kind, request)
    question = "boiling noodles for dinner"
    with Engine(config) as engine:
        index_in_stages(engine, [str(write_pages(tmp_path / "notes"))], None, jobs=Queued(engine))
        store = engine.open_store(create=False, collection=config.collection)
        bundled = engine._pool.get(MINILM_ID)
        assert isinstance(bundled, MiniLMEmbedder) and not bundled.ready()
        # The bundled model is not loaded: a search does not wait for it (the static model answers).
        # The first starts no load (a one-off call would end while it loads); the second starts one
        # beside it, for the next.
        first = engine.search(question, explain=True)
        assert first.model_id == STATIC_ID and first.models == () and engine._pool.loading == {}
        second = engine.search("noodles boiled for supper", explain=True)
        assert second.model_id == STATIC_ID and second.models == ()
        loading = engine._pool.loading[MINILM_ID][0]
        loading.join(timeout=300)
        assert not loading.is_alive() and bundled.ready()
        again = engine.search(question, explain=True)
        assert again.model_id == MINILM_ID and again.models == (MINILM_ID,)
        assert {hit.model_id for hit in again.hits} == {MINILM_ID}
        assert again.hits[0].chunk.path.endswith("pasta.md")
        assert result_to_dict(again)["models"] == [MINILM_ID]
        # Each hit's dense reading is the bundled model's cosine of its text, made now and written nowhere.
        query = bundled.embed_query(question)
        for hit in again.hits:
            assert hit.explain is not None
            own = bundled.embed_documents([embedding_input(hit.chunk.context, hit.chunk.text)])[0]
            assert hit.explain["semantic"].score == pytest.approx(float(own @ query), abs=1e-5)
        ids = [hit.chunk.chunk_id for hit in again.hits]
        assert store.chunks_with_vector(ids, MINILM_ID) == frozenset()
        # The bundled model failing now (a service down, say): the answer stands as fused, the static model's.
        migrating._MADE.clear()
        embed = bundled.embed_documents

        def down(texts: Sequence[str], **_: object) -> NoReturn:
            raise EmbedderUnavailable("the model's server is down")

        monkeypatch.setattr(bundled, "embed_documents", down)
        failed = engine.search("a pot of salted water", explain=True)
        assert failed.model_id == STATIC_ID and failed.models == () and failed.hits
        # Where the move has stored a chunk's vector (the pasta page's), that one is read: the model reads
        # only the others.
        work = dict(store.embedding_work(config.collection, MINILM_ID, only_missing=True))
        pasta = next(key for key, text in work.items() if "spaghetti" in text)
        store.put_embeddings(MINILM_ID, [pasta], embed([work[pasta]]))
        read: list[str] = []

        def recorded(texts: Sequence[str], **kwargs: Any) -> Any:
            read.extend(texts)
            return embed(texts, **kwargs)

        monkeypatch.setattr(bundled, "embed_documents", recorded)
        reached = engine.search("noodles boiled for supper", explain=True)
        assert reached.model_id == MINILM_ID and reached.hits[0].chunk.path.endswith("pasta.md")
        assert {hit.model_id for hit in reached.hits} == {MINILM_ID}
        assert len(read) == len(reached.hits) - 1 and not any("spaghetti" in text for text in read)


def test_a_reread_depth_is_a_whole_number_from_0() -> None:
    assert Config.from_env(reread_depth="0").reread_depth == 0
    with pytest.raises(ConfigError, match="reread_depth must be 0-1000"):
        Config.from_env(reread_depth="-1")


def test_a_service_is_never_asked_to_read_an_answer_again_a_model_run_here_is(tmp_path: Path) -> None:
    config = Config(db=tmp_path / "i.db", embedder="openai", embed_url="http://127.0.0.1:9/v1")
    service = ModelPool(config, build_embedder("openai:m", config), 30.0)
    assert service.ready_reader("openai:m") is None and service.loading == {}  # (a search would pay it)
    here = ModelPool(Config(db=tmp_path / "i.db"), build_embedder("static", config), 30.0)
    reader = here.ready_reader(STATIC_ID)
    assert reader is not None and reader(["a text"]).shape == (1, here.get(STATIC_ID).dimensions)  # type: ignore[union-attr]


def test_an_answer_longer_than_the_reread_keeps_the_dense_evidence_of_every_hit(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    config = replace(staged_config(tmp_path, "sqlite", request), reread_depth=1)
    with Engine(config) as engine:
        index_in_stages(engine, [str(write_pages(tmp_path / "notes"))], None, jobs=Queued(engine))
        engine.require_model("local").share()  # (loaded: the re-read runs from the first search)
        found = engine.search("boiling noodles for dinner", mode="semantic", limit=3, explain=True)
        assert len(found.hits) == 3  # the first read again by the bundled model, the other two below it
        assert set(found.models) == {STATIC_ID, MINILM_ID} and found.hits[0].model_id == MINILM_ID
        assert [hit.model_id for hit in found.hits[1:]] == [STATIC_ID, STATIC_ID]
        scores = [hit.score for hit in found.hits]
        assert all(a > b for a, b in itertools.pairwise(scores))


class Stubborn(StaticEmbedder):
    """The static model, made to load slowly and to fail its first load (the pool's loading, alone)."""

    def __init__(self) -> None:
        super().__init__()
        self.loads, self.loaded = 0, False

    def ready(self) -> bool:
        return self.loaded

    def load(self) -> None:
        self.loads += 1
        if self.loads == 1:
            raise RuntimeError("the disk hiccuped")
        self.loaded = True


def test_a_failed_background_load_is_said_and_tried_again_later(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = Stubborn()
    pool = ModelPool(Config(db=tmp_path / "i.db"), model, retry_after_s=0.0)
    assert pool.ready_reader(STATIC_ID) is None and pool.loading == {}  # asked once: no load yet
    assert pool.ready_reader(STATIC_ID) is None  # asked again: the load starts beside the caller
    pool.loading[STATIC_ID][0].join(timeout=30)
    assert model.loads == 1 and "the disk hiccuped" in caplog.text
    assert pool.ready_reader(STATIC_ID) is None  # failed: tried again
    pool.loading[STATIC_ID][0].join(timeout=30)
    reader = pool.ready_reader(STATIC_ID)
    assert model.loads == 2 and reader is not None and reader(["a text"]).shape == (1, model.dimensions)


def test_a_child_forked_while_the_model_loads_can_load_it_itself() -> None:
    model = MiniLMEmbedder()
    pool = ModelPool(Config(), model, retry_after_s=30.0)
    pool.loading[MINILM_ID] = (threading.Thread(target=lambda: None), time.monotonic())
    pool._asked.add(MINILM_ID)
    with model._lock, pool._lock:  # as a load beside a search holds them
        child = fork()
        if child == 0:  # the child: no thread holds its locks, no load is under way there
            fresh = not pool.loading and not pool._asked
            os._exit(0 if not model._lock.locked() and not pool._lock.locked() and fresh else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


class Slow(StaticEmbedder):
    """The static model, made to hold a lock for a while as it loads (as an import holds Python's)."""

    def __init__(self) -> None:
        super().__init__()
        self.held, self.started, self.loaded = threading.Lock(), threading.Event(), False

    def ready(self) -> bool:
        return self.loaded

    def load(self) -> None:
        with self.held:
            self.started.set()
            time.sleep(0.5)
            self.loaded = True


def test_a_fork_waits_for_a_load_under_way_so_the_child_inherits_no_lock_it_holds(tmp_path: Path) -> None:
    model = Slow()
    pool = ModelPool(Config(db=tmp_path / "i.db"), model, retry_after_s=30.0)
    assert pool.ready_reader(STATIC_ID) is None and pool.ready_reader(STATIC_ID) is None  # (loads)
    assert model.started.wait(timeout=30)  # the load holds its lock now
    child = fork()
    if child == 0:
        os._exit(0 if model.loaded and not model.held.locked() else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and model.loaded


def fork() -> int:
    """os.fork, its warning on Python 3.12+ about a process with threads silenced: these tests fork one
    on purpose, and the child does nothing but check its locks and exit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def test_a_one_off_cli_search_of_a_moving_collection_starts_no_load_and_exits_cleanly(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # (It had started the bundled model loading beside it and ended mid-load, where onnxruntime can abort
    # the process: status 134 in five runs of six over a larger index. Whether it does depends on where the
    # load stands at the exit; ``ready_reader``'s first ask starting none is tested above.)
    config = staged_config(tmp_path, "sqlite", request)
    with Engine(config) as engine:
        index_in_stages(engine, [str(write_pages(tmp_path / "notes"))], None, jobs=Queued(engine))
        bundled = engine._pool.get(MINILM_ID)
        assert bundled is not None
        bundled.load()  # its serving graph saved under the cache folder: a later load is quick
    env = {"RETRIEVO_DAEMON": "off", "RETRIEVO_CACHE_DIR": str(config.cache_dir)}
    for _ in range(3):
        found = cli(config.db, "search", "boiling noodles for dinner", "--json", env=env)
        assert found.returncode == 0, found.stderr
        answer = json.loads(found.stdout)
        assert answer["model_id"] == STATIC_ID and answer["results"][0]["path"].endswith("pasta.md")
