"""One short `retrievo` call served by a resident process: the imports and the static model's table are
paid once, not by every call.

The `retrievo` command starts here (``run``). A read-only command that answers quickly (``QUICK``:
``search``, ``locate``, ``status``, …) is handed to a resident process of this user when one is
listening; it forks a child that takes over the caller's standard streams (passed over the socket),
working folder, environment and umask, runs the command exactly as this process would and exits; its exit
status comes back. Without a resident process the call runs here, as before, and then starts one in the
background for the next call. Everything else (``index``, ``serve``, ``watch``, …) always runs here.

Linux only (it needs ``os.pidfd_open`` and file descriptors over a Unix socket); ``RETRIEVO_DAEMON=off``
turns it off. The socket lives in a folder only this user can enter (``RETRIEVO_DAEMON_DIR``, else
``$XDG_RUNTIME_DIR/retrievo``, else ``/tmp/retrievo-UID``); a folder that is another user's, or open to
others, is not used. Its name is a digest of the Python, this package's files, the installed packages and
every ``RETRIEVO_*`` variable, so a changed install or setting never meets an old process; an old one
leaves after ``RETRIEVO_DAEMON_IDLE_S`` (600) seconds without a call, as every one does.

This module imports only the standard library at its top: a call handed over pays the interpreter's start
and little else.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import struct
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

# Read-only commands that answer in a moment: served by the resident process when there is one.
QUICK = frozenset({
    "chunks", "context", "deps", "docs", "elements", "locate", "neighbours", "relations", "search",
    "similar", "status", "symbols", "tests-for",
})  # fmt: skip
# Variables besides RETRIEVO_* read when modules load (threads, caches, paths): part of the socket's name.
_KEYED = (
    "RETRIEVO_", "HOME", "PYTHON", "LANG", "LC_", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "OMP_",
    "OPENBLAS_", "MKL_", "ORT_", "TOKENIZERS_", "LD_",
)  # fmt: skip
_HEADER = struct.Struct("!I")
MAX_SOCKET_PATH = 100  # AF_UNIX paths stop at 108 bytes


def run() -> None:
    """The `retrievo` command: handed to the resident process where it may be, else run here (and then
    a resident process started, after a short call; as an `index` starts, so that it is ready by the
    time the index is, and as it ends: the searches that follow are served)."""
    argv = sys.argv[1:]
    command = _command(argv)
    path = socket_path() if command in {*QUICK, "index"} and enabled() else None
    if path is not None and command in QUICK:
        code = _relay(path, argv)
        if code is not None:
            sys.exit(code)
    if path is not None and command == "index":
        # Loading beside the indexing: ready for the first search. Started again after (below): one that
        # left idle during a long index is back; else that one stops at once.
        start(path)
    from retrievo.surfaces.cli.app import main

    try:
        main(prog_name="retrievo")
    finally:
        if path is not None:
            _flush()
            start(path)


def enabled() -> bool:
    setting = os.environ.get("RETRIEVO_DAEMON", "on").strip().lower()
    return (
        setting not in {"off", "0", "false", "no"}
        and sys.platform == "linux"
        and hasattr(os, "pidfd_open")
        and hasattr(socket, "send_fds")
    )


def _command(argv: list[str]) -> str | None:
    words = [word for word in argv if word not in {"-v", "--verbose"}]
    return words[0] if words else None


def folder() -> Path | None:
    """This user's folder for the socket, made private if new; ``None`` if it is not private."""
    from pathlib import Path

    where = _folder()
    return Path(where) if where else None


def _folder() -> str | None:
    where = os.environ.get("RETRIEVO_DAEMON_DIR") or (
        os.path.join(os.environ["XDG_RUNTIME_DIR"], "retrievo")
        if os.environ.get("XDG_RUNTIME_DIR")
        else f"/tmp/retrievo-{os.getuid()}"
    )
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        found = os.lstat(where)
    except OSError:
        return None
    private = found.st_uid == os.getuid() and not found.st_mode & 0o077 and os.path.isdir(where)
    return where if private and not os.path.islink(where) else None


def socket_path() -> str | None:
    place = _folder()
    if place is None:
        return None
    path = os.path.join(place, f"{key()}.sock")
    return path if len(path.encode()) <= MAX_SOCKET_PATH else None


def key() -> str:
    """A digest of what the resident process would have loaded: the interpreter, this package's files
    (name, size, time), the installed packages' folders and the settings read at import."""
    digest = hashlib.sha256()
    digest.update(f"{sys.executable}\0{sys.version}\0{sys.path}\0".encode())
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    for root, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".json", ".npy", ".onnx")):
                stat = os.stat(os.path.join(root, name))
                digest.update(f"{root}/{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    for entry in sys.path:
        if entry.endswith("-packages") and os.path.isdir(entry):
            digest.update(f"{entry}\0{os.stat(entry).st_mtime_ns}\0".encode())
    for name in sorted(os.environ):
        if name.startswith(_KEYED):
            digest.update(f"{name}={os.environ[name]}\0".encode())
    return digest.hexdigest()[:20]


def _relay(path: str, argv: list[str]) -> int | None:
    """The call served by the resident process at ``path``: its exit status; ``None`` where none took it
    (nothing listening, or it refused), so the call runs here."""
    link = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        link.connect(path)
    except OSError:  # nothing listening
        link.close()
        return None
    umask = os.umask(0o022)
    os.umask(umask)
    try:
        request = {
            "op": "run", "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask,
            "streams": [[stream.encoding, stream.errors] if stream else None
                        for stream in (sys.stdin, sys.stdout, sys.stderr)],
        }  # fmt: skip
        child = _ask(link, request, [0, 1, 2])
    except (OSError, ValueError):  # a folder gone, a stream closed, a process that went away: run here
        link.close()
        return None
    if "pid" not in child:  # refused (stopping)
        link.close()
        return None
    import signal

    # Ctrl-C reaches this process (the terminal's foreground group): the child is told, as it would be.
    signal.signal(signal.SIGINT, lambda *_: os.kill(int(child["pid"]), signal.SIGINT))
    try:
        ended = _read(link)
    except (OSError, ValueError):
        ended = {}
    if "exit" not in ended:
        sys.stderr.write(
            "retrievo: the resident process ended during the call (run it again; RETRIEVO_DAEMON=off runs "
            "every call in its own process)\n"
        )
        return 1
    return int(ended["exit"])


def _ask(link: socket.socket, request: dict[str, Any], fds: list[int]) -> dict[str, Any]:
    body = json.dumps(request).encode()
    message = _HEADER.pack(len(body)) + body
    sent = socket.send_fds(link, [message], fds) if fds else 0
    link.sendall(message[sent:])
    return _read(link)


def _read(link: socket.socket) -> dict[str, Any]:
    """One line of JSON from ``link``; ``{}`` at its end."""
    data = b""
    while not data.endswith(b"\n"):
        more = link.recv(4096)
        if not more:
            return {}
        data += more
    answer: dict[str, Any] = json.loads(data)
    return answer


def start(path: str) -> None:
    """A resident process for ``path`` started in the background (it stops at once if one is there)."""
    import subprocess

    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-P", "-c", "from retrievo.surfaces.cli.server import serve; serve()", path],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True, cwd="/",
        )  # fmt: skip


def ask(path: str, op: str) -> dict[str, Any]:
    """``ping`` or ``stop`` to the resident process at ``path``; ``{}`` if none answers."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as link:
            link.settimeout(5)
            link.connect(path)
            return _ask(link, {"op": op}, [])
    except (OSError, ValueError):
        return {}


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
