"""The embedding lifecycle in both stores: work lists, a shadow model, the atomic switch, dropping a model.

A collection serves one model (``collections.model_id``). ``retrievo regenerate --model NEW`` records
NEW as the collection's *shadow* model, fills NEW's vectors beside the old ones (rows of the same
``embeddings`` table, keyed by (embed_key, model_id)) while searches read both (each chunk by the best
vector it has: ``search/migrating.py``), and then
``switch_model`` makes NEW the served model in one transaction — refused while any current chunk
lacks a NEW vector. The old model's vectors stay until ``drop_model_vectors`` is asked for.
Statements use ``?`` placeholders; the PostgreSQL store converts them.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

from retrievo.errors import ConfigError
from retrievo.models import Kind
from retrievo.text.hashing import embedding_input, embedding_key, sha256_text

SHADOW_SCHEMA = """
ALTER TABLE collections ADD COLUMN shadow_model_id TEXT;
ALTER TABLE collections ADD COLUMN shadow_dimensions INTEGER;
"""

NO_LIMIT = 2**62
WORK_PAGE = 1024  # inputs read at once by embedding_work_pages

# A migration covers every chunk, kept history included, so point-in-time reads survive the switch.
MISSING_FOR_SHADOW = """
    SELECT COUNT(DISTINCT c.embed_key) FROM chunks c
    LEFT JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
    WHERE c.collection_id = ? AND e.embed_key IS NULL"""

# A model's vectors are kept while any collection serves it or is migrating to it.
DROP_MODEL = """
    DELETE FROM embeddings WHERE model_id = ?
      AND NOT EXISTS (SELECT 1 FROM collections WHERE model_id = ? OR shadow_model_id = ?)"""


def work_sql(
    only_missing: bool, kinds: Sequence[Kind | str], history: bool = False, after: bool = False
) -> str:
    """Distinct embedding inputs of a collection's current chunks (with ``history``, its superseded ones
    too), in a stable order for --limit/--offset; ``after``: only keys after a given one (a page).

    Parameters: (model_id, collection_id, *kinds, [after key,] limit, offset).
    """
    # documents is joined only to filter by kind: the plain work list (every index run) skips it.
    kind_filter = f" AND d.kind IN ({', '.join('?' * len(kinds))})" if kinds else ""
    documents = " JOIN documents d ON d.id = c.document_id" if kinds else ""
    missing = " AND e.embed_key IS NULL" if only_missing else ""
    missing += " AND c.embed_key > ?" if after else ""
    return f"""
    SELECT c.embed_key, MIN(c.context), MIN(c.text) FROM chunks c{documents}
    LEFT JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = ?
    WHERE c.collection_id = ?{"" if history else " AND c.superseded_at IS NULL"}{missing}{kind_filter}
    GROUP BY c.embed_key ORDER BY c.embed_key LIMIT ? OFFSET ?"""


# The embedding work's pages walk this index in key order from the last key read, so each page costs
# its own rows: without it every page scanned and sorted all of a collection's current chunks (a page of
# 1,024 at 200,000 chunks: 0.3 s; the pipeline fell from 11,700 to 2,900 chunks/s between 20,000 and
# 200,000 chunks and would have been quadratic at a million). Both stores, as a migration.
WORK_INDEX = (
    "CREATE INDEX IF NOT EXISTS chunks_work ON chunks (collection_id, embed_key) WHERE superseded_at IS NULL;"
)

STALE_CANDIDATES = """
    SELECT c.id, c.embed_key, c.context, c.text, c.chunk_hash FROM chunks c
    WHERE c.collection_id = ? AND c.superseded_at IS NULL ORDER BY c.id"""


class EmbeddingTable:
    """What both stores share; each says how to read, write, switch and check its side index."""

    @abstractmethod
    def _emb_rows(self, sql: str, params: Sequence[object] = ()) -> list[Sequence[Any]]: ...

    @abstractmethod
    def _collection_id(self, name: str) -> int: ...

    def missing_embeddings(self, collection: str, model_id: str) -> list[tuple[str, str]]:
        return self.embedding_work(collection, model_id, only_missing=True)

    def embedding_work(
        self,
        collection: str,
        model_id: str,
        only_missing: bool = False,
        kinds: Sequence[Kind | str] = (),
        limit: int | None = None,
        offset: int = 0,
        history: bool = False,
    ) -> list[tuple[str, str]]:
        """(embed_key, model input) of current chunks (``history``: all kept ones), each key once, by key."""
        pages = self.embedding_work_pages(collection, model_id, only_missing, kinds, limit, offset, history)
        return [item for page in pages for item in page]

    def embedding_work_pages(
        self,
        collection: str,
        model_id: str,
        only_missing: bool = False,
        kinds: Sequence[Kind | str] = (),
        limit: int | None = None,
        offset: int = 0,
        history: bool = False,
        page: int = WORK_PAGE,
        after_key: str | None = None,
    ) -> Iterator[list[tuple[str, str]]]:
        """``embedding_work`` read a page at a time (by key, each page after the last key of the one
        before), so a run over a million chunks never holds their texts at once; ``after_key`` leaves
        out the keys up to it (a resumed run), within the ``limit``/``offset`` slice."""
        head = self._work_head(collection, model_id, kinds)
        remaining = NO_LIMIT if limit is None else max(0, limit)
        skip, last = max(0, offset), None
        if after_key is not None and limit is None and not skip:
            last = after_key  # no slice to keep: start right after the resumed key
        while remaining > 0:
            size = min(page, remaining)
            after = last is not None
            params = [*head, last, size, 0] if after else [*head, size, skip]
            rows = self._emb_rows(work_sql(only_missing, kinds, history, after=after), params)
            if not rows:
                return
            remaining -= len(rows)
            last = rows[-1][0]
            items = [
                (row[0], embedding_input(row[1], row[2]))
                for row in rows
                if after_key is None or row[0] > after_key
            ]
            if items:
                yield items

    def count_embedding_work(
        self,
        collection: str,
        model_id: str,
        only_missing: bool = False,
        kinds: Sequence[Kind | str] = (),
        limit: int | None = None,
        offset: int = 0,
        history: bool = False,
        after_key: str | None = None,
    ) -> int:
        """How many inputs ``embedding_work_pages`` would give (counted in the store, no text read)."""
        slice_ = [NO_LIMIT if limit is None else max(0, limit), max(0, offset)]
        keys = work_sql(only_missing, kinds, history).replace("MIN(c.context), MIN(c.text)", "1", 1)
        head = self._work_head(collection, model_id, kinds)
        if after_key is None:
            return int(self._emb_rows(f"SELECT COUNT(*) FROM ({keys}) AS work", [*head, *slice_])[0][0])
        # Resumed: the keys of the slice that come after the resumed one.
        rows = self._emb_rows(
            f"SELECT COUNT(*) FROM ({keys}) AS work WHERE embed_key > ?", [*head, *slice_, after_key]
        )
        return int(rows[0][0])

    def _work_head(self, collection: str, model_id: str, kinds: Sequence[Kind | str]) -> list[object]:
        """The leading parameters of ``work_sql``: (model_id, collection_id, *kinds)."""
        return [model_id, self._collection_id(collection), *[str(k) for k in kinds]]

    def stale_chunks(self, collection: str) -> list[tuple[int, str]]:
        """Current chunks whose embed_key is not the hash of their own (intact) text: (chunk id, the right
        key). A chunk whose text no longer matches its chunk_hash is damage, not staleness: never re-keyed."""
        rows = self._emb_rows(STALE_CANDIDATES, (self._collection_id(collection),))
        stale = []
        for row in rows:
            key = embedding_key(row[2], row[3])
            if key != row[1] and sha256_text(row[3]) == row[4]:
                stale.append((int(row[0]), key))
        return stale

    def shadow_missing(self, collection: str, model_id: str) -> int:
        """How many distinct inputs (kept history included) still lack a ``model_id`` vector."""
        rows = self._emb_rows(MISSING_FOR_SHADOW, (model_id, self._collection_id(collection)))
        return int(rows[0][0])


def check_switch(shadow: str | None, missing: int, collection: str) -> str:
    if shadow is None:
        raise ConfigError(f"collection {collection!r} has no model migration in progress")
    if missing:
        raise ConfigError(
            f"collection {collection!r} cannot switch to {shadow} yet: {missing} chunks have no vector "
            "for it; `retrievo regenerate --model` fills them"
        )
    return shadow
