"""launcher against real processes: logs, sidecars, detachment, failures."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import wait_for

from logforensics._launcher import (
    SCHEMA,
    LaunchError,
    LaunchResult,
    Sidecar,
    launch,
    read_sidecar,
    sidecar_path,
)
from logforensics._procinfo import process_info

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable




def wait_finished(log: Path, timeout: float = 4.0) -> Sidecar:
    sc = wait_for(lambda: (s := read_sidecar(log)) is not None and s.finished and s, timeout)
    assert sc, f"sidecar of {log} never recorded the end: {read_sidecar(log)}"
    return sc


def alive(pid: int | None) -> bool:
    info = process_info(pid) if pid else None
    return bool(info and info.alive)


def stat_fields(pid: int) -> list[str]:
    """Fields of /proc/PID/stat from field 3 on (state, ppid, pgrp, session, tty_nr, …)."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw[raw.rindex(")") + 2 :].split()


def fd_targets(pid: int) -> dict[int, str]:
    d = f"/proc/{pid}/fd"
    return {int(n): os.readlink(f"{d}/{n}") for n in os.listdir(d)}


def _kill_if(pid: int | None, must_contain: str) -> None:
    info = process_info(pid) if pid else None
    if info and info.alive and must_contain in info.command_line:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def run(tmp_path, monkeypatch):
    """launch() that remembers what it started and kills leftovers afterwards."""
    monkeypatch.chdir(tmp_path)
    started: list[tuple[LaunchResult, str]] = []

    def _run(code: str, log: Path, append: bool = False) -> LaunchResult:
        marker = f"logx-test-{uuid.uuid4().hex}"
        res = launch([PY, "-c", code, marker], log, append=append)
        started.append((res, marker))
        return res

    yield _run
    for res, marker in started:
        _kill_if(res.pid, marker)
    for res, _ in started:
        if not wait_for(lambda r=res: not alive(r.supervisor_pid), timeout=2):
            _kill_if(res.supervisor_pid, "--supervise")


def test_stdout_and_stderr_to_log_and_exit_0(run, tmp_path):
    log = tmp_path / "server.log"
    code = "import sys; print('to-stdout', flush=True); print('to-stderr', file=sys.stderr)"
    res = run(code, log)
    assert res.log_path == log
    assert res.sidecar_path == tmp_path / "server.log.logx.json" == sidecar_path(log)
    assert res.pid > 0 and res.supervisor_pid and res.supervisor_pid != res.pid
    sc = wait_finished(log)
    text = log.read_text()
    assert "to-stdout" in text and "to-stderr" in text
    assert sc.schema == SCHEMA
    assert sc.pid == res.pid and sc.supervisor_pid == res.supervisor_pid
    assert sc.exit_code == 0 and sc.signal is None and sc.error is None
    assert sc.command[:2] == [PY, "-c"]
    assert sc.cwd == str(tmp_path) and sc.log == str(log) and sc.host
    assert sc.log_offset == 0
    assert sc.started_at_dt is not None and sc.ended_at_dt is not None
    assert sc.started_at_dt.utcoffset().total_seconds() == 0
    assert sc.started_at_dt <= sc.ended_at_dt
    raw = json.loads(res.sidecar_path.read_text())
    assert set(raw) >= {
        "schema", "pid", "supervisor_pid", "started_at", "command", "cwd", "host", "log",
        "log_offset", "ended_at", "exit_code", "signal",
    }  # fmt: skip
    # No temp files left behind by the atomic rewrite.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["server.log", "server.log.logx.json"]


def test_sidecar_exists_while_running(run, tmp_path):
    log = tmp_path / "run.log"
    gate = tmp_path / "go"
    res = run(f"import os, time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.01)\n", log)
    sc = read_sidecar(log)  # written before launch() returned
    assert sc is not None and sc.pid == res.pid and not sc.finished
    assert sc.exit_code is None and sc.signal is None
    assert alive(res.pid) and alive(res.supervisor_pid)
    gate.touch()
    assert wait_finished(log).exit_code == 0


def test_exit_code_3(run, tmp_path):
    log = tmp_path / "x.log"
    run("import sys; sys.exit(3)", log)
    sc = wait_finished(log)
    assert sc.exit_code == 3 and sc.signal is None


def test_killed_by_sigkill(run, tmp_path):
    log = tmp_path / "k.log"
    run("import os; print('before', flush=True); os.kill(os.getpid(), 9)", log)
    sc = wait_finished(log)
    assert sc.signal == 9 and sc.exit_code is None
    assert "before" in log.read_text()


def test_survives_launching_parent_exit(tmp_path):
    log = tmp_path / "p.log"
    marker = f"logx-test-{uuid.uuid4().hex}"
    child = "import time; print('first', flush=True); time.sleep(0.8); print('last', flush=True)"
    parent = (
        f"import sys, json; sys.path.insert(0, {str(ROOT)!r})\n"
        "from pathlib import Path\n"
        "from logforensics._launcher import launch\n"
        f"r = launch([sys.executable, '-c', {child!r}, {marker!r}], Path({str(log)!r}))\n"
        "print(json.dumps([r.pid, r.supervisor_pid]))\n"
    )
    # The parent's stdout is a pipe: communicate() returning proves nothing launched holds it.
    p = subprocess.Popen([PY, "-c", parent], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=4)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    pid, sup = json.loads(out)
    try:
        assert alive(pid), "server died with its launcher"
        assert alive(sup)
        sc = wait_finished(log)
        assert sc.pid == pid and sc.exit_code == 0
        text = log.read_text()
        assert "first" in text and "last" in text
    finally:
        _kill_if(pid, marker)


def test_detached_session_fds_and_no_tty(run, tmp_path):
    log = tmp_path / "d.log"
    gate = tmp_path / "go"
    with open(tmp_path / "leak.txt", "w") as leak:  # an inheritable fd in the launching process
        os.set_inheritable(leak.fileno(), True)
        res = run(
            "import os, time\n"
            "print('ready', flush=True)\n"
            f"while not os.path.exists({str(gate)!r}): time.sleep(0.01)\n",
            log,
        )
    try:
        # Inspect once the child interpreter finished starting up (imports open files).
        assert wait_for(lambda: "ready" in log.read_text())
        my_sid = os.getsid(0)
        for pid in (res.pid, res.supervisor_pid):
            fields = stat_fields(pid)
            session, tty_nr = int(fields[3]), int(fields[4])
            assert session != my_sid
            assert tty_nr == 0
            assert fd_targets(pid) == {0: "/dev/null", 1: str(log), 2: str(log)}
        # The server is its own process group leader; the supervisor is not a session leader.
        assert int(stat_fields(res.pid)[2]) == res.pid
        assert os.getsid(res.supervisor_pid) != res.supervisor_pid
        assert process_info(res.pid).ppid == res.supervisor_pid
    finally:
        gate.touch()
    wait_finished(log)


def test_supervisor_ignores_sighup_and_forwards_sigterm(run, tmp_path):
    log = tmp_path / "h.log"
    res = run("import time; time.sleep(4)", log)
    os.kill(res.supervisor_pid, signal.SIGHUP)
    time.sleep(0.1)
    assert alive(res.supervisor_pid) and alive(res.pid)
    os.kill(res.supervisor_pid, signal.SIGTERM)
    sc = wait_finished(log, timeout=3)
    assert sc.signal == signal.SIGTERM and sc.exit_code is None
    assert wait_for(lambda: not alive(res.supervisor_pid), timeout=2)


def test_truncates_by_default(run, tmp_path):
    log = tmp_path / "t.log"
    log.write_text("previous run\n")
    res = run("print('new run')", log)
    assert res.log_offset == 0
    sc = wait_finished(log)
    assert sc.log_offset == 0
    assert log.read_text() == "new run\n"


def test_append_keeps_content_and_records_offset(run, tmp_path):
    log = tmp_path / "a.log"
    old = "previous run line\n"
    log.write_text(old)
    res = run("print('appended run')", log, append=True)
    assert res.log_offset == len(old.encode())
    sc = wait_finished(log)
    assert sc.log_offset == len(old.encode())
    assert log.read_text() == old + "appended run\n"
    assert log.read_bytes()[sc.log_offset :] == b"appended run\n"


def test_command_not_found(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "nf.log"
    missing = f"logx-no-such-command-{uuid.uuid4().hex}"
    with pytest.raises(LaunchError) as ei:
        launch([missing, "--flag"], log)
    msg = str(ei.value)
    assert "\n" not in msg and missing in msg and "not found" in msg
    assert ei.value.exit_code == 127
    sc = read_sidecar(log)
    assert sc is not None
    assert sc.exit_code == 127 and sc.error and sc.finished and sc.pid is None
    assert sc.command == [missing, "--flag"]
    assert missing in log.read_text()  # the log says why it is otherwise empty
    assert wait_for(lambda: not alive(sc.supervisor_pid), timeout=2)


def test_launch_errors_before_starting(tmp_path):
    with pytest.raises(LaunchError):
        launch([], tmp_path / "e.log")
    with pytest.raises(LaunchError, match="no-such-dir"):
        launch([PY, "-c", "pass"], tmp_path / "no-such-dir" / "e.log")


def test_read_sidecar_tolerance(tmp_path):
    log = tmp_path / "r.log"
    assert read_sidecar(log) is None  # absent
    side = sidecar_path(log)
    assert side.name == "r.log.logx.json"
    side.write_text("{not json")
    assert read_sidecar(log) is None
    side.write_text("[1, 2]")
    assert read_sidecar(log) is None
    side.write_bytes(b"\xff\xfe")
    assert read_sidecar(log) is None
    side.write_text('{"pid": 12, "exit_code": "nope", "future_key": 1}')
    sc = read_sidecar(log)
    assert sc is not None
    assert sc.pid == 12 and sc.exit_code is None and sc.command == [] and sc.log_offset == 0
    assert not sc.finished and sc.started_at_dt is None
    side.unlink()
    side.mkdir()  # unreadable as a file
    assert read_sidecar(log) is None
