"""The small, fast subset of the standing hostile campaign (the full one: `python -m benchmarks.reliability.hostile`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_campaign_finds_no_problem(tmp_path: Path) -> None:
    out = tmp_path / "hostile.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.reliability.hostile", "--quick", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert out.exists(), done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["problems"] == [], report["problems"]
    assert done.returncode == 0
    assert report["kill9"]["index_embed"]["matches_reference"]
    assert report["queries"]["unexpected_exceptions"] == 0 and report["queries"]["queries"] == 300
    assert report["files"]["skipped"]["loop-a.md"].startswith("symlink loop")
    assert report["mcp"]["stdio_cases"] > 30 and report["mcp"]["http_raw_cases"] >= 6
