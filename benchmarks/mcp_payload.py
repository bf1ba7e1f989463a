"""Bytes an agent receives from the MCP server: tools/list, and a search per hit (before/after compaction).

"before" is what the SDK's default text form would carry (indented JSON repeating structuredContent);
"after" is what the server sends now (compact text); "brief" is ``detail="brief"``. Each figure is the
whole tool result as JSON (text content + structuredContent), as it travels.

    .venv/bin/python benchmarks/mcp_payload.py [CORPUS]      # default: examples/handbook
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from retrievo import Config, Engine

QUERIES = ["parental leave approval", "home office equipment allowance", "expense receipts travel"]


def _size(structured: dict[str, Any], text: str) -> int:
    return len(
        json.dumps({"content": [{"type": "text", "text": text}], "structuredContent": structured}).encode()
    )


async def measure(db: Path) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "retrievo.surfaces.cli", "mcp", "--db", str(db)]
    )
    async with Client(server) as client:
        tools = await client.list_tools()
        print(
            f"tools/list: {len(json.dumps([t.model_dump(mode='json', exclude_none=True) for t in tools.tools]).encode())} bytes"
        )
        for limit in (3, 10):
            before = after = brief = hits = 0
            for query in QUERIES:
                full = await client.call_tool("search", {"query": query, "limit": limit})
                short = await client.call_tool("search", {"query": query, "limit": limit, "detail": "brief"})
                data = full.structured_content or {}
                hits += len(data.get("results", []))
                before += _size(data, json.dumps(data, indent=2, ensure_ascii=False))
                after += _size(data, full.content[0].text)  # type: ignore[union-attr]
                brief += _size(short.structured_content or {}, short.content[0].text)  # type: ignore[union-attr]
            print(f"search limit {limit}: bytes per hit before {before / hits:.0f}, after {after / hits:.0f}, "
                  f"brief {brief / hits:.0f}")  # fmt: skip


def main() -> None:
    corpus = (
        Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent.parent / "examples" / "handbook"
    )
    db = Path(tempfile.mkdtemp()) / "payload.db"
    with Engine(Config(db=db)) as engine:
        engine.index([corpus])
    anyio.run(measure, db)


if __name__ == "__main__":
    main()
