"""Each benchmark repository's documentation at its pin, for the harness's ``--docs`` (a user indexes it too).

../shared/data/semble holds the code only. This reads each repository's history (a bare git directory per
repository: ``--mirror/<owner>+<name>/repo``, as a fetch of github:<owner>/<name> leaves it) at the pin in
``manifest.json`` and writes its documentation under ``--out/<repository>/``, paths kept: every Markdown,
MDX, reStructuredText and AsciiDoc file (READMEs, changelogs, guides, ``.github`` templates), binary files
and files over 1 MB left out. Two repositories carry copies a user rarely wants twice: fastapi's
translations (``docs/<language>/`` but ``docs/en/``) and tRPC's versioned copies of its docs
(``www/versioned_docs/``) are left out, and the count says so. Writes ``--out/manifest.json``.

    .venv/bin/python -m benchmarks.code_search.semble_docs --mirror /work/.mirror --out /tmp/semble-docs
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

from benchmarks.code_search.semble import DATA

SUFFIXES = (".md", ".mdx", ".rst", ".adoc")
LARGEST = 1_000_000
# copies of the same pages: another language's, an older version's
COPIES = re.compile(r"^docs/(?!en/)[a-z]{2}(-[a-z]+)?/|^www/versioned_docs/")


def extract(git_dir: Path, pin: str, out: Path) -> dict[str, int]:
    """The documentation files at ``pin`` written under ``out``: how many, their bytes, the copies left out."""
    listing = subprocess.run(
        ["git", "-C", str(git_dir), "ls-tree", "-r", "-l", "-z", pin], capture_output=True, check=True
    ).stdout
    files = written = copies = 0
    for entry in filter(None, listing.split(b"\0")):
        meta, raw = entry.split(b"\t", 1)
        mode, kind, sha, size = meta.split()
        path = raw.decode("utf-8", "surrogateescape")
        if kind != b"blob" or mode == b"120000" or not path.lower().endswith(SUFFIXES):
            continue
        if COPIES.search(path):
            copies += 1
            continue
        if int(size) > LARGEST:
            continue
        data = subprocess.run(
            ["git", "-C", str(git_dir), "cat-file", "blob", sha.decode()], capture_output=True, check=True
        ).stdout
        if b"\0" in data[:8192]:
            continue
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        files, written = files + 1, written + len(data)
    return {"files": files, "bytes": written, "copies_left_out": copies}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirror", type=Path, required=True, help="<owner>+<name>/repo git directories")
    parser.add_argument("--out", type=Path, default=Path("/tmp/semble-docs"))
    args = parser.parse_args()
    manifest = json.loads((DATA / "manifest.json").read_text())["repositories"]
    done: dict[str, object] = {}
    for name, spec in sorted(manifest.items()):
        git_dir = args.mirror / spec["repository"].replace("/", "+") / "repo"
        if not git_dir.exists():
            print(f"{name}: no history at {git_dir}; left out")
            continue
        counts = extract(git_dir, spec["pin"], args.out / name)
        done[name] = {"repository": spec["repository"], "pin": spec["pin"], **counts}
        print(f"{name}: {counts['files']} files, {counts['bytes']:,} bytes"
              f" ({counts['copies_left_out']} copies left out)")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "manifest.json").write_text(json.dumps(done, indent=1) + "\n")


if __name__ == "__main__":
    main()
