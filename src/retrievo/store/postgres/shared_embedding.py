"""One job's embedding shared by every server of a tier: batches in the store that any server claims.

The server running an index or embed job plans the chunks still lacking a vector as batches of
consecutive keys (``plan_embed_batches``); then it, and every idle server of the tier (``JobTaker``),
calls ``work_embed_batch``: in one transaction it takes the first open batch with ``FOR UPDATE SKIP
LOCKED`` (servers claiming at once each get another, none waits), embeds the batch's chunks that still
lack a vector, writes the vectors and marks the batch done — and commits. A server killed mid-batch
(kill -9, a crash) ends its connection, PostgreSQL rolls the transaction back and releases the row: the
batch is open again for another server, nothing of it was written, nothing is written twice.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from retrievo.text.hashing import embedding_input

SCHEMA = """
CREATE TABLE embed_batches (
    job_id TEXT NOT NULL,
    batch_no INTEGER NOT NULL,
    collection_id BIGINT NOT NULL,
    model_id TEXT NOT NULL,
    first_key TEXT NOT NULL,
    last_key TEXT NOT NULL,
    chunks INTEGER NOT NULL,
    done_by TEXT,
    done_at TEXT,
    embedded INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, batch_no)
);
CREATE INDEX embed_batches_open ON embed_batches (job_id, batch_no) WHERE done_at IS NULL;
"""

MISSING_KEYS = """
    SELECT DISTINCT c.embed_key FROM chunks c
    LEFT JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = %s
    WHERE c.collection_id = %s AND c.superseded_at IS NULL AND e.embed_key IS NULL
    ORDER BY c.embed_key"""

MISSING_IN_RANGE = """
    SELECT c.embed_key, MIN(c.context), MIN(c.text) FROM chunks c
    LEFT JOIN embeddings e ON e.embed_key = c.embed_key AND e.model_id = %s
    WHERE c.collection_id = %s AND c.superseded_at IS NULL AND e.embed_key IS NULL
      AND c.embed_key BETWEEN %s AND %s
    GROUP BY c.embed_key ORDER BY c.embed_key"""

Embed = Callable[[str, list[str]], npt.NDArray[np.float32]]  # (model id, texts) -> vectors


class SharedEmbedding:
    shares_embedding = True

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[psycopg.Connection[Any]]: ...

    @abstractmethod
    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def _collection_id(self, name: str) -> int: ...

    @abstractmethod
    def _write_embeddings(
        self, conn: psycopg.Connection[Any], model_id: str, keys: Sequence[str],
        vectors: npt.NDArray[np.float32], replace: bool,
    ) -> None: ...  # fmt: skip

    def plan_embed_batches(self, job_id: str, collection: str, model_id: str, size: int) -> int:
        """The job's batches: what still lacks a vector, ``size`` keys a batch, after the batches an earlier
        attempt closed (a job taken over keeps them, so its result says what every server embedded); how
        many chunks the job's batches hold in all.

        Batches other servers are embedding right now are waited for (their rows are locked), so no
        key is planned while it is being embedded."""
        collection_id = self._collection_id(collection)
        with self._transaction() as conn:
            conn.execute("DELETE FROM embed_batches WHERE job_id = %s AND done_at IS NULL", (job_id,))
            after = conn.execute(
                "SELECT COALESCE(MAX(batch_no) + 1, 0) FROM embed_batches WHERE job_id = %s", (job_id,)
            ).fetchone()
            # Numbered and cut into batches in the database: no key list in this process.
            conn.execute(
                f"""INSERT INTO embed_batches (job_id, batch_no, collection_id, model_id, first_key,
                       last_key, chunks)
                    SELECT %s, %s + b, %s, %s, MIN(k), MAX(k), COUNT(*) FROM (
                      SELECT k, (row_number() OVER (ORDER BY k) - 1) / %s AS b FROM ({MISSING_KEYS}) AS m (k)
                    ) AS numbered GROUP BY b""",
                (
                    job_id,
                    int(after[0]) if after else 0,
                    collection_id,
                    model_id,
                    size,
                    model_id,
                    collection_id,
                ),
            )
            planned = conn.execute(
                "SELECT COALESCE(SUM(chunks), 0) FROM embed_batches WHERE job_id = %s", (job_id,)
            ).fetchone()
        return int(planned[0]) if planned else 0

    def work_embed_batch(self, owner: str, embed: Embed, job_id: str | None = None) -> tuple[str, int] | None:
        """Claim an open batch (of ``job_id``, or of any job), embed what of it lacks a vector, write it
        and mark it done, all in one transaction; (job id, chunks embedded), or None when none is open
        and unclaimed. An exception from ``embed`` leaves the batch open for the next claimer."""
        only = " AND job_id = %s" if job_id is not None else ""
        with self._transaction() as conn:
            row = conn.execute(
                f"""SELECT job_id, batch_no, collection_id, model_id, first_key, last_key FROM embed_batches
                    WHERE done_at IS NULL{only} ORDER BY job_id, batch_no LIMIT 1 FOR UPDATE SKIP LOCKED""",
                (job_id,) if job_id is not None else (),
            ).fetchone()
            if row is None:
                return None
            job, batch_no, collection_id, model_id, first, last = row
            work = conn.execute(MISSING_IN_RANGE, (model_id, collection_id, first, last)).fetchall()
            if work:
                vectors = embed(model_id, [embedding_input(context, text) for _, context, text in work])
                self._write_embeddings(conn, model_id, [key for key, _, _ in work], vectors, False)
            conn.execute(
                """UPDATE embed_batches SET done_by = %s, done_at = to_char(now() AT TIME ZONE 'UTC',
                   'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), embedded = %s WHERE job_id = %s AND batch_no = %s""",
                (owner, len(work), job, batch_no),
            )
        return str(job), len(work)

    def embed_batches_progress(self, job_id: str) -> tuple[int, int, int]:
        """(chunks planned, chunks embedded, batches still open) of a job, over every attempt at it."""
        rows = self._rows(
            """SELECT COALESCE(SUM(chunks), 0), COALESCE(SUM(embedded), 0),
                      COUNT(*) FILTER (WHERE done_at IS NULL) FROM embed_batches WHERE job_id = %s""",
            (job_id,),
        )
        return int(rows[0][0]), int(rows[0][1]), int(rows[0][2])

    def embed_batches_done_by(self, job_id: str) -> dict[str, int]:
        """Chunks embedded per server in the job, over every attempt at it."""
        rows = self._rows(
            "SELECT done_by, SUM(embedded) FROM embed_batches WHERE job_id = %s AND done_at IS NOT NULL "
            "GROUP BY done_by",
            (job_id,),
        )
        return {str(owner): int(count) for owner, count in rows}

    def drop_embed_batches(self, job_id: str) -> None:
        """Forget a job's open batches (it ended or was cancelled; what was embedded stays)."""
        with self._transaction() as conn:
            conn.execute("DELETE FROM embed_batches WHERE job_id = %s AND done_at IS NULL", (job_id,))
