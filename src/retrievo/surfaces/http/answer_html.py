"""A search answer as the page shows it, rendered here once: the page without its script (a form posted to
``/``) and the page with it (``POST /api/page/results``, a fragment swapped in) get the same HTML.

Everything from the index is escaped before any markup is added; Markdown in a passage reads as Markdown
(a heading, `code`, **strong**, *emphasis*, a link's text), never as its raw marks; the question's words are
marked as ``search.answer.highlight`` finds them (whole words and their inflections, common words left out, never
inside a tag or an entity); code keeps its lines, numbered from the file's. No inline style: the page's Content-Security-Policy forbids it, so a relevance bar's length is
a class (``s0`` … ``s10``).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from retrievo.search.answer.answerability import NO_ANSWER
from retrievo.search.answer.highlight import highlight, word_spans
from retrievo.search.query import COMMON_WORDS, read_query
from retrievo.surfaces.present import band

CODE_LINES = 14
EXCERPT_CHARS = 320
MARK = "\ue000"  # where ``highlight`` marks a word in an excerpt, until it becomes <mark>…</mark>
_MARKUP = re.compile(r"(<[^>]+>|&[#\w]+;)")
_MARKED = re.compile(f"{MARK}(.*?){MARK}", re.DOTALL)
_CODE_SPAN = re.compile(r"(`[^`\n]+`)")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)\s]*\)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+")


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def query_words(query: str) -> list[str]:
    """The question's words worth marking, as ``search.answer.highlight`` reads them (common words left out)."""
    return list(dict.fromkeys(w for w in re.findall(r"[^\W_]+", query.lower()) if w not in COMMON_WORDS))


def marked(fragment: str, words: Sequence[str]) -> str:
    """``fragment`` (escaped HTML) with ``words`` marked where ``search.answer.highlight`` finds them (whole words
    and their inflections), outside tags and entities."""
    out = []
    for is_markup, part in _alternate(_MARKUP.split(fragment)):
        if is_markup:
            out.append(part)
            continue
        cursor = 0
        for start, end in word_spans(part, words):
            out.append(f"{part[cursor:start]}<mark>{part[start:end]}</mark>")
            cursor = end
        out.append(part[cursor:])
    return "".join(out)


def _alternate(parts: list[str]) -> list[tuple[bool, str]]:
    return [(index % 2 == 1, part) for index, part in enumerate(parts)]


def inline_markdown(text: str) -> str:
    """One line of Markdown as escaped HTML: `code`, **strong**, *emphasis*, a link as its text."""
    out = []
    for is_code, piece in _alternate(_CODE_SPAN.split(text)):
        if is_code:
            out.append(f"<code>{esc(piece[1:-1])}</code>")
            continue
        prose = esc(_LINK.sub(lambda m: m.group(1), piece))
        prose = _STRONG.sub(lambda m: f"<strong>{m.group(1) or m.group(2)}</strong>", prose)
        out.append(_EMPHASIS.sub(r"<em>\1</em>", prose))
    return "".join(out)


def excerpt(text: str, query: str) -> str:
    """A window of a prose passage around its first matched word (``search.answer.highlight``, as brief MCP hits),
    its Markdown rendered, the question's words marked."""
    lines = []
    for line in text.replace(MARK, "").splitlines():
        heading = _HEADING.match(line)
        lines.append(heading.group(1) + ":" if heading else _BULLET.sub("• ", line))
    window = highlight(" ".join(lines), read_query(query), width=EXCERPT_CHARS, marker=MARK)
    shown = _MARKED.sub(r"<mark>\1</mark>", inline_markdown(window))
    return f'<p class="excerpt">{shown}</p>'


def code_block(hit: dict[str, Any], query: str) -> str:
    lines = str(hit.get("text") or "").rstrip("\n").split("\n")
    words = query_words(query)
    rows = [
        f'<span class="line"><span class="no">{int(hit["line_start"]) + n}</span>{marked(esc(line), words)}\n</span>'
        for n, line in enumerate(lines[:CODE_LINES])
    ]
    more = (
        f'<span class="more">… {len(lines) - CODE_LINES} more lines</span>' if len(lines) > CODE_LINES else ""
    )
    return f'<pre class="code">{"".join(rows)}{more}</pre>'


def citation(hit: dict[str, Any]) -> str:
    """A hit's path:lines, linked to its view: the path as the answer shows it (below its root)."""
    first, last = hit["line_start"], hit["line_end"]
    lines = str(first) if first == last else f"{first}-{last}"
    named = re.match(r"^retrievo://document/([^/]+)/revision/([^/]+)$", str(hit.get("uri", "")))
    document_id, revision_id = named.groups() if named else ("", "")
    query = urlencode(
        {"document_id": document_id, "revision_id": revision_id, "line_start": first, "line_end": last}
    )
    shown = f"{hit['path']}:{lines}"
    return f'<a class="cite" href="/view?{esc(query)}#hit" title="{esc(hit["path"])}">{esc(shown)}</a>'


def relevance(hit: dict[str, Any]) -> str:
    value = float(hit.get("relevance", 0.0))
    named = band(value)
    share = max(0, min(10, round(value * 10)))
    return (
        f'<span class="relevance band-{named}" title="fused score {float(hit.get("score", 0.0)):.4f}">'
        f'<span class="bar s{share}"></span>{named} · relevance {value:.2f}</span>'
    )


def hit_html(hit: dict[str, Any], query: str, explain: bool) -> str:
    kind = str(hit.get("kind") or "document")
    parts = [f"<h2>{esc(hit.get('title') or hit.get('context') or hit['path'])}</h2>"]
    meta = citation(hit) + relevance(hit)
    if kind not in ("document", "code"):
        meta += f'<span class="kind">{esc(kind)}</span>'
    parts.append(f'<p class="meta">{meta}</p>')
    via = (hit.get("matched_via") or {}).get("path")
    if via:
        parts.append(f'<p class="via">reached by {esc(via)}</p>')
    parts.append(code_block(hit, query) if kind == "code" else excerpt(str(hit.get("text") or ""), query))
    also = hit.get("also") or []
    if also:
        items = "".join(f"<li>{esc(name)}</li>" for name in also)
        parts.append(
            f'<details class="also"><summary>{len(also)} more in this file</summary><ul>{items}</ul></details>'
        )
    if explain and hit.get("explain"):
        rows = "".join(
            f"<dt>{esc(arm)}</dt><dd>rank {esc(v['rank'])}, score {float(v['score']):.4f}</dd>"
            for arm, v in hit["explain"].items()
        )
        parts.append(f'<dl class="explain">{rows}</dl>')
    code = " code-hit" if kind == "code" else ""
    return f'<li class="hit{code}">{"".join(parts)}</li>'


def state_of(answer: dict[str, Any]) -> tuple[str, bool]:
    """The line above the results: how many files, how searched, how long — and what was missing."""
    files = int(answer.get("total_results", 0))
    mode = str(answer.get("search_mode", ""))
    plural = "" if files == 1 else "s"
    text = f"{files} file{plural} (result{plural} by file) · {mode} · {round(float(answer.get('search_duration_ms', 0)))} ms"
    reason = answer.get("degraded_reason")
    partial = mode.endswith("-partial")
    lexical = not partial and (mode == "lexical-only" or bool(reason))
    if lexical:
        text += f" — keywords only: {reason or 'the vector arm is unavailable'}"
    if partial:
        text += f" — partly by meaning: {reason}"
    results = answer.get("results") or []
    answerable = answer.get("answerability")  # the answer's, not its first hit's (issue 66)
    if files and results and (float(answerable) if answerable is not None else 1.0) < NO_ANSWER:
        text += " — no answer: the index probably does not hold one (what is shown is the nearest)"
    elif files and results and float(results[0].get("relevance", 0.0)) < NO_ANSWER:
        text += " — nothing strong: the index likely answers, but no passage reads at least 0.4"
    return text, lexical or partial


def results_html(answer: dict[str, Any], query: str, explain: bool) -> str:
    return "".join(hit_html(hit, query, explain) for hit in answer.get("results") or [])
