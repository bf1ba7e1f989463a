"""What a new user hit on real material (issue 15): one test per friction point fixed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from retrievo.ingest.identifiers import keyword_terms


def test_ligatures_and_full_width_forms_match_plain_words(make_engine: Any, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    source = "# Lecture notes\n\nDeﬁnition 3. A ﬁeld is a set with two operations. Ｕｎｉｃｏｄｅ forms.\n"
    (docs / "script.txt").write_text(source)
    (docs / "other.txt").write_text("Nothing about algebra here at all.\n")
    engine = make_engine()
    engine.index([docs])
    for query in ("Definition field", "Deﬁnition", "unicode"):
        hits = engine.search(query, mode="keyword").hits
        assert hits and hits[0].chunk.path.endswith("script.txt"), query
        chunk = hits[0].chunk
        # The chunk's text is the file's, unchanged: citations stay exact.
        assert source[chunk.start : chunk.end] == chunk.text and "ﬁ" in chunk.text


def test_keyword_terms_fold_only_what_differs() -> None:
    assert keyword_terms("plain ascii words") == ""
    assert keyword_terms("a ﬁne ﬂow", "Ｔｉｔｌｅ").split() == ["Title", "fine", "flow"]
