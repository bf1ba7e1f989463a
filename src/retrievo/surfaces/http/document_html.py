"""A cited document as the page's ``/view`` shows it, rendered on the server (with or without the script).

Markdown reads as Markdown (markdown-it-py, CommonMark with tables; raw HTML shown as text), reStructuredText
as reStructuredText (docutils, with ``raw`` and file insertion off and its messages silent; Sphinx's common
roles and directives read as code and notes, not as errors). Images are never fetched: each shows as its alt
text. Every rendered page passes ``safe_html.sanitise``. The cited passage's blocks — the top-level blocks
(paragraphs, headings, lists, code) its lines touch — carry ``class="hit"``, the first ``id="hit"``.

Any other text, and any document asked for ``as=text``, is shown as indexed in a ``<pre>`` with exactly the
cited characters (or lines) in ``<mark id="hit">``: offsets are code points, as Python's strings count them.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath
from typing import Any, Literal

from retrievo.surfaces.http.safe_html import safe_href, sanitise

Format = Literal["markdown", "rst", "text"]
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".ipynb"})  # a notebook is indexed as Markdown
RST_SUFFIXES = frozenset({".rst", ".rest"})
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*(?:\n|\Z)", re.DOTALL)
_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")
_XREF_TARGET = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.DOTALL)
SHOWN_AS = {"markdown": "Markdown", "rst": "reStructuredText", "text": "text"}
# Longer documents are shown as their text: rendering and sanitising take about 10 µs a character for
# Markdown, 30 µs for reST (docutils), measured on a shared 2-core machine — a few seconds at these sizes.
RENDER_LIMIT = {"markdown": 300_000, "rst": 150_000}
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Cited:
    """What the citation names: characters [start, end) of the text, lines first..last (1-based)."""

    start: int
    end: int
    first: int
    last: int


def format_of(path: str) -> Format:
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in RST_SUFFIXES:
        return "rst"
    return "text"


def cited(
    text: str, start: int | None, end: int | None, line_start: int | None, line_end: int | None
) -> Cited:
    """The citation's characters and lines, either given; clamped to the text."""
    if line_start is not None:
        offsets = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        first = min(max(line_start, 1), len(offsets))
        last = min(max(line_end or first, first), len(offsets))
        stop = offsets[last] - 1 if last < len(offsets) else len(text)
        return Cited(offsets[first - 1], max(offsets[first - 1], stop), first, last)
    begin = min(max(start or 0, 0), len(text))
    stop = min(max(end or begin, begin), len(text))
    first = text.count("\n", 0, begin) + 1
    return Cited(begin, stop, first, text.count("\n", 0, max(begin, stop - 1)) + 1)


def document_html(text: str, path: str, cite: Cited, shown: Format) -> str:
    """The document's HTML (sanitised), as ``shown``, with the cited passage marked."""
    body = ""
    try:
        if shown == "markdown":
            body = sanitise(markdown_html(text, cite.first, cite.last))
        elif shown == "rst":
            body = sanitise(rst_html(text, cite.first, cite.last))
    except Exception:  # hostile text can break a renderer (docutils recurses per indent): show it as text
        log.warning("could not render %s as %s; shown as its text", path, shown, exc_info=True)
        shown = "text"
    if shown == "text":
        return (
            '<pre id="doc" class="source" tabindex="0" aria-label="Document text; the cited passage is marked">'
            f'{html.escape(text[: cite.start])}<mark id="hit">{html.escape(text[cite.start : cite.end])}</mark>'
            f"{html.escape(text[cite.end :])}</pre>"
        )
    label = f"The document as {SHOWN_AS[shown]}; the cited passage is marked"
    return f'<article id="doc" class="rendered {shown}" tabindex="0" aria-label="{label}">{body}</article>'


def _overlaps(begin: int, end: int, first: int, last: int) -> bool:
    """Lines begin..end (1-based, inclusive) touch first..last."""
    return begin <= last and end >= first


# Markdown -------------------------------------------------------------------------------------------------


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])

    def image(self: Any, tokens: Sequence[Any], idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        alt = self.renderInlineAsText(token.children or [], options, env).strip() or "image"
        return f'<span class="image" title="image: {html.escape(str(token.attrGet("src") or ""))}">{html.escape(alt)}</span>'

    def link_open(self: Any, tokens: Sequence[Any], idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        target = str(token.attrGet("href") or "")
        if safe_href(target) is None:  # a relative link leads nowhere on this page: its text, its target said
            return f'<a class="inert" title="{html.escape(target)}">'
        return f'<a href="{html.escape(target)}">'

    # Every link parses (its text shown, never its raw marks); link_open keeps only safe targets.
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    md.add_render_rule("image", image)
    md.add_render_rule("link_open", link_open)
    return md


def markdown_html(text: str, first: int, last: int) -> str:
    """Markdown as HTML (raw HTML as text), top-level blocks touching lines first..last marked ``hit``.

    Front matter (``---`` … ``---``) shows as a YAML code block of the same lines, so lines still count."""
    matter = _FRONT_MATTER.match(text)
    if matter:
        fence = "~" * max([3, *(len(run) + 1 for run in re.findall(r"~+", matter.group(1)))])
        text = f"{fence}yaml\n{matter.group(1)}{fence}\n{text[matter.end() :]}"
    md = _markdown()
    tokens = md.parse(text)
    marked = False
    for token in tokens:
        if token.level == 0 and token.nesting >= 0 and token.map:
            begin, end = token.map[0] + 1, max(token.map[0] + 1, token.map[1])
            if _overlaps(begin, end, first, last):
                token.attrJoin("class", "hit")
                if not marked:
                    token.attrSet("id", "hit")
                    marked = True
    return str(md.renderer.render(tokens, md.options, {}))


# reStructuredText -----------------------------------------------------------------------------------------

SETTINGS = {
    "raw_enabled": False, "file_insertion_enabled": False, "report_level": 5, "halt_level": 5,
    "_disable_config": True, "doctitle_xform": False, "sectsubtitle_xform": False, "id_prefix": "doc-",
    "auto_id_prefix": "id", "syntax_highlight": "none", "embed_stylesheet": False, "stylesheet_path": "",
    "initial_header_level": 3, "warning_stream": False, "input_encoding": "unicode", "traceback": True,
    "math_output": "HTML",
}  # fmt: skip
CODE_ROLES = (
    "func", "meth", "class", "mod", "attr", "exc", "data", "obj", "const", "any", "envvar", "option", "program",
    "command", "file", "samp", "kbd", "makevar", "mimetype", "regexp", "py:func", "py:meth", "py:class",
    "py:mod", "py:attr", "py:exc", "py:data", "py:obj", "py:const", "c:func", "c:type", "c:macro", "c:data",
    "c:member", "cpp:func", "cpp:class", "cpp:type", "cpp:member", "js:func", "js:class", "js:data",
)  # fmt: skip
TEXT_ROLES = (
    "ref",
    "doc",
    "term",
    "numref",
    "download",
    "menuselection",
    "guilabel",
    "dfn",
    "keyword",
    "token",
)
NOTES = {
    "versionadded": "New in version", "versionchanged": "Changed in version", "deprecated": "Deprecated since version",
    "versionremoved": "Removed in version", "seealso": "See also", "todo": "To do",
}  # fmt: skip
DESCRIPTIONS = (
    "function", "method", "class", "attribute", "data", "exception", "decorator", "module", "envvar",
    "option", "describe", "object", "py:function", "py:method", "py:class", "py:attribute", "py:data",
    "py:exception", "py:module", "py:decorator", "py:property", "c:function", "c:type", "c:macro",
)  # fmt: skip


def _xref_text(raw: str, function: bool) -> str:
    """How Sphinx shows a cross-reference: ``Title <target>`` as Title, ``~a.b.c`` as c, functions with ()."""
    named = _XREF_TARGET.match(raw)
    if named and named.group(1):
        return named.group(1)
    shown = (named.group(2) if named else raw).lstrip("!")
    if shown.startswith("~"):
        shown = shown[1:].rsplit(".", 1)[-1]
    return shown + "()" if function and not shown.endswith(")") else shown


@cache
def _docutils_ready() -> bool:
    """Sphinx's common roles and directives, known to docutils (once a process: its registry is global)."""
    from docutils import nodes, utils
    from docutils.parsers.rst import Directive, directives, roles
    from docutils.parsers.rst.directives.body import CodeBlock

    class AnyOption(dict[str, Any]):  # Sphinx's options (:noindex:, :linenos:, …) read and ignored
        def __missing__(self, key: str) -> Any:
            return directives.unchanged

        def __bool__(self) -> bool:
            return True

    def code_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None,
                  content: Any = None) -> tuple[list[Any], list[Any]]:  # fmt: skip
        function = name.rsplit(":", 1)[-1] in ("func", "meth", "function", "method")
        return [nodes.literal(rawtext, _xref_text(utils.unescape(text), function), classes=["xref"])], []

    def text_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None,
                  content: Any = None) -> tuple[list[Any], list[Any]]:  # fmt: skip
        return [nodes.inline(rawtext, _xref_text(utils.unescape(text), False), classes=["xref"])], []

    class SphinxCode(CodeBlock):  # code-block / sourcecode: their options (:linenos:, :caption:) ignored
        option_spec = AnyOption(CodeBlock.option_spec)

    class Note(Directive):  # versionadded 1.2 [text], seealso [text]: a titled note
        optional_arguments = 2
        final_argument_whitespace = True
        has_content = True
        option_spec = AnyOption()

        def run(self) -> list[Any]:
            versioned = self.name.startswith(("version", "deprecated"))
            title = " ".join([NOTES[self.name], *self.arguments[:1]] if versioned else [NOTES[self.name]])
            said = " ".join(self.arguments[1:] if versioned else self.arguments)
            note = nodes.admonition(classes=["note", self.name])
            note += nodes.title(title, title)
            if said:
                words, _ = self.state.inline_text(said, self.lineno)
                note += nodes.paragraph(said, "", *words)
            self.state.nested_parse(self.content, self.content_offset, note)
            return [note]

    class Description(Directive):
        optional_arguments = 1
        final_argument_whitespace = True
        has_content = True
        option_spec = AnyOption()

        def run(self) -> list[Any]:
            signature = " ".join(self.arguments)
            described = nodes.container(classes=["description", self.name.rsplit(":", 1)[-1]])
            described += nodes.paragraph("", "", nodes.literal(signature, signature, classes=["signature"]))
            body = nodes.block_quote()
            self.state.nested_parse(self.content, self.content_offset, body)
            if len(body):
                described += body
            return [described]

    for name in CODE_ROLES:
        roles.register_local_role(name, code_role)
    for name in TEXT_ROLES:
        roles.register_local_role(name, text_role)
    for name in ("code-block", "sourcecode"):
        directives.register_directive(name, SphinxCode)
    for name in NOTES:
        directives.register_directive(name, Note)
    for name in DESCRIPTIONS:
        directives.register_directive(name, Description)
    return True


def rst_html(text: str, first: int, last: int) -> str:
    """reStructuredText as HTML, the blocks touching lines first..last marked ``hit``; images as their alt."""
    from docutils import nodes
    from docutils.core import publish_doctree, publish_from_doctree

    _docutils_ready()
    tree = publish_doctree(text, settings_overrides=SETTINGS)
    for image in list(tree.findall(nodes.image)):
        alt = str(image.get("alt") or "image")
        image.replace_self(nodes.inline(alt, alt, classes=["image"], title=f"image: {image.get('uri', '')}"))
    for message in list(tree.findall(nodes.system_message)):
        message.parent.remove(message)
    for problem in list(tree.findall(nodes.problematic)):
        problem.replace_self(nodes.literal(problem.astext(), problem.astext()))
    _mark_rst(tree, text.split("\n"), first, last)
    out = publish_from_doctree(tree, writer="html5", settings_overrides=SETTINGS)
    body = out.decode("utf-8") if isinstance(out, bytes) else str(out)
    found = re.search(r"<main>(.*)</main>", body, re.DOTALL) or re.search(
        r"<body>(.*)</body>", body, re.DOTALL
    )
    return found.group(1) if found else ""


def _mark_rst(tree: Any, lines: list[str], first: int, last: int) -> None:
    """Class ``hit`` on the blocks (a section's children, sections left whole) whose lines touch first..last."""
    from docutils import nodes

    blocks: list[tuple[int, Any]] = []

    def start_of(node: Any) -> int | None:
        for inner in node.findall(nodes.Element):
            if inner.line:
                line = int(inner.line)
                if isinstance(inner, nodes.title):  # a title's line is its underline; an overline before it
                    line -= 1
                    if (
                        line >= 2
                        and lines[line - 2].rstrip() == lines[line].rstrip()
                        and _RST_ADORNMENT.match(lines[line])
                    ):
                        line -= 1
                return line
        return None

    def walk(parent: Any) -> None:
        for child in parent.children:
            if isinstance(child, nodes.section):
                walk(child)
            elif isinstance(child, nodes.Element) and not isinstance(
                child, nodes.target | nodes.comment | nodes.substitution_definition
            ):
                begin = start_of(child)
                blocks.append((begin if begin is not None else (blocks[-1][0] if blocks else 1), child))

    walk(tree)
    marked = False
    for index, (begin, node) in enumerate(blocks):
        end = blocks[index + 1][0] - 1 if index + 1 < len(blocks) else len(lines)
        if _overlaps(begin, max(begin, end), first, last):
            node["classes"].append("hit")
            if not marked:
                node["ids"].insert(0, "hit")
                marked = True
