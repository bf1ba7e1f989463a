"""The static model distilled from the bundled MiniLM: the real shipped table and tokenizer, no fakes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from retrievo import Config, Engine
from retrievo.embed import make_embedder
from retrievo.embed.local import MODEL_ID as MINILM_ID
from retrievo.embed.pool import build_embedder
from retrievo.embed.static import MODEL_ID, StaticEmbedder, table_folder
from retrievo.errors import ConfigError, EmbedderUnavailable

PAGES = {
    "bicycle.md": "# Bicycle repair\n\nA punctured tyre on a bike: take the wheel off, find the hole in the "
    "inner tube, patch it or put in a new tube, then pump it back up to pressure.",
    "pasta.md": "# Cooking pasta\n\nBring a large pot of salted water to the boil, add the spaghetti, stir, "
    "and drain it when it is soft but still firm to the bite; toss it with the sauce.",
    "taxes.md": "# Filing taxes\n\nCollect your income statements and receipts for deductible expenses, "
    "fill in the annual return and submit it to the revenue office before the deadline.",
}


def write_pages(folder: Path) -> Path:
    """``PAGES`` as Markdown files in ``folder`` (made)."""
    folder.mkdir()
    for name, text in PAGES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def static() -> StaticEmbedder:
    return StaticEmbedder()


def test_vectors_have_the_tables_dimensions_and_unit_length(static: StaticEmbedder) -> None:
    vectors = static.embed_documents(["a short text", "another, longer text about something else", ""])
    manifest = json.loads((table_folder() / "model.json").read_text(encoding="utf-8"))
    assert static.dimensions == manifest["dimensions"] == vectors.shape[1] < 384
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)  # the empty text too: no zero row


def test_the_same_text_gives_the_same_vector_alone_in_a_batch_and_as_a_query(static: StaticEmbedder) -> None:
    text = "Static embeddings are a table look-up per token."
    alone = static.embed_documents([text])[0]
    batched = static.embed_documents(["padding text " * 40, text, "x"])[1]
    assert np.array_equal(alone, batched)
    assert np.array_equal(alone, StaticEmbedder().embed_query(text))
    # its rows made float while other texts were read first (some of its words among them): the same vector
    later = StaticEmbedder()
    later.embed_documents([*(f"filler {n} table" for n in range(300)), "embeddings are static"])
    assert later._made is not None and 0 < int(later._made.sum()) < later._made.size
    assert np.array_equal(alone, later.embed_documents([text])[0])
    assert later._made is not None and bool(later._made[later.token_ids([text])[0]].all())


def test_a_text_is_closer_to_its_paraphrase_than_to_an_unrelated_text(static: StaticEmbedder) -> None:
    text, paraphrase, unrelated = static.embed_documents(
        [
            "The patient was given antibiotics to treat the bacterial infection.",
            "Doctors prescribed medicine against the germs that had infected him.",
            "The stock market closed higher after the central bank's announcement.",
        ]
    )
    assert float(text @ paraphrase) > float(text @ unrelated) + 0.1


def test_its_model_id_is_its_own_not_the_bundled_models(static: StaticEmbedder) -> None:
    assert static.model_id == MODEL_ID != MINILM_ID
    described = static.describe()
    assert described["model_id"] == MODEL_ID and described["distilled_from"] == MINILM_ID
    assert described["dimensions"] == static.dimensions and described["vocabulary"] == 30522


def test_the_configuration_names_it_static_and_the_model_pool_reaches_it(tmp_path: Path) -> None:
    config = Config(db=tmp_path / "index.db", embedder="static")
    assert isinstance(make_embedder(config), StaticEmbedder)
    local = Config(db=tmp_path / "index.db", embedder="local")
    for name in ("static", MODEL_ID):  # a collection embedded with it is served under any configuration
        reached = build_embedder(name, local)
        assert isinstance(reached, StaticEmbedder) and reached.model_id == MODEL_ID
    with pytest.raises(ConfigError, match="static"):
        Config.from_env(db=tmp_path / "index.db", embedder="statik")


def test_an_engine_with_the_static_model_indexes_and_finds_a_document_by_meaning(tmp_path: Path) -> None:
    folder = write_pages(tmp_path / "notes")
    with Engine(Config(db=tmp_path / "index.db", embedder="static")) as engine:
        report = engine.index([folder])
        assert report.documents_added == 3 and report.chunks_embedded == report.chunks_written > 0
        (collection,) = engine.status().collections
        assert collection.model_id == MODEL_ID and collection.dimensions == StaticEmbedder().dimensions
        for query, expected in (
            ("how do I mend a flat on my cycle", "bicycle.md"),
            ("boiling noodles for dinner", "pasta.md"),
            ("paying what I owe the government on my earnings", "taxes.md"),
        ):
            found = engine.search(query, mode="semantic", limit=3)
            assert found.search_mode == "semantic"
            assert found.hits[0].chunk.path.endswith(expected), (query, [h.chunk.path for h in found.hits])


def test_a_torn_table_is_refused_saying_what_to_do(tmp_path: Path) -> None:
    for name in ("model.json", "scales.npy"):
        (tmp_path / name).write_bytes((table_folder() / name).read_bytes())
    vectors = bytearray((table_folder() / "vectors.npy").read_bytes())
    vectors[-1] ^= 0xFF
    (tmp_path / "vectors.npy").write_bytes(bytes(vectors))
    with pytest.raises(EmbedderUnavailable, match="reinstall retrievo"):
        StaticEmbedder(tmp_path).embed_query("anything")


def test_a_missing_table_is_said_by_describe_and_refused_by_embedding(tmp_path: Path) -> None:
    missing = StaticEmbedder(tmp_path / "nowhere")
    assert missing.describe()["runs"].startswith("none (the static model's table is missing")
    with pytest.raises(EmbedderUnavailable, match="RETRIEVO_EMBEDDER=local"):
        missing.embed_documents(["anything"])


def test_a_collection_migrates_from_the_static_model_to_the_bundled_one_and_back(tmp_path: Path) -> None:
    folder = write_pages(tmp_path / "notes")
    with Engine(Config(db=tmp_path / "index.db", embedder="static")) as engine:
        engine.index([folder])
        report = engine.regenerate(model="local")
        assert (report.previous_model_id, report.model_id, report.switched) == (MODEL_ID, MINILM_ID, True)
        assert engine.status().collections[0].dimensions == 384
        assert (
            engine.search("fixing a flat bike tyre", mode="semantic")
            .hits[0]
            .chunk.path.endswith("bicycle.md")
        )
    with Engine(Config(db=tmp_path / "index.db", embedder="local")) as engine:
        report = engine.regenerate(model="static")
        assert (report.previous_model_id, report.model_id, report.switched) == (MINILM_ID, MODEL_ID, True)
        assert engine.status().collections[0].model_id == MODEL_ID
        assert engine.search("boiling noodles", mode="semantic").hits[0].chunk.path.endswith("pasta.md")


def test_hybrid_search_weighs_the_static_arm_by_its_own_fitted_bias(tmp_path: Path) -> None:
    """Adaptive fusion's dense weight comes from the model that served the arm (``fusion.MODEL_BIAS``):
    the same query over the same pages weighs the static arm e^(BIAS − static bias) times less than the
    bundled model's would at the same best cosine and BM25."""
    import math

    from retrievo.search.fusion import BIAS, MODEL_BIAS, adaptive_weights, model_bias

    assert MODEL_ID in MODEL_BIAS and model_bias(MODEL_ID) < BIAS == model_bias(MINILM_ID)
    folder = write_pages(tmp_path / "notes")
    with Engine(Config(db=tmp_path / "index.db", embedder="static")) as engine:
        engine.index([folder])
        found = engine.search("patch the inner tube of a bicycle", explain=True)
    assert found.hits[0].chunk.path.endswith("bicycle.md")
    weights = found.fusion_weights
    assert weights is not None and weights["keyword"] == 1.0
    arms = found.hits[0].explain
    assert arms is not None and "semantic" in arms and "keyword" in arms
    # the log-ratio the static arm was given is MiniLM's less the difference of the biases (unclipped here)
    from retrievo.models import ArmHit

    best = {"keyword": [ArmHit(0, 1, max(h.explain["keyword"].score for h in found.hits if h.explain and "keyword" in h.explain))],
            "semantic": [ArmHit(0, 1, max(h.explain["semantic"].score for h in found.hits if h.explain and "semantic" in h.explain))]}  # fmt: skip
    minilm = adaptive_weights(best)["semantic"]
    assert math.log(weights["semantic"]) == pytest.approx(
        math.log(minilm) - (BIAS - MODEL_BIAS[MODEL_ID]), abs=1e-6
    )


def real_texts(limit_per_set: int = 1500) -> list[str]:
    """Documents of the judged sets and chunk-sized windows of semble's repositories (../shared/data)."""
    from conftest import SHARED_DATA

    texts = []
    for name in ("scifact", "anthropic_codebase", "cosqa_dev"):
        with (SHARED_DATA / name / "corpus.jsonl").open(encoding="utf-8") as lines:
            for _, line in zip(range(limit_per_set), lines, strict=False):
                document = json.loads(line)
                texts.append(f"{document.get('title') or ''}\n{document['text']}")
    files = sorted(path for path in (SHARED_DATA / "semble" / "repos").rglob("*") if path.is_file())
    for path in files[::7]:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        texts += [text[start : start + 1500] for start in range(0, min(len(text), 9000), 1500)]
    return texts


HOSTILE = [
    "a\x0cb c\x0bd", "tab\there\r\nnew\x00null\x1fsep\x7fdel", "x" * 150 + " y", "___init___ __eq__",
    "ID-42:foo.bar(baz)[0]", "UPPER lower MiXeD", "", "   ", "!!!???...", "word " * 700, "a1b2c3 123abc",
    "\x1c\x1d\x1e file\x1dsep", "naïve café", "emoji 🙂 ok", "crlf\r\n\r\nend\x08bs",
    "ΟΔΟΣ ΟΔΟΣ. σοφός", " \u0301abc e\u0301", "中文字符 テスト,汉字", "a\u200bb c\ufeffd", "a\u00a0b\u2028c\u3000d",
    "a\x85b a\x9fb x\x1cy", "İstanbul ǅ ﬁle Straße ＡＢＣ", "👨\u200d👩\u200d👧 family", "مرحبا بالعالم!",
    "\ufffd replaced", "é" * 150 + " done", "naïve\tcafé\r\nrésumé " * 300,
    "see [CLS] and [UNK] here", "x[SEP]y [MASK]", "é [CL\x00S] done", "[cls] [Cls]", "[PAD]é[PAD]", "a[b]c [",
]  # fmt: skip


def test_token_ids_are_the_tokenizers_own_on_real_and_hostile_text() -> None:
    """The word split done here for ASCII text (StaticEmbedder.token_ids) gives the bundled tokenizer's
    ids, truncation included, on thousands of real documents and code windows and on hostile text."""
    static = StaticEmbedder()
    texts = [*real_texts(), *HOSTILE]
    tokenizer = static._load()[1]
    expected = [encoding.ids for encoding in tokenizer.encode_batch(texts, add_special_tokens=False)]
    assert sum(text.isascii() for text in texts) > 3000
    assert static.token_ids(texts) == expected
    assert static.token_ids(texts) == expected  # again, every word's ids now read from the cache
    assert any(len(ids) == 512 for ids in expected)  # truncated texts among them


def test_token_ids_stay_the_tokenizers_when_the_kept_pieces_are_started_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import retrievo.embed.static as static_module

    monkeypatch.setattr(static_module, "KEPT_BYTES", 64)  # every call starts the kept pieces again
    static = StaticEmbedder()
    texts = [*HOSTILE, "def parse(self, text): return text.split(',')", "class Parser: pass"]
    tokenizer = static._load()[1]
    expected = [encoding.ids for encoding in tokenizer.encode_batch(texts, add_special_tokens=False)]
    assert static.token_ids(texts) == expected
    assert StaticEmbedder().token_ids(texts[::-1]) == expected[::-1]
    assert [static.token_ids([text])[0] for text in texts] == expected  # one call each: started each time
    assert static._kept == sum(map(len, static._pieces)) > 64  # started again, and counted right


def test_a_collection_of_the_first_table_is_refused_saying_how_to_move_it(tmp_path: Path) -> None:
    """The table was trained again (v2): vectors of the first one are another space, so a collection that
    still holds them is refused by name, with the command that moves it, and the move works."""
    import sqlite3

    from retrievo.embed.pool import RETIRED_STATIC
    from retrievo.errors import ModelMismatchError

    folder = write_pages(tmp_path / "notes")
    config = Config(db=tmp_path / "index.db", embedder="static")
    with Engine(config) as engine:
        engine.index([folder])
    with sqlite3.connect(tmp_path / "index.db") as db:  # as the first table left it
        db.execute("UPDATE collections SET model_id = ?", (RETIRED_STATIC[0],))
        db.execute("UPDATE embeddings SET model_id = ?", (RETIRED_STATIC[0],))
    db.close()
    with Engine(config) as engine:
        with pytest.raises(ModelMismatchError, match=r"regenerate --model static --collection default"):
            engine.search("boiling noodles for dinner", mode="semantic")
        moved = engine.regenerate(model="static")
        assert moved.chunks_embedded > 0
        found = engine.search("boiling noodles for dinner", mode="semantic", limit=1)
        assert found.model_id == MODEL_ID and found.hits[0].chunk.path.endswith("pasta.md")


def test_long_and_odd_words_are_cut_as_the_tokenizer_cuts_them() -> None:
    """A word not met before is cut by the tokenizer's WordPiece model alone (after the normalising and
    splitting done here): the same ids as the whole tokenizer on long identifiers run together, digits,
    repeats and words past WordPiece's 100-character limit, alone and run into one another."""
    import random

    static = StaticEmbedder()
    tokenizer = static._load()[1]
    draw = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    words = ["getElementsByTagName", "internationalization" * 3, "x" * 100, "x" * 101, "QqqqZZZZ" * 5]
    words += ["".join(draw.choice(letters) for _ in range(draw.randint(12, 60))) for _ in range(2000)]
    texts = [*words, " ".join(words[:300]), "_".join(words[300:400]) + "(x)"]
    expected = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    assert static.token_ids(texts) == expected
    assert any(ids == [static._unknown] for ids in expected)  # the word past the limit


def test_rows_found_by_a_sort_or_by_a_mark_give_the_same_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table's rows still to make are found by a sort for a query's few ids and by a mark per row for a
    batch's (``SORTED_BELOW``): either way the same vectors, and every row read is made."""
    import retrievo.embed.static as static_module

    texts = [*real_texts()[::40], *HOSTILE]
    vectors = {}
    for below in (0, 10**9):
        monkeypatch.setattr(static_module, "SORTED_BELOW", below)
        static = StaticEmbedder()
        vectors[below] = static.embed_documents(texts)
        read = np.asarray([i for ids in static.token_ids(texts) for i in ids], dtype=np.intp)
        assert static._made is not None and bool(static._made[read].all())
    assert np.array_equal(vectors[0], vectors[10**9])


def test_token_ids_stay_the_tokenizers_when_the_word_table_grows_and_starts_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kept words (``embed/words.py``) start in a table of 4 slots that doubles many times, and start
    again past 300 words: the tokenizer's ids all along, in one batch and one text at a time."""
    import retrievo.embed.words as words_module

    monkeypatch.setattr(words_module, "FIRST_BITS", 2)
    monkeypatch.setattr(words_module, "MAX_WORDS", 300)
    starts: list[int] = []
    start_again = words_module.WordReader._start_again

    def counted(reader: words_module.WordReader) -> None:
        starts.append(1)
        start_again(reader)

    monkeypatch.setattr(words_module.WordReader, "_start_again", counted)
    texts = [*real_texts(40), *HOSTILE]
    tokenizer = StaticEmbedder()._load()[1]
    expected = [encoding.ids for encoding in tokenizer.encode_batch(texts, add_special_tokens=False)]
    one_at_a_time = StaticEmbedder()
    assert [one_at_a_time.token_ids([text])[0] for text in texts] == expected
    assert len(starts) > 10  # its first start, then started again each time 300 words were passed
    static = StaticEmbedder()
    assert static.token_ids(texts) == expected  # more than 300 words in the batch: kept past the bound
    reader = static._words
    assert reader is not None and reader._first.size > 300  # no new word since: nothing to bound yet
    fresh = " ".join(f"qqzx{n}" for n in range(10))
    assert static.token_ids([fresh]) == [tokenizer.encode(fresh, add_special_tokens=False).ids]
    assert reader._first.size == 1 + 10  # started again: the too-long row, then the ten new words


def test_threads_reading_at_once_get_the_tokenizers_ids() -> None:
    """Batches read from four threads at once into one embedder (the word table grows under them): each
    text's ids are the tokenizer's, and its vector the one a single batch of them all gives."""
    from concurrent.futures import ThreadPoolExecutor

    texts = real_texts(200)
    tokenizer = StaticEmbedder()._load()[1]
    expected = [encoding.ids for encoding in tokenizer.encode_batch(texts, add_special_tokens=False)]
    alone = StaticEmbedder().embed_documents(texts)
    static = StaticEmbedder()
    slices = [slice(start, start + 50) for start in range(0, len(texts), 50)]
    with ThreadPoolExecutor(4) as pool:
        read = list(pool.map(lambda part: static.token_ids(texts[part]), slices))
    assert [ids for part in read for ids in part] == expected
    shared = StaticEmbedder()
    with ThreadPoolExecutor(4) as pool:
        vectors = list(pool.map(lambda part: shared.embed_documents(texts[part]), slices))
    assert np.array_equal(np.concatenate(vectors), alone)


def test_a_huge_text_is_read_in_bounded_memory_with_the_tokenizers_ids() -> None:
    """A pasted book of punctuation, of short words or of long whitespace runs: its first 512 ids are the
    tokenizer's, and reading it takes memory bounded by those 512 words, not by its megabyte."""
    import tracemalloc

    static = StaticEmbedder()
    tokenizer = static._load()[1]
    texts = [",." * 500_000, "Ab " * 350_000, " " * 1_000_000 + "tail words", "x" * 1_000_000 + " y"]
    for text in texts:
        tracemalloc.start()
        read = static.token_ids([text])[0]
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert read == tokenizer.encode(text, add_special_tokens=False).ids
        assert peak < 4 * len(text) + (8 << 20), (text[:10], peak)  # the text's copies, not its words
