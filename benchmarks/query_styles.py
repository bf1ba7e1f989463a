"""The query-style battery (issue 55): every style of query an agent sends, over every corpus at hand.

Each set is written as files (one document or snippet per file, the way a person's folder holds them) and
indexed by ``retrievo index`` into its own SQLite file; the queries are generated from the files without
hand labels, the gold being the file a query was taken from:

- ``word``: one word of the title (or, for code, of an identifier) that no other title has, the rarest in
  the set; ``two``: two such words; ``title``: the title (first heading) verbatim;
- ``phrase``: five consecutive words from the body; ``quoted``: the same in double quotes;
- ``identifier``: a name a file alone defines (``exportSvg``, ``export_svg``); ``split``: its words
  (``export svg``); ``dotted``: ``Class.method`` (Python);
- ``question``: the set's own judged questions (SciFact claims, the Anthropic set's questions, CoSQA's
  queries), gold = the files of their judged passages.

For every query the keyword and dense arms' top 100 (chunk ids and raw scores) and the texts of those
chunks are cached (``--work``), so fusions and re-scorers are scored offline with retrievo's own functions;
``engine`` is what ``Engine.search`` answers with every default (re-scorers included). hit@1 / hit@10 by
file.

    .venv/bin/python -m benchmarks.query_styles build --work /tmp/qs            # files, indexes, arms
    .venv/bin/python -m benchmarks.query_styles rerun --work /tmp/qs            # the engine's answers again
    .venv/bin/python -m benchmarks.query_styles foreign --work /tmp/qs          # unanswerable queries per style
    .venv/bin/python -m benchmarks.query_styles report --work /tmp/qs --json benchmarks/results/query-styles-DATE.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.query_sets import DOCUMENT_SETS, SETS

PER_STYLE = 80
SEED = 55
STOP = frozenset(
    "a an and are as at be but by for from has have how i if in into is it its of on or so such that the their "
    "then there these they this to was we were what when where which while who why will with you your not no "
    "can do does using use used based self none true false return def class import".split()
)
WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")
DEFINES = re.compile(
    r"^\s*(?:async\s+)?(?:def|class|function|fn|func|struct|interface|type)\s+([A-Za-z_]\w+)", re.M
)

Query = dict[str, Any]


def words_of(text: str) -> list[str]:
    parts: list[str] = []
    for token in WORD.findall(text):
        for piece in re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", token).replace("_", " ").split():
            parts.append(piece.lower())
    return parts


def split_identifier(name: str) -> str:
    """An identifier's words as retrievo's keyword arm splits it (``BytesIOCopy``: "bytes io copy")."""
    from retrievo.text.identifiers import split_identifier as parts

    return " ".join(parts(name))


# ---- queries generated from the files ------------------------------------------------------------------


def generated(folder: Path, prose: bool, rng: random.Random) -> list[Query]:
    """Queries from the files. Rarity and uniqueness are judged on the words as the keyword arm indexes
    them (stemmed: "chains" is as common as "chain"), so a query's gold is the one file that holds it."""
    from retrievo.search.code.role import role
    from retrievo.store.tokenizer import keyword_source, shared_tokenizer

    tokenizer = shared_tokenizer()
    files = {
        str(p.relative_to(folder)): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(folder.rglob("*"))
        if p.is_file()
        and p.suffix
        in {".md", ".py", ".rs", ".ts", ".js", ".go", ".java", ".rst", ".txt", ".c", ".cpp", ".cs"}
    }
    stems = {name: tokenizer.tokens(" ".join(words_of(text))) for name, text in files.items()}
    # A word is asked only as the index holds it: "btree" split from "BTreeSet", a hash's tail or "mark1"
    # inside "mark12" are no words of the file to the keyword arm (nor to a person reading it).
    indexed = {name: set(tokenizer.tokens(keyword_source("", text))) for name, text in files.items()}
    frequency = Counter(w for terms in stems.values() for w in set(terms))
    flat = {name: " " + " ".join(terms) + " " for name, terms in stems.items()}
    titles = {
        name: (text.split("\n", 1)[0].lstrip("# ").strip() if prose else "") for name, text in files.items()
    }
    title_frequency = Counter(w for t in titles.values() for w in set(tokenizer.tokens(t)))
    defined: dict[str, list[str]] = defaultdict(list)
    for name, text in files.items():
        for identifier in set(DEFINES.findall(text)):
            defined[identifier].append(name)

    def stem(word: str) -> str:
        found = tokenizer.tokens(word)
        return found[0] if found else word

    queries: dict[str, list[Query]] = defaultdict(list)
    for name, text in files.items():
        if prose:
            pool = [
                w
                for w in set(words_of(titles[name]))
                if w not in STOP
                and len(w) >= 4
                and title_frequency[stem(w)] == 1
                and stem(w) in indexed[name]
            ]
        else:
            pool = [
                w
                for w in set(words_of(text))
                if w not in STOP and len(w) >= 5 and frequency[stem(w)] == 1 and stem(w) in indexed[name]
            ]
        pool.sort(key=lambda w: (frequency[stem(w)], w))
        if pool:
            queries["word"].append({"text": pool[0], "gold": [name]})
        if len(pool) >= 2:
            queries["two"].append({"text": f"{pool[0]} {pool[1]}", "gold": [name]})
        if prose and len(titles[name].split()) >= 3:
            queries["title"].append({"text": titles[name], "gold": [name]})
        body = text.split("\n", 1)[1] if prose and "\n" in text else text
        lines = [line.split() for line in body.splitlines() if len(line.split()) >= 5]
        for _ in range(8 if lines else 0):  # a run of five words no other file holds
            line = rng.choice(lines)
            start = rng.randrange(0, len(line) - 4)
            phrase = " ".join(t.strip(".,;:()[]{}\"'`") for t in line[start : start + 5]).strip()
            if len(words_of(phrase)) >= 3 and _only_in(
                " ".join(tokenizer.tokens(" ".join(words_of(phrase)))), name, flat
            ):
                queries["phrase"].append({"text": phrase, "gold": [name]})
                queries["quoted"].append({"text": f'"{phrase}"', "gold": [name]})
                break
        if not prose:
            own = sorted(
                i
                for i in set(DEFINES.findall(text))
                if len(defined[i]) == 1 and len(split_identifier(i).split()) >= 2
            )
            if own:
                identifier = rng.choice(own)
                queries["identifier"].append({"text": identifier, "gold": [name]})
                queries["split"].append({"text": split_identifier(identifier), "gold": [name]})
            if own and role(name) == "source":
                # where / how questions about code that does the work (a name a test, an example or a docs
                # page defines is not what they ask for), their own draw: the other styles' queries stay
                asked = random.Random(f"{SEED}-{name}").choice(own)
                queries["where"].append(
                    {"text": f"where is {split_identifier(asked)} defined", "gold": [name]}
                )
                queries["how"].append({"text": f"how does {split_identifier(asked)} work", "gold": [name]})
            if name.endswith(".py"):
                pairs = _class_methods(text)
                if pairs:
                    queries["dotted"].append({"text": rng.choice(pairs), "gold": [name]})
    out: list[Query] = []
    for style, items in queries.items():
        (random.Random(f"{SEED}-{style}") if style in ("where", "how") else rng).shuffle(items)
        out += [{"style": style, **item} for item in items[:PER_STYLE]]
    return out


def _only_in(words: str, name: str, flat: dict[str, str]) -> bool:
    return not any(f" {words} " in text for other, text in flat.items() if other != name)


def _class_methods(text: str) -> list[str]:
    pairs, current = [], None
    for line in text.splitlines():
        if match := re.match(r"class\s+([A-Za-z_]\w*)", line):
            current = match.group(1)
        elif current and (match := re.match(r"\s+(?:async\s+)?def\s+([a-z]\w*)", line)):
            if not match.group(1).startswith("__"):
                pairs.append(f"{current}.{match.group(1)}")
        elif line and not line[0].isspace():
            current = None
    return pairs


# ---- build: files, index, arms -------------------------------------------------------------------------


def build(work: Path, names: Iterable[str]) -> None:
    """Files, index and queries of each set; a set built before gains only the queries it lacks (a new
    style), the others kept as they are, and loses those no longer drawn."""
    from retrievo.config import Config
    from retrievo.engine import Engine
    from retrievo.models import Filters

    for name in names:
        folder, db, cache = work / name / "files", work / name / "index.db", work / f"{name}.json"
        folder.mkdir(parents=True, exist_ok=True)
        questions = SETS[name](folder)
        rng = random.Random(f"{SEED}-{name}")
        questions = sorted(questions, key=lambda q: q["text"])
        rng.shuffle(questions)
        queries = generated(folder, name in DOCUMENT_SETS, rng) + questions[:150]
        prefix = str(folder.resolve()) + "/"
        data: dict[str, Any] = (
            json.loads(cache.read_text(encoding="utf-8"))
            if cache.exists()
            else {"queries": [], "texts": {}, "contexts": {}, "paths": {}, "engine_prefix": prefix}
        )
        wanted = {(q["style"], q["text"]) for q in queries}
        kept = [q for q in data["queries"] if (q["style"], q["text"]) in wanted]  # no longer drawn: dropped
        have = {(q["style"], q["text"]) for q in kept}
        new = [q for q in queries if (q["style"], q["text"]) not in have]
        if not new and len(kept) == len(data["queries"]):
            continue
        data["queries"] = kept
        engine = Engine(Config(db=db, collection=name))
        started = time.perf_counter()
        report = engine.index([folder])
        print(f"{name}: indexed {report.chunks_written} chunks in {time.perf_counter() - started:.0f} s")
        store = engine._open_store(create=False)
        embedder = engine.embedder
        assert embedder is not None
        for query in new:
            vector = embedder.embed_query(query["text"])
            query["keyword"] = [
                [h.chunk_id, h.score] for h in store.keyword_search(name, query["text"], Filters(), 100)
            ]
            query["semantic"] = [
                [h.chunk_id, h.score]
                for h in store.vector_search(name, embedder.model_id, vector, Filters(), 100)
            ]
            answer = engine.search(query["text"], collection=name, limit=10)
            query["engine"] = [h.chunk.path for h in answer.hits]
            query["engine_relevance"] = [h.relevance for h in answer.hits]
            missing = sorted({str(c) for c, _ in query["keyword"] + query["semantic"]} - set(data["texts"]))
            for chunk_id, chunk in store.get_chunks([int(c) for c in missing]).items():
                data["texts"][str(chunk_id)] = chunk.text
                data["contexts"][str(chunk_id)] = chunk.context
                data["paths"][str(chunk_id)] = chunk.path.removeprefix(prefix)
        engine.close()
        data["queries"] += new
        cache.write_text(json.dumps(data), encoding="utf-8")
        print(f"{name}: {len(new)} queries added, {len(data['queries'])} cached")


def rerun(work: Path, names: Iterable[str]) -> None:
    """The engine's answers again (after a ranking change), over the indexes and queries already built."""
    from retrievo.config import Config
    from retrievo.engine import Engine

    for name in names:
        cache = work / f"{name}.json"
        data = json.loads(cache.read_text(encoding="utf-8"))
        engine = Engine(Config(db=work / name / "index.db", collection=name))
        for query in data["queries"]:
            answer = engine.search(query["text"], collection=name, limit=10)
            query["engine"] = [h.chunk.path for h in answer.hits]
            query["engine_relevance"] = [h.relevance for h in answer.hits]
        engine.close()
        cache.write_text(json.dumps(data), encoding="utf-8")
        print(f"{name}: {len(data['queries'])} queries searched again")


def foreign(work: Path, names: Iterable[str], per_style: int = 40) -> None:
    """Unanswerable queries of every style: the other sets' ``word``, ``two``, ``phrase`` and ``quoted``
    queries whose words no chunk of this set holds together (``Store.chunks_holding``), and strings of
    random letters; each answer's first relevance is kept (refused: below ``--min-score 0.4``)."""
    from retrievo.config import Config
    from retrievo.engine import Engine
    from retrievo.models import Filters
    from retrievo.store.fts_query import query_terms

    data = load(work)
    rng = random.Random(SEED)
    for name in names:
        engine = Engine(Config(db=work / name / "index.db", collection=name))
        store = engine._open_store(create=False)
        rows = []
        for style in ("word", "two", "phrase", "quoted"):
            pool = [
                q["text"]
                for other, d in data.items()
                if other != name
                for q in d["queries"]
                if q["style"] == style
            ]
            rng.shuffle(pool)
            taken = 0
            for text in pool:
                if taken >= per_style:
                    break
                if store.chunks_holding(name, query_terms(text.strip('"')), Filters(), 1):
                    continue  # this set holds those words: not unanswerable
                answer = engine.search(text, collection=name, limit=10)
                rows.append(
                    {"style": style, "text": text, "first": answer.hits[0].relevance if answer.hits else 0.0}
                )
                taken += 1
        for _ in range(per_style):
            text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(5, 12)))
            answer = engine.search(text, collection=name, limit=10)
            rows.append(
                {"style": "random", "text": text, "first": answer.hits[0].relevance if answer.hits else 0.0}
            )
        engine.close()
        (work / f"foreign-{name}.jsonl").write_text(
            "\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8"
        )
        print(f"{name}: {len(rows)} unanswerable queries")


def answerability_table(work: Path, at: float = 0.4) -> dict[str, dict[str, float]]:
    """Per set and style: answerable queries whose first hit keeps ``at`` (``kept``), unanswerable ones with
    nothing at ``at`` (``refused``)."""
    out: dict[str, dict[str, float]] = {}
    for name, data in load(work).items():
        kept: dict[str, list[bool]] = defaultdict(list)
        for q in data["queries"]:
            kept[q["style"]].append(bool(q["engine_relevance"]) and q["engine_relevance"][0] >= at)
        for style, values in kept.items():
            out.setdefault(f"{name}/{style}", {})["kept"] = round(sum(values) / len(values), 3)
        path = work / f"foreign-{name}.jsonl"
        if path.exists():
            refused: dict[str, list[bool]] = defaultdict(list)
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                refused[row["style"]].append(row["first"] < at)
            for style, values in refused.items():
                out.setdefault(f"{name}/{style}", {})["refused"] = round(sum(values) / len(values), 3)
                out[f"{name}/{style}"]["unanswerable"] = len(values)
    return out


# ---- report --------------------------------------------------------------------------------------------


def load(work: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(work.glob("*.json"))}


def files_in_order(chunk_ids: Iterable[int], paths: dict[str, str]) -> list[str]:
    seen: list[str] = []
    for chunk_id in chunk_ids:
        path = paths.get(str(chunk_id))
        if path is not None and path not in seen:
            seen.append(path)
    return seen


def hits(ranked: list[str], gold: list[str]) -> tuple[float, float]:
    return float(bool(ranked[:1]) and ranked[0] in gold), float(any(f in gold for f in ranked[:10]))


def modes(data: dict[str, Any], query: Query) -> dict[str, list[str]]:
    """The files each mode ranks for ``query``: the arms alone, the engine's answer, offline fusions."""
    from benchmarks.quality.fusion_adaptive import arms_of
    from retrievo.search import fusion as f

    paths = data["paths"]
    arms = arms_of(query, 100)
    prefix = data["engine_prefix"]
    return {
        "keyword": files_in_order((h.chunk_id for h in arms["keyword"]), paths),
        "semantic": files_in_order((h.chunk_id for h in arms["semantic"]), paths),
        "engine": [p.removeprefix(prefix) for p in query["engine"]],
        "adaptive": files_in_order((c for c, _ in f.adaptive_fusion(arms)[0]), paths),
        "rrf": files_in_order((c for c, _ in f.rrf(arms)), paths),
    }


def report(work: Path) -> dict[str, Any]:
    table: dict[str, dict[str, dict[str, list[float]]]] = {}
    for name, data in load(work).items():
        for query in data["queries"]:
            ranked = modes(data, query)
            row = table.setdefault(f"{name}/{query['style']}", {})
            for mode, files in ranked.items():
                row.setdefault(mode, []).append(hits(files, query["gold"])[0])
                row.setdefault(mode + "@10", []).append(hits(files, query["gold"])[1])
    return {
        key: {mode: round(sum(v) / len(v), 3) for mode, v in row.items()}
        | {"n": len(next(iter(row.values())))}
        for key, row in table.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["build", "rerun", "foreign", "report"])
    parser.add_argument("--work", type=Path, default=Path("/tmp/qs"))
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.action == "build":
        build(args.work, args.sets.split(","))
        return
    if args.action == "rerun":
        rerun(args.work, args.sets.split(","))
        return
    if args.action == "foreign":
        foreign(args.work, args.sets.split(","))
        return
    result = report(args.work)
    modes_shown = ["keyword", "semantic", "engine", "adaptive", "rrf"]
    print(f"{'set/style':24} {'n':>4} " + " ".join(f"{m[:8]:>13}" for m in modes_shown))
    for key, row in result.items():
        print(
            f"{key:24} {row['n']:4} "
            + " ".join(f"{row[m]:.2f}/{row[m + '@10']:.2f}".rjust(13) for m in modes_shown)
        )
    answerable = answerability_table(args.work)
    print("first hit kept at 0.4 (answerable) / refused (unanswerable: other sets' queries, random strings)")
    for key, row in answerable.items():
        print(f"{key:24} {row}")
    if args.json:
        written = {"date": time.strftime("%Y-%m-%d"), "rows": result, "answerability": answerable}
        args.json.write_text(json.dumps(written, indent=1) + "\n")


if __name__ == "__main__":
    main()
