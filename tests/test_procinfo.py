"""procinfo against real processes (no mocked /proc)."""

from __future__ import annotations

import os
import re
import sys
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from conftest import wait_for

from logforensics._procinfo import (
    ProcessInfo,
    ancestors,
    find_processes,
    holds_file,
    live_servers,
    process_info,
    processes_writing,
    related,
    std_streams,
)

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")




@pytest.fixture
def run_python(popen):
    """A Python child running ``code`` (with ``extra`` argv), killed and reaped after the test."""
    return lambda code, *extra: popen([sys.executable, "-c", code, *extra])


def test_self():
    info = process_info(os.getpid())
    assert isinstance(info, ProcessInfo)
    assert info.pid == os.getpid()
    assert info.alive is True
    assert info.state in {"R", "S"}
    assert info.ppid == os.getppid()
    assert info.cmdline and "python" in os.path.basename(info.cmdline[0])
    assert info.start_time is not None and info.start_time.tzinfo is not None
    assert info.start_time.utcoffset() == timedelta(0)
    assert info.start_time <= datetime.now(UTC)


def test_nonexistent_and_invalid_pids():
    assert process_info(0) is None
    assert process_info(-5) is None
    assert process_info(2**22 + 12345) is None  # above any pid_max


def test_dead_pid(run_python):
    p = run_python("pass")
    p.wait(timeout=5)
    info = process_info(p.pid)
    # Reaped: the pid is gone (unless already reused, which then is a different process).
    assert info is None or info.cmdline != p.args


def test_fresh_child_start_time_close_to_now(run_python):
    before = datetime.now(UTC)
    p = run_python("import time; time.sleep(5)")
    after = datetime.now(UTC)
    info = process_info(p.pid)
    assert info is not None and info.alive
    assert info.ppid == os.getpid()
    # btime is whole seconds, so the computed start can be up to 1 s early.
    assert before - timedelta(seconds=1.5) <= info.start_time <= after + timedelta(seconds=0.5)


def test_zombie_is_not_alive(run_python):
    p = run_python("pass")
    # Not reaped yet (no wait/poll): the kernel keeps a zombie entry.
    info = wait_for(lambda: (i := process_info(p.pid)) is not None and i.state == "Z" and i)
    assert info, "child never became a zombie"
    assert info.alive is False
    assert info.cmdline == []
    assert info.comm  # the name survives in stat
    assert all(z.pid != p.pid for z in find_processes(""))
    p.wait(timeout=5)
    assert process_info(p.pid) is None or process_info(p.pid).cmdline != p.args


def test_find_processes_by_marker(run_python):
    marker = f"logx-test-marker-{uuid.uuid4().hex}"
    p = run_python("import sys, time; time.sleep(5)", marker)
    found = wait_for(lambda: find_processes(marker))
    assert [i.pid for i in found] == [p.pid]
    assert found[0].alive and marker in found[0].cmdline
    assert found[0].state in {"R", "S"}
    # A multi-word pattern matches across argv elements (like "sglang serve").
    assert [i.pid for i in find_processes(f"time.sleep(5) {marker}")] == [p.pid]
    p.kill()
    p.wait(timeout=5)
    assert find_processes(marker) == []


def test_find_processes_excludes_caller():
    me = process_info(os.getpid()).command_line
    assert me
    assert all(i.pid != os.getpid() for i in find_processes(me))


def test_vanished_mid_read_is_not_alive(run_python, monkeypatch):
    """Simulate the race by killing the process between the stat and cmdline reads."""
    import logforensics._procinfo as pi

    p = run_python("import time; time.sleep(5)")
    real_read = pi._read_bytes

    def racing_read(path: str):
        if path.endswith("/cmdline"):
            p.kill()
            p.wait(timeout=5)  # reaped: /proc/PID disappears
        return real_read(path)

    monkeypatch.setattr(pi, "_read_bytes", racing_read)
    info = process_info(p.pid)
    assert info is not None and info.alive is False


def test_where_a_process_writes_and_what_it_holds(tmp_path, popen):
    """The file identity checks the stale-log detector asks: which processes write a log
    (stdout/stderr), whether one holds it open, and how two processes are related."""
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        child = popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)"],
                      stdout=out, stderr=out)
    st = log.stat()
    log_id = (st.st_dev, st.st_ino)
    assert wait_for(lambda: child.pid in processes_writing(log_id))
    assert std_streams(child.pid)[1][1] == log_id and std_streams(child.pid)[1][0] == str(log)
    assert holds_file(child.pid, log_id) is True
    assert holds_file(os.getpid(), log_id) is False
    assert holds_file(2**22 + 12345, log_id) is None  # no such process: cannot tell
    assert os.getpid() in ancestors(child.pid)
    assert related(child.pid, os.getpid()) and related(os.getpid(), child.pid) and related(child.pid, child.pid)
    assert os.getpid() not in processes_writing(log_id)



def test_live_servers_lists_this_users_matching_roots(run_python):
    """A process whose command line holds a server's name and matches its command is listed
    with its pid, start and age; only the owners' processes count."""
    marker = f"fake_server_{uuid.uuid4().hex}"
    child = run_python(f"import time; time.sleep(30)  # {marker}")
    servers = [(marker, re.compile(re.escape(marker)))]
    assert wait_for(lambda: any(s["pid"] == child.pid for s in live_servers(servers, {os.getuid()})))
    found = next(s for s in live_servers(servers, {os.getuid()}) if s["pid"] == child.pid)
    assert marker in found["command"] and found["age_s"] >= 0 and found["started_at"]
    assert live_servers(servers, {os.getuid() + 12345}) == []
