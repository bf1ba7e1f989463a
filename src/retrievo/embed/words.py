"""A batch of ASCII texts read into WordPiece ids at once: numpy over the batch's bytes, each distinct word
cut once by the tokenizer's WordPiece model and kept.

What BERT's normaliser and pre-tokeniser do to ASCII text once its control characters are dropped (the
caller's part, ``StaticEmbedder``) and it is lower-cased (``WordReader.read``): whitespace separates words, and within what whitespace
separates, each run of letters and digits is a word and every other character a word of its own. Every word
of the batch is found by one pass over its bytes, and named by a key: a word of at most 8 letters by its
bytes themselves (exact), a longer one by a 63-bit hash of its bytes and length (splitmix64's mixer over
8-byte blocks, started from a random seed drawn by each reader: two distinct long words share one with odds
of about 1 in 10^7 in a corpus of a million distinct long words, and then the later is read with the
earlier's ids; without the seed, text could be written to collide on purpose). The keys are looked up in an
open-addressing table, a numpy array probed for all the batch's words at once; a word not met before is cut
by the tokenizer's WordPiece model (``cut``) and added. So a text costs no Python work per word: only a word
never met before costs a call (the rates: docs/configuration.md).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

Ids = npt.NDArray[np.int32]
Ends = npt.NDArray[np.intp]

_SPACE, _WORD, _SIGN = 0, 1, 2
_KIND = np.full(256, _SIGN, dtype=np.uint8)
_KIND[np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)] = _WORD
_KIND[np.frombuffer(b" \t\n\r", dtype=np.uint8)] = _SPACE  # the whitespace left once control is dropped
# a key keeps a short word's first L bytes (the rest of its 8-byte window masked off)
_MASK = np.asarray([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
_LONG = np.uint64(1 << 63)  # set in a long word's key, never in a short one's (ASCII bytes are < 0x80)
_TOO_LONG = np.uint64((1 << 64) - 1)  # every word past WordPiece's limit: [UNK] alone
_EMPTY = np.uint64(0)  # a free slot (no word's key is 0: NUL is dropped as a control character first)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S1, _S2, _S3 = np.uint64(30), np.uint64(27), np.uint64(31)
MAX_WORDS = 1 << 19  # the words kept, at most (then started again: numbers and hashes in text are endless)
FIRST_BITS = 14  # the table's first size, 2^14 slots; it doubles while more than half full


def _mixed(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finaliser (Steele, Lea and Flood 2014), element-wise with wrap-around."""
    x = (x ^ (x >> _S1)) * _M1
    x = (x ^ (x >> _S2)) * _M2
    mixed: npt.NDArray[np.uint64] = x ^ (x >> _S3)
    return mixed


def word_spans(blob: bytes) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Where each word of ``blob`` (lower-cased ASCII, no control characters) starts and ends."""
    kind = _KIND[np.frombuffer(blob, dtype=np.uint8)]
    word = kind == _WORD
    edges = np.diff(word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero((kind == _SIGN) | (edges[:-1] == 1))
    ends = starts + 1
    ends[word[starts]] = np.flatnonzero(edges == -1)  # a run's end, in the same order as its start
    return starts, ends


def first_words(data: bytes, count: int, size: int = 1 << 16) -> bytes:
    """``data`` (ASCII, control characters dropped) cut before its ``count + 1``-th word when it is long: each
    word is one token or more, so its first ``count`` tokens are the same, and a pasted book is read in
    memory bounded by ``count`` rather than by its length (a prefix read, four times longer each time)."""
    while len(data) > size:
        starts, _ = word_spans(data[:size].lower())
        if starts.size > count:  # the next word starts inside: the first ``count`` ended before it
            return data[: int(starts[count])]
        size *= 4
    return data


def word_keys(
    blob: bytes,
    starts: npt.NDArray[np.intp],
    ends: npt.NDArray[np.intp],
    longest: int,
    seed: np.uint64,
) -> npt.NDArray[np.uint64]:
    """Each word's key (the module's docstring says which); a word over ``longest`` bytes is
    ``_TOO_LONG`` (WordPiece reads it as [UNK] whatever it holds)."""
    windows: npt.NDArray[np.uint64] = np.ndarray(
        (len(blob),), dtype="<u8", buffer=blob + bytes(8), strides=(1,)
    )
    lengths = ends - starts
    keys: npt.NDArray[np.uint64] = windows[starts] & _MASK[np.minimum(lengths, 8)]
    keys[lengths > longest] = _TOO_LONG
    rows = np.flatnonzero((lengths > 8) & (lengths <= longest))
    if rows.size:
        mixed = _mixed(keys[rows] ^ lengths[rows].astype(np.uint64) ^ seed)
        at, left = starts[rows] + 8, lengths[rows] - 8
        while rows.size:  # one 8-byte block of every long word still read, at a time
            mixed = _mixed(mixed ^ (windows[at] & _MASK[np.minimum(left, 8)]))
            keys[rows] = mixed | _LONG
            more = left > 8
            rows, mixed, at, left = rows[more], mixed[more], at[more] + 8, left[more] - 8
    return keys


class WordReader:
    """ASCII texts to WordPiece ids, a batch at a time; safe to share between threads."""

    def __init__(self, cut: Callable[[str], list[int]], unknown: int, longest: int = 100) -> None:
        self.cut = cut  # one word's ids: the tokenizer's WordPiece model
        self.unknown = unknown
        self.longest = longest  # WordPiece's limit: a longer word is [UNK]
        self._lock = threading.Lock()
        self._seed = np.uint64(secrets.randbits(64))
        self._start_again()

    def _start_again(self) -> None:
        self._bits = FIRST_BITS
        self._keys = np.zeros(1 << self._bits, dtype=np.uint64)
        self._slots = np.zeros(1 << self._bits, dtype=np.int32)  # a word's row in the three below
        self._first = np.zeros(1, dtype=np.int64)  # where its ids start in ``_ids``
        self._count = np.ones(1, dtype=np.int32)
        self._ids = np.asarray([self.unknown], dtype=np.int32)  # row 0: every word too long
        self._place(np.asarray([_TOO_LONG]), np.zeros(1, dtype=np.int32))

    def read(self, texts: Sequence[bytes], limit: int) -> tuple[Ids, Ends]:
        """Every text's ids (ASCII, control characters dropped; lower-cased here), its first ``limit`` only,
        one array for the batch: text ``i``'s are ``ids[ends[i]:ends[i + 1]]``."""
        if not texts:
            return np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.intp)
        lengths = np.fromiter(map(len, texts), dtype=np.intp, count=len(texts))
        text_starts = np.zeros(len(texts), dtype=np.intp)
        np.cumsum(lengths[:-1] + 1, out=text_starts[1:])
        blob = b" ".join(texts).lower()
        starts, ends = word_spans(blob)
        keys = word_keys(blob, starts, ends, self.longest, self._seed)
        with self._lock:
            rows = self._rows(keys, blob, starts, ends)
            first, count, ids = self._first[rows], self._count[rows].astype(np.intp), self._ids
        # the words' ids one after another, and where each text's begin
        total = np.cumsum(count)
        flat = ids[np.repeat(first - (total - count), count) + np.arange(int(total[-1]) if total.size else 0)]
        bounds = np.zeros(len(texts) + 1, dtype=np.intp)
        before = np.concatenate([[0], total])  # tokens before each word
        bounds[1:] = before[np.searchsorted(starts, np.append(text_starts[1:], len(blob) + 1))]
        sizes = np.diff(bounds)
        if not (sizes > limit).any():
            return flat, bounds
        place = np.arange(flat.size) - np.repeat(bounds[:-1], sizes)
        kept = np.zeros(len(texts) + 1, dtype=np.intp)
        np.cumsum(np.minimum(sizes, limit), out=kept[1:])
        return flat[place < limit], kept

    def _rows(
        self,
        keys: npt.NDArray[np.uint64],
        blob: bytes,
        starts: npt.NDArray[np.intp],
        ends: npt.NDArray[np.intp],
    ) -> npt.NDArray[np.int32]:
        """Each key's row; words not met before are cut and added (the lock held)."""
        rows = self._find(keys)
        missing = np.flatnonzero(rows < 0)
        if not missing.size:
            return rows
        new, first, inverse = np.unique(keys[missing], return_index=True, return_inverse=True)
        if self._first.size + new.size > MAX_WORDS and self._first.size > 1:  # (a batch may hold more)
            self._start_again()
            return self._rows(keys, blob, starts, ends)
        text = blob.decode("ascii")
        spans = zip(starts[missing[first]].tolist(), ends[missing[first]].tolist(), strict=True)
        cut = [self.cut(text[start:end]) for start, end in spans]
        counts = np.fromiter(map(len, cut), dtype=np.int32, count=len(cut))
        added = np.arange(self._first.size, self._first.size + new.size, dtype=np.int32)
        offsets = np.zeros(new.size, dtype=np.int64)
        np.cumsum(counts[:-1], out=offsets[1:])
        self._first = np.concatenate([self._first, self._ids.size + offsets])
        self._count = np.concatenate([self._count, counts])
        self._ids = np.concatenate([self._ids, np.fromiter((i for ids in cut for i in ids), dtype=np.int32)])
        if 2 * self._first.size > self._keys.size:  # more than half full: twice the size
            kept = np.flatnonzero(self._keys != _EMPTY)
            old_keys, old_slots = self._keys[kept], self._slots[kept]
            while 2 * self._first.size > (1 << self._bits):
                self._bits += 1
            self._keys = np.zeros(1 << self._bits, dtype=np.uint64)
            self._slots = np.zeros(1 << self._bits, dtype=np.int32)
            self._place(old_keys, old_slots)
        self._place(new, added)
        rows[missing] = added[inverse]
        return rows

    def _home(self, keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.intp]:
        # seeded too: words written to crowd one slot (slowing every later look-up) need the seed
        return (_mixed(keys ^ self._seed) >> np.uint64(64 - self._bits)).astype(np.intp)

    def _find(self, keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.int32]:
        """Each key's row, -1 where none: linear probing, every key of the batch a step at a time."""
        found = np.full(keys.size, -1, dtype=np.int32)
        slot, pending, mask = self._home(keys), np.arange(keys.size), self._keys.size - 1
        while pending.size:
            at = slot[pending]
            held = self._keys[at]
            hit = held == keys[pending]
            found[pending[hit]] = self._slots[at[hit]]
            on = (held != _EMPTY) & ~hit
            pending = pending[on]
            slot[pending] = (at[on] + 1) & mask
        return found

    def _place(self, keys: npt.NDArray[np.uint64], rows: npt.NDArray[np.int32]) -> None:
        """``keys`` (distinct, none held yet) put in the table, each pointing at its row."""
        slot, pending, mask = self._home(keys), np.arange(keys.size), self._keys.size - 1
        while pending.size:
            at = slot[pending]
            free = self._keys[at] == _EMPTY
            _, first = np.unique(at[free], return_index=True)  # one key per free slot this step
            placed = pending[free][first]
            self._keys[slot[placed]] = keys[placed]
            self._slots[slot[placed]] = rows[placed]
            left = np.ones(keys.size, dtype=np.bool_)
            left[placed] = False
            pending = pending[left[pending]]
            taken = self._keys[slot[pending]] != _EMPTY
            slot[pending[taken]] = (slot[pending[taken]] + 1) & mask
