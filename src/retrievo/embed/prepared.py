"""The bundled model's serving graph, prepared once per machine and kept on disk.

Loading the bundled model used to cost most of a CLI search (docs/benchmarks.md "One CLI call"): the
kernel probes (``embed/kernels.py``), the integer rewrite (``embed/integer.py``) and ONNX Runtime's graph
optimisations, about 0.6 s of CPU on every start. The first load on a machine does that work and saves
ONNX Runtime's optimised graph (``SessionOptions.optimized_model_filepath``) with the kernels it chose;
later loads read that graph with optimisations off, which ONNX Runtime's docs describe as the way to
skip them at start-up.

A saved graph is only used where it was made for: its name is a digest of the model file's pinned
SHA-256, the ONNX Runtime version, the kernels setting, the CPU's name and features, and the source of
the modules that build the graph (a change to the rewrite makes a new name). It is also checked before
it serves: the vector of ``CHECK_TEXT`` from the loaded graph must equal, bit for bit, the one the
freshly built graph gave when it was saved; anything else (a truncated or edited file, another
runtime's output) is said in the log, removed and built again. Files are written under a temporary
name and renamed, the record last, so a killed writer leaves no half file behind that is read.

Where: ``<cache>/models/`` (``RETRIEVO_CACHE_DIR``, default ``~/.retrievo/cache``); about 60 MB a
kernels setting. A folder that cannot be written just means no saving: the model loads as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from retrievo.embed.kernels import cpu, cpu_identity

log = logging.getLogger(__name__)

CHECK_TEXT = "def search(query): return the passages that answer it, with their citations"
# The modules whose code shapes the saved graph: a change to any of them names a new file.
_SOURCES = ("integer.py", "kernels.py", "local.py", "prepared.py")
STALE_S = 3600.0  # a temporary file this old is a killed loader's


class Prepared:
    """One kernels setting's saved graph in ``folder``: ``load`` it, or ``save`` one just built."""

    def __init__(self, folder: Path, model_sha256: str, setting: str, runtime_version: str) -> None:
        self.folder = folder
        self.key = _key(model_sha256, setting, runtime_version)
        self.graph = folder / f"{self.key}.onnx"
        self.record = folder / f"{self.key}.json"

    def staging(self) -> Path | None:
        """A temporary path of its own for ONNX Runtime to write the optimised graph to while it builds
        the session (another loader, in this process or another, has its own); None where the folder
        cannot be made (no saving). What a killed loader left there over an hour ago is removed."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for stale in self.folder.glob(f".{self.key}.*.tmp"):
                with contextlib.suppress(OSError):
                    if time.time() - stale.stat().st_mtime > STALE_S:
                        stale.unlink()
        except OSError as exc:
            log.debug("no saved model graph: %s", exc)
            return None
        return self.folder / f".{self.key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.onnx.tmp"

    def drop(self, staged: Path) -> None:
        """Forget a staged graph that is not to be kept (a fallback, not the graph asked for)."""
        with contextlib.suppress(OSError):
            staged.unlink(missing_ok=True)

    def load(
        self, open_session: Callable[[Path], Any], embed: Callable[[Any], np.ndarray]
    ) -> tuple[Any, str] | None:
        """The saved session and its kernels, or None (nothing saved, or it failed its check: removed)."""
        try:
            record = json.loads(self.record.read_text(encoding="utf-8"))
            kernels = str(record["kernels"])
            want = np.asarray(record["check"], dtype=np.float32)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        try:
            session = open_session(self.graph)
            got = np.asarray(embed(session), dtype=np.float32)
        except Exception as exc:  # a truncated or foreign file: built again
            self._discard(f"{type(exc).__name__}: {exc}")
            return None
        if got.shape != want.shape or not np.array_equal(got, want):
            self._discard("its check vector differs from the one saved with it")
            return None
        return session, kernels

    def saved(self) -> tuple[str, dict[str, Any]] | None:
        """The kernels and the CPU (``kernels.cpu()``) recorded with the saved graph, without loading it."""
        try:
            record = json.loads(self.record.read_text(encoding="utf-8"))
            return str(record["kernels"]), dict(record["cpu"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, staged: Path, kernels: str, check: np.ndarray) -> None:
        """Keep the graph ONNX Runtime wrote to ``staged`` (its check vector and kernels beside it)."""
        record = {"kernels": kernels, "check": np.asarray(check, dtype=np.float32).tolist(), "cpu": cpu()}
        temporary = staged.with_name(staged.name.removesuffix(".onnx.tmp") + ".json.tmp")
        try:
            if not staged.exists():
                return
            os.replace(staged, self.graph)
            temporary.write_text(json.dumps(record), encoding="utf-8")
            os.replace(temporary, self.record)
        except OSError as exc:
            log.debug("the model graph was not saved: %s", exc)
            for path in (staged, temporary):
                path.unlink(missing_ok=True)

    def _discard(self, why: str) -> None:
        log.warning("the saved model graph %s is not used (%s); it is built again", self.graph, why)
        for path in (self.record, self.graph):
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)


def runtime_version() -> str | None:
    """The installed ONNX Runtime's version, read from its package (no import: ``describe`` stays light);
    None for a runtime packaged under another name (``onnxruntime-gpu``): nothing is saved for it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("onnxruntime")
    except PackageNotFoundError:
        return None


def _key(model_sha256: str, setting: str, runtime_version: str) -> str:
    name, features = cpu_identity()
    digest = hashlib.sha256(json.dumps([model_sha256, setting, runtime_version, name, features]).encode())
    here = Path(__file__).parent
    for source in _SOURCES:
        digest.update((here / source).read_bytes())
    return f"minilm-{setting}-{digest.hexdigest()[:20]}"
