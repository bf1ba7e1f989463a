"""The filters that decide which commits become (message → files) pairs (``benchmarks/locate/mine.py``):
merges, mass renames, formatting sweeps, bots, vendored code, tests and docs told apart, messages cleaned."""

from __future__ import annotations

import re

MAX_FILES_CHANGED = 10  # all files of the commit, any type
MAX_RENAMES = 2  # more renamed/copied files than this: a mass rename/move
PER_REPO_CAP = 500  # most recent pairs kept per repository
MAX_SCAN = 30000  # commits read per repository at most
MIN_WORDS = 8  # an informative message: this many words ...
MIN_WORDS_WITH_REF = 4  # ... or this many plus an issue/PR reference
MAX_MESSAGE_CHARS = 4000  # longer messages are cut (squash-merge bodies can be very long)
MAX_OTHER_FILES = 20

VENDORED_PARTS = frozenset(
    {
        "_vendor",
        "vendor",
        "vendored",
        "_vendored",
        "third_party",
        "thirdparty",
        "_third_party",
        "extern",
        "externals",
        "_distutils",
        "site-packages",
        "node_modules",
    }
)
DOC_TOP_DIRS = frozenset({"docs", "doc", "docs_src", "documentation"})
TEST_DIR_PARTS = frozenset({"test", "tests", "testing", "unittests", "unit_tests", "t"})

TRAILER_RE = re.compile(
    r"^\s*(signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|suggested-by|"
    r"helped-by|change-id|reviewed-on|cc|pull-request(-sha)?|committed-by|approved-by)\s*:.*$",
    re.IGNORECASE,
)
NOISE_LINE_RE = re.compile(
    r"^\s*(\(cherry picked from commit [0-9a-f]+\)|this reverts commit [0-9a-f]+\.?|"
    r"\[pre-commit\.ci\].*|for more information, see https://pre-commit\.ci|-{3,}|={3,})\s*$",
    re.IGNORECASE,
)
REF_RE = re.compile(
    r"(?:(?<![\w/])#(\d{1,6})\b|\bgh-(\d{1,6})\b|\bissue\s+#?(\d{1,6})\b|"
    r"github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/(\d{1,6}))",
    re.IGNORECASE,
)
WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9_'.-]*")

#: Subject lines of formatting/lint sweeps, version bumps and releases, typo fixes, reverts.
#: Each entry: (name, pattern); a repository can drop patterns by name (``REPO_EXTRAS``).
SWEEP_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "typo",
        r"\b(typos?|spelling|misspell\w*)\b"
        r"|^\s*((fix\w*|remove\w*|strip\w*|clean\w*)\s+)?((up|some|the)\s+)?(trailing\s+)?whitespace\b",
    ),
    ("format_subject", r"^\s*(re)?format(s|ted|ting)?\b"),
    ("code_style", r"\b(code|source)\s+(style|format(ting)?)\b"),
    (
        "format_tool",
        r"\b(apply|applied|run|ran|use|using|with|by|via)\s+(the\s+)?"
        r"(black|isort|ruff|autopep8|yapf|pyupgrade|pre-commit|formatter)\b",
    ),
    ("tool_name", r"\b(isort|pyupgrade|autopep8|yapf|flake8|pre-?commit|ruff)\b"),
    ("black", r"\bblack\b"),
    ("lint", r"\blint(s|ing|er|ers)?\b"),
    ("bump", r"\bbump(s|ed|ing)?\b"),
    (
        "release",
        r"^\s*(\[[^\]]*\]\s*)?releas(e|ing)\s*(v?\d[\w.]*|version\s+\S+|notes\b.*|prep\w*.*)?[.!]?\s*$"
        r"|^\s*(\[[^\]]*\]\s*)?prepar\w*\s+(for\s+)?(the\s+)?(next\s+)?release\b"
        r"|\brelease\s+(notes\s+)?(for\s+)?v?\d+\.\d+|\bv?\d+\.\d+(\.\d+)?\S*\s+release\b",
    ),
    (
        "version",
        r"^\s*v?\d+\.\d+(\.\d+)?\S*\s*$|^\s*version\b|\bversion\s+v?\d+\.\d+"
        r"|\b(set|update|increment|back\s+to|dev)\s+(the\s+)?(package\s+)?version\b",
    ),
    ("changelog", r"^\s*(update\s+|add\s+)?(the\s+)?(changelog|changes|news|history)\b"),
    ("revert", r"^\s*revert\b"),
    ("merge", r"^\s*merge\s+(branch|pull|remote|tag)\b"),
)

BOT_RE = re.compile(r"\[bot\]|^(dependabot|pre-commit-ci|github-actions|renovate)", re.I)

# --------------------------------------------------------------------------------------------
# Path classification
# --------------------------------------------------------------------------------------------


def is_vendored(path: str, extra_prefixes: tuple[str, ...] = ()) -> bool:
    parts = path.split("/")
    if any(p in VENDORED_PARTS for p in parts[:-1]):
        return True
    return any(path.startswith(prefix) for prefix in extra_prefixes)


def is_test(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    if any(p in TEST_DIR_PARTS for p in parts[:-1]):
        return True
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name in {"tests.py", "test.py", "conftest.py"}
    )


def is_doc(path: str) -> bool:
    return path.split("/", 1)[0] in DOC_TOP_DIRS


# --------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------


def clean_message(raw: str) -> str:
    """Subject + body without trailers, cherry-pick notes and bot lines; blank runs squeezed."""
    lines = [
        line.rstrip()
        for line in raw.replace("\r\n", "\n").split("\n")
        if not TRAILER_RE.match(line) and not NOISE_LINE_RE.match(line)
    ]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    text = re.sub(r"^(:[a-z0-9_+-]+:\s*)+", "", text)  # gitmoji shortcodes (":bug: Fix ...")
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[:MAX_MESSAGE_CHARS].rstrip() + " …"
    return text


BACKPORT_PREFIX_RE = re.compile(
    r"^\s*(\[PR\s+#\d+/\w+\s+backport\]\s*)?(\[[\w.\s-]*\]\s*)?(backport\b:?\s*)?", re.I
)


def normalise_subject(subject: str) -> str:
    """Subject without backport prefixes and PR-number suffix: cherry-picks compare equal."""
    subject = BACKPORT_PREFIX_RE.sub("", subject)
    subject = re.sub(r"(\s*\(#\d+\))+\s*$", "", subject)
    return " ".join(subject.lower().split())


def issue_refs(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for m in REF_RE.finditer(text):
        number = next(g for g in m.groups() if g)
        seen.setdefault(number, None)
    return list(seen)


def compile_sweeps(skip: tuple[str, ...] = ()) -> list[tuple[str, re.Pattern[str]]]:
    return [(n, re.compile(p, re.IGNORECASE)) for n, p in SWEEP_PATTERNS if n not in skip]


# --------------------------------------------------------------------------------------------
# Mining one repository
# --------------------------------------------------------------------------------------------


def commit_skip(parents: list[str], author: str, changes: list[tuple[str, ...]]) -> str | None:
    """Why a commit gives no pair whatever its message and files say (None: it may): a merge or a root, a
    bot's, no change, more than ``MAX_FILES_CHANGED`` files, a path git quotes, a mass rename or move."""
    if len(parents) != 1:
        return "root_or_merge"
    if BOT_RE.search(author):
        return "bot_author"
    if not changes:
        return "empty"
    if len(changes) > MAX_FILES_CHANGED:
        return "too_many_files"
    if any(any(ch in p for ch in '"\\') for c in changes for p in c[1:]):
        return "odd_path"
    renames = sum(1 for c in changes if c[0][:1] in "RC")
    if renames > MAX_RENAMES or (renames and renames * 2 >= len(changes)):
        return "mass_rename"
    return None
