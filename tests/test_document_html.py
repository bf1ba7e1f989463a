"""A cited document rendered for the page (``surfaces/http/document_html.py``): Markdown and reST read as their
markup, hostile text never becomes markup that runs or fetches, and the cited passage's blocks are marked."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrievo.surfaces.http.document_html import cited, document_html, format_of, markdown_html, rst_html
from retrievo.surfaces.http.safe_html import TAGS, sanitise

HOSTILE_MARKDOWN = """# Notes

<script>alert(1)</script> <img src=x onerror=alert(2)> <a href="javascript:alert(3)">x</a>

[click](javascript:alert(4)) [data](data:text/html;base64,PHNjcmlwdD4=) ![pixel](https://tracker.example/p.gif)

<iframe src="https://evil.example"></iframe>
"""
HOSTILE_REST = """Notes
=====

.. raw:: html

   <script>alert(1)</script>

.. include:: /etc/passwd

.. csv-table::
   :file: /etc/passwd

`click <javascript:alert(4)>`_

.. image:: https://tracker.example/p.gif
   :alt: pixel

.. |x| image:: https://tracker.example/q.gif
"""


def tags_and_attributes(markup: str) -> list[tuple[str, str]]:
    return re.findall(r"<([a-zA-Z0-9]+)([^>]*)>", markup)


def assert_inert(markup: str) -> None:
    for tag, attributes in tags_and_attributes(markup):
        assert tag in TAGS | {"article"}, tag  # the article is the page's own, around the document
        assert not re.search(r"\son\w+\s*=", attributes), attributes
        hrefs = re.findall(r'\shref="([^"]*)"', attributes)
        assert all(h.startswith(("http://", "https://", "mailto:", "#")) for h in hrefs), attributes
        assert not re.search(r"\s(src|style|srcset|action|formaction)\s*=", attributes), attributes
    assert "<img" not in markup and "<script" not in markup and "<iframe" not in markup


def test_hostile_markdown_is_shown_as_text_never_as_markup() -> None:
    shown = document_html(HOSTILE_MARKDOWN, "notes.md", cited(HOSTILE_MARKDOWN, 0, 5, None, None), "markdown")
    assert_inert(shown)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown  # raw HTML is shown, as text
    assert ">click</a>" in shown and ">pixel</span>" in shown  # a link's text, an image's alt


def test_hostile_rest_runs_no_raw_html_reads_no_file_and_fetches_no_image() -> None:
    shown = document_html(HOSTILE_REST, "notes.rst", cited(HOSTILE_REST, None, None, 1, 2), "rst")
    assert_inert(shown)
    assert "alert(1)" not in shown and "root:" not in shown  # raw and include/csv :file: are off
    assert ">click</a>" in shown and ">pixel</span>" in shown


def test_the_sanitiser_keeps_only_the_allow_list_and_closes_what_it_opens() -> None:
    dirty = (
        '<p onclick="x()" class="a" style="color:red">one <b>two</p><script>bad()</script>'
        '<a href=" JaVaScRiPt:alert(1)">three</a><a href="https://example.com/?a=1&amp;b=2">four</a>'
        '<div id="state"><span id="hit">five</span><table><tr><td colspan="2x">six'
    )
    assert sanitise(dirty) == (
        '<p class="a">one <b>two</b></p><a>three</a>'
        '<a href="https://example.com/?a=1&amp;b=2" rel="nofollow noopener noreferrer">four</a>'
        '<div><span id="hit">five</span><table><tr><td>six</td></tr></table></div>'
    )


@given(
    st.text(alphabet=st.sampled_from(list("<>/=\"' ascriptimgonerrorhrefjavascript:&#;x\n")), max_size=200)
)
def test_whatever_it_is_fed_the_sanitiser_gives_only_allowed_tags(markup: str) -> None:
    assert_inert(sanitise(markup))


def test_the_cited_lines_blocks_are_marked_the_first_one_by_id() -> None:
    text = "# A\n\none\n\n## B\n\ntwo\nthree\n\n- four\n- five\n\n```\nsix\n```\n"
    shown = markdown_html(text, 7, 8)  # "two\nthree"
    assert re.findall(r'<(\w+) class="hit"( id="hit")?>', shown) == [("p", ' id="hit"')]
    assert '<p class="hit" id="hit">two\nthree</p>' in shown
    assert "<ul" in shown and "<pre><code>six" in shown
    rest = "A\n=\n\none\n\nB\n-\n\ntwo\nthree\n\n* four\n"
    assert re.findall(r'<(\w+) class="hit[^"]*"', rst_html(rest, 6, 7)) == ["h4"]  # "B" and its underline
    assert re.findall(r'<(\w+) class="hit[^"]*" id="hit"', rst_html(rest, 9, 10)) == ["p"]  # "two\nthree"


def test_offsets_are_code_points_and_lines_are_whole_lines() -> None:
    text = "🚆 a\nbb\ncc"
    assert cited(text, 2, 3, None, None) == cited(text, 2, 3, None, None)
    assert text[cited(text, 2, 3, None, None).start] == "a"
    line = cited(text, None, None, 2, 2)
    assert (text[line.start : line.end], line.first, line.last) == ("bb", 2, 2)
    assert (
        format_of("docs/a.MD") == "markdown" and format_of("a.rst") == "rst" and format_of("a.txt") == "text"
    )


def test_text_that_breaks_a_renderer_is_shown_as_text_with_its_passage_marked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deep = "".join(" " * depth + "x\n\n" for depth in range(600))  # docutils recurses once per indent
    shown = document_html(deep, "deep.rst", cited(deep, None, None, 3, 3), "rst")
    assert shown.startswith('<pre id="doc"') and '<mark id="hit"> x</mark>' in shown
    assert "could not render deep.rst" in caplog.text
