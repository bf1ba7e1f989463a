"""What a text says about code (``read_question``): the names it spells as code, the modules and files it
names, its traceback frames (Python's, IPython's, pytest's, Node's), an issue's title line, the messages it
quotes (errors, warnings), the kinds of file a short question asks for. The evidence ``files`` ranks
files by (``locate`` and ``search``'s code questions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from retrievo.search.query import Query, compound_names, query_identifiers

SHORT_WORDS = 30  # a question up to this many words is short (file names count); an issue's text is longer


# a traceback's frame: Python's ``File "x.py", line 3, in f``, IPython's ``x.py in f(self)`` (before 8) and
# ``File ~/x.py:3, in C.f(self)`` (8 on), pytest's ``x.py:3: in f``, Node's ``at C.f (/x/index.js:3:9)``
# (innermost first: ``read_question`` turns each run of them round). ``[ \t]``, not ``\s``: a line's start.
_FRAME = re.compile(
    r'File "([^"]+)", line \d+(?:, in ([\w<>]+))?|^[ \t]*(\S+\.py) in ([\w<>]+)\('
    r"|\bFile ((?:[A-Za-z]:)?[^\s,:]+\.pyx?):\d+(?:, in (?:[\w<>]+\.)*([\w<>]+))?"
    r"|^[ \t]*(\S+\.py):\d+: in ([\w<>]+)"
    r"|^[ \t]*at (?:async )?(?:new )?(?:(?:[\w$<>]+\.)*([\w$<>]+)(?: \[as [\w$]+\])? \()?(?:file://)?"
    r"([^\s()]+\.[cm]?[jt]sx?):\d+(?::\d+)?\)?",
    re.MULTILINE,
)
_FRAME_GROUPS = ((1, 2), (3, 4), (5, 6), (7, 8), (10, 9))  # each alternative's (path, function) groups
_NODE = 10  # the group of a Node frame's path
_DETAILS = re.compile(r"<details>.*?</details>", re.DOTALL | re.IGNORECASE)
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:[./][A-Za-z_]\w*)+(?:\.py)?\b")


_ASKS = {
    "test": re.compile(r"\btest(s|ed|ing)?\b|\btest case|\bunit test", re.IGNORECASE),
    "example": re.compile(r"\bexamples?\b|\bsamples?\b|\bdemos?\b", re.IGNORECASE),
    "changelog": re.compile(r"\bchange ?log|\brelease notes?\b|\bchanges\.rst\b", re.IGNORECASE),
    "docs": re.compile(r"\bdocumentation\b|\bdocs\b|\breadme\b", re.IGNORECASE),
    "benchmark": re.compile(r"\bbench(mark)?(s|ed|ing)?\b", re.IGNORECASE),
    "generated": re.compile(
        r"\bgenerated\b|\bminified\b|\bbundled?\b|\bvendored\b|\.d\.ts\b|\btype (declarations?|definitions?)\b",
        re.IGNORECASE,
    ),
}
# What makes a text read as a question about code (``read_code_question``).
_CODE_SIGNS = re.compile(
    r'File "[^"]+", line \d+|```|`[^`\s]+`|\b\w+(Error|Exception|Warning)\b|Traceback \(most recent'
    r"|\b[a-z]\w*_\w+\(|\b[A-Za-z_]\w*\.[A-Za-z_]\w*\("
)
_CODE_QUESTION = re.compile(
    r"^\s*(where|how|which|what)\b.{0,40}\b(is|are|does|do|did|gets?|handles?|function|class|method|module|"
    r"file|code)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z]{3,}")


@dataclass(frozen=True)
class CodeQuestion:
    """What a text says about code: the names it spells, the modules and frames it names, what it asks for."""

    text: str
    title: str  # an issue's first line when more follows ("Two sections called Symbols in index"), else ""
    identifiers: tuple[str, ...]
    modules: tuple[str, ...]  # dotted names and folder/file names, as written
    frames: tuple[tuple[str, str], ...]  # traceback frames' (file path, function), outermost first
    asked: frozenset[str]  # roles the text asks for (test, changelog, docs): not discounted
    words: frozenset[str]  # the word stems of a short question (file names match them); empty for long text
    messages: tuple[str, ...] = ()  # the words of the messages it quotes (``_said``), at most ``MESSAGES``
    length: int = 0  # its words (of three letters or more)
    # names its adjacent words may spell (``compound_names``: a text of at most 30 words, not only names)
    compounds: tuple[str, ...] = ()

    @property
    def spelled(self) -> set[str]:
        """The names it spells as code (a dotted one's last part) and those its adjacent words spell."""
        return {name.split(".")[-1] for name in self.identifiers} | set(self.compounds)


def read_question(query: Query) -> CodeQuestion:
    """The evidence a query's text offers, whether or not it reads as a code question. A report's folded
    ``<details>`` blocks (the environment: versions of every package installed) are left out, unless one
    holds a traceback."""
    text = _DETAILS.sub(lambda m: m.group(0) if _FRAME.search(m.group(0)) else " ", query.text)
    words = _WORD.findall(text)
    short = frozenset(stem(w.lower()) for w in words if w.lower() not in _COMMON_WORDS)
    return CodeQuestion(
        text=text,
        title=_title(text),
        identifiers=query.identifiers if text == query.text else tuple(query_identifiers(text)),
        modules=tuple(dict.fromkeys(m.group(0) for m in _DOTTED.finditer(text))),
        frames=_frames(text),
        # a short question that says "test" asks for tests; an issue's text says "docs" in passing
        asked=frozenset(
            k for k, pattern in _ASKS.items() if pattern.search(text) and len(words) <= SHORT_WORDS
        ),
        words=short if len(words) <= SHORT_WORDS else frozenset(),
        messages=_said(text),
        length=len(words),
        compounds=query.compounds if text == query.text else tuple(compound_names(text)),
    )


# A message the program printed, as a report quotes it: an error's or a warning's text after its name
# (``KeyError: …``, ``WARNING: …``, a linter's ``F0010: …``) or a file's place (``index.rst:4: …``, not
# pytest's ``x.py:4: in f``, a frame), or a double-quoted run of words that is no path.
_NAMED = r"(?:WARNING|ERROR|CRITICAL|Error|Warning|Exception|[A-Z]\w*(?:Error|Exception|Warning)|[A-Z]\d{4})"
_MESSAGE_LINE = re.compile(
    rf"\b{_NAMED}[ \t]*:[ \t]*([^\n]+)$"
    rf"|^\S+\.\w+:\d+:(?:\d+:)?[ \t]*(?!in [\w<>.]+[ \t]*$)(?:{_NAMED}[ \t]*:[ \t]*)?([A-Za-z][^\n]+)$",
    re.MULTILINE,
)
_QUOTED = re.compile(r'"([^"\n/\\]{12,200})"|“([^”\n/\\]{12,200})”')
_MESSAGE_WORD = re.compile(r"[A-Za-z](?:[A-Za-z']*[A-Za-z])?")
MESSAGES = 8  # messages read of one text
MESSAGE_WORDS = 12  # words read of one message


def _said(text: str) -> tuple[str, ...]:
    """The messages ``text`` quotes, each as its first ``MESSAGE_WORDS`` words (three at least): the lines
    naming an error or a place first, then the quoted runs."""
    found = [m.group(1) or m.group(2) for m in _MESSAGE_LINE.finditer(text)]
    found += [m.group(1) or m.group(2) for m in _QUOTED.finditer(text)]
    runs = (_MESSAGE_WORD.findall(message)[:MESSAGE_WORDS] for message in found)
    return tuple(dict.fromkeys(" ".join(run) for run in runs if len(run) >= 3))[:MESSAGES]


# a report template's heading is no title ("### Bug description"), nor is a traceback's first line
_NO_TITLE = re.compile(
    r"^[#*\s]*(describe the bug|bug( description| report)?|description|summary|steps to reproduce|to reproduce"
    r"|(expected|current|actual) behaviou?r|what happened\??|environment|problem)[\s:*]*$"
    r"|^Traceback \(most recent|^File \"",
    re.IGNORECASE,
)


def _title(text: str) -> str:
    """An issue's first line when more follows and it reads as a title (short, not a template's heading)."""
    lines = [line.strip() for line in text.strip().splitlines()]
    first = lines[0] if len(lines) > 1 else ""
    return "" if _NO_TITLE.search(first) or len(_WORD.findall(first)) > SHORT_WORDS else first


def reads_as_code_question(text: str) -> bool:
    """A traceback (any form ``_FRAME`` reads), code, an error's name, a call, "where is / how does / which
    function …", or an issue's text (more than ``SHORT_WORDS`` words: over a collection holding code, a
    pasted report asks for code even when it quotes none — "two sections called Symbols in the index")."""
    return bool(
        _CODE_SIGNS.search(text)
        or _CODE_QUESTION.search(text)
        or _FRAME.search(text)
        or len(_WORD.findall(text)) > SHORT_WORDS
    )


def reads_as_headline(text: str) -> bool:
    """A "how …" headline, not a question put to a passage: "how the router matches path segments", "how
    middleware chains context between procedures" (how, then what it is about, no auxiliary verb) reads as a
    topic — the mechanism, across a file or two — where "how does the router match …?", "how do I …", "how to
    …" ask for a passage. One line of at most ``SHORT_WORDS`` words, no traceback."""
    return (
        bool(_HEADLINE.match(text)) and "\n" not in text.strip() and len(_WORD.findall(text)) <= SHORT_WORDS
    )


_HEADLINE = re.compile(
    r"^\W*how\s+(?!(?:does|do|did|is|are|was|were|can|could|should|would|will|to|much|many|long|often)\b)"
    r"\w+\W+\w+",
    re.IGNORECASE,
)


_COMMON_WORDS = frozenset(
    {"where", "what", "which", "how", "the", "are", "does", "is", "and", "for", "with", "code", "function",
     "class", "method", "file", "module", "handled", "defined", "implemented", "done", "when", "that"}
)  # fmt: skip


def stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "er", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _frames(text: str) -> tuple[tuple[str, str], ...]:
    """The traceback frames of ``text``, outermost first: Node prints its innermost first, so each run of
    Node frames is turned round."""
    frames: list[tuple[str, str]] = []
    node: list[tuple[str, str]] = []
    for found in _FRAME.finditer(text):
        if found.group(_NODE):
            node.append(_frame(found))
            continue
        frames += reversed(node)
        node = []
        frames.append(_frame(found))
    return (*frames, *reversed(node))


def _frame(found: re.Match[str]) -> tuple[str, str]:
    """A ``_FRAME`` match's (path, function): the alternative that matched fills one pair of groups."""
    path, function = next((p, f) for p, f in _FRAME_GROUPS if found.group(p))
    return found.group(path), found.group(function) or ""
