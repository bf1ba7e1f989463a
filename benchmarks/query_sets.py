"""The query-style battery's sets (``benchmarks/query_styles.py``), each written as files into a folder: the
judged questions each brings come back, gold the files their judged passages were written to."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
Query = dict[str, Any]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _qrels(path: Path) -> dict[str, set[str]]:
    judged: dict[str, set[str]] = defaultdict(set)
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        query_id, doc_id, score = line.split("\t")[:3]
        if int(score) > 0:
            judged[query_id].add(doc_id)
    return judged


def write_scifact(folder: Path) -> list[Query]:
    """600 abstracts as Markdown (``# title`` first): every one a test claim judges, then others."""
    corpus = {d["_id"]: d for d in _jsonl(DATA / "scifact" / "corpus.jsonl")}
    judged = _qrels(DATA / "scifact" / "qrels" / "test.tsv")
    wanted = list(dict.fromkeys(doc for docs in judged.values() for doc in sorted(docs)))
    wanted += [doc for doc in corpus if doc not in set(wanted)][: max(0, 600 - len(wanted))]
    for doc in wanted:
        item = corpus[doc]
        (folder / f"{doc}.md").write_text(f"# {item['title']}\n\n{item['text']}\n", encoding="utf-8")
    queries = {q["_id"]: q["text"] for q in _jsonl(DATA / "scifact" / "queries.jsonl")}
    return [
        {"style": "question", "text": queries[q], "gold": sorted(f"{d}.md" for d in docs)}
        for q, docs in judged.items()
        if q in queries
    ]


def write_cosqa(folder: Path) -> list[Query]:
    """The dev queries' judged snippets, then others, to 600 Python files."""
    corpus = {d["_id"]: d for d in _jsonl(DATA / "cosqa_dev" / "corpus.jsonl")}
    judged = _qrels(DATA / "cosqa_dev" / "qrels" / "dev.tsv")
    wanted = list(dict.fromkeys(doc for docs in judged.values() for doc in sorted(docs)))[:500]
    wanted += [doc for doc in corpus if doc not in set(wanted)][: max(0, 600 - len(wanted))]
    for doc in wanted:
        (folder / f"{doc}.py").write_text(corpus[doc]["text"] + "\n", encoding="utf-8")
    queries = {q["_id"]: q["text"] for q in _jsonl(DATA / "cosqa_dev" / "queries.jsonl")}
    kept = set(wanted)
    return [
        {"style": "question", "text": queries[q], "gold": sorted(f"{d}.py" for d in docs)}
        for q, docs in judged.items()
        if q in queries and docs <= kept
    ]


def write_anthropic(folder: Path) -> list[Query]:
    """The 90 whole files under their repositories' paths (from the questions' metadata)."""
    base = DATA / "anthropic_codebase"
    documents = json.loads((base / "documents.json").read_text(encoding="utf-8"))
    judged = _qrels(base / "qrels" / "test.tsv")
    queries = _jsonl(base / "queries.jsonl")
    path_of: dict[str, str] = {}
    for query in queries:
        meta = query.get("metadata") or {}
        for chunk in judged.get(query["_id"], ()):
            doc = chunk.rsplit("_chunk_", 1)[0]
            if meta.get("relative_path"):
                repo = str(meta.get("repo_name", "repo")).replace("/", "__")
                path_of.setdefault(doc, f"{repo}/{meta['relative_path'].lstrip('/')}")
    for item in documents:
        relative = path_of.get(item["doc_id"], f"other/{item['doc_id']}.txt")
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(item["content"], encoding="utf-8")
    return [
        {
            "style": "question",
            "text": q["text"],
            "gold": sorted(
                {
                    path_of[c.rsplit("_chunk_", 1)[0]]
                    for c in judged[q["_id"]]
                    if c.rsplit("_chunk_", 1)[0] in path_of
                }
            ),
        }
        for q in queries
        if q["_id"] in judged
    ]


def write_click(folder: Path) -> list[Query]:
    """The click repository as it is in ../shared/data/code/click (source, tests, docs, examples)."""
    source = DATA / "code" / "click"
    for path in source.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            target = folder / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    return []


def write_handbook(folder: Path) -> list[Query]:
    """retrievo's example handbook (``examples/handbook``): a person's few policy documents."""
    source = Path(__file__).resolve().parents[1] / "examples" / "handbook"
    for path in source.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    return []


def write_seaborn(folder: Path) -> list[Query]:
    """seaborn as ``swe_loc_dev`` holds it for issue 3010 (the whole tree); its four issues' text as queries,
    gold the files their fixes edit."""
    import tarfile

    with tarfile.open(DATA / "swe_loc_dev" / "trees" / "mwaskom__seaborn-3010.tar.gz") as archive:
        for member in archive.getmembers():
            parts = Path(member.name).parts[1:]
            if member.isfile() and parts and ".git" not in parts:
                target = folder.joinpath(*parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                extracted = archive.extractfile(member)
                assert extracted is not None
                target.write_bytes(extracted.read())
    return [
        {"style": "issue", "text": item["problem_statement"], "gold": list(item["gold_files"])}
        for item in _jsonl(DATA / "swe_loc_dev" / "instances.jsonl")
        if item["repo"] == "mwaskom/seaborn" and all((folder / g).exists() for g in item["gold_files"])
    ]


SETS: dict[str, Callable[[Path], list[Query]]] = {
    "scifact": write_scifact,
    "cosqa": write_cosqa,
    "anthropic": write_anthropic,
    "click": write_click,
    "handbook": write_handbook,
    "seaborn": write_seaborn,
}
DOCUMENT_SETS = {"scifact", "handbook"}  # titles and prose; the others are code
