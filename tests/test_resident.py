"""The resident process behind short `retrievo` calls (surfaces/cli/resident.py, server.py): the real
`retrievo` script, real processes, real sockets and a real terminal (a pty)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import HANDBOOK
from retrievo.surfaces.cli import resident

RETRIEVO = str(Path(sys.executable).parent / "retrievo")
QUERY = "how do I rotate keys"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("resident") / "h.db"
    env = dict(os.environ, RETRIEVO_EMBEDDER="static")
    subprocess.run(
        [RETRIEVO, "index", str(HANDBOOK), "--db", str(db)], env=env, check=True, capture_output=True
    )
    return db


@pytest.fixture()
def place() -> Iterator[Path]:
    """A private folder for the sockets (short: a socket's path stops at 108 bytes); every process
    started there is stopped, and waited for, at the end."""
    where = Path(tempfile.mkdtemp(prefix="rd", dir="/tmp"))
    yield where
    for path in where.glob("*.sock"):
        resident.ask(str(path), "stop")
    deadline = time.monotonic() + 20
    while any(where.glob("*.sock")) and time.monotonic() < deadline:
        time.sleep(0.1)
    shutil.rmtree(where)


def environment(place: Path, **more: str) -> dict[str, str]:
    return (
        dict(os.environ, RETRIEVO_DAEMON="on", RETRIEVO_DAEMON_DIR=str(place), RETRIEVO_EMBEDDER="static")
        | more
    )


def call(env: dict[str, str], *arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [RETRIEVO, *arguments], check=False, env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


def serving(place: Path) -> dict[str, object]:
    """The one resident process in ``place``, once it answers."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for path in place.glob("*.sock"):
            if answer := resident.ask(str(path), "ping"):
                return answer
        time.sleep(0.1)
    raise AssertionError(f"no resident process answered in {place}")


def without_timings(text: str) -> str:
    text = re.sub(r'"(search_duration_ms|model_load_ms)": [0-9.]+', '"\\1": 0', text)
    text = re.sub(r" \(\+ [0-9.]+ ms loading the model\)", "", text)  # said where loading took a while
    return re.sub(r" +", " ", re.sub(r"[0-9.]+ ms", "ms", text))  # a title centred on its figures


def test_a_first_call_starts_it_and_the_next_are_served_by_it_with_the_same_answers(
    index: Path, place: Path, tmp_path: Path
) -> None:
    env = environment(place)
    alone = call(dict(env, RETRIEVO_DAEMON="off"), "search", QUERY, "--db", str(index), "--json")
    first = call(env, "search", QUERY, "--db", str(index), "--json")
    assert first.returncode == alone.returncode == 0
    assert serving(place)["served"] == 0  # the first call ran in its own process, and started one
    second = call(env, "search", QUERY, "--db", str(index), "--json")
    assert serving(place)["served"] == 1
    assert without_timings(second.stdout) == without_timings(alone.stdout)
    assert json.loads(second.stdout)["results"]
    # the caller's folder: a relative --db is read from where the call was made
    (tmp_path / "here").mkdir()
    shutil.copy(index, tmp_path / "here" / "h.db")
    relative = call(env, "status", "--db", "h.db", "--json", cwd=tmp_path / "here")
    assert relative.returncode == 0 and json.loads(relative.stdout)["collections"]
    # errors and exit statuses are the caller's own: a missing index, a wrong option
    missing = call(env, "search", QUERY, "--db", str(tmp_path / "none.db"))
    missing_alone = call(dict(env, RETRIEVO_DAEMON="off"), "search", QUERY, "--db", str(tmp_path / "none.db"))
    assert (missing.returncode, missing.stderr) == (missing_alone.returncode, missing_alone.stderr) != (0, "")
    assert call(env, "search", "--no-such-option").returncode == 2
    assert serving(place)["served"] == 4
    # what is not short runs in its own process, always
    assert call(env, "collection", "--help").returncode == 0
    assert serving(place)["served"] == 4


def test_the_bundled_model_loaded_once_by_the_resident_process_gives_its_children_the_same_vectors(
    tmp_path: Path, place: Path
) -> None:
    env = environment(place)
    del env["RETRIEVO_EMBEDDER"]  # the bundled model, the default
    db = tmp_path / "m.db"
    subprocess.run(
        [RETRIEVO, "index", str(HANDBOOK), "--db", str(db)], env=env, check=True, capture_output=True
    )
    returned = time.time()
    started = serving(place)
    assert started["served"] == 0  # `index` starts one as it starts: the searches after it are served
    assert float(started["started"]) < returned  # loading while the index was made, not after
    alone = call(dict(env, RETRIEVO_DAEMON="off"), "search", QUERY, "--db", str(db), "--json", "--explain")
    served = [call(env, "search", QUERY, "--db", str(db), "--json", "--explain") for _ in range(2)]
    assert serving(place)["served"] == 2
    assert json.loads(alone.stdout)["model_id"] == "all-MiniLM-L6-v2-int8"
    assert (
        without_timings(served[0].stdout)
        == without_timings(served[1].stdout)
        == without_timings(alone.stdout)
    )


def test_a_shared_session_gives_a_forked_child_the_same_vectors(tmp_path: Path) -> None:
    """MiniLMEmbedder.share: a later embedder of the same settings uses the session, and a child forked
    after it embeds with it exactly as the parent does (a fresh interpreter: no fork inside pytest)."""
    script = f"""
import os, numpy as np
from pathlib import Path
from retrievo.embed.local import MiniLMEmbedder
first = MiniLMEmbedder(prepared_dir=Path({str(tmp_path)!r}))
first.share()
second = MiniLMEmbedder(prepared_dir=Path({str(tmp_path)!r}))
assert second._load() is first._session and second.kernels == first.kernels
other = MiniLMEmbedder(prepared_dir=Path({str(tmp_path / "other")!r}))  # other settings: its own session
assert other._load() is not first._session
texts = ["how do I rotate keys", "a longer passage about parental leave and how to ask for it"]
parent = first.embed_batch(texts)
pid = os.fork()
if pid == 0:
    os._exit(0 if np.array_equal(MiniLMEmbedder(prepared_dir=Path({str(tmp_path)!r})).embed_batch(texts), parent) else 3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "0"


def test_nothing_is_imported_from_the_callers_folder(index: Path, place: Path, tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    for name in ("numpy", "rich", "click", "apsw", "tokenizers"):
        (tmp_path / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write('{name} ')\n")
    env = environment(place)
    first = call(env, "status", "--db", str(index), "--json", cwd=tmp_path)  # starts one from here
    serving(place)
    served = call(env, "status", "--db", str(index), "--json", cwd=tmp_path)
    assert serving(place)["served"] == 1
    assert first.returncode == served.returncode == 0 and json.loads(served.stdout)["collections"]
    assert not marker.exists()


def test_a_call_on_a_terminal_reads_as_it_would_in_its_own_process(index: Path, place: Path) -> None:
    env = environment(place)
    call(env, "status", "--db", str(index))
    serving(place)
    served, alone = (
        on_terminal([RETRIEVO, "search", QUERY, "--db", str(index)], setting)
        for setting in (env, dict(env, RETRIEVO_DAEMON="off"))
    )
    assert serving(place)["served"] == 1
    assert "\x1b[" in served  # colours: the child saw a terminal
    assert without_timings(served) == without_timings(alone)


def on_terminal(command: list[str], env: dict[str, str]) -> str:
    leader, follower = pty.openpty()
    # wide enough for the title on one line; the child reads the size from the terminal it is given
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    process = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    output = b""
    while select.select([leader], [], [], 30)[0]:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal's other end closed
            break
        if not data:
            break
        output += data
    process.wait(timeout=30)
    os.close(leader)
    return output.decode()


def blocked(env: dict[str, str], index: Path) -> tuple[subprocess.Popen[bytes], int, int]:
    """A served call whose child is stuck writing its answer (20 kB) to a pipe of 4 kB that nobody reads:
    the call, its child's pid, and the pipe's end to read."""
    reading, writing = os.pipe()
    fcntl.fcntl(writing, fcntl.F_SETPIPE_SZ, 4096)
    process = subprocess.Popen(
        [RETRIEVO, "search", "rotate keys", "--db", str(index), "--json", "--limit", "1000"],
        env=env, stdout=writing, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.close(writing)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = serving(Path(env["RETRIEVO_DAEMON_DIR"]))["children"]
        assert isinstance(children, list)
        if children and "pipe" in Path(f"/proc/{children[0]}/wchan").read_text():
            return process, int(children[0]), reading
        time.sleep(0.05)
    raise AssertionError("the call was not served")


def test_ctrl_c_reaches_the_child_and_a_caller_killed_takes_its_child_with_it(
    index: Path, place: Path
) -> None:
    env = environment(place)
    call(env, "status", "--db", str(index))
    serving(place)
    process, child, reading = blocked(env, index)
    process.send_signal(signal.SIGINT)
    _, errors = process.communicate(timeout=30)
    os.close(reading)
    assert process.returncode == 1 and b"Aborted" in errors
    assert not Path(f"/proc/{child}").exists() or Path(f"/proc/{child}/stat").read_text().split()[2] == "Z"

    process, child, reading = blocked(env, index)
    process.kill()
    process.wait(timeout=30)
    deadline = time.monotonic() + 30  # the pipe is still open and unread: only a signal ends the child
    while serving(place)["running"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert serving(place)["running"] == 0
    assert not Path(f"/proc/{child}").exists()
    process.communicate(timeout=30)
    os.close(reading)


def test_other_settings_meet_another_process_and_a_killed_one_is_replaced(index: Path, place: Path) -> None:
    env = environment(place)
    call(env, "status", "--db", str(index))
    first = serving(place)
    other = environment(place, RETRIEVO_PROGRESS_EVERY_S="5")
    assert _key(env) != _key(other)
    call(other, "status", "--db", str(index))
    deadline = time.monotonic() + 30
    while len(list(place.glob("*.sock"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(list(place.glob("*.sock"))) == 2

    os.kill(int(str(first["pid"])), signal.SIGKILL)
    time.sleep(0.5)
    again = call(env, "status", "--db", str(index), "--json")  # runs in its own process, starts another
    assert again.returncode == 0 and json.loads(again.stdout)["collections"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answers = [resident.ask(str(path), "ping") for path in place.glob("*.sock")]
        if len([a for a in answers if a]) == 2:
            break
        time.sleep(0.1)
    assert {a["pid"] for a in answers if a} - {first["pid"]} == {a["pid"] for a in answers if a}


def _key(env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", "from retrievo.surfaces.cli.resident import key; print(key())"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_a_folder_others_may_enter_is_not_used_and_off_means_off(index: Path, place: Path) -> None:
    place.chmod(0o755)
    open_to_others = call(environment(place), "status", "--db", str(index))
    assert open_to_others.returncode == 0
    place.chmod(0o700)
    if os.getuid() == 0:  # only root can give the folder to another user
        os.chown(place, 65534, 65534)
        not_ours = call(environment(place), "status", "--db", str(index))
        os.chown(place, os.getuid(), os.getgid())
        assert not_ours.returncode == 0
    off = call(environment(place, RETRIEVO_DAEMON="off"), "status", "--db", str(index))
    assert off.returncode == 0
    time.sleep(1)
    assert list(place.iterdir()) == []
    listing = call(environment(place), "daemon", "--json")
    assert json.loads(listing.stdout) == {"enabled": True, "folder": str(place), "processes": []}


def test_an_idle_process_leaves_and_daemon_stop_stops_it(index: Path, place: Path) -> None:
    env = environment(place, RETRIEVO_DAEMON_IDLE_S="1")
    call(env, "status", "--db", str(index))
    serving(place)
    deadline = time.monotonic() + 30
    while any(place.glob("*.sock")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(place.glob("*.sock"))

    env = environment(place)
    call(env, "status", "--db", str(index))
    pid = serving(place)["pid"]
    stopped = json.loads(call(env, "daemon", "--stop", "--json").stdout)
    assert [p["pid"] for p in stopped["processes"]] == [pid] and stopped["processes"][0]["stopping"]
    deadline = time.monotonic() + 30
    while any(place.glob("*.sock")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(place.glob("*.sock"))


def test_index_starts_the_resident_process_before_it_indexes_and_again_after(
    monkeypatch: pytest.MonkeyPatch, place: Path
) -> None:
    """`retrievo index` starts one as it starts (loaded by the time the index returns) and once more as
    it ends (one that left idle during a long index is back); a short call only after it ran here."""
    from retrievo.surfaces.cli import app

    calls: list[str] = []
    monkeypatch.setenv("RETRIEVO_DAEMON", "on")
    monkeypatch.setenv("RETRIEVO_DAEMON_DIR", str(place))
    monkeypatch.setattr(resident, "start", lambda path: calls.append("start"))
    monkeypatch.setattr(app, "main", lambda **_: calls.append("main"))
    monkeypatch.setattr(sys, "argv", ["retrievo", "index", str(HANDBOOK)])
    resident.run()
    assert calls == ["start", "main", "start"]
    calls.clear()
    monkeypatch.setattr(sys, "argv", ["retrievo", "status"])  # nothing listening: run here, then start
    resident.run()
    assert calls == ["main", "start"]


def test_warm_up_pays_a_first_searchs_costs_once_on_a_scratch_index_of_its_own(tmp_path: Path) -> None:
    """``server.warm_up`` (run as the process loads): a fresh interpreter that ran it has searched (the BLAS
    limit a search sets is set) and imported numpy's lazy parts, leaves no thread, no open file and no
    scratch folder behind, leaves the temporary folder to be looked up again (a child's is its caller's),
    and reads no other setting of the environment: the user's store and index file are untouched."""
    script = """
import glob, json, os, sys, tempfile, threading
from retrievo.search import threads
from retrievo.surfaces.cli import server
assert "numpy.ma" not in sys.modules and threads._APPLIED == []
fds = sorted(os.listdir("/proc/self/fd"))
before = set(glob.glob(tempfile.gettempdir() + "/retrievo-warm-*"))
tempfile.tempdir = None
server.warm_up()
print(json.dumps({
    "searched": threads._APPLIED,
    "ma": "numpy.ma" in sys.modules,
    "threads": len(threading.enumerate()),
    "fds": sorted(os.listdir("/proc/self/fd")) == fds,
    "tempdir": tempfile.tempdir,
    "left": sorted(set(glob.glob(tempfile.gettempdir() + "/retrievo-warm-*")) - before),
}))
"""
    users = tmp_path / "users.db"
    env = dict(
        os.environ,
        RETRIEVO_DB=str(users),
        RETRIEVO_STORE="postgresql://nobody@127.0.0.1:1/nowhere",
        RETRIEVO_EMBEDDER="openai",
        TMPDIR=str(tmp_path),
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    expected = {"searched": [1], "ma": True, "threads": 1, "fds": True, "tempdir": None, "left": []}
    assert json.loads(done.stdout) == expected
    assert not users.exists() and list(tmp_path.iterdir()) == []


def test_the_resident_process_warms_up_as_it_loads_and_a_failed_warm_up_is_no_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from retrievo.surfaces.cli import server

    calls: list[str] = []

    def failing() -> None:
        calls.append("warm_up")
        raise OSError("no temporary folder")

    monkeypatch.setattr(server, "warm_up", failing)
    monkeypatch.setenv("RETRIEVO_EMBEDDER", "static")  # the bundled model is not shared into this process
    server.Resident("/nowhere.sock", 1.0, ())._load()  # no exception: the process goes on to serve
    assert calls == ["warm_up"]
