"""The live index: edits, additions, deletions, renames and .gitignore, through real file-system events."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from retrievo import Config, Engine
from retrievo.operations.watch import Update, Watcher

WAIT_S = 20.0


def _until(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_the_watcher_keeps_keyword_search_current(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".gitignore").write_text("secret.py\n")
    (repo / "app.py").write_text("def start():\n    return 'zebra'\n")
    updates: list[Update] = []
    with Engine(Config(db=tmp_path / "w.db", embedder="none")) as engine:
        engine.index([repo])
        watcher = Watcher(engine, [repo], embed=False, on_update=updates.append, debounce_ms=50)
        thread, stop = watcher.start()
        try:

            def found(word: str) -> bool:
                return bool(engine.search(word, mode="keyword").hits)

            assert watcher.ready.wait(WAIT_S), "the watches are armed"
            (repo / "app.py").write_text("def start():\n    return 'giraffe'\n")
            assert _until(lambda: found("giraffe")), "an edit becomes searchable"
            assert not found("zebra"), "the old text left search"
            (repo / "new.py").write_text("def added():\n    return 'okapi'\n")
            assert _until(lambda: found("okapi")), "an added file becomes searchable"
            (repo / "new.py").rename(repo / "moved.py")
            assert _until(
                lambda: any(
                    h.chunk.path.endswith("moved.py") for h in engine.search("okapi", mode="keyword").hits
                )
            )
            assert _until(
                lambda: (
                    not any(
                        h.chunk.path.endswith("new.py") for h in engine.search("okapi", mode="keyword").hits
                    )
                )
            )
            (repo / "secret.py").write_text("TOKEN = 'pangolin'\n")
            (repo / "moved.py").unlink()
            assert _until(lambda: not found("okapi")), "a deleted file leaves search"
            assert not found("pangolin"), "a .gitignore'd file is never indexed"
        finally:
            stop.set()
            thread.join(timeout=10)
    assert not thread.is_alive()
    assert updates and all(u.keyword_ms >= 0 for u in updates)
    assert engine.update_paths([repo], [tmp_path / "elsewhere.py"]).files_seen == 0
