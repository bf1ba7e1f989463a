"""Turn a file's bytes into a LoadedDocument, or a reason it was skipped.

Loaders never raise for bad content: binary junk, invalid UTF-8, empty or oversized files, broken
PDFs all come back as ``Skip`` with a reason the index report counts.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
from dataclasses import dataclass, replace
from pathlib import Path

from retrievo.ingest.code import CODE_SUFFIXES, language_of, load_code
from retrievo.ingest.html_text import html_to_document
from retrievo.ingest.markdown_text import markdown_sections, parse_front_matter
from retrievo.ingest.markup import adoc_sections, notebook_markdown, rst_sections
from retrievo.models import LoadedDocument, Section
from retrievo.text.hashing import sha256_text

log = logging.getLogger(__name__)
# pypdf warns about every font it cannot map ("fontTools is required …", hundreds a file). With no
# handler Python prints them all on stderr; they go to logging instead (shown by `retrievo -v`).
logging.getLogger("pypdf").addHandler(logging.NullHandler())

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
TEXT_SUFFIXES = frozenset({".txt", ".text", ".org"})
RST_SUFFIXES = frozenset({".rst", ".rest"})
ADOC_SUFFIXES = frozenset({".adoc", ".asciidoc"})
NOTEBOOK_SUFFIXES = frozenset({".ipynb"})
MARKUP_SUFFIXES = RST_SUFFIXES | ADOC_SUFFIXES | NOTEBOOK_SUFFIXES
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
PDF_SUFFIXES = frozenset({".pdf"})
# A repository's configuration is where many answers are (scripts, engines, CI steps, the licence): read as
# text, each chunk carrying the file's path. Lock files are generated and long: skipped with that reason.
CONFIG_SUFFIXES = frozenset({
    ".json", ".jsonc", ".json5", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".properties", ".mk", ".cmake",
})  # fmt: skip
CONFIG_NAMES = frozenset({
    "license", "licence", "copying", "notice", "authors", "contributors", "codeowners", "maintainers", "owners",
    "makefile", "gnumakefile", "justfile", "rakefile", "vagrantfile", "brewfile", "podfile", "containerfile",
    "dockerfile", "procfile", "gemfile", "pipfile", "go.mod", "go.sum", "go.work", ".gitignore", ".gitattributes",
    ".mailmap", ".editorconfig", ".npmrc", ".nvmrc",
})  # fmt: skip
LOCK_NAMES = frozenset({
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "composer.lock", "cargo.lock",
    "poetry.lock", "pipfile.lock", "gemfile.lock", "uv.lock", "bun.lockb",
})  # fmt: skip
CONFIG_PATH_PARTS = 3
SUPPORTED_SUFFIXES = (
    MARKDOWN_SUFFIXES | TEXT_SUFFIXES | MARKUP_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES | CODE_SUFFIXES
    | CONFIG_SUFFIXES
)  # fmt: skip


@dataclass(frozen=True)
class Skip:
    reason: str


@dataclass(frozen=True)
class Unchanged:
    """The file's text hashes to what is already indexed: there is nothing to parse."""


def load_file(
    path: Path,
    max_bytes: int,
    explicit: bool = False,
    known_hash: str | None = None,
    known_file_hash: str | None = None,
    relative: str | None = None,
) -> LoadedDocument | Skip | Unchanged:
    """Load one file. ``explicit`` files (named on the command line) are read as text if unknown.

    ``relative``: the file's path below the root it was indexed from, what a code or configuration file's
    context names (never the folders above the root: a temporary folder's name is no word of the file's).

    ``known_hash``: the indexed revision's source hash; a file whose text still hashes to it comes back
    as ``Unchanged`` before any parsing (Markdown, text and code, whose loaded text is the file's text).
    ``known_file_hash``: the indexed file's byte hash, for formats whose text is extracted (PDF): the
    same bytes are ``Unchanged`` without parsing them again.
    """
    suffix = path.suffix.lower()
    if path.name.lower() in LOCK_NAMES and not explicit:
        return Skip("lock file: generated, not read (name the file itself to index it)")
    if suffix not in SUPPORTED_SUFFIXES and not is_config(path) and not explicit:
        return Skip(f"unsupported type: {suffix or 'no extension'}")
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return Skip(f"too large: {size} bytes > limit {max_bytes} (raise --max-file-bytes)")
        if size == 0:
            return Skip("empty: file has no content")
        data = path.read_bytes()
    except OSError as exc:
        return Skip(f"unreadable: {exc.strerror or exc}")
    source = str(path)
    if suffix in PDF_SUFFIXES:
        file_hash = hashlib.sha256(data).hexdigest()
        return Unchanged() if file_hash == known_file_hash else load_pdf(source, data, file_hash)
    nul = data.find(b"\x00")
    if nul >= 0:
        # Anywhere in the file, not only the first 8 KB: a NUL never ends up inside a chunk.
        return Skip(f"binary: contains a NUL byte at byte {nul}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Skip(f"undecodable: not valid UTF-8 at byte {exc.start}")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        return Skip("empty: file has only whitespace")
    if known_hash is not None and suffix not in HTML_SUFFIXES and sha256_text(text) == known_hash:
        return Unchanged()
    try:
        return _parse(path, source, text, suffix, relative)
    except RecursionError:
        # A hostile file (JSON, a notebook, HTML nested a thousand levels deep) is one file skipped with its
        # reason, never a run stopped: the parsers recurse, and Python's stack is the bound.
        return Skip(NESTED_TOO_DEEPLY)


NESTED_TOO_DEEPLY = "nested too deeply: more levels than the parser allows; nothing of it was indexed"


def is_config(path: Path) -> bool:
    """A repository's configuration, licence or people file: by name, by suffix, or an extension-less name in
    capitals (``MAINTAINERS``, ``NEWS``, ``VERSION``: a repository's texts by convention). Read as text;
    binary content is still skipped by its NUL bytes."""
    name = path.name.lower()
    if name in CONFIG_NAMES or name in LOCK_NAMES or path.suffix.lower() in CONFIG_SUFFIXES:
        return True
    return not path.suffix and path.name.isupper() and path.name.replace("_", "").isalpha()


def load_config(path: Path, source: str, text: str, relative: str | None = None) -> LoadedDocument:
    """A configuration or licence file as text; its path (the last few parts) is its title and every
    chunk's context, so "which node versions" finds ``package.json`` by what it is as well as what it says."""
    shown = "/".join(
        Path(relative).parts[-CONFIG_PATH_PARTS:] if relative else path.parts[-CONFIG_PATH_PARTS:]
    )
    media = {".json": "application/json", ".yaml": "application/yaml", ".yml": "application/yaml",
             ".toml": "application/toml"}.get(path.suffix.lower(), "text/plain")  # fmt: skip
    return LoadedDocument(
        source=source, text=text, title=shown, media_type=media,
        sections=(Section(0, len(text), context=shown),), metadata={"file_role": "config"},
    )  # fmt: skip


def _parse(path: Path, source: str, text: str, suffix: str, relative: str | None) -> LoadedDocument | Skip:
    if is_config(path) and suffix not in MARKDOWN_SUFFIXES and suffix not in TEXT_SUFFIXES:
        return load_config(path, source, text, relative)
    if suffix in MARKDOWN_SUFFIXES:
        return load_markdown(source, text)
    if suffix in HTML_SUFFIXES:
        return html_to_document(source, text)
    if suffix in MARKUP_SUFFIXES:
        return load_markup(source, text, suffix)
    language = language_of(suffix, text)
    if language is not None:
        return load_code(source, text, language, relative)
    return LoadedDocument(source=source, text=text, title=_title_from_path(path))


def load_markdown(source: str, text: str) -> LoadedDocument:
    metadata = parse_front_matter(text)
    sections, first_heading = markdown_sections(text)
    title = str(metadata.pop("title", "") or first_heading or _title_from_path(Path(source)))
    return LoadedDocument(
        source=source,
        text=text,
        title=title,
        media_type="text/markdown",
        sections=tuple(sections),
        metadata=metadata,
    )


def load_markup(source: str, text: str, suffix: str) -> LoadedDocument | Skip:
    """reST and AsciiDoc with their titles and heading paths; a notebook's cells read as Markdown."""
    if suffix in NOTEBOOK_SUFFIXES:
        try:
            markdown = notebook_markdown(text)
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            return Skip(f"unreadable notebook: {exc}")
        if not markdown.strip():
            return Skip("empty: notebook has no markdown or code")
        loaded = load_markdown(source, markdown)
        return replace(loaded, media_type="application/x-ipynb+json")
    rst = suffix in RST_SUFFIXES
    sections, first_title = rst_sections(text) if rst else adoc_sections(text)
    return LoadedDocument(
        source=source,
        text=text,
        title=first_title or _title_from_path(Path(source)),
        media_type="text/x-rst" if rst else "text/asciidoc",
        sections=tuple(sections),
    )


def load_pdf(source: str, data: bytes, file_hash: str | None = None) -> LoadedDocument | Skip:
    """Text per page; pages become sections so chunks keep their page number."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [(page.extract_text() or "") for page in reader.pages]
        meta_title = reader.metadata.title if reader.metadata else None
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        return Skip(f"unreadable PDF: {type(exc).__name__}: {exc}")
    parts: list[str] = []
    sections: list[Section] = []
    offset = 0
    for number, page_text in enumerate(pages, start=1):
        cleaned = page_text.replace("\r\n", "\n").replace("\x00", "").strip()
        if not cleaned:
            continue
        if parts:
            parts.append("\n\n")
            offset += 2
        sections.append(Section(offset, offset + len(cleaned), (f"page {number}",), page=number))
        parts.append(cleaned)
        offset += len(cleaned)
    text = "".join(parts)
    if not text.strip():
        return Skip("empty: PDF has no extractable text (scanned images are not read)")
    title = str(meta_title or _title_from_path(Path(source)))
    return LoadedDocument(
        source=source,
        text=text,
        title=title,
        media_type="application/pdf",
        sections=tuple(sections),
        metadata={"pages": len(pages), **({"file_sha256": file_hash} if file_hash else {})},
    )


def _title_from_path(path: Path) -> str:
    return re.sub(r"[_-]+", " ", path.stem).strip() or path.name
