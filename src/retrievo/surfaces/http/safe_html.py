"""Rendered document HTML, passed through an allow-list before the page shows it.

Document text is hostile input. The renderers (``document_html``) are already run safely — Markdown without
raw HTML, reStructuredText without ``raw`` or file insertion — and this pass makes the result safe whatever
a renderer lets through: only the tags and attributes below survive, ``href`` only to ``http``, ``https``,
``mailto`` or a ``#fragment``, ids only our own (``hit``, ``doc-…``), no images (nothing remote is fetched),
every tag closed where it was opened. What is dropped keeps its text, except inside ``script``, ``style``
and the like, whose content goes too.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

TAGS = frozenset({
    "a", "abbr", "aside", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd", "del",
    "details", "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6",
    "hr", "i", "ins", "kbd", "li", "mark", "nav", "ol", "p", "pre", "q", "s", "samp", "section", "small",
    "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "tt", "u",
    "ul", "var",
})  # fmt: skip
VOID = frozenset({"br", "col", "hr"})
DROPPED_WITH_CONTENT = frozenset({
    "script", "style", "template", "iframe", "object", "embed", "noscript", "textarea", "title", "svg", "math",
    "select", "head",
})  # fmt: skip
ATTRIBUTES = {
    "*": frozenset({"class", "id", "title"}),
    "a": frozenset({"href"}),
    "ol": frozenset({"start", "reversed"}),
    "td": frozenset({"colspan", "rowspan"}),
    "th": frozenset({"colspan", "rowspan"}),
    "col": frozenset({"span"}),
    "colgroup": frozenset({"span"}),
}
_ID = re.compile(r"^(?:hit|doc-[\w.-]{1,100})$")
_NUMBER = re.compile(r"^\d{1,4}$")
_CLASS = re.compile(r"^[\w -]{0,200}$")
_SAFE_SCHEMES = ("http://", "https://", "mailto:")
_CONTROL = re.compile(r"[\x00-\x20\x7f]+")


def safe_href(url: str) -> str | None:
    """``url`` if a click on it may go there (http, https, mailto, a fragment of this page), else None."""
    bare = _CONTROL.sub("", url).lower()
    if bare.startswith("#") or bare.startswith(_SAFE_SCHEMES):
        return url.strip()
    return None


def _allowed(tag: str, name: str, value: str) -> str | None:
    if name not in ATTRIBUTES["*"] and name not in ATTRIBUTES.get(tag, ()):
        return None
    if name == "href":
        return safe_href(value)
    if name == "id":
        return value if _ID.match(value) else None
    if name == "class":
        return value if _CLASS.match(value) else None
    if name in ("start", "span", "colspan", "rowspan"):
        return value if _NUMBER.match(value) else None
    if name == "reversed":
        return ""
    return value[:500]


class _Sanitiser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []
        self.skipping: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skipping or tag in DROPPED_WITH_CONTENT:
            if tag in DROPPED_WITH_CONTENT:
                self.skipping.append(tag)
            return
        if tag not in TAGS:
            return
        kept = []
        for name, value in attrs:
            shown = _allowed(tag, name, value or "")
            if shown is not None:
                kept.append(f' {name}="{html.escape(shown, quote=True)}"' if shown else f" {name}")
        if tag == "a" and any(part.startswith(" href=") for part in kept):
            kept.append(' rel="nofollow noopener noreferrer"')
        self.out.append(f"<{tag}{''.join(kept)}>")
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in DROPPED_WITH_CONTENT and self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()
        elif tag in TAGS and tag not in VOID and not self.skipping and self.open and self.open[-1] == tag:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.skipping:
            if tag == self.skipping[-1]:
                self.skipping.pop()
            return
        if tag not in self.open:
            return
        while self.open:
            closed = self.open.pop()
            self.out.append(f"</{closed}>")
            if closed == tag:
                break

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.out.append(html.escape(data, quote=False))


def sanitise(markup: str) -> str:
    """``markup`` with only the allowed tags and attributes, every tag it opens closed again."""
    parser = _Sanitiser()
    parser.feed(markup)
    parser.close()
    return "".join(parser.out) + "".join(f"</{tag}>" for tag in reversed(parser.open))
