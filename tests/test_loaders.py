"""Loaders read Markdown, text, HTML and PDF, and turn bad files into counted, reasoned skips."""

from __future__ import annotations

from pathlib import Path

from pdf_maker import write_pdf
from retrievo.ingest.chunkers import chunk_document
from retrievo.ingest.loaders import Skip, load_file
from retrievo.models import LoadedDocument

LIMIT = 1_000_000


def test_markdown_keeps_headings_front_matter_title_and_tags(tmp_path: Path) -> None:
    path = tmp_path / "note.md"
    path.write_text("---\ntitle: My Note\ntags: [a, b]\n---\n# Heading\n\nBody text.\n")
    doc = load_file(path, LIMIT)
    assert isinstance(doc, LoadedDocument)
    assert doc.title == "My Note" and doc.metadata == {"tags": ["a", "b"]}
    assert doc.sections[0].heading_path == ("Heading",)


def test_html_keeps_visible_text_and_headings_but_not_scripts(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_text(
        "<html><head><title>Page T</title><style>.x{}</style></head><body><h1>Top</h1><p>Hello"
        " <b>world</b>.</p><script>alert('no')</script><h2>Sub</h2><p>More &amp; more.</p></body></html>"
    )
    doc = load_file(path, LIMIT)
    assert isinstance(doc, LoadedDocument)
    assert doc.title == "Page T"
    assert "Hello world." in doc.text and "More & more." in doc.text
    assert "alert" not in doc.text and ".x{}" not in doc.text
    chunks = chunk_document(doc)
    assert [c.context for c in chunks] == ["Page T > Top", "Page T > Top > Sub"]


def test_pdf_text_is_read_per_page_with_page_numbers(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    write_pdf(
        path, ["Quarterly revenue grew by twelve percent.", "Headcount stayed flat at forty."], "Q3 Report"
    )
    doc = load_file(path, LIMIT)
    assert isinstance(doc, LoadedDocument), doc
    assert doc.title == "Q3 Report"
    chunks = chunk_document(doc)
    assert [c.metadata["page"] for c in chunks] == [1, 2]
    assert "twelve percent" in chunks[0].text and chunks[1].context == "Q3 Report > page 2"
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)


def test_bad_files_are_skipped_with_a_reason(tmp_path: Path) -> None:
    cases = {
        "junk.txt": (b"\x00\x01\x02binary\xff" * 100, "binary"),
        "latin.txt": ("café".encode("latin-1") + b" and more", "undecodable"),
        "empty.md": (b"", "empty"),
        "blank.md": (b"   \n\n  ", "empty"),
        "broken.pdf": (b"%PDF-1.4 this is not really a pdf", "unreadable PDF"),
        "image.png": (b"\x89PNG\r\n", "unsupported type"),
    }
    for name, (data, reason) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        result = load_file(path, LIMIT)
        assert isinstance(result, Skip), name
        assert result.reason.startswith(reason), (name, result.reason)


def test_oversized_files_are_skipped_before_being_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    with path.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    result = load_file(path, 10 * 1024 * 1024)
    assert isinstance(result, Skip) and result.reason.startswith("too large")


def test_windows_line_endings_and_bom_are_normalised(tmp_path: Path) -> None:
    path = tmp_path / "win.txt"
    path.write_bytes("\ufeffline one\r\nline two\r\n".encode())
    doc = load_file(path, LIMIT)
    assert isinstance(doc, LoadedDocument) and doc.text == "line one\nline two\n"
