"""The corpus the static table is trained on (``train.py``), and the bundled model's vectors for it.

Nothing is downloaded and no evaluation set is read: the texts are the installed distributions of this
project's own environment (``.venv``, as ``make`` installs it; the versions used are recorded) — their code, their
docstrings and their package descriptions — less every project an evaluation here uses or keeps aside
(semble's benchmark repositories, the judged sets' sources, retrievo itself: ``EXCLUDED``). Two kinds of
text, as the engine meets them:

- **passages**: a file cut at blank lines into pieces of at most ``--lines`` lines / 1,200 characters
  (the size of a code chunk or a paragraph; minified files, with lines over 400 characters, are skipped);
- **short texts**, as a question reads: a docstring's first line, a Markdown or reST heading, a
  distribution's one-line summary.

Each distribution gives at most ``--per-dist`` of each (chosen by the SHA-1 of the text, so a run is
the same on the same files); duplicates are dropped. A file is left out when a folder on its path is
an excluded project (a vendored copy: pip's ``_vendor/requests``, jedi's ``typeshed/stubs/requests``) or
holds tests. The bundled model (``embed/local.py``, the kernels
the engine indexes with) then embeds every text; ``texts.jsonl`` and ``targets.npy`` (float32, one
L2-normalised row per text) and ``corpus.json`` (distributions and versions, counts, sha256) go into
``--out``.

    .venv/bin/python -m benchmarks.static_model.corpus --out /tmp/static-train
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

# Projects an evaluation here reads (semble's 62 benchmark repositories, whether in ../shared/data or
# kept aside; click; the MCP registries' servers are not packages here) and retrievo itself.
EXCLUDED = {
    "aiohttp", "fastapi", "flask", "httpx", "httpx2", "model2vec", "pydantic", "pydantic-core", "requests",
    "starlette", "sse-starlette", "click", "mkdocs-click", "retrievo", "semble",
}  # fmt: skip
TESTS = {"test", "tests", "testing"}
CODE = {".py", ".pyi", ".js", ".mjs", ".ts", ".c", ".h", ".cc", ".cpp", ".hpp", ".rs", ".go", ".java",
        ".rb", ".lua", ".sh", ".sql"}  # fmt: skip
PROSE = {".md", ".rst", ".txt"}
MAX_CHARS = 1200
QUOTES = ('"' * 3, "'" * 3)
HEADING = re.compile(r"^(?:#{1,4} +(.{8,120})|([A-Z][^\n]{7,120})\n[=\-~^]{4,})$", re.M)
DOCSTRING = re.compile(r'(?:def|class) +\w+[^\n]*:\n\s+(?:[rRbBuU]?)"""\s*([^\n]{12,160})')


def passages(text: str, lines: int) -> list[str]:
    """``text`` cut at blank lines into pieces of at most ``lines`` lines and ``MAX_CHARS`` characters."""
    out, block = [], []
    for line in text.splitlines():
        if not line.strip() and block and (len(block) >= lines // 2):
            out.append("\n".join(block))
            block = []
            continue
        block.append(line)
        if len(block) >= lines or sum(map(len, block)) > MAX_CHARS:
            out.append("\n".join(block))
            block = []
    if block:
        out.append("\n".join(block))
    return [piece.strip()[:MAX_CHARS] for piece in out if len(piece.split()) >= 8]


def short_texts(text: str, suffix: str) -> list[str]:
    """A docstring's first sentence (code) or a heading (prose)."""
    found = DOCSTRING.findall(text) if suffix in (".py", ".pyi") else []
    found += [a or b for a, b in HEADING.findall(text)] if suffix in PROSE else []
    found = [item.split(QUOTES[0])[0].split(QUOTES[1])[0].strip().rstrip(".:") for item in found]
    return [item for item in found if len(item.split()) >= 3]


def chosen(items: set[str], count: int) -> list[str]:
    return sorted(items, key=lambda t: hashlib.sha1(t.encode("utf-8")).hexdigest())[:count]


def source_files(dist: importlib.metadata.Distribution, suffixes: set[str]) -> Iterator[tuple[str, str]]:
    """A distribution's files with one of ``suffixes`` (lower case), as (suffix, text): none under a folder
    named after an excluded project (a vendored copy: pip's _vendor/requests, typeshed's stubs) or holding
    tests, none over 1 MB or not UTF-8."""
    for file in sorted(dist.files or [], key=str):
        suffix = file.suffix.lower()
        parts = {part.lower().replace("_", "-") for part in Path(str(file)).parts}
        if suffix not in suffixes or parts & (EXCLUDED | TESTS) or Path(str(file)).name.startswith("test_"):
            continue
        path = Path(str(dist.locate_file(file)))
        try:
            if path.stat().st_size > 1_000_000:
                continue
            yield suffix, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue


def collect(lines: int, per_dist: int) -> tuple[list[dict[str, str]], list[dict[str, object]]]:
    texts: list[dict[str, str]] = []
    seen: set[str] = set()
    used: list[dict[str, object]] = []
    dists = sorted(importlib.metadata.distributions(), key=lambda d: (d.metadata["Name"] or "").lower())
    for dist in dists:
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if not name or name in EXCLUDED:
            continue
        long: set[str] = set()
        short: set[str] = set()
        summary = (dist.metadata["Summary"] or "").strip()
        if len(summary.split()) >= 3:
            short.add(summary)
        description = dist.metadata.get_payload() or ""  # type: ignore[attr-defined]
        sources = [(".md", str(description))]
        for suffix, body in source_files(dist, CODE | PROSE):
            if any(len(line) > 400 for line in body.splitlines()):
                continue
            sources.append((suffix, body))
        for suffix, body in sources:
            long.update(passages(body, lines))
            short.update(short_texts(body, suffix))
        kept = [(kind, t) for kind, items in (("passage", long), ("short", short - long))
                for t in chosen(items, per_dist) if t not in seen]  # fmt: skip
        seen.update(t for _, t in kept)
        texts += [{"dist": name, "kind": kind, "text": t} for kind, t in kept]
        if kept:
            used.append({"name": name, "version": dist.version, "texts": len(kept)})
    return texts, used


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--lines", type=int, default=30, help="a passage's most lines (default 30)")
    parser.add_argument("--per-dist", type=int, default=900, help="of each kind (default 900)")
    parser.add_argument("--reuse", type=Path, help="an earlier --out: its texts' vectors are not made again")
    args = parser.parse_args()
    from retrievo.embed.local import MODEL_ID, MiniLMEmbedder

    started = time.perf_counter()
    texts, used = collect(args.lines, args.per_dist)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "texts.jsonl").open("w", encoding="utf-8") as handle:
        for item in texts:
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    kinds = {k: sum(1 for t in texts if t["kind"] == k) for k in ("passage", "short")}
    print(f"{len(texts)} texts ({kinds}) from {len(used)} distributions", file=sys.stderr)

    embedder = MiniLMEmbedder()
    done = [0]

    def progress(count: int) -> None:
        done[0] += count
        if done[0] // 1000 != (done[0] - count) // 1000:
            elapsed = time.perf_counter() - started
            print(f"embedded {done[0]}/{len(new)} ({elapsed:.0f}s)", file=sys.stderr)

    earlier: dict[str, np.ndarray] = {}
    if args.reuse is not None:
        lines = (args.reuse / "texts.jsonl").read_text(encoding="utf-8").splitlines()
        vectors = np.load(args.reuse / "targets.npy")
        earlier = {json.loads(line)["text"]: vectors[row] for row, line in enumerate(lines)}
    new = [t["text"] for t in texts if t["text"] not in earlier]
    made = dict(zip(new, embedder.embed_documents(new, progress=progress), strict=True))
    targets = np.stack([earlier.get(t["text"], made.get(t["text"])) for t in texts])
    np.save(args.out / "targets.npy", targets.astype(np.float32))
    manifest = {
        "source_model": MODEL_ID,
        "texts": len(texts),
        "kinds": kinds,
        "distributions": used,
        "excluded": sorted(EXCLUDED),
        "python": sys.version.split()[0],
        "sha256": {
            name: hashlib.sha256((args.out / name).read_bytes()).hexdigest()
            for name in ("texts.jsonl", "targets.npy")
        },
        "command": f"python -m benchmarks.static_model.corpus --lines {args.lines} --per-dist {args.per_dist}",
        "seconds": round(time.perf_counter() - started),
    }
    (args.out / "corpus.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out} in {manifest['seconds']}s", file=sys.stderr)


if __name__ == "__main__":
    main()
