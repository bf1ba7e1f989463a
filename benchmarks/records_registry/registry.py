"""Registry search (issue 12): a query set over ../shared/data/registry, and latency at 10k servers × 20 tools.

    .venv/bin/python -m benchmarks.records_registry.registry queries   # top-3 hit rate per entity type: seed / hybrid / lexical-only
    .venv/bin/python -m benchmarks.records_registry.registry scale     # p50/p95 of registry search at 10,000 servers with 20 tools each

The queries were written for this benchmark (names, paraphrases of a purpose, tool-level asks) and never
tuned on. Prints JSON; figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from retrievo import Config, Engine
from retrievo.embed.local import MiniLMEmbedder
from retrievo.errors import EmbedderUnavailable

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT.parent / "shared" / "data" / "registry"
# (query, entity type, names any of which counts as a hit)
QUERIES: list[tuple[str, str, set[str]]] = [
    ("context7 docs", "server", {"Context7 MCP Server", "Combined Context7 and CurrentTime Tools"}),
    ("what time is it in Tokyo", "server", {"Current Time API", "Combined Context7 and CurrentTime Tools"}),
    ("Jira and Confluence", "server", {"Atlassian"}),
    ("search Cloudflare documentation", "server", {"Cloudflare Documentation MCP Server"}),
    ("site reliability runbooks and incidents", "server", {"SRE Gateway (Bedrock AgentCore Gateway)"}),
    ("query a MariaDB database", "server", {"io.github.abel9851/mcp-server-mariadb"}),
    ("manage my Todoist tasks", "server", {"io.github.abhiz123/todoist-mcp-server"}),
    ("search Google from my agent", "server", {"io.github.adenot/mcp-google-search"}),
    ("control Blender for 3D modelling", "server", {"io.github.ahujasid/blender-mcp"}),
    ("AWS cost explorer spending report", "server", {"io.github.aarora79/aws-cost-explorer-mcp-server"}),
    ("look things up in Wikidata", "server", {"io.github.zzaebok/mcp-wikidata"}),
    ("simple arithmetic calculator", "server", {"Calculator MCP Server"}),
    ("book a flight", "agent", {"Flight Booking Agent", "Air Ticketing Agent"}),
    ("reserve a hotel room", "agent", {"Hotel Booking Agent"}),
    ("rent a car for my trip", "agent", {"Car Rental Agent"}),
    ("convert dollars to euros", "agent", {"Currency Conversion Agent"}),
    ("review my pull request code", "agent", {"Code Reviewer Agent", "Test Code Reviewer Agent"}),
    ("plan a driving route avoiding traffic", "agent", {"GeoSpatial Route Planner Agent"}),
    ("what should I visit as a tourist", "agent", {"AI Tourist Guide"}),
    ("deploy my service to production", "agent", {"DevOps Deployment Agent"}),
    ("create a Jira issue", "tool", {"jira_create_issue"}),
    ("add a comment to a Jira ticket", "tool", {"jira_add_comment"}),
    ("search Confluence pages", "tool", {"confluence_search"}),
    ("current time in a given timezone", "tool", {"current_time_by_timezone"}),
    ("find the incident playbook", "tool", {"runbooks-api___get_incident_playbook"}),
    ("log work hours on an issue", "tool", {"jira_add_worklog"}),
    ("get a Jira user's profile", "tool", {"jira_get_user_profile"}),
    ("transition an issue to done", "tool", {"jira_transition_issue"}),
]  # fmt: skip


class Breakable(MiniLMEmbedder):
    broken = False

    def embed_batch(self, texts: Any) -> Any:
        if self.broken:
            raise EmbedderUnavailable("benchmark switch: model down")
        return super().embed_batch(texts)

    def embed_query_batch(self, texts: Any) -> Any:
        if self.broken:
            raise EmbedderUnavailable("benchmark switch: model down")
        return super().embed_query_batch(texts)


def queries(scratch: Path) -> dict[str, Any]:
    embedder = Breakable()
    result: dict[str, Any] = {"queries": len(QUERIES)}
    with Engine(Config(db=scratch / "r.db"), embedder=embedder, retry_embedder_after_s=0) as engine:
        engine.registry.add([REGISTRY])
        for label, profile, broken in (("seed profile", "seed", False), ("hybrid profile", "hybrid", False),
                                       ("lexical-only", "seed", True)):  # fmt: skip
            embedder.broken = broken
            hits: dict[str, list[int]] = {"server": [], "agent": [], "tool": []}
            for query, kind, answers in QUERIES:
                found = engine.registry.search(query, limit=3, profile=profile)
                group = {"server": found.servers, "agent": found.agents, "tool": found.tools}[kind]
                hits[kind].append(int(any(h.meta.get("name") in answers for h in group)))
            result[label] = {k: f"{sum(v)}/{len(v)}" for k, v in hits.items()}
            result[label]["all"] = f"{sum(map(sum, hits.values()))}/{len(QUERIES)}"
        embedder.broken = False
    return result


def scale(scratch: Path, servers: int = 10_000, tools: int = 20, db: Path | None = None) -> dict[str, Any]:
    """``db``: keep (or reuse, when it exists) the loaded index, so latency can be re-measured alone."""
    rng = random.Random(0)
    words = ("jira github slack weather calendar invoice database search email storage docker kubernetes "
             "payments translate maps news stocks crypto music video notes tasks files backup monitor").split()  # fmt: skip
    folder = scratch / "servers"
    folder.mkdir()
    reuse = db is not None and db.exists()
    entries = []
    for i in range(servers):
        topic = rng.sample(words, 3)
        entries.append({
            "server_name": f"{topic[0].title()} {topic[1]} server {i}", "path": f"/s{i}",
            "description": f"Works with {topic[0]}, {topic[1]} and {topic[2]} for teams.", "tags": topic,
            "tool_list": [{"name": f"{rng.choice(words)}_{rng.choice(['get', 'list', 'create', 'delete'])}_{t}",
                           "description": f"{rng.choice(['Get', 'List', 'Create', 'Delete'])} {rng.choice(words)} items.",
                           "schema": {"type": "object", "properties": {"id": {"type": "string"}}}}
                          for t in range(tools)],
        })  # fmt: skip
    for begin in range(0, 0 if reuse else servers, 100):
        (folder / f"servers-{begin // 100:04d}.json").write_text(json.dumps(entries[begin : begin + 100]))
    result: dict[str, Any] = {"servers": servers, "tools": servers * tools}
    with Engine(Config(db=db or scratch / "s.db")) as engine:
        if reuse:
            return {**result, **_measure(engine, rng, words)}
        started = time.perf_counter()
        loaded = engine.registry.add([folder], embed=False)
        result["load_s_without_embeddings"] = round(time.perf_counter() - started, 1)
        assert loaded.documents_added == servers * (tools + 1), loaded.skipped[:3]
        # Vectors: the real model would take hours here on 2 cores; low-rank random vectors stand in for the
        # corpus (the query is still embedded by the real model), which is what the latency depends on.
        from benchmarks.common import low_rank

        store = engine._open_store(create=False)
        missing = store.missing_embeddings("registry", "all-MiniLM-L6-v2-int8")
        store.set_collection_model("registry", "all-MiniLM-L6-v2-int8", 384)
        vectors = low_rank(len(missing), 384)
        for begin in range(0, len(missing), 5000):
            store.put_embeddings("all-MiniLM-L6-v2-int8", [k for k, _ in missing[begin : begin + 5000]],
                                 vectors[begin : begin + 5000])  # fmt: skip
        result.update(_measure(engine, rng, words))
    return result


def _measure(engine: Engine, rng: random.Random, words: list[str]) -> dict[str, float]:
    asks = [f"{a} {b}" for a, b in zip(rng.choices(words, k=60), rng.choices(words, k=60), strict=True)]
    started = time.perf_counter()
    engine.registry.search(asks[0])  # warm: model load, ANN graph build or load
    warm = (time.perf_counter() - started) * 1000
    timings = []
    for ask in asks[1:]:
        started = time.perf_counter()
        engine.registry.search(ask)
        timings.append((time.perf_counter() - started) * 1000)
    ordered = sorted(timings)
    return {
        "first_search_ms": round(warm, 1),
        "search_ms_p50": round(statistics.median(ordered), 1),
        "search_ms_p95": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=["queries", "scale"])
    parser.add_argument("--servers", type=int, default=10_000)
    parser.add_argument("--db", type=Path, help="scale: keep the loaded index here (reused when it exists)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        result = (
            queries(Path(scratch))
            if args.what == "queries"
            else scale(Path(scratch), args.servers, db=args.db)
        )
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
