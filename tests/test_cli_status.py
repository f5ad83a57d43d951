"""``logx status``, ``explain --status/--pid/--since/--silence`` and ``logx run`` through the CLI.

In-process runs use typer's CliRunner; ``logx run`` is also run as a real child process
(``python -m logforensics``) whose parent must exit while the server keeps running.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from conftest import CHILD, wait_for
from typer.testing import CliRunner

from logforensics._cli import app
from logforensics._launcher import read_sidecar
from logforensics._procinfo import process_info

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")

PY = sys.executable
ROOT = Path(__file__).resolve().parents[1]
FMT = "%Y-%m-%d %H:%M:%S"
runner = CliRunner()

ARGS = "[{ts}] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=1, port=30000)"
WEIGHTS = "[{ts} TP0] Load weight begin. avail mem=70.00 GB"
STARTED = "[{ts}] INFO:     Started server process [{pid}]"
READY = "[{ts}] The server is fired up and ready to roll!"




def alive(pid: int | None) -> bool:
    info = process_info(pid) if pid else None
    return bool(info and info.alive)


def serving_log(path: Path, when: datetime, pid: int = 999_999_1) -> None:
    path.write_text("".join(line.format(ts=when.strftime(FMT), pid=pid) + "\n"
                            for line in (ARGS, WEIGHTS, STARTED, READY)))


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def old_log(tmp_path):
    log = tmp_path / "server.log"
    serving_log(log, datetime.now() - timedelta(hours=1))
    t = time.time() - 3600
    os.utime(log, (t, t))
    return log


# — status / explain --status ——————————————————————————————————————————————————————————


def test_status_empty_exit_3(tmp_path):
    log = tmp_path / "server.log"
    log.touch()
    res = invoke("status", log)
    assert res.exit_code == 3, res.output
    assert "EMPTY" in res.output and "0 bytes" in res.output
    res = invoke("status", "--json", log)
    assert res.exit_code == 3
    data = json.loads(res.output)
    assert data["schema"] == "logx.status/1" and data["verdict"] == "empty"
    assert data["status"]["state"] == "EMPTY" and data["status"]["findings"] == ["log_empty"]
    assert data["findings"][0]["id"] == "log_empty" and data["findings"][0]["severity"] == "warning"


def test_status_stale_with_since(old_log):
    res = invoke("status", "--json", "--since", "10m", old_log)
    assert res.exit_code == 3
    data = json.loads(res.output)
    assert data["verdict"] == "stale" and data["status"]["state"] == "STALE"
    facts = data["status"]["facts"]
    assert facts["mtime"] and facts["mtime_age_s"] >= 3500 and facts["since"]
    # without --since the old, healthy log is not stale
    res = invoke("status", "--json", old_log)
    assert res.exit_code == 0
    assert json.loads(res.output)["status"]["state"] == "FRESH"


def test_explain_leads_with_staleness(old_log):
    res = invoke("explain", "--since", "@" + str(int(time.time() - 60)), "--width", "120", old_log)
    assert res.exit_code == 3, res.output
    lines = res.output.splitlines()
    assert lines[1].startswith("Verdict: STALE")
    assert "Log: STALE" in lines[2]
    assert res.output.index("Stale log") < res.output.index("Fix:")
    res = invoke("explain", "--json", "--since", "1m", old_log)
    data = json.loads(res.output)
    assert data["verdict"] == "stale" and data["exit_code"] == 3
    assert data["findings"][0]["id"] == "log_stale" and data["status"]["state"] == "STALE"


def test_explain_status_is_status(old_log):
    since = (datetime.now() - timedelta(minutes=10)).isoformat(timespec="seconds")  # one instant for both
    a = invoke("explain", "--status", "--json", "--since", since, old_log)
    b = invoke("status", "--json", "--since", since, old_log)
    assert a.exit_code == b.exit_code == 3
    da, db = json.loads(a.output), json.loads(b.output)
    for d in (da, db):
        d["status"]["facts"].pop("checked_at")
        for key in ("mtime_age_s", "log_last_time_age_s"):
            d["status"]["facts"].pop(key)
    assert da == db
    text = invoke("explain", "--status", old_log)
    assert text.exit_code == 0 and "FRESH" in text.output and "Phase" not in text.output


def test_bad_since_is_a_usage_error(old_log):
    res = invoke("status", "--since", "soonish", old_log)
    assert res.exit_code == 2
    assert "since" in res.output.lower()


def test_status_missing_file_exit_2(tmp_path):
    res = invoke("status", tmp_path / "nope.log")
    assert res.exit_code == 2


def test_status_several_files_worst_exit(tmp_path, old_log):
    empty = tmp_path / "empty.log"
    empty.touch()
    res = invoke("status", "--json", old_log, empty)
    assert res.exit_code == 3
    data = json.loads(res.output)
    assert [d["status"]["state"] for d in data] == ["FRESH", "EMPTY"]


def test_status_silent_and_dead_with_pid(tmp_path, spawn):
    log = tmp_path / "server.log"
    p = spawn("sleep5", ARGS, WEIGHTS, log=log)
    assert wait_for(lambda: log.read_text().count("\n") >= 2)
    time.sleep(0.5)
    res = invoke("status", "--json", "--pid", p.pid, "--silence", "0.3", log)
    assert res.exit_code == 1, res.output
    data = json.loads(res.output)
    assert data["status"]["state"] == "SILENT" and data["primary"] == "startup_hang"
    assert data["status"]["facts"]["phase"] == "weights"
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=3)
    res = invoke("status", "--pid", p.pid, "--width", "120", log)
    assert res.exit_code == 1
    assert "DEAD" in res.output and "process_died_without_traceback" in res.output


# — logx run ——————————————————————————————————————————————————————————————————————————


@pytest.fixture
def cleanup():
    pids: list[int] = []
    yield pids
    for pid in pids:
        info = process_info(pid)
        if info and info.alive and ("logx-test" in info.command_line or "--supervise" in info.command_line):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def logx_run(tmp_path: Path, log: Path, action: str, *lines: str, append: bool = False):
    """`python -m logforensics run --log LOG [--append] -- python -c CHILD ACTION LINES... logx-test`."""
    cmd = [PY, "-m", "logforensics", "run", "--log", str(log), *(["--append"] if append else []),
           "--", PY, "-c", CHILD, action, *lines]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)


def test_logx_run_detaches_and_explain_reads_the_sidecar(tmp_path, cleanup):
    log = tmp_path / "server.log"
    gate = tmp_path / "go"
    wait_gate = f"import os, time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.01)\n"
    code = CHILD.replace("if action.startswith", wait_gate + "if action.startswith", 1)
    cmd = [PY, "-m", "logforensics", "run", "--log", str(log), "--", PY, "-c", code, "exit1", ARGS, WEIGHTS]
    proc = subprocess.run(cmd, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("started pid ")
    pid = int(proc.stdout.split()[2])
    sc = read_sidecar(log)
    cleanup.extend([pid, sc.supervisor_pid])
    # the CLI has exited; the server keeps running (waiting on the gate) and is tied to the log
    assert alive(pid) and sc.pid == pid and not sc.finished
    res = invoke("status", "--json", log)
    data = json.loads(res.output)
    assert res.exit_code == 0 and data["status"]["state"] == "FRESH" and data["status"]["verified"] is True
    assert data["status"]["facts"]["process"]["source"] == "sidecar"
    gate.touch()
    assert wait_for(lambda: (s := read_sidecar(log)) is not None and s.finished)
    assert log.read_text().count("\n") == 2  # complete: both lines, nothing else
    res = invoke("explain", "--json", log)
    assert res.exit_code == 1
    data = json.loads(res.output)
    assert data["status"]["state"] == "DEAD"
    assert data["status"]["facts"]["sidecar"]["exit_code"] == 1
    assert data["findings"][0]["id"] == "process_died_without_traceback"
    assert "exited with code 1" in data["findings"][0]["title"]


def test_logx_run_sigkill_and_append(tmp_path, cleanup):
    log = tmp_path / "server.log"
    serving_log(log, datetime.now() - timedelta(minutes=5))
    before = log.stat().st_size
    proc = logx_run(tmp_path, log, "kill9", WEIGHTS, append=True)
    assert proc.returncode == 0, proc.stderr
    sc = wait_for(lambda: (s := read_sidecar(log)) is not None and s.finished and s)
    cleanup.extend([sc.pid, sc.supervisor_pid])
    assert sc.signal == 9 and sc.log_offset == before
    res = invoke("explain", "--json", log)
    data = json.loads(res.output)
    assert res.exit_code == 1
    assert data["explained_run"] == 2 and len(data["runs"]) == 2
    assert data["status"]["state"] == "DEAD" and data["status"]["facts"]["sidecar"]["signal"] == 9
    top = data["findings"][0]
    assert top["id"] == "process_died_without_traceback" and "signal 9" in top["title"]
    assert "dmesg -T | grep -i oom" in top["fix"]
    # the earlier run is still there to be explained on request
    res = invoke("explain", "--json", "--run", "1", log)
    assert json.loads(res.output)["explained_run"] == 1


def test_logx_run_usage_errors(tmp_path):
    res = invoke("run", "--log", tmp_path / "x.log")
    assert res.exit_code == 2
    res = invoke("run", "--log", tmp_path / "nodir" / "x.log", "--", PY, "-c", "pass")
    assert res.exit_code != 0
