"""The resident process that serves short `retrievo` calls (``resident.py`` says what and why).

One thread, one loop: it accepts a call, forks a child for it and waits, through a pidfd, for the child
to end, then sends its exit status back. A child is the caller's process in all but name: the caller's
streams (received over the socket), folder, environment and umask, and a fresh import of the command line
(its consoles read the caller's terminal). A caller that goes away takes its child with it (SIGTERM).
Only this user may connect (the folder is private, and the peer's uid is checked)."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import gc
import importlib
import importlib.util
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from typing import IO, Any

from retrievo.surfaces.cli.resident import _HEADER

MAX_REQUEST = 1 << 20  # a call's arguments and environment; more is refused
IDLE_S = 600.0
# What the resident process imports before it serves (not the CLI's own modules: they make their consoles,
# which read the terminal, when imported; a child imports them for its caller's terminal).
PRELOAD = (
    "numpy", "apsw", "click", "rich.console", "rich.table", "rich.markup", "rich.syntax", "rich.panel",
    "retrievo.engine", "retrievo.embed.static", "retrievo.embed.local", "retrievo.surfaces.serialize",
    "retrievo.surfaces.filters", "retrievo.surfaces.present", "onnxruntime", "tokenizers",
    "tantivy", "usearch.index",  # a large collection's side indexes (a child would import them at its first search)
)  # fmt: skip

# A scratch index the process searches once as it starts (the static model, a file of code and one of prose):
# what a process's first search pays once — modules imported at first use, regular expressions compiled,
# numpy's lazy parts — is paid here, not again by every child it forks (a child's search ~0.08 → ~0.04 s; a
# served call, the caller's interpreter included, ~0.16 → ~0.12 s on chi).
WARM_UP_FILES = {
    "parser.py": '''"""Read a configuration file."""


class Parser:
    """Reads ``key = value`` lines."""

    def parse(self, text: str) -> dict[str, str]:
        return dict(line.split(" = ", 1) for line in text.splitlines() if " = " in line)
''',
    "guide.md": "# Guide\n\n## Configuration\n\nThe parser reads one setting a line.\n",
}
WARM_UP_QUERIES = ("how does the parser read a configuration file", "Parser", "parse settings")


def serve() -> None:
    """The resident process (``sys.argv[1]``: its socket). Leaves when idle, stopped, or its socket is
    taken away."""
    # Started with -P from "/": nothing is imported from the folder of the call that started it (nor,
    # later, from a caller's folder: a child enters it to run the call)
    sys.path[:] = [entry for entry in sys.path if entry not in {"", "."}]
    Resident(sys.argv[1], float(os.environ.get("RETRIEVO_DAEMON_IDLE_S", IDLE_S)), PRELOAD).serve()


class Resident:
    def __init__(self, path: str, idle_s: float, preload: tuple[str, ...]) -> None:
        self.path, self.idle_s, self.preload = path, idle_s, preload
        self.children: dict[int, tuple[int, socket.socket]] = {}  # pid → (pidfd, the caller's socket)
        self.stopping = False
        self.served = 0
        self.started = time.time()
        self._inode = -1
        self._selector = selectors.DefaultSelector()
        self._closing: list[Any] = []  # what a child closes first

    def serve(self) -> None:
        descriptor = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another process serves this socket, or is starting to
            os.close(descriptor)
            return
        self._closing.append(descriptor)
        try:
            self._load()
            listener = self._listen()
            try:
                self._loop(listener)
            finally:
                listener.close()
                if self._ours():
                    os.unlink(self.path)
                    with contextlib.suppress(OSError):  # the lock's file too: none piles up in the folder
                        os.unlink(self.path + ".lock")
        finally:
            os.close(descriptor)

    def _load(self) -> None:
        for name in self.preload:
            try:
                importlib.import_module(name)
            except Exception:
                continue
        try:  # a first search's costs paid once, here
            warm_up()
        except Exception:
            gc.collect()  # what the failed warm-up left open (a connection its traceback held) is closed now
        with contextlib.suppress(
            Exception
        ):  # the same: a child that needs the table reads it (and says why not)
            from retrievo.embed.static import preload

            preload()
        with contextlib.suppress(Exception):  # the bundled model, where it is the one configured, loaded once
            from retrievo.config import Config
            from retrievo.embed.factory import make_embedder
            from retrievo.embed.local import MiniLMEmbedder

            embedder = make_embedder(Config.from_env())
            # not where a GPU may serve it: CUDA, once started, does not survive a fork
            if isinstance(embedder, MiniLMEmbedder) and (
                embedder.device == "cpu" or not importlib.util.find_spec("torch")
            ):
                embedder.share()

    def _listen(self) -> socket.socket:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a socket left by a process that was killed (the lock says none serves it)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mask = os.umask(0o177)
        try:
            listener.bind(self.path)
        finally:
            os.umask(mask)
        listener.listen(64)
        self._inode = os.stat(self.path).st_ino
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        self._selector.register(listener, selectors.EVENT_READ, ("listen", 0))
        self._closing += [listener, self._selector]
        return listener

    def _ours(self) -> bool:
        try:
            return os.stat(self.path).st_ino == self._inode
        except OSError:
            return False

    def _loop(self, listener: socket.socket) -> None:
        last = time.monotonic()
        while True:
            if not self.children and (
                self.stopping or time.monotonic() - last > self.idle_s or not self._ours()
            ):
                return
            for event, _ in self._selector.select(timeout=1.0):
                kind, pid = event.data
                try:
                    if kind == "listen":
                        last = time.monotonic()
                        self._accept(listener)
                    elif kind == "child":
                        self._reap(pid)
                    elif pid in self.children:  # not reaped in this same round
                        self._caller_left(pid)
                except (OSError, ValueError, KeyError):  # one call's trouble never ends the others
                    continue

    def _accept(self, listener: socket.socket) -> None:
        try:
            link, _ = listener.accept()
        except OSError:
            return
        fds: list[int] = []
        try:
            link.settimeout(5)
            _, uid, _ = struct.unpack("3i", link.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            if uid != os.getuid():
                raise PermissionError(f"uid {uid} may not use this process")
            request, fds = _receive(link)
            if request.get("op") == "run" and not self.stopping and len(fds) == 3:
                self._fork(link, request, fds)
                return
            _send(link, self._answer(request))
        except (OSError, ValueError):
            pass
        for fd in fds:
            os.close(fd)
        link.close()

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("op") == "stop":
            self.stopping = True
        if request.get("op") in {"ping", "stop"}:
            return {
                "pid": os.getpid(), "socket": self.path, "started": self.started, "served": self.served,
                "running": len(self.children), "children": sorted(self.children), "stopping": self.stopping,
            }  # fmt: skip
        return {"refused": "stopping" if self.stopping else "not a call this process serves"}

    def _fork(self, link: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        # SIGTERM waits until the child has its own handler (the inherited one only marks this process)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 70
            try:
                code = self._child(link, request, fds)
            finally:
                os._exit(code)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        for fd in fds:
            os.close(fd)
        fds.clear()  # the caller's: closed here, not again by _accept
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # it cannot be followed: stopped before it runs, and the caller runs the call itself
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
        self.served += 1
        self.children[pid] = (pidfd, link)
        self._selector.register(pidfd, selectors.EVENT_READ, ("child", pid))
        try:
            _send(link, {"pid": pid})
            self._selector.register(link, selectors.EVENT_READ, ("caller", pid))
        except OSError:
            self._caller_left(pid)

    def _reap(self, pid: int) -> None:
        pidfd, link = self.children.pop(pid)
        self._selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):
            _send(link, {"exit": code if code >= 0 else 128 - code})
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(link)
        link.close()

    def _caller_left(self, pid: int) -> None:
        """The caller's socket is readable: it has gone (nothing else comes on it). Its child follows."""
        _, link = self.children[pid]
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(link)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)

    def _child(self, link: socket.socket, request: dict[str, Any], fds: list[int]) -> int:
        """The caller's command, run as the caller would have run it; its exit status."""
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        for thing in self._closing:
            with contextlib.suppress(OSError):
                os.close(thing) if isinstance(thing, int) else thing.close()
        for pidfd, other in self.children.values():
            os.close(pidfd)
            other.close()
        link.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        streams = request.get("streams") or [None, None, None]
        sys.stdin = _stream(0, "r", streams[0], line=False)
        sys.stdout = _stream(1, "w", streams[1], line=os.isatty(1))
        sys.stderr = _stream(2, "w", streams[2], line=True)
        os.environ.clear()
        os.environ.update(request["env"])
        os.umask(int(request["umask"]))
        sys.argv = ["retrievo", *request["argv"]]
        code = 1
        try:
            os.chdir(request["cwd"])
            from retrievo.surfaces.cli.app import main

            main(args=list(request["argv"]), prog_name="retrievo")
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except OSError as exc:
            print(f"retrievo: {exc}", file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        # what the interpreter does at exit: wait for the threads left running, run the exit functions,
        # flush (a failed flush of standard output is status 120, as Python says it)
        getattr(threading, "_shutdown", lambda: None)()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                code = code or 120
        return code


def warm_up() -> None:
    """One search of each kind over a scratch index (``WARM_UP_FILES``), made in the temporary folder and
    removed; it reads no other setting of the environment (no store, model or folder of the user's is
    touched), and leaves the temporary folder to be looked up again (a child's is its caller's)."""
    import tempfile
    from pathlib import Path

    from retrievo.config import Config
    from retrievo.engine import Engine

    kept = tempfile.tempdir  # the temporary folder is looked up afresh in each child (its caller's TMPDIR)
    try:
        with tempfile.TemporaryDirectory(prefix="retrievo-warm-") as scratch:
            files = Path(scratch) / "files"
            files.mkdir()
            for name, text in WARM_UP_FILES.items():
                (files / name).write_text(text, encoding="utf-8")
            config = Config(
                db=Path(scratch) / "warm.db", cache_dir=Path(scratch) / "cache", embedder="static"
            )
            with Engine(config) as engine:
                engine.index([files])
                for query in WARM_UP_QUERIES:
                    engine.search(query)
    finally:
        tempfile.tempdir = kept


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _stream(fd: int, mode: str, spec: list[str] | None, line: bool) -> IO[str]:
    encoding, errors = spec if spec else (None, None)
    return open(fd, mode, buffering=1 if line else -1, encoding=encoding, errors=errors, closefd=False)


def _receive(link: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _, _ = socket.recv_fds(link, 65536, 3)
    try:
        if len(data) < _HEADER.size:
            raise ValueError("a request too short")
        (size,) = _HEADER.unpack_from(data)
        if size > MAX_REQUEST:
            raise ValueError("a request too long")
        while len(data) < _HEADER.size + size:
            more = link.recv(min(65536, _HEADER.size + size - len(data)))
            if not more:
                raise ValueError("a request cut short")
            data += more
        request = json.loads(data[_HEADER.size :])
        if not isinstance(request, dict):
            raise ValueError("a request that is not an object")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return request, fds


def _send(link: socket.socket, answer: dict[str, Any]) -> None:
    link.sendall(json.dumps(answer).encode() + b"\n")
