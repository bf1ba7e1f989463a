"""Read a dataset in BEIR layout: corpus.jsonl, queries.jsonl, qrels/<split>.tsv (with a header)."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from retrievo.errors import SourceError


@dataclass(frozen=True)
class CorpusDocument:
    doc_id: str
    title: str
    text: str


@dataclass(frozen=True)
class Dataset:
    name: str
    corpus: list[CorpusDocument]
    queries: dict[str, str]  # judged queries only, in file order
    qrels: dict[str, dict[str, int]]


def load_beir(directory: Path, split: str = "test") -> Dataset:
    corpus_file, queries_file = directory / "corpus.jsonl", directory / "queries.jsonl"
    qrels_file = directory / "qrels" / f"{split}.tsv"
    for required in (corpus_file, queries_file, qrels_file):
        if not required.is_file():
            raise SourceError(
                f"{required} is missing; a BEIR dataset folder holds corpus.jsonl, queries.jsonl and qrels/{split}.tsv"
            )
    qrels: dict[str, dict[str, int]] = {}
    with qrels_file.open(encoding="utf-8") as handle:
        rows = csv.reader(handle, delimiter="\t")
        header = next(rows, None)
        if header is None or header[0] != "query-id":
            raise SourceError(f"{qrels_file} must start with the header 'query-id<TAB>corpus-id<TAB>score'")
        for row in rows:
            if len(row) >= 3:
                qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    corpus = [
        CorpusDocument(str(item["_id"]), str(item.get("title") or ""), str(item.get("text") or ""))
        for item in _jsonl(corpus_file)
    ]
    queries = {
        str(item["_id"]): str(item["text"]) for item in _jsonl(queries_file) if str(item["_id"]) in qrels
    }
    return Dataset(name=directory.resolve().name, corpus=corpus, queries=queries, qrels=qrels)


def _jsonl(path: Path) -> list[dict[str, object]]:
    items = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise SourceError(f"{path}:{number} is not valid JSON ({exc.msg})") from exc
    return items
