"""HTML to text with headings kept: the document text is the visible text, headings as sections."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from retrievo.models import LoadedDocument, Section

_BLOCK_TAGS = frozenset(
    {
        "p", "div", "section", "article", "header", "footer", "main", "nav", "aside", "li", "ul", "ol",
        "table", "tr", "br", "hr", "pre", "blockquote", "dd", "dt", "dl", "figure", "figcaption",
        "h1", "h2", "h3", "h4", "h5", "h6",
    }
)  # fmt: skip
_SKIPPED_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "head"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.length = 0
        self.skip_depth = 0
        self.pending_space = False
        self.title = ""
        self.in_title = False
        self.heading: tuple[int, int] | None = None  # (level, offset where it began)
        self.headings: list[tuple[int, int, str]] = []  # (offset, level, text)

    def _emit(self, text: str) -> None:
        if text.startswith("\n"):
            self.pending_space = False
        self.parts.append(text)
        self.length += len(text)

    def _break(self) -> None:
        if self.parts and not "".join(self.parts[-2:]).endswith("\n\n"):
            self._emit("\n\n" if not self.parts[-1].endswith("\n") else "\n")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        if tag in _SKIPPED_TAGS:
            self.skip_depth += 1
            return
        if tag in _BLOCK_TAGS:
            self._break()
        if tag in _HEADINGS and self.skip_depth == 0:
            self.heading = (_HEADINGS[tag], self.length)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in _SKIPPED_TAGS:
            self.skip_depth = max(0, self.skip_depth - 1)
            return
        if tag in _HEADINGS and self.heading is not None:
            level, start = self.heading
            text = " ".join("".join(self.parts)[start:].split())
            if text:
                self.headings.append((start, level, text))
            self.heading = None
        if tag in _BLOCK_TAGS:
            self._break()

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
        if self.skip_depth:
            return
        collapsed = " ".join(data.split())
        if not collapsed:
            self.pending_space = self.pending_space or bool(data)
            return
        needs_space = self.pending_space or data[:1].isspace()
        if needs_space and self.parts and not self.parts[-1].endswith(("\n", " ")):
            collapsed = " " + collapsed
        self._emit(collapsed)
        self.pending_space = data[-1:].isspace()


def html_to_document(source: str, html: str) -> LoadedDocument:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    sections: list[Section] = []
    first = parser.headings[0][0] if parser.headings else len(text)
    if first > 0:
        sections.append(Section(0, first, ()))
    stack: list[tuple[int, str]] = []
    for index, (start, level, title) in enumerate(parser.headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = parser.headings[index + 1][0] if index + 1 < len(parser.headings) else len(text)
        sections.append(Section(start, end, tuple(t for _, t in stack)))
    h1 = next((t for _, level, t in parser.headings if level == 1), None)
    title = " ".join(parser.title.split()) or h1 or Path(source).stem
    return LoadedDocument(
        source=source, text=text, title=title, media_type="text/html", sections=tuple(sections)
    )
