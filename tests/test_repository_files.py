"""A JavaScript/TypeScript repository as `retrievo index` reads it: its configuration and licence are
indexed as text with their paths as context (before: "unsupported type"), lock files are skipped with
their reason, and no chunk is only punctuation (before: "," and "}" between an object literal's methods)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from retrievo import Config, Engine

CLIENT_TS = """import {fetchJson} from './net';

export const client = {
\tget(url: string) {
\t\treturn fetchJson(url, {method: 'GET'});
\t},
\tpost(url: string, body: unknown) {
\t\treturn fetchJson(url, {method: 'POST', body});
\t},
};

export class Paginator {
\tasync *pages() {
\t\tlet next: string | undefined = this.url;
\t\twhile (next) {
\t\t\tconst response = await client.get(next);
\t\t\tnext = response.next;
\t\t}
\t}
}
"""


def repository(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / "src" / "client.ts").write_text(CLIENT_TS)
    (root / "package.json").write_text(json.dumps({"name": "tiny-client", "engines": {"node": ">=20"}}))
    (root / "package-lock.json").write_text(json.dumps({"lockfileVersion": 3, "packages": {}}))
    (root / "tsconfig.json").write_text('{"compilerOptions": {"strict": true, "target": "ES2022"}}\n')
    (root / ".github" / "workflows" / "ci.yml").write_text(
        "name: CI\non: [push]\njobs:\n  test:\n    steps:\n      - run: npm test\n"
    )
    (root / "license").write_text(
        "MIT License\n\nCopyright (c) Someone\n\nPermission is hereby granted, free of charge.\n"
    )
    return root


def skipped_by_indexing(root: Path, db: Path) -> dict[str, str]:
    """``retrievo index ROOT --no-embed --json`` as a user runs it: the files it skipped, by name, with why."""
    done = subprocess.run(
        [sys.executable, "-m", "retrievo.surfaces.cli", "index", str(root), "--db", str(db), "--no-embed", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return {Path(s["path"]).name: s["reason"] for s in json.loads(done.stdout)["skipped_files"]}


def test_config_and_licence_files_are_indexed_and_no_chunk_is_only_punctuation(tmp_path: Path) -> None:
    root = repository(tmp_path / "tiny-client")
    db = tmp_path / "index.db"
    skipped = skipped_by_indexing(root, db)
    assert list(skipped) == ["package-lock.json"] and skipped["package-lock.json"].startswith("lock file")
    with Engine(Config(db=db, embedder="none")) as engine:
        listed = {Path(d.path).name: d for d in engine.documents()}
        assert set(listed) == {"client.ts", "package.json", "tsconfig.json", "ci.yml", "license"}
        store = engine.open_store()
        chunks = [store.get_chunks(store.current_chunk_ids(d.document_id)) for d in listed.values()]
        texts = [c.text for found in chunks for c in found.values()]
        assert all(any(ch.isalnum() for ch in text) for text in texts), [t for t in texts if len(t) < 4]
        found = engine.search("node engines", mode="keyword", limit=3)
        assert Path(found.hits[0].chunk.path).name == "package.json"
        context = found.hits[
            0
        ].chunk.context  # the path below the indexed root, no folder above it (issue 66)
        assert "package.json" in context and "tiny-client" not in context and str(tmp_path) not in context
        ci = engine.search("workflows ci npm test", mode="keyword", limit=3)
        assert ".github/workflows/ci.yml" in ci.hits[0].chunk.context


def test_a_go_repositorys_module_files_and_people_files_are_indexed_as_text(tmp_path: Path) -> None:
    """go.mod, go.sum, MAINTAINERS and .mailmap were skipped as "unsupported type", even with --include go.mod."""
    root = tmp_path / "cli"
    root.mkdir()
    files = {
        "go.mod": "module github.com/example/cli\n\ngo 1.22\n\nrequire github.com/spf13/pflag v1.0.5\n",
        "go.sum": "github.com/spf13/pflag v1.0.5 h1:iy+VFUOCP1a+8yFto/drg2CJ5u0yRoB7fZw3DKv/JXA=\n",
        "MAINTAINERS": "Ada Lovelace <ada@example.org> (@ada)\n",
        ".mailmap": "Ada Lovelace <ada@example.org> <ada@old.example.org>\n",
        "GNUmakefile": "test:\n\tgo test ./...\n",
        "rules.mk": "lint:\n\tgolangci-lint run\n",
        "NOTES": "\x00\x01binary",  # a capitalised name, but binary: skipped for that
    }
    for name, text in files.items():
        (root / name).write_text(text)
    db = tmp_path / "index.db"
    skipped = skipped_by_indexing(root, db)
    assert list(skipped) == ["NOTES"] and skipped["NOTES"].startswith("binary")
    with Engine(Config(db=db, embedder="none")) as engine:
        assert {Path(d.path).name for d in engine.documents()} == set(files) - {"NOTES"}
        found = engine.search("pflag module requirement", mode="keyword", limit=2)
        context = found.hits[0].chunk.context
        assert Path(found.hits[0].chunk.path).name == "go.mod" and "go.mod" in context
        assert str(tmp_path) not in context and tmp_path.name not in context
