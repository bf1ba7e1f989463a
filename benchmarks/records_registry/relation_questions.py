"""Relationship questions over the shared ArchiMate models: is the element at the other end answered first?

Fifty questions written for this benchmark (never tuned on beyond the verb and type word lists in
``retrievo/search/records/relations.py``), over four models of ../shared/data/archimate — Archisurance as an
exchange file and as Archi's own file, and two arktect-importer test models — covering every relationship
type in both directions and impact questions. Each model is indexed into its own collection with the
bundled model; each question is asked as ``semanticSearch`` asks it (records only, 3 results), with the
relationship re-scorer on ("after") and off ("before": relationship records come back as they are). A question counts at k when one of its gold
elements is among the first k. Printed: top-1 / top-3 per relationship type, and the latency of the
questions (p50 / p95, query embedding included).

    .venv/bin/python -m benchmarks.records_registry.relation_questions [--json benchmarks/results/relation-questions.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.models import Filters, Kind
from retrievo.search.records.elements import element_scores

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "archimate"
MODELS = {
    "archisurance": "opengroup-xmlexchange/archisurance.xml",
    "archi-native": "archi/Archisurance.archimate",
    "aoeff": "arktect-importer/aoeff_3_1.xml",
    "archi-v5": "arktect-importer/archi_v5.archimate",
}
# (model, relationship type asked, question, gold element names)
QUESTIONS: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("archisurance", "realization", "which application component realizes the premium payment service", ("Financial Application",)),
    ("archisurance", "realization", "which process realizes the claims payment service", ("Handle Claim", "Pay")),
    ("archisurance", "realization", "what does the CRM system realize", ("CIS", "Insurance Application Service")),
    ("archisurance", "realization", "which data object realizes the damage claim", ("Damage Claim Data",)),
    ("archisurance", "realization", "which node realizes the claim files service", ("Mainframe",)),
    ("archisurance", "realization", "what is realized by the NAS file server", ("Customer File Service", "File Service")),
    ("archisurance", "realization", "which node provides the database service", ("Mainframe",)),
    ("archisurance", "serving", "which technology service supports the CRM system", ("Claim Files Service",)),
    ("archisurance", "serving", "what does the premium payment service serve", ("Customer", "Pay")),
    ("archisurance", "serving", "which application components use the customer file service", ("Financial Application", "Policy Data Management")),
    ("archisurance", "serving", "what serves the web portal", ("CRM System", "Call center application", "Risk Assessment")),
    ("archisurance", "serving", "who is served by the claim registration service", ("Customer", "Insurant")),
    ("archisurance", "assignment", "who is assigned to handle claims", ("Insurer",)),
    ("archisurance", "assignment", "what is Archisurance assigned to", ("Insurer",)),
    ("archisurance", "assignment", "which actor is assigned to the insurant role", ("Client",)),
    ("archisurance", "assignment", "what processes is the insurer assigned to", ("Create Contract", "Handle Claim")),
    ("archisurance", "triggering", "what is triggered when damage occurs", ("Register",)),
    ("archisurance", "triggering", "what happens after register", ("Accept",)),
    ("archisurance", "triggering", "what triggers the valuate process", ("Accept",)),
    ("archisurance", "triggering", "what comes after inform customer", ("Collect Premium",)),
    ("archisurance", "triggering", "which event triggers formalise request", ("Request for Insurance",)),
    ("archisurance", "flow", "what flows to the financial handling function", ("Asset Management", "Claims Handling", "Customer's Bank")),
    ("archisurance", "flow", "what does claims handling flow to", ("Customer", "Financial Handling", "Maintaining Customer Relations")),
    ("archisurance", "flow", "what receives a flow from back office", ("Document Processing SSC", "Finance", "HRM", "Product Development")),
    ("archisurance", "access", "which processes access the customer file", ("Register", "Accept", "Pay")),
    ("archisurance", "access", "what does the register process access", ("Customer File", "Damage Claim")),
    ("archisurance", "access", "which application component accesses the damage claim data", ("Claim Data Management",)),
    ("archisurance", "access", "which function writes the insurance policy data", ("Create Policy",)),
    ("archisurance", "composition", "what is the customer file composed of", ("Damage Claim", "Insurance Policy", "Insurance Request")),
    ("archisurance", "composition", "what is the insurance policy part of", ("Customer File",)),
    ("archisurance", "composition", "what does Home & Away Policy Administration consist of", ("Customer Data  Access", "Policy Data Management")),
    ("archisurance", "aggregation", "which collaboration aggregates the insurer role", ("Contracting", "Negotiation")),
    ("archisurance", "aggregation", "what does the negotiation collaboration aggregate", ("Customer", "Insurer", "Intermediary")),
    ("archisurance", "specialization", "what specializes the insurance policy", ("Car Insurance Policy", "Home Insurance Policy", "Legal aid  Insurance Policy", "Liability  Insurance Policy", "Travel  Insurance Policy")),
    ("archisurance", "specialization", "what does the car insurance policy specialize", ("Insurance Policy",)),
    ("archisurance", "association", "what is the firewall connected to", ("BIBIT", "LAN")),
    ("archisurance", "association", "which devices are associated with the LAN", ("Admin Server", "BIBIT Server", "NAS File Server")),
    ("archisurance", "impact", "what is affected by the mainframe", ("Database Service", "Claim Files Service", "CRM System", "Policy Data Management")),
    ("archisurance", "impact", "what depends on the customer file service", ("Financial Application", "Policy Data Management")),
    ("archisurance", "impact", "what would be affected if the NAS file server fails", ("Customer File Service", "File Service")),
    ("archisurance", "impact", "what is the impact of changing the policy data management component", ("Claim InfoServ", "Customer data mutation Service", "Home & Away Policy Administration")),
    ("archi-native", "realization", "which application component realizes the premium payment service", ("Financial Application",)),
    ("archi-native", "realization", "which node provides the database service", ("Mainframe",)),
    ("archi-native", "triggering", "what is triggered when damage occurs", ("Register",)),
    ("aoeff", "realization", "which artifact realizes application component A", ("Deploy A",)),
    ("aoeff", "assignment", "which device is assigned to deploy A", ("Device A",)),
    ("aoeff", "influence", "what does the driver influence", ("Goal",)),
    ("aoeff", "composition", "what is node A composed of", ("Device A",)),
    ("aoeff", "realization", "which application functions realize SERV A", ("FUNC A", "FUNC B")),
    ("aoeff", "specialization", "what does business role B specialize", ("Business Role A",)),
    ("archi-v5", "realization", "what realizes the equipment", ("Material",)),
]  # fmt: skip


def _normal(name: str) -> str:
    return " ".join(name.lower().split())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    per_type: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    latencies: list[float] = []
    misses: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        engines = {}
        for name, relative in MODELS.items():
            engine = Engine(Config(db=Path(tmp) / "models.db", collection=name))
            report = engine.index([DATA / relative])
            assert report.chunks_embedded + report.embeddings_reused == report.chunks_written, "all embedded"
            engine.warm_up()
            engines[name] = engine
        for model, kind, question, gold in QUESTIONS:
            engine = engines[model]
            wanted = {_normal(g) for g in gold}
            for label, rescorers in (("after", engine._rescorers), ("before", ())):
                saved = engine._rescorers
                engine._rescorers = rescorers
                started = time.perf_counter()
                result = engine.search(question, limit=3, filters=Filters(kinds=(Kind.RECORD,)), explain=True)
                if label == "after":
                    latencies.append((time.perf_counter() - started) * 1000)
                engine._rescorers = saved
                assert result.search_mode == "hybrid", result.search_mode
                names = [
                    _normal(str(h.chunk.metadata.get("element_name") or h.chunk.title)) for h in result.hits
                ]
                top1, top3 = int(bool(names[:1]) and names[0] in wanted), int(any(n in wanted for n in names))
                per_type[kind][f"{label} top1"].append(top1)
                per_type[kind][f"{label} top3"].append(top3)
                per_type["all"][f"{label} top1"].append(top1)
                per_type["all"][f"{label} top3"].append(top3)
                if label == "after":  # semanticSearch's default min_score (0.5) on its score scale
                    kept = [
                        n for n, score in zip(names, element_scores(result.hits), strict=True) if score >= 0.5
                    ]
                    per_type["all"]["default min_score: empty"].append(int(not kept))
                    per_type["all"]["default min_score: top3"].append(int(any(n in wanted for n in kept)))
                if label == "after" and not top1:
                    misses.append(f"{'top-3' if top3 else 'MISS '} {model}: {question} -> {names}")
        for engine in engines.values():
            engine.close()
    table = {
        kind: {column: f"{sum(v)}/{len(v)}" for column, v in sorted(columns.items())}
        for kind, columns in sorted(per_type.items(), key=lambda item: (item[0] == "all", item[0]))
    }
    ordered = sorted(latencies)
    timing = {
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
    }
    print(f"{'type':<16}{'before top1':>13}{'before top3':>13}{'after top1':>12}{'after top3':>12}")
    for kind, row in table.items():
        print(
            f"{kind:<16}{row['before top1']:>13}{row['before top3']:>13}{row['after top1']:>12}{row['after top3']:>12}"
        )
    every = table["all"]
    print(f"semanticSearch defaults (min_score 0.5 on its score): left empty {every['default min_score: empty']}, "
          f"answer in the top 3 {every['default min_score: top3']}")  # fmt: skip
    print(f"latency (after, query embedding included): p50 {timing['p50_ms']} ms, p95 {timing['p95_ms']} ms")
    print("\n".join(misses))
    if args.json:
        args.json.write_text(json.dumps({"questions": len(QUESTIONS), "table": table, "latency": timing,
                                         "not_first": misses}, indent=1), encoding="utf-8")  # fmt: skip


if __name__ == "__main__":
    main()
