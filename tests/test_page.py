"""The search page in a real browser: Debian's Chromium driven headless by Playwright.

`make test` installs Chromium when it is missing and it can (scripts/ensure_chromium.sh); where it
cannot, these tests skip and say so. RETRIEVO_SCREENSHOTS=DIR saves the screenshots in docs/.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from retrievo import Config, Engine
from serving import Server, create_key, serving

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
QUESTION = "How many weeks of parental leave?"
INVOICE = '''"""Invoices and what is due on them."""


class Invoice:
    """A bill sent to a customer."""

    def total(self) -> float:
        """The amount due: the sum of the lines and their tax."""
        return sum(line.amount * (1 + line.tax) for line in self.lines)

    def overdue(self, today: str) -> bool:
        """Whether the amount due was not paid by the due date."""
        return self.due_date < today and not self.paid
'''
GUIDE = """# Deploying the widget

[![build](https://ci.example.com/badge.svg)](https://ci.example.com/widget) ![logo](https://cdn.example.com/logo.png)

Install it with pip, then start the quokka server:

```bash
pip install widget
widget serve --port 8080
```

The `--port` flag picks the port; see [the next guide](next.md) or [this](javascript:alert(1)).

<script>document.title='pwned'</script>
"""
API = """Widget API
==========

The ``Widget`` class wraps a quokka connection; call :meth:`Widget.connect` first,
then :func:`~widget.tools.ping`.

Example::

    w = Widget("quokka")
    w.connect()

Errors
------

.. note:: Connections time out after 30 seconds.

.. raw:: html

   <script>document.title='pwned'</script>

.. include:: /etc/passwd

.. image:: https://cdn.example.com/diagram.png
   :alt: the quokka diagram
"""
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium here and it could not be installed (apt-get install chromium); the page is untested",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> Iterator[tuple[Server, str, list[str]]]:
    from conftest import HANDBOOK

    base = tmp_path_factory.mktemp("page")
    corpus = base / "handbook"
    shutil.copytree(HANDBOOK, corpus)
    # Characters outside the BMP before a passage: offsets are code points, the browser's are UTF-16.
    (corpus / "travel.md").write_text(
        "# Travel 🚆🚆\n\nTrain tickets 🎫 are booked through the travel desk.\n\n"
        "## Per diem\n\nThe per diem for meals abroad is 45 euros a day, paid with the salary.\n",
        encoding="utf-8",
    )
    (corpus / "hostile.md").write_text(
        "# Quarantine notes\n\nThe zanzibar filter saw <img src=x onerror=\"document.title='pwned'\"> and "
        "<script>document.title='pwned'</script> in a ticket.\n",
        encoding="utf-8",
    )
    # A typed model beside the documents: a relationship question is answered with the element it asks for.
    (corpus / "landscape.json").write_text(json.dumps({"name": "Billing", "elements": [
        {"id": "svc", "type": "BusinessService", "name": "Invoice Delivery Service"},
        {"id": "app", "type": "ApplicationComponent", "name": "Billing Engine"},
    ], "relationships": [{"id": "r1", "type": "Realization", "source": "app", "target": "svc"}]}))  # fmt: skip
    # Markdown as a project's docs write it: it must read as Markdown, never as its raw marks.
    (corpus / "options.md").write_text(
        "# Options\n\n#### `request`\n\n**Type:** `Function`\n\nThe request hook sends the HTTP request with "
        "the *merged* options; see [the hooks guide](hooks.md).\n",
        encoding="utf-8",
    )
    # A README and an API page as projects write them: opened from a citation, each reads as its own markup.
    (corpus / "guide.md").write_text(GUIDE, encoding="utf-8")
    (corpus / "api.rst").write_text(API, encoding="utf-8")
    # Code beside the prose: a code hit is titled by its symbol and shown as numbered lines.
    (corpus / "billing").mkdir()
    (corpus / "billing" / "invoice.py").write_text(INVOICE, encoding="utf-8")
    db = base / "page.db"
    with Engine(Config(db=db, collection="handbook"), embedder=minilm) as engine:
        engine.index([corpus])
    where = ["--db", str(db), "--collection", "handbook"]
    token = create_key(where, "browser")
    with serving(where) as server:
        yield server, token, where


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def shot(page: Any, name: str) -> None:
    folder = os.environ.get("RETRIEVO_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / name), full_page=False)


def search(page: Any, query: str) -> None:
    page.fill("#q", query)
    page.press("#q", "Enter")
    page.wait_for_selector("#state:has-text('result')")


def test_search_filter_explain_and_open_the_exact_passage(
    site: tuple[Server, str, list[str]], browser: Any
) -> None:
    server, token, where = site
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(server.url + "/")
    assert page.is_visible("#key-box")
    # Every control has a label a screen reader can announce.
    assert page.evaluate("[...document.querySelectorAll('input,select')].every(e => e.labels.length > 0)")
    page.fill("#key", token)
    page.press("#key", "Tab")
    search(page, QUESTION)
    first = page.locator("#results li.hit").first
    citation = first.locator("a.cite").inner_text()
    assert "leave-policy.md:" in citation
    assert "relevance" in first.locator(".relevance").inner_text()
    assert first.locator(".excerpt mark").count() >= 1  # matched words highlighted
    assert "hybrid" in page.inner_text("#state")
    shot(page, "search-page.png")

    # A path filter narrows the results to that file.
    page.click("#options summary")
    page.fill("#path", "*security.md")
    search(page, "password")
    citations = page.locator("#results a.cite").all_inner_texts()
    assert citations and all("security.md:" in c for c in citations)

    # Explain shows each arm's rank and score.
    page.fill("#path", "")
    page.check("#explain")
    search(page, QUESTION)
    arms = page.locator("#results li.hit").first.locator(".explain dt").all_inner_texts()
    assert set(arms) <= {"keyword", "semantic"} and arms

    # The citation opens the document rendered, the blocks holding the hit's text marked, scrolled into view.
    expected = httpx.post(
        f"{server.url}/api/search", json={"query": QUESTION, "limit": 10, "mode": "hybrid", "detail": "full"},
        headers={"Authorization": f"Bearer {token}"}, timeout=60,
    ).json()["results"][0]  # fmt: skip
    corpus = Path(where[1]).parent / "handbook"  # the answer's paths are below the indexed root (issue 66)
    lines = (corpus / expected["path"]).read_text(encoding="utf-8").split("\n")
    cited = "\n".join(lines[expected["line_start"] - 1 : expected["line_end"]])
    page.locator("#results a.cite").first.click()
    page.wait_for_selector("#doc.rendered.markdown #hit")
    blocks = " ".join(page.locator("#doc .hit").all_text_contents())
    assert "20 weeks of fully paid parental leave" in expected["text"] and "20 weeks of fully paid" in blocks
    assert "## " not in blocks  # a heading reads as a heading
    assert page.evaluate(
        "(() => { const r = document.getElementById('hit').getBoundingClientRect();"
        " return r.bottom > 0 && r.top < innerHeight; })()"
    )
    shot(page, "document-view.png")
    # The text as indexed, one link away: exactly the cited lines marked.
    page.click("#where a")
    page.wait_for_selector("pre#doc mark#hit")
    marked = page.locator("mark#hit").text_content() or ""
    assert marked == cited and expected["text"] in marked  # the cited lines, holding the passage
    page.go_back()
    page.wait_for_selector("#doc.rendered")
    page.go_back()
    page.wait_for_selector("#results li.hit")  # the query is in the address, so back shows the results
    page.close()


def test_offsets_past_emoji_mark_the_right_text(site: tuple[Server, str, list[str]], browser: Any) -> None:
    server, token, _ = site
    hit = httpx.post(
        f"{server.url}/api/search", json={"query": "per diem for meals abroad", "limit": 1, "detail": "full"},
        headers={"Authorization": f"Bearer {token}"}, timeout=60,
    ).json()["results"][0]  # fmt: skip
    assert "travel.md" in hit["path"]
    page = browser.new_page()
    page.add_init_script(f"sessionStorage.setItem('retrievo-key', {token!r})")
    document_id, revision_id = hit["uri"].split("/")[3], hit["uri"].split("/")[5]
    query = f"document_id={document_id}&revision_id={revision_id}&start={hit['start']}&end={hit['end']}"
    page.goto(f"{server.url}/view?{query}&as=text")
    page.wait_for_selector("mark#hit")
    assert page.locator("mark#hit").text_content() == hit["text"]
    page.goto(f"{server.url}/view?{query}")  # rendered: the passage's paragraph is the block marked
    page.wait_for_selector("#doc.rendered #hit")
    assert page.locator("#doc .hit").all_text_contents() == [
        "Per diem",
        "The per diem for meals abroad is 45 euros a day, paid with the salary.",
    ]  # the passage's heading and paragraph; nothing before the emoji moves the mark
    page.close()


def test_phone_width_wrong_key_and_keyboard(site: tuple[Server, str, list[str]], browser: Any) -> None:
    server, token, _ = site
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    page.goto(server.url + "/")
    page.fill("#key", "rtv_wrong.key")
    page.press("#key", "Tab")
    page.fill("#q", QUESTION)
    page.press("#q", "Enter")
    page.wait_for_selector("#state.warn")
    assert "valid API key" in page.inner_text("#state")
    # Keyboard only: focus the key field, type, tab to the query, type, Enter.
    page.focus("#key")
    page.fill("#key", "")
    page.keyboard.type(token)
    page.keyboard.press("Tab")
    page.focus("#q")
    page.fill("#q", "")
    page.keyboard.type(QUESTION)
    page.keyboard.press("Enter")
    page.wait_for_selector("#results li.hit")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scrolling
    shot(page, "search-page-phone.png")
    context.close()


def test_lexical_only_is_said_on_the_page(site: tuple[Server, str, list[str]], browser: Any) -> None:
    _, _, where = site
    with serving(where, "--no-auth", env={"RETRIEVO_EMBEDDER": "none"}) as keyless:
        page = browser.new_page()
        page.goto(keyless.url + "/")
        assert not page.is_visible("#key-box")  # no key needed on a --no-auth loopback server
        search(page, QUESTION)
        state = page.locator("#state")
        assert "keywords only" in state.inner_text() and "warn" in (state.get_attribute("class") or "")
        page.close()
        # A citation on a keyless (loopback) server is one plain GET: the document comes back rendered.
        address = view_address(cited_hit(keyless, "", "start the quokka server", "*guide.md"))
        html = httpx.get(keyless.url + address.split("#")[0], timeout=60).text
        assert '<article id="doc" class="rendered markdown"' in html and 'id="hit"' in html
        assert "<pre><code" in html and "```" not in html


def test_a_relationship_answer_says_how_it_was_reached(
    site: tuple[Server, str, list[str]], browser: Any
) -> None:
    server, token, _ = site
    page = browser.new_page()
    page.add_init_script(f"sessionStorage.setItem('retrievo-key', {token!r})")
    page.goto(server.url + "/?q=which+application+component+realizes+the+invoice+delivery+service")
    page.wait_for_selector("#results li.hit")
    first = page.locator("#results li.hit").first
    assert (first.locator("h2").text_content() or "").startswith("Billing Engine")
    assert (
        first.locator(".via").text_content()
        == "reached by Invoice Delivery Service ←realization— Billing Engine"
    )
    page.close()


def test_hostile_document_text_is_shown_never_run(site: tuple[Server, str, list[str]], browser: Any) -> None:
    server, token, _ = site
    page = browser.new_page()
    page.add_init_script(f"sessionStorage.setItem('retrievo-key', {token!r})")
    page.goto(server.url + "/?q=zanzibar+filter")
    page.wait_for_selector("#results li.hit")
    excerpt = page.locator("#results li.hit .excerpt").first.text_content() or ""
    assert "<img src=x" in excerpt or "<script>" in excerpt  # shown as text
    page.locator("#results a.cite").first.click()
    page.wait_for_selector("#doc #hit")
    assert "<script>" in (page.locator("#doc").text_content() or "")
    assert page.title() != "pwned" and page.locator("#doc img, #results img, #doc script").count() == 0
    page.close()


def test_code_hits_read_as_code_grouped_by_file_with_bands(
    site: tuple[Server, str, list[str]], browser: Any
) -> None:
    server, token, _ = site
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(server.url + "/")
    page.fill("#key", token)
    page.press("#key", "Tab")
    search(page, "invoice amount due total")
    hits = page.locator("#results li.hit")
    code = page.locator("#results li.code-hit").first
    title = code.locator("h2").inner_text()
    assert title.startswith("Invoice.") and title.endswith(" · method · python")  # the symbol, not the header
    assert "Language:" not in page.inner_text("#results")
    citation = code.locator("a.cite").inner_text()
    assert citation.startswith("billing/invoice.py:")  # relative to the indexed root
    numbers = code.locator("pre.code .no").all_inner_texts()
    assert numbers and numbers == [
        str(int(numbers[0]) + i) for i in range(len(numbers))
    ]  # its own line numbers
    assert (
        page.evaluate("getComputedStyle(document.querySelector('pre.code')).fontFamily").find("monospace")
        >= 0
    )
    # One row per file: the file's other passages are folded under it, never a second row.
    paths = [c.split(":")[0] for c in page.locator("#results a.cite").all_inner_texts()]
    assert len(paths) == len(set(paths)) == hits.count()
    assert code.locator("details.also summary").inner_text().endswith("more in this file")
    # Relevance as a band a person reads, falling down the list.
    bands = page.locator("#results .relevance").all_inner_texts()
    assert all(b.split(" · ")[0] in {"strong", "possible", "weak"} for b in bands)
    values = [float(b.rsplit(" ", 1)[1]) for b in bands]
    assert values == sorted(values, reverse=True)
    shot(page, "search-page-code.png")
    # A question the index cannot answer says so.
    search(page, "xqzv wlmrt plokj")
    assert "no answer" in page.inner_text("#state") or page.locator("#results li.hit").count() == 0
    search(page, "banana bread recipe")  # words the index lacks: said so, the nearest hit read as weak
    assert "no answer" in page.inner_text("#state"), page.inner_text("#state")
    assert page.locator("#results .relevance").first.inner_text().startswith("weak")
    page.close()


def test_the_page_works_without_javascript_and_renders_markdown(
    site: tuple[Server, str, list[str]], browser: Any
) -> None:
    """No script at all: the form posts the key in its body (never the address) and the answer comes back
    rendered by the server — Markdown as Markdown, the question's words marked, a no-key refusal said."""
    server, token, _ = site
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(server.url + "/")
    assert page.is_visible("#key-box"), "the key box is there without the script"
    page.fill("#key", "rtv_wrong.key")
    page.fill("#q", "request hook type")
    page.click("#search-form button[type=submit]")
    page.wait_for_load_state()
    assert "valid API key" in page.inner_text("#state") and page.locator("#results li").count() == 0
    page.fill("#key", token)
    page.fill("#q", "request hook type")
    page.click("#search-form button[type=submit]")
    page.wait_for_load_state()
    assert "?" not in page.url and "rtv_" not in page.url, "the key never goes in the address"
    assert "hybrid" in page.inner_text("#state")
    hit = next(
        h for h in page.locator("#results li.hit").all() if "options.md" in h.locator("a.cite").inner_text()
    )
    shown = hit.locator(".excerpt").inner_text()
    assert "**" not in shown and "####" not in shown and "`" not in shown and "](" not in shown, shown
    assert hit.locator(".excerpt code").count() >= 1 and hit.locator(".excerpt strong").count() >= 1
    assert hit.locator(".excerpt mark").count() >= 1
    shot(page, "search-page-no-script.png")
    context.close()


def test_code_takes_the_page_width_and_the_page_has_an_icon(
    site: tuple[Server, str, list[str]], browser: Any
) -> None:
    server, token, _ = site
    assert httpx.get(f"{server.url}/favicon.ico", timeout=30).status_code == 200
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.add_init_script(f"sessionStorage.setItem('retrievo-key', {token!r})")
    page.goto(server.url + "/?q=invoice+amount+due+total")
    page.wait_for_selector("#results li.code-hit pre.code")
    width = page.evaluate(
        "document.querySelector('#results li.code-hit pre.code').getBoundingClientRect().width"
    )
    assert width > 1100, f"code is {width} px wide in a 1,400 px window"
    page.close()


def test_the_question_s_words_are_marked_where_words_start_and_stop_words_never() -> None:
    from retrievo.surfaces.http.answer_html import excerpt, marked, query_words

    assert query_words("What is the theme of the parser?") == ["theme", "parser"]
    assert (
        marked("the theme, then the themes", ["the"])
        == "<mark>the</mark> theme, then <mark>the</mark> themes"
    )
    assert marked("parse parsed parses reparse", ["parse"]) == (
        "<mark>parse</mark> <mark>parsed</mark> <mark>parses</mark> reparse"
    )
    assert marked("<code>a&amp;b</code> amp", ["amp", "code"]) == "<code>a&amp;b</code> <mark>amp</mark>"
    shown = excerpt("#### `request`\n\n**Type:** `Function` <img src=x>", "request type")
    assert "<img" not in shown and "&lt;img" in shown
    assert "<code><mark>request</mark></code>" in shown and "<strong><mark>Type</mark>:</strong>" in shown


def cited_hit(server: Server, token: str, query: str, path: str) -> dict[str, Any]:
    """The first hit in ``path`` for ``query``, from the REST API."""
    hits = httpx.post(
        f"{server.url}/api/search", json={"query": query, "limit": 5, "detail": "full", "filters": {"path": path}},
        headers={"Authorization": f"Bearer {token}"} if token else {}, timeout=60,
    ).json()["results"]  # fmt: skip
    assert hits, f"nothing found in {path} for {query!r}"
    return dict(hits[0])


def view_address(hit: dict[str, Any]) -> str:
    document_id, revision_id = hit["uri"].split("/")[3], hit["uri"].split("/")[5]
    return (
        f"/view?document_id={document_id}&revision_id={revision_id}"
        f"&line_start={hit['line_start']}&line_end={hit['line_end']}#hit"
    )


def assert_markdown_rendered(page: Any) -> None:
    doc = page.locator("#doc.rendered.markdown")
    text = doc.text_content() or ""
    assert doc.locator("h1").first.text_content() == "Deploying the widget"
    assert doc.locator("pre code").first.text_content() == "pip install widget\nwidget serve --port 8080\n"
    assert "```" not in text and "![" not in text and "](" not in text, text
    assert doc.locator("p code").first.text_content() == "--port"  # inline code stays inline
    badges = doc.locator(".image").all_text_contents()
    assert badges == ["build", "logo"]  # images as their alt text, never fetched
    assert doc.locator("a[href='https://ci.example.com/widget']").text_content() == "build"
    assert doc.locator("a[href^='javascript'], a[href='next.md']").count() == 0  # inert, shown as text
    assert "<script>document.title='pwned'</script>" in text  # raw HTML shown as text, never run
    assert doc.locator("img, script").count() == 0 and page.title() != "pwned"
    assert "quokka server" in " ".join(page.locator("#doc .hit").all_text_contents())


def assert_rest_rendered(page: Any) -> None:
    doc = page.locator("#doc.rendered.rst")
    text = doc.text_content() or ""
    assert (
        doc.locator("h3").first.text_content() == "Widget API" and "=====" not in text and "-----" not in text
    )
    assert doc.locator(".literal").first.text_content() == "Widget"  # ``literal``
    assert ":meth:" not in text and "Widget.connect()" in text and "ping()" in text and "~widget" not in text
    assert doc.locator("pre").first.text_content() == 'w = Widget("quokka")\nw.connect()'  # the :: block
    assert "Example:" in text and "Example::" not in text
    assert "Connections time out after 30 seconds." in (doc.locator(".admonition").text_content() or "")
    assert "the quokka diagram" in doc.locator(".image").all_text_contents()  # the image's alt, not fetched
    assert "pwned" not in text and "root:" not in text  # raw and include are off
    assert doc.locator("img, script").count() == 0 and page.title() != "pwned"
    marked = " ".join(page.locator("#doc .hit").all_text_contents())
    assert "quokka connection" in marked and "time out" not in marked  # the cited section, not the next


def test_markdown_and_rest_documents_read_as_their_markup_with_the_script(
    site: tuple[Server, str, list[str]], browser: Any
) -> None:
    server, token, _ = site
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.add_init_script(f"sessionStorage.setItem('retrievo-key', {token!r})")
    page.goto(server.url + view_address(cited_hit(server, token, "start the quokka server", "*guide.md")))
    page.wait_for_selector("#doc.rendered #hit")
    assert_markdown_rendered(page)
    assert "Markdown; the blocks holding the cited lines" in page.inner_text("#state")
    assert page.is_hidden("#view-form")
    shot(page, "document-view-markdown.png")
    page.goto(server.url + view_address(cited_hit(server, token, "quokka connection Widget", "*api.rst")))
    page.wait_for_selector("#doc.rendered #hit")
    assert_rest_rendered(page)
    shot(page, "document-view-rest.png")
    page.close()


def test_a_citation_opens_without_javascript_rendered(
    site: tuple[Server, str, list[str]], browser: Any
) -> None:
    """No script: the citation's page asks for the key, posts it in the form's body with the citation, and
    the document comes back rendered by the server, the passage marked — never "Loading…"."""
    server, token, _ = site
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1200, "height": 900})
    page = context.new_page()
    for query, path, check in (
        ("start the quokka server", "*guide.md", assert_markdown_rendered),
        ("quokka connection Widget", "*api.rst", assert_rest_rendered),
    ):
        page.goto(server.url + view_address(cited_hit(server, token, query, path)))
        assert "Loading" not in page.inner_text("main") and page.is_visible("#view-form")
        page.fill("#key", token)
        page.click("#view-form button[type=submit]")
        page.wait_for_selector("#doc.rendered #hit")
        assert "rtv_" not in page.url, "the key never goes in the address"
        check(page)
    context.close()
