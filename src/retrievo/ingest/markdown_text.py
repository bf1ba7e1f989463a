"""Markdown structure: ATX headings outside fenced code, and simple YAML front matter."""

from __future__ import annotations

import re
from typing import Any

from retrievo.models import Section

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})")
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)


def markdown_sections(text: str) -> tuple[list[Section], str | None]:
    """Split at headings; each section runs from its heading line to the next heading.

    Returns the sections and the first level-1 heading (the natural title), if any.
    """
    headings: list[tuple[int, int, str]] = []  # (offset, level, title)
    fence: str | None = None
    offset = 0
    front = _FRONT_MATTER.match(text)
    body_start = front.end() if front else 0
    for line in text.splitlines(keepends=True):
        if offset < body_start:
            offset += len(line)
            continue
        stripped = line.rstrip("\n")
        fence_match = _FENCE.match(stripped)
        if fence_match:
            marker = fence_match.group(1)[0]
            if fence is None:
                fence = marker
            elif fence == marker:
                fence = None
        elif fence is None:
            heading = _HEADING.match(stripped)
            if heading:
                headings.append((offset, len(heading.group(1)), heading.group(2).strip()))
        offset += len(line)
    first_h1 = next((title for _, level, title in headings if level == 1), None)
    return sections_of_headings(text, headings, body_start), first_h1


def sections_of_headings(
    text: str, headings: list[tuple[int, int, str]], body_start: int = 0
) -> list[Section]:
    """(offset, level, title) headings in order → sections with heading paths (text before the first too)."""
    sections: list[Section] = []
    if not headings or headings[0][0] > body_start:
        first_end = headings[0][0] if headings else len(text)
        sections.append(Section(body_start, first_end, ()))
    stack: list[tuple[int, str]] = []
    for index, (start, level, title) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = headings[index + 1][0] if index + 1 < len(headings) else len(text)
        sections.append(Section(start, end, tuple(t for _, t in stack)))
    return join_empty_headings(text, sections)


def join_empty_headings(text: str, sections: list[Section]) -> list[Section]:
    """A heading with nothing under it before the next heading opens that next section instead.

    Otherwise "# Response Cookies" alone becomes a chunk (and a search hit) with no evidence in it.
    """
    merged: list[Section] = []
    carry: int | None = None
    for index, section in enumerate(sections):
        start = section.start if carry is None else carry
        first_line_end = text.find("\n", section.start, section.end)
        body = text[first_line_end + 1 : section.end] if first_line_end != -1 else ""
        if section.heading_path and not body.strip() and index + 1 < len(sections):
            carry = start
            continue
        carry = None
        merged.append(
            Section(start, section.end, section.heading_path, section.page, section.context, section.metadata)
        )
    return merged


def parse_front_matter(text: str) -> dict[str, Any]:
    """Read ``key: value`` and ``key: [a, b]`` lines of a leading --- block (no full YAML needed)."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}
    result: dict[str, Any] = {}
    for line in match.group(1).splitlines():
        key, sep, value = line.partition(":")
        if not sep or not key.strip() or key.startswith((" ", "\t")):
            continue
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            items = [item.strip().strip("\"'") for item in value[1:-1].split(",")]
            result[key.strip()] = [item for item in items if item]
        else:
            result[key.strip()] = value.strip("\"'")
    return result
