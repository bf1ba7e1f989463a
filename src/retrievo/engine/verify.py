"""`retrievo verify`: is every stored chunk still what it claims to be, and does it have its vector?

For every chunk of a collection (current and kept for history): ``sha256(text) == chunk_hash``;
``text == revision_text[start:end]``; the chunk's ``source_hash`` is its revision's and the revision's
text hashes to it. For every current chunk: its embed_key is the hash of its text, and a vector exists
for the collection's model, with the collection's dimension. The store's vector side index (the
usearch file beside SQLite, ``chunks.vector`` + HNSW in PostgreSQL) holds exactly those vectors. Read through ``Store.dump``, so both stores are checked the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from retrievo.store.base import Store
from retrievo.text.hashing import embedding_key, sha256_text

EXAMPLES = 5
PROBLEMS = {
    "chunk_hash": "a chunk's text does not hash to its chunk_hash",
    "offsets": "a chunk's text is not its revision's text[start:end]",
    "source_hash": "a revision's text does not hash to its source_hash, or a chunk's source_hash is not its revision's",
    "missing_vector": "a current chunk has no vector for the collection's model",
    "wrong_dimension": "a vector's length is not the collection's dimension",
    "embed_key": "a current chunk's embed_key is not the hash of its text, so its vector is another text's "
    "(search serves it as stale; regenerate --stale re-embeds it)",
    "side_index": "the vector side index (usearch file / pgvector column) disagrees with the vectors",
}
FIXABLE = ("missing_vector", "embed_key", "side_index")


@dataclass
class VerifyReport:
    collection: str
    model_id: str | None
    chunks: int = 0
    current_chunks: int = 0
    revisions: int = 0
    vectors: int = 0
    problems: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PROBLEMS, 0))
    examples: dict[str, list[str]] = field(default_factory=dict)
    fixed: dict[str, int] = field(default_factory=dict)
    cannot_fix: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(self.problems.values())

    def add(self, kind: str, example: str) -> None:
        self.problems[kind] += 1
        shown = self.examples.setdefault(kind, [])
        if len(shown) < EXAMPLES:
            shown.append(example)


def verify(store: Store, collection: str) -> VerifyReport:
    revisions: dict[str, dict[str, Any]] = {}
    sources: dict[str, str] = {}
    current_keys: dict[str, str] = {}  # embed_key -> a chunk naming it
    vectors: dict[str, int] = {}
    report = VerifyReport(collection, None)
    dimensions: int | None = None
    for kind, row in store.dump(collection):
        if kind == "collection":
            report.model_id, dimensions = row.get("model_id"), row.get("dimensions")
        elif kind == "document":
            sources[row["id"]] = row["source"]
        elif kind == "revision":
            report.revisions += 1
            revisions[row["id"]] = row
            if sha256_text(row["text"]) != row["source_hash"]:
                report.add("source_hash", f"revision {row['id']} of {sources.get(row['document_id'], '?')}")
        elif kind == "chunk":
            report.chunks += 1
            where = f"chunk {row['id']} ({sources.get(row['document_id'], '?')}:{row['line_start']})"
            intact = sha256_text(row["text"]) == row["chunk_hash"]
            if not intact:
                report.add("chunk_hash", where)
            revision = revisions.get(row["revision_id"])
            if revision is None or revision["text"][row["start_offset"] : row["end_offset"]] != row["text"]:
                report.add("offsets", where)
            elif row["source_hash"] != revision["source_hash"]:
                report.add("source_hash", where)
            if row["superseded_at"] is None:
                report.current_chunks += 1
                current_keys.setdefault(row["embed_key"], where)
                if intact and embedding_key(row["context"], row["text"]) != row["embed_key"]:
                    report.add("embed_key", where)
        elif kind == "embedding" and row["model_id"] == report.model_id:
            vectors[row["embed_key"]] = len(row["vector"])
    report.vectors = len(vectors)
    for problem in store.side_index_problems(collection):
        report.add("side_index", problem)
    if report.model_id is not None:
        for key, where in current_keys.items():
            if key not in vectors:
                report.add("missing_vector", where)
            elif dimensions is not None and vectors[key] != dimensions:
                report.add("wrong_dimension", f"{where}: {vectors[key]} values, not {dimensions}")
    return report
