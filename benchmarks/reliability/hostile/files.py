"""A folder of hostile files: every one is indexed or skipped with a reason; nothing crashes; peak memory.

Documents and code (binary with a code extension, megabytes of minified JavaScript on one line, syntax
errors, deep nesting, non-UTF-8), keyword-only (see ``run``).
"""

from __future__ import annotations

import os
import random
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from retrievo import Config, Engine


def make_hostile_folder(folder: Path, big_mb: int = 9) -> dict[str, str]:
    """Write the files; returns name → what it is."""
    rng = random.Random(3)
    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, str] = {}

    def put(name: str, data: bytes | str, what: str) -> None:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        made[name] = what

    put("binary.md", bytes(rng.randrange(256) for _ in range(50_000)), "random bytes with a text extension")
    put("latin1.txt", "caf\xe9 na\xefve r\xe9sum\xe9\n".encode("latin-1") * 100, "not UTF-8")
    put("late-nul.txt", b"words " * 3000 + b"\x00tail", "a NUL after 8 KB")
    put("empty.md", b"", "zero bytes")
    put("blank.md", "   \n\n\t\n", "whitespace only")
    put("bom.md", "\ufeff# Title with BOM\n\nText.\n", "UTF-8 BOM")
    put("crlf.md", "# CRLF\r\n\r\nWindows line ends.\r\n" * 50, "CRLF")
    put("one-line.txt", ("word " * (big_mb * 1024 * 1024 // 5)), f"{big_mb} MB on one line")
    put("too-big.txt", b"x" * (11 * 1024 * 1024), "over the 10 MB limit")
    minified = "var a=1;" + ";".join(f"function f{i}(x){{return x*{i}}}" for i in range(big_mb * 40_000))
    put("minified.js", minified, f"{len(minified) // 1_000_000} MB of minified JavaScript on one line")
    put(
        "broken.py",
        "def ok():\n    return 1\n\ndef broken(:\n    pass\nclass Half(\n",
        "Python with syntax errors",
    )
    put("nested.py", "x = " + "[" * 5000 + "]" * 5000 + "\n", "5,000 nested brackets")
    put("binary.go", b"package main\x00\x01\x02" * 100, "binary with a code extension")
    put("latin1.rs", "// caf\xe9\nfn main() {}\n".encode("latin-1"), "non-UTF-8 code")
    put("headings.md", "".join(f"# H{i}\n" for i in range(2_000)), "2,000 headings, no body")
    put("deep.html", "<div>" * 20_000 + "deep text" + "</div>" * 20_000, "20,000 nested elements")
    put("entities.html", "<p>" + "&amp;&#x1F600;&#0;&#xD800;&bogus;" * 5000 + "</p>", "odd entities")
    put("broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\n%%EOF" + bytes(1000), "a broken PDF")
    put("not-a.pdf", b"hello, not a pdf at all", "text named .pdf")
    put("front.md", "---\ntitle: [unclosed\ntags: {a: b\n---\n# Body\n\ntext\n", "broken front matter")
    put("fence.md", "```\n" + "# not a heading\n" * 1000, "an unclosed code fence")
    put("surrogates.md", b"# Bad\n\n\xed\xa0\x80 lone surrogate bytes\n", "UTF-8-encoded surrogate (invalid)")
    put("rtl.md", "# \u202eevil\n\n" + "\u200b\u200d\u2066" * 1000 + "text\n", "bidi and zero-width")
    put("name with spaces & ünïcödé.md", "# Odd name\n\ntext\n", "odd file name")
    put("newline\nname.md", "# Newline in name\n\ntext\n", "a newline in the file name")
    nested = "/".join(f"d{i}" for i in range(60))
    put(f"{nested}/deep.md", "# Deep\n\nFile sixty folders down.\n", "60 folders deep")
    (folder / "loop-a.md").symlink_to(folder / "loop-b.md")
    (folder / "loop-b.md").symlink_to(folder / "loop-a.md")
    made["loop-a.md"] = made["loop-b.md"] = "file symlink loop"
    (folder / "dangling.md").symlink_to(folder / "nowhere.md")
    made["dangling.md"] = "dangling symlink"
    (folder / "dirloop").mkdir()
    (folder / "dirloop" / "up").symlink_to(folder)
    made["dirloop/up"] = "directory symlink back to the root"
    (folder / "outside.md").symlink_to("/etc/hostname")
    made["outside.md"] = "symlink outside the root"
    os.mkfifo(folder / "fifo.md")
    made["fifo.md"] = "a named pipe"
    return made


def run(big_mb: int = 9) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "hostile"
        made = make_hostile_folder(folder, big_mb)
        started = time.perf_counter()
        # Keyword-only: this part is about reading and chunking hostile files; embedding is exercised by
        # the kill -9 and query parts (and 10 MB of unique minified code would take minutes to embed).
        with Engine(Config(db=Path(scratch) / "h.db", embedder="none")) as engine:
            report = engine.index([folder])
            second = engine.index([folder])
            found = engine.search("deep text", mode="keyword")
            indexed = sorted(str(Path(d.path).relative_to(folder)) for d in engine.documents())
        skipped = {str(Path(s.path).relative_to(folder)): s.reason for s in report.skipped}
        # The directory link back to the root is walked once (each real folder is visited once).
        unaccounted = sorted(set(made) - set(skipped) - set(indexed) - {"dirloop/up"})
        return {
            "files_made": len(made),
            "files_seen": report.files_seen,
            "indexed": indexed,
            "skipped": skipped,
            "unaccounted": unaccounted,
            "chunks": report.chunks_written,
            "reindex_unchanged": second.documents_unchanged,
            "reindex_changed": second.documents_changed + second.documents_added,
            "search_after": len(found.hits),
            "seconds": round(time.perf_counter() - started, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
