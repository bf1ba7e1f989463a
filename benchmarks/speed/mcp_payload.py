"""What an agent pays before and during its first questions: tools/list and search answers, in bytes.

Drives `retrievo mcp` over stdio with the official MCP client, on an index of 15 Markdown files
(the handbook's and its sections), then on one that also holds code, a typed model and a registry:

- tools/list as it travels (compact JSON of the tools), with the default toolsets and with every one;
- a 3-hit `search` answer's text (what the agent reads), brief (the default) and full, over 5 questions.

    .venv/bin/python -m benchmarks.speed.mcp_payload [--json]
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from retrievo import Config, Engine

HANDBOOK = Path(__file__).resolve().parents[2] / "examples" / "handbook"
QUESTIONS = ["parental leave approval", "home office equipment allowance", "expense receipts travel",
             "lost laptop what to do", "how many days of annual leave"]  # fmt: skip
CODE = '''"""Invoices."""


def total_due(lines: list[float], tax_rate: float) -> float:
    """The amount due for invoice lines with tax."""
    return sum(lines) * (1 + tax_rate)
'''
MODEL = {"name": "Shop", "elements": [
    {"id": "a1", "type": "ApplicationComponent", "name": "Billing System", "layer": "Application"},
    {"id": "s1", "type": "ApplicationService", "name": "Invoice Service", "layer": "Application"}],
    "relationships": [{"id": "r1", "type": "Realization", "source": "a1", "target": "s1"}]}  # fmt: skip
REGISTRY = [{"server_name": "Atlas Tickets", "path": "/tickets", "description": "Issue tracking", "tags": ["jira"],
             "tool_list": [{"name": "create_ticket", "description": "Create a ticket", "schema": {"type": "object"}}]}]  # fmt: skip


def fifteen_markdown_files(folder: Path) -> Path:
    """The handbook's Markdown, and its sections (then paragraphs) as files of their own: 15 files."""
    folder.mkdir(parents=True)
    sections: list[tuple[str, str]] = []
    for source in sorted(HANDBOOK.glob("*.md")):
        shutil.copy(source, folder / source.name)
        for part in source.read_text().split("\n## ")[1:]:
            title, _, body = part.partition("\n")
            sections.append((title, body))
    paragraphs = [(title, p) for title, body in sections for p in body.split("\n\n") if len(p) > 80]
    for n, (title, body) in enumerate((sections + paragraphs)[: 15 - len(list(folder.iterdir()))]):
        (folder / f"section-{n:02d}.md").write_text(f"# {title}\n\n{body.strip()}\n")
    return folder


def every_kind(base: Path) -> list[Path]:
    """Beside the Markdown: a Python file, a JSON-graph model; returns what to index (the registry
    entries are written to base / "entries")."""
    (base / "code").mkdir()
    (base / "code" / "invoices.py").write_text(CODE)
    (base / "shop.json").write_text(json.dumps(MODEL))
    (base / "entries").mkdir()
    (base / "entries" / "servers.json").write_text(json.dumps(REGISTRY))
    return [base / "code", base / "shop.json"]


def compact(data: Any) -> int:
    return len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())


async def measure(db: Path, tools: str, questions: bool) -> dict[str, Any]:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db), "--tools", tools]
    )
    async with Client(server) as client:
        listed = (await client.list_tools()).tools
        out: dict[str, Any] = {
            "tools": sorted(t.name for t in listed),
            "tools_list_bytes": compact(
                [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]
            ),
            "instructions_chars": len(client.instructions or ""),
        }
        if questions:
            for detail in ("brief", "full"):
                sizes = []
                for question in QUESTIONS:
                    answer = await client.call_tool(
                        "search", {"query": question, "limit": 3, "detail": detail}
                    )
                    sizes.append(len(answer.content[0].text.encode()))  # type: ignore[union-attr]
                out[f"search3_{detail}_bytes"] = {"mean": round(statistics.mean(sizes)), "max": max(sizes)}
        return out


def main() -> None:
    base = Path(tempfile.mkdtemp())
    corpus = fifteen_markdown_files(base / "md")
    docs_db, all_db = base / "docs.db", base / "all.db"
    with Engine(Config(db=docs_db)) as engine:
        engine.index([corpus])
    with Engine(Config(db=all_db)) as engine:
        engine.index([corpus, *every_kind(base)])
        engine.registry.add([base / "entries"])
    results = {
        "documents only, default toolsets": anyio.run(measure, docs_db, "auto", True),
        "every kind, default toolsets": anyio.run(measure, all_db, "auto", False),
        "every kind, every toolset": anyio.run(measure, all_db, "all", False),
    }
    if "--json" in sys.argv:
        print(json.dumps(results, indent=2))
        return
    for name, figures in results.items():
        print(f"{name}: tools/list {figures['tools_list_bytes']:,} B for {len(figures['tools'])} tools; "
              f"instructions {figures['instructions_chars']} chars")  # fmt: skip
        for detail in ("brief", "full"):
            if f"search3_{detail}_bytes" in figures:
                sizes = figures[f"search3_{detail}_bytes"]
                print(f"  3-hit search, {detail}: mean {sizes['mean']:,} B, max {sizes['max']:,} B")


if __name__ == "__main__":
    main()
