"""A static embedding model distilled from the bundled MiniLM: a text is the mean of its tokens' vectors.

The table (``data/static/``: ``vectors.npy``, int8, one row per WordPiece token; ``scales.npy``, one float
scale per row; ``model.json``, what made it) was made offline by ``benchmarks/static_model/`` (its README
says from what, how and with which commands): every token of the bundled tokenizer's vocabulary passed
once through the bundled MiniLM as ``[CLS] token [SEP]``, the token's own output reduced by PCA and
weighted by a frequency prior (SIF, Arora et al. 2017, with Zipf's law for the frequencies: the model2vec
recipe of MinishLab, 2024; ``distill.py``), then the table trained so that a text's mean row points where
the bundled model's vector for the whole text points (model2vec's "tokenlearn"; ``train.py``, on texts of
installed packages, no evaluation data). No transformer runs here: tokenising and one table look-up
per token, no network, no other package than the tokenizer the bundled model already uses.

Its vectors are not MiniLM's (another space, fewer dimensions): they carry their own model id, so a
collection embedded with one is never searched with the other (the store records the model id;
``retrievo regenerate --model static`` moves a collection from one to the other).
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools
import json
import re
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retrievo.embed.base import Embedder, Vectors
from retrievo.embed.words import WordReader, first_words
from retrievo.errors import EmbedderUnavailable

MODEL_ID = "retrievo-static-minilm-v2"
# A text's first tokens only: a chunk is far shorter; a whole book pasted as a query is not.
MAX_TOKENS = 512
# A text as BERT's normaliser and pre-tokeniser read it (``StaticEmbedder.token_ids``): control characters
# other than tab, newline and return are dropped (not made spaces: "a\x0cb" is one word), whitespace
# separates words, and within what whitespace separates, runs of letters and digits are words and every
# other character (punctuation, in ASCII) a word of its own. ASCII text is read here a batch at a time
# (``embed/words.py``); a piece between whitespace that is not ASCII is read the same whatever surrounds it
# (the normaliser works character by character), so its ids are read by the tokenizer once and kept.
# Python's lower-casing is not Rust's for a final sigma: only ASCII is lower-cased here.
_CONTROL = bytes([*range(9), 11, 12, *range(14, 32), 127])
# what str.split() takes for whitespace but the normaliser drops as control characters, and the others
_UNICODE_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
SORTED_BELOW = 4096  # ids from which the rows to make are found by a mark per row rather than a sort
# the non-ASCII pieces whose ids are kept, their characters at most (then started again)
KEPT_BYTES = 32 << 20


def table_folder() -> Path:
    """Where the shipped table lives (inside the installed package)."""
    return Path(str(resources.files("retrievo.embed") / "data" / "static"))


@functools.cache
def _manifest(folder: Path) -> dict[str, Any]:
    try:
        manifest: dict[str, Any] = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderUnavailable(
            f"the static model's table is missing or torn ({folder / 'model.json'}: {exc}); reinstall "
            "retrievo (`pip install -e .`), or use the bundled model (RETRIEVO_EMBEDDER=local)"
        ) from exc
    return manifest


class StaticEmbedder(Embedder):
    """Token vectors looked up and averaged; loaded at first use, once, and shared by every thread."""

    model_id = MODEL_ID
    # One batch at a time: its Python work holds the interpreter's lock, so a second thread adds nothing.
    batch_size = 256
    parallel_batches = 1

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or table_folder()
        # int8 rows and one float32 scale each; a row is made float the first time a text reads it (the
        # whole table at once cost 0.08-0.2 s, for the few hundred rows a query or a small index reads)
        self._table: tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]] | None = None
        self._float: npt.NDArray[np.float32] | None = None  # the rows made float so far (``_rows``)
        self._made: npt.NDArray[np.bool_] | None = None  # which they are
        self._tokenizer: Any = None
        self._unknown = 0
        self._words: WordReader | None = None  # ASCII text's words, read a batch at a time
        self._pieces: dict[str, list[int]] = {}  # a non-ASCII piece's WordPiece ids (``token_ids``)
        self._kept = 0  # their length
        self._reading = threading.Lock()
        self._specials: tuple[str, ...] = ()  # the tokenizer's added tokens: [PAD], [UNK], [CLS], …
        self._lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        return int(_manifest(self.folder)["dimensions"])

    def describe(self) -> dict[str, Any]:
        """Adds the table's size and how it was made (read from its manifest, not its vectors); a missing
        table is said, not raised."""
        try:
            manifest = _manifest(self.folder)
        except EmbedderUnavailable as exc:
            return super().describe() | {"runs": f"none ({exc})"}
        return super().describe() | {
            "dimensions": int(manifest["dimensions"]),
            "vocabulary": int(manifest["vocabulary"]),
            "distilled_from": manifest["source_model"],
            "runs": "table look-up (no transformer)",
        }

    def _load(self) -> tuple[tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]], Any]:
        if self._table is not None:
            return self._table, self._tokenizer
        with self._lock:
            if self._table is None:
                table, tokenizer, self._unknown = _load_table(self.folder)
                decoder = tokenizer.get_added_tokens_decoder()
                self._specials = tuple(token.content for token in decoder.values())
                model = tokenizer.model
                self._words = WordReader(
                    functools.partial(_cut, model),
                    self._unknown,
                    getattr(model, "max_input_chars_per_word", 100),
                )
                self._tokenizer, self._table = tokenizer, table
        return self._table, self._tokenizer

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """The mean of each text's token vectors (``[UNK]`` left out: it says nothing; a text with no
        other token is ``[UNK]``'s vector, so no row is zero)."""
        (vectors, scales), _ = self._load()
        flat, ends = self._read(texts)
        known = flat != self._unknown  # [UNK] left out once for the batch; a text is a slice of the rest
        ends = np.concatenate([[0], np.cumsum(known)])[ends]
        flat = flat[known]
        table = self._rows(vectors, scales, flat)
        out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
        take, add = np.take, np.add.reduce
        for row, (start, end) in enumerate(zip(ends[:-1].tolist(), ends[1:].tolist(), strict=True)):
            # one text's rows at a time stay in cache (numpy's reduceat over a batch is 8x slower here); a
            # float32 sum, row after row, divided by the count below: ndarray.mean's bits
            add(take(table, flat[start:end], axis=0), axis=0, out=out[row])
        sizes = np.diff(ends)
        out[sizes == 0] = table[self._unknown]
        out /= np.maximum(sizes, 1).astype(np.float32)[:, None]
        return out

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's WordPiece ids (its first ``MAX_TOKENS``): the bundled tokenizer's, without running
        it over every text (``_read``; checked against the tokenizer on real corpora and hostile text in
        tests/test_static_embedder.py)."""
        flat, ends = self._read(texts)
        return [flat[start:end].tolist() for start, end in itertools.pairwise(ends.tolist())]

    def _read(self, texts: Sequence[str]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.intp]]:
        """Every text's ids in one array, and where each text's begin (``token_ids``). ASCII text is
        cleaned here as the tokenizer's normaliser does and read a batch at a time (``WordReader``, each
        word cut once by the tokenizer's own WordPiece model); a text with other characters is split at
        whitespace, its runs of ASCII pieces read the same way and each other piece by the tokenizer, once
        (then kept); a text naming an added token such as [CLS] goes to the tokenizer whole. The same ids,
        several times faster: the tokenizer over whole chunks was most of the static model's time."""
        _, tokenizer = self._load()
        assert self._words is not None  # made by _load
        plain: list[bytes] = []  # ASCII text and runs, read by the word reader in one batch
        # each text: the index of its one ASCII run in ``plain``, or its parts (run indexes and pieces' ids)
        parts: list[int | list[int | list[int]]] = []
        whole: list[int] = []  # texts the tokenizer reads itself
        split: dict[int, list[str]] = {}
        for row, text in enumerate(texts):
            if "[" in text and self._names_a_special(text):
                whole.append(row)
                parts.append([])
            elif text.isascii():
                parts.append(len(plain))
                plain.append(first_words(text.encode("ascii").translate(None, _CONTROL), MAX_TOKENS))
            else:
                clean = _UNICODE_CONTROL.sub("", text) if _UNICODE_CONTROL.search(text) else text
                split[row] = clean.split()
                parts.append([])
        if not whole and not split:
            return self._words.read(plain, MAX_TOKENS)
        known = self._read_pieces(
            tokenizer, {p for pieces in split.values() for p in pieces if not p.isascii()}
        )
        for row, pieces in split.items():
            mine: list[int | list[int]] = []
            for ascii_run, run in itertools.groupby(pieces, str.isascii):
                if ascii_run:
                    mine.append(len(plain))
                    plain.append(" ".join(run).encode("ascii"))
                else:
                    mine.extend(known[piece] for piece in run)
            parts[row] = mine
        read, ends = self._words.read(plain, MAX_TOKENS)
        runs = [read[start:end] for start, end in itertools.pairwise(ends.tolist())]
        alone = _encoded(tokenizer, [texts[row] for row in whole])
        whole_ids = {row: np.asarray(ids, dtype=np.int32) for row, ids in zip(whole, alone, strict=True)}
        each: list[npt.NDArray[np.int32]] = []
        for row, part in enumerate(parts):
            if isinstance(part, int):
                each.append(runs[part])
            elif row in whole_ids:
                each.append(whole_ids[row][:MAX_TOKENS])
            else:
                read_parts = [runs[p] if isinstance(p, int) else np.asarray(p, dtype=np.int32) for p in part]
                each.append(np.concatenate(read_parts)[:MAX_TOKENS] if read_parts else np.zeros(0, np.int32))
        bounds = np.zeros(len(each) + 1, dtype=np.intp)
        np.cumsum([ids.size for ids in each], out=bounds[1:])
        return (np.concatenate(each) if each else np.zeros(0, dtype=np.int32)), bounds

    def _names_a_special(self, text: str) -> bool:
        """Whether the tokenizer would match one of its added tokens ([CLS], [UNK], …: matched in the raw
        text before anything else) in ``text``, or in a piece of it once its control characters are
        dropped (a non-ASCII text's pieces go to the tokenizer whole)."""
        if any(special in text for special in self._specials):
            return True
        if text.isascii() or not _UNICODE_CONTROL.search(text):
            return False
        clean = _UNICODE_CONTROL.sub("", text)
        return any(special in clean for special in self._specials)

    def _read_pieces(self, tokenizer: Any, pieces: set[str]) -> dict[str, list[int]]:
        """The kept ids of non-ASCII pieces with ``pieces``' added, each read by the tokenizer whole."""
        with self._reading:  # one reader at a time: the kept dict and its size stay in step
            known = self._pieces
            missing = [piece for piece in pieces if piece not in known]
            if not missing:
                return known
            if self._kept + sum(map(len, missing)) > KEPT_BYTES:  # a new dict: another thread keeps its own
                known, self._kept, missing = {}, 0, list(pieces)
            known.update(zip(missing, _encoded(tokenizer, missing), strict=True))
            self._pieces, self._kept = known, self._kept + sum(map(len, missing))
            return known

    def _rows(
        self,
        vectors: npt.NDArray[np.int8],
        scales: npt.NDArray[np.float32],
        ids: npt.NDArray[np.integer[Any]],
    ) -> npt.NDArray[np.float32]:
        """The table as float, with at least the rows ``ids`` read (and ``[UNK]``'s) made: each row once
        per process, the first time a text reads it (the same products as making them all at once: the
        same vectors)."""
        made = self._made
        if made is not None and self._float is not None and made[ids].all():
            return self._float  # every row made already (a row is written before it is marked)
        with self._lock:
            if self._float is None or self._made is None:
                self._float = np.empty(vectors.shape, dtype=np.float32)  # pages taken as rows are made
                self._made = np.zeros(vectors.shape[0], dtype=np.bool_)
                ids = np.append(ids, self._unknown)  # [UNK]'s row too, once: an empty text's vector
            if ids.size < SORTED_BELOW:  # a query's few ids: sorted
                new = np.unique(ids[~self._made[ids]])
            else:  # a batch's: a mark per row of the vocabulary, no sort
                wanted = np.zeros_like(self._made)
                wanted[ids] = True
                new = np.flatnonzero(wanted & ~self._made)
            if new.size:
                self._float[new] = vectors[new].astype(np.float32) * scales[new, None]
                self._made[new] = True
            return self._float


def preload() -> None:
    """The shipped table and its tokenizer read now (the CLI's resident process does, so that its calls do
    not)."""
    _load_table(table_folder())


def _cut(model: Any, word: str) -> list[int]:
    """What the tokenizer does to a word once its normaliser and pre-tokeniser have: its WordPiece model
    (3.5 us a word; the whole tokenizer, 10 us). A word that is a token of the vocabulary is that token
    (WordPiece takes the longest piece first: the whole word), found in 0.2 us."""
    whole: int | None = model.token_to_id(word)
    return [whole] if whole is not None else [token.id for token in model.tokenize(word)]


def _encoded(tokenizer: Any, texts: list[str]) -> list[list[int]]:
    """``texts``' ids as the tokenizer reads them (no special tokens added), in one call."""
    return (
        [encoding.ids for encoding in tokenizer.encode_batch(texts, add_special_tokens=False)]
        if texts
        else []
    )


def table_arrays(
    folder: Path, manifest: dict[str, Any]
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """A table folder's int8 rows and float32 scales, each file's bytes checked against ``manifest``'s
    sha256 first (ValueError for a file that is not the one named; OSError, KeyError as raised)."""
    arrays = {}
    for name in ("vectors", "scales"):
        data = (folder / f"{name}.npy").read_bytes()
        if hashlib.sha256(data).hexdigest() != manifest["sha256"][name]:
            raise ValueError(f"{name}.npy is not the file its manifest names")
        arrays[name] = np.load(io.BytesIO(data), allow_pickle=False)
    return arrays["vectors"].astype(np.int8, copy=False), arrays["scales"].astype(np.float32, copy=False)


# One reading per process: the table is never written, and every embedder of one folder shares it.
@functools.cache
def _load_table(
    folder: Path,
) -> tuple[tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]], Any, int]:
    """The table (int8 rows, their float32 scales), the tokenizer, and ``[UNK]``'s id; the table's
    bytes are checked against the manifest first, so a torn file is refused rather than served."""
    from tokenizers import Tokenizer

    from retrievo.embed.tokens import bundled_tokenizer_json

    manifest = _manifest(folder)
    if manifest.get("model_id") != MODEL_ID:
        raise EmbedderUnavailable(
            f"the static table in {folder} is {manifest.get('model_id')!r}, not {MODEL_ID!r}; reinstall "
            "retrievo, or make it again as benchmarks/static_model/README.md says"
        )
    try:
        table = table_arrays(folder, manifest)
    except (OSError, ValueError, KeyError) as exc:
        raise EmbedderUnavailable(
            f"the static model's table in {folder} cannot be read ({exc}); reinstall retrievo "
            "(`pip install -e .`), or use the bundled model (RETRIEVO_EMBEDDER=local)"
        ) from exc
    tokenizer = Tokenizer.from_str(bundled_tokenizer_json())
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    unknown = tokenizer.token_to_id("[UNK]")
    if tokenizer.get_vocab_size() != table[0].shape[0] or unknown is None:
        raise EmbedderUnavailable(
            f"the static table has {table[0].shape[0]} rows for a vocabulary of {tokenizer.get_vocab_size()}; "
            "reinstall retrievo, or make it again as benchmarks/static_model/README.md says"
        )
    return table, tokenizer, unknown
