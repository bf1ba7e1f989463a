"""kill -9 at random points of `retrievo index`, `retrievo embed` and the ANN side-file save.

After every kill: the SQLite file passes ``PRAGMA integrity_check`` and FTS5's integrity check, and
the index opens and answers. At the end a plain re-run completes and the index's content (documents,
revisions' text, chunks with offsets and hashes, vectors) matches an uninterrupted reference byte
for byte. ANN kills: a fresh process still answers after each (from the saved file, or lexical-only
while it rebuilds a torn one) and the file is never left torn by our own save.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.reliability.hostile.corpus import ROOT, write_corpus

CLI = [sys.executable, "-m", "retrievo.surfaces.cli"]


def _cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, check=False, cwd=ROOT
    )


def content_digest(db: Path) -> tuple[str, dict[str, int]]:
    """SHA-256 over the current content, independent of ids, timestamps and write order."""
    conn = sqlite3.connect(db)
    digest = hashlib.sha256()
    counts: dict[str, int] = {}
    documents = conn.execute(
        """SELECT d.source, d.title, d.kind, d.metadata, r.source_hash, r.text FROM documents d
           JOIN revisions r ON r.id = d.current_revision_id WHERE d.deleted_at IS NULL ORDER BY d.source"""
    ).fetchall()
    counts["documents"] = len(documents)
    for row in documents:
        digest.update("\x1f".join(map(str, row)).encode())
    chunks = conn.execute(
        """SELECT d.source, c.ordinal, c.text, c.context, c.start_offset, c.end_offset, c.line_start, c.line_end,
                  c.chunk_hash, c.source_hash, c.embed_key, c.metadata, e.vector
           FROM chunks c JOIN documents d ON d.id = c.document_id
           LEFT JOIN embeddings e ON e.embed_key = c.embed_key
           WHERE c.superseded_at IS NULL ORDER BY d.source, c.ordinal"""
    ).fetchall()
    counts["chunks"] = len(chunks)
    counts["vectors"] = sum(1 for row in chunks if row[-1] is not None)
    for row in chunks:
        digest.update("\x1f".join(map(str, row[:-1])).encode() + (row[-1] or b"-"))
    conn.close()
    return digest.hexdigest(), counts


def integrity(db: Path) -> list[str]:
    problems: list[str] = []
    conn = sqlite3.connect(db)
    try:
        result = conn.execute("PRAGMA integrity_check").fetchall()
        if result != [("ok",)]:
            problems.append(f"integrity_check: {result[:3]}")
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError as exc:
        problems.append(f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()
    return problems


def _kill_after(command: list[str], delay: float) -> bool:
    """Start, SIGKILL after ``delay`` s; True when it was still running (the kill landed)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        process.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        return True


def _reference(base: Path, documents: int) -> tuple[Path, float, tuple[str, dict[str, int]]]:
    """A corpus of ``documents`` files, indexed once uninterrupted: (corpus, seconds, its content digest)."""
    corpus = write_corpus(base / "corpus", documents)
    reference = base / "reference.db"
    started = time.perf_counter()
    done = _cli("index", str(corpus), "--db", str(reference))
    assert done.returncode == 0, done.stderr
    return corpus, time.perf_counter() - started, content_digest(reference)


def run_index_kills(kills: int, documents: int, seed: int = 11) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        corpus, full_s, (expected, counts) = _reference(base, documents)
        victim = base / "victim.db"
        landed, problems, phases = 0, [], {"index": 0, "index --no-embed": 0, "embed": 0}
        for number in range(kills):
            phase = ("index", "index --no-embed", "embed")[number % 3]
            args = {"index": ["index", str(corpus)], "index --no-embed": ["index", str(corpus), "--no-embed"],
                    "embed": ["embed"]}[phase]  # fmt: skip
            if phase == "embed" and not victim.exists():
                args = ["index", str(corpus), "--no-embed"]
            if _kill_after([*CLI, *args, "--db", str(victim)], rng.uniform(0.3, full_s * 0.8)):
                landed += 1
                phases[phase] += 1
            if victim.exists():
                problems += [f"kill {number} ({phase}): {p}" for p in integrity(victim)]
                opened = _cli("status", "--db", str(victim), "--json", timeout=120)
                if opened.returncode != 0:
                    problems.append(f"kill {number} ({phase}): status failed: {opened.stderr.strip()[:200]}")
                searched = _cli("search", "cell protein", "--db", str(victim), "--json", timeout=120)
                if searched.returncode != 0 and "does not exist" not in searched.stderr:
                    problems.append(
                        f"kill {number} ({phase}): search failed: {searched.stderr.strip()[:200]}"
                    )
        final = _cli("index", str(corpus), "--db", str(victim))
        if final.returncode != 0:
            problems.append(f"final re-run failed: {final.stderr.strip()[:300]}")
        actual, actual_counts = content_digest(victim)
        problems += integrity(victim)
        return {
            "kills": kills, "kills_landed": landed, "by_phase": phases, "reference_index_s": round(full_s, 1),
            "reference": counts, "after": actual_counts, "matches_reference": actual == expected,
            "problems": problems,
        }  # fmt: skip


ANN_CHILD = """
import sys, numpy as np
from retrievo.store.sqlite import store as s
from retrievo.models import Filters, LoadedDocument, ChunkDraft
from retrievo.text.hashing import embedding_key, sha256_text
from retrievo.store.sqlite import searching
searching.ANN_MIN_VECTORS = 1000
db, round_ = sys.argv[1], int(sys.argv[2])
from pathlib import Path
store = s.SQLiteStore(Path(db), create=True)
store.ensure_collection("c"); store.set_collection_model("c", "m", 384)
rng = np.random.default_rng(round_ + 1)
def write(name, n):
    texts = [f"chunk {name} {i} words" for i in range(n)]
    body = "\\n".join(texts); drafts = []; off = 0
    for t in texts:
        drafts.append(ChunkDraft(t, off, off + len(t), 1, 1, name, "t", 1, sha256_text(t))); off += len(t) + 1
    store.write_revision("c", LoadedDocument(source="/" + name, text=body, title=name), sha256_text(body), drafts, None)
    v = rng.standard_normal((n, 384)).astype(np.float32); v /= np.linalg.norm(v, axis=1, keepdims=True)
    store.put_embeddings("m", [embedding_key(d.context, d.text) for d in drafts], v)
if round_ < 0:
    write("base", 20000)
else:
    write(f"r{round_}", 500)
q = rng.standard_normal(384).astype(np.float32)
print(len(store.vector_search("c", "m", q / np.linalg.norm(q), Filters(), 5)))
"""

ANN_CHECK = """
import sys, numpy as np
from retrievo.store.sqlite import store as s
from retrievo.search.hybrid import SearchOptions, run_search
from retrievo.search.query import read_query
from retrievo.store.sqlite import searching
searching.ANN_MIN_VECTORS = 1000
from pathlib import Path
store = s.SQLiteStore(Path(sys.argv[1]))
q = np.ones(384, dtype=np.float32) / np.sqrt(384)
result = run_search(store, "c", read_query("chunk words"), SearchOptions(), lambda _: ("m", q))
thread = store._ann.rebuild_thread
if thread is not None:
    thread.join(120)
print(result.search_mode, len(result.hits))
"""


def run_ann_kills(kills: int, seed: int = 5) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "ann.db"
        started = time.perf_counter()
        setup = subprocess.run([sys.executable, "-c", ANN_CHILD, str(db), "-1"], capture_output=True,
                               text=True, check=False, cwd=ROOT)  # fmt: skip
        assert setup.returncode == 0, setup.stderr
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", ANN_CHILD, str(db), "999"], capture_output=True, check=True, cwd=ROOT
        )
        round_s = time.perf_counter() - started
        landed, torn_left, mid_save, answers, problems = 0, 0, 0, {}, []
        for number in range(kills):
            if _kill_after(
                [sys.executable, "-c", ANN_CHILD, str(db), str(number)], rng.uniform(0.3, round_s)
            ):
                landed += 1
            if list(Path(scratch).glob("*.tmp")):
                mid_save += 1  # killed between writing the temporary file and renaming it
            check = subprocess.run([sys.executable, "-c", ANN_CHECK, str(db)], capture_output=True, text=True,
                                   check=False, cwd=ROOT)  # fmt: skip
            if check.returncode != 0:
                problems.append(f"kill {number}: search failed: {check.stderr.strip()[-300:]}")
                continue
            mode = check.stdout.split()[0]
            answers[mode] = answers.get(mode, 0) + 1
            if mode != "hybrid":
                torn_left += 1
        return {
            "kills": kills, "kills_landed": landed, "killed_mid_save": mid_save,
            "answers_after_kill": answers, "torn_files_found": torn_left, "problems": problems,
            "build_s": round(build_s, 1), "round_s": round(round_s, 1),
        }  # fmt: skip


def run_first_index_kills(kills: int, documents: int, seed: int = 5) -> dict[str, Any]:
    """Each kill lands in a first `retrievo index` of a fresh index (where bulk writes are batched); after
    each: integrity, then a plain re-run whose content must equal the uninterrupted reference's."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        corpus, full_s, (expected, _) = _reference(base, documents)
        landed, matched, problems = 0, 0, []
        for number in range(kills):
            victim = base / f"victim-{number}.db"
            if _kill_after([*CLI, "index", str(corpus), "--db", str(victim)], rng.uniform(0.3, full_s * 0.9)):
                landed += 1
            if victim.exists():
                problems += [f"first-index kill {number}: {p}" for p in integrity(victim)]
            if _cli("index", str(corpus), "--db", str(victim)).returncode != 0:
                problems.append(f"first-index kill {number}: the re-run failed")
            elif content_digest(victim)[0] == expected:
                matched += 1
            else:
                problems.append(
                    f"first-index kill {number}: after the re-run the index differs from the reference"
                )
        return {"kills": kills, "kills_landed": landed, "matches_reference": matched,
                "reference_index_s": round(full_s, 1), "problems": problems}  # fmt: skip


def run(kills: int = 21, ann_kills: int = 10, documents: int = 150, first_kills: int = 0) -> dict[str, Any]:
    found = {"index_embed": run_index_kills(kills, documents), "ann_save": run_ann_kills(ann_kills)}
    if first_kills:
        found["first_index"] = run_first_index_kills(first_kills, documents)
    return found
