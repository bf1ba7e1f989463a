"""Corpora for the campaign: real SciFact abstracts when ../shared/data is there, else the handbook."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HANDBOOK = ROOT / "examples" / "handbook"
SCIFACT = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"


def write_corpus(target: Path, documents: int) -> Path:
    """``documents`` SciFact abstracts as Markdown files (read at run time, never copied into the repo)."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(HANDBOOK, target / "handbook", dirs_exist_ok=True)
    if SCIFACT.exists():
        with SCIFACT.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle):
                if number >= documents:
                    break
                row = json.loads(line)
                (target / f"scifact-{row['_id']}.md").write_text(f"# {row['title']}\n\n{row['text']}\n")
    return target
