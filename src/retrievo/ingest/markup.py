"""reStructuredText, AsciiDoc and Jupyter notebooks: titles and heading paths, as Markdown gets them.

reST and AsciiDoc keep their text exactly (offsets are into the file); only the structure is read:
- reST: a section title is a line underlined (and optionally overlined) by one repeated punctuation
  character at least as long as the title; levels follow the order in which adornment styles first
  appear, as docutils assigns them. Directives and everything else stay text.
- AsciiDoc: ``= Title``, ``== Section`` … (outside ``----``/``....`` delimited blocks).
- Notebooks (``.ipynb``): markdown cells as they are, code cells as fenced code, outputs dropped; the
  result is read as Markdown.
"""

from __future__ import annotations

import json
import re

from retrievo.ingest.markdown_text import sections_of_headings
from retrievo.models import Section

_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")
_ADOC_HEADING = re.compile(r"^(={1,6})[ \t]+(\S.*?)\s*$")
_ADOC_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\+{4,}|_{4,}|\*{4,}|/{4,})\s*$")


def _lines(text: str) -> list[tuple[int, str]]:
    offsets, offset = [], 0
    for line in text.splitlines(keepends=True):
        offsets.append((offset, line.rstrip("\n")))
        offset += len(line)
    return offsets


def _sections(text: str, headings: list[tuple[int, int, str]]) -> tuple[list[Section], str | None]:
    """Sections with heading paths, and the title: the first heading of the top level."""
    first = min(headings, key=lambda h: (h[1], h[0]))[2] if headings else None
    return [s for s in sections_of_headings(text, headings) if s.end > s.start], first


def rst_sections(text: str) -> tuple[list[Section], str | None]:
    lines = _lines(text)
    styles: list[tuple[str, bool]] = []
    headings: list[tuple[int, int, str]] = []
    skip_until = -1
    for i in range(1, len(lines)):
        if i <= skip_until:
            continue
        title_offset, title = lines[i - 1]
        under = _RST_ADORNMENT.match(lines[i][1])
        if not under or not title.strip() or title[0].isspace() or _RST_ADORNMENT.match(title):
            continue
        if len(lines[i][1].rstrip()) < len(title.rstrip()):
            continue
        over = i >= 2 and lines[i - 2][1].rstrip() == lines[i][1].rstrip()
        style = (under.group(1), over)
        if style not in styles:
            styles.append(style)
        start = lines[i - 2][0] if over else title_offset
        headings.append((start, styles.index(style) + 1, title.strip()))
        skip_until = i
    return _sections(text, headings)


def adoc_sections(text: str) -> tuple[list[Section], str | None]:
    headings: list[tuple[int, int, str]] = []
    block: str | None = None
    for offset, line in _lines(text):
        delimiter = _ADOC_DELIMITER.match(line)
        if delimiter:
            block = None if block == delimiter.group(1) else (block or delimiter.group(1))
            continue
        heading = _ADOC_HEADING.match(line) if block is None else None
        if heading:
            headings.append((offset, len(heading.group(1)), heading.group(2)))
    return _sections(text, headings)


def notebook_markdown(raw: str) -> str:
    """A notebook as Markdown: markdown cells, code cells fenced with the kernel's language, no outputs.

    Raises ValueError for anything that is not a notebook.
    """
    notebook = json.loads(raw)
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError("no 'cells' list")
    metadata = notebook.get("metadata") or {}
    language = str(((metadata.get("kernelspec") or {}).get("language")) or "python")
    parts = []
    for cell in notebook["cells"]:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        body = "".join(source) if isinstance(source, list) else str(source)
        if not body.strip():
            continue
        if cell.get("cell_type") == "markdown":
            parts.append(body.strip("\n"))
        elif cell.get("cell_type") == "code":
            parts.append(f"```{language}\n{body.strip(chr(10))}\n```")
    return "\n\n".join(parts) + "\n"
