"""The stale-log detector against real processes and real files (no mocked /proc).

Children are short-lived ``sys.executable -c`` processes that print SGLang-looking lines (with
the current local time), then sleep, exit, crash or SIGKILL themselves; mtimes are moved into
the past with ``os.utime``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import CHILD, wait_for

from logforensics._analysis import Analyzer, Options, explain
from logforensics._clock import parse_since
from logforensics._launcher import launch, read_sidecar
from logforensics._procinfo import process_info
from logforensics._report import EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK
from logforensics._staleness import VERDICT_STAGES, Check, Reading, Status, decide, lead, prepare

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")

PY = sys.executable
FMT = "%Y-%m-%d %H:%M:%S"


ARGS = "[{ts}] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=1, mem_fraction_static=0.85, port=30000)"
WEIGHTS = "[{ts} TP0] Load weight begin. avail mem=70.00 GB"
KV = "[{ts} TP0] KV Cache is allocated. #tokens: 400000, K size: 20.00 GB, V size: 20.00 GB"
STARTED = "[{ts}] INFO:     Started server process [{pid}]"
READY = "[{ts}] The server is fired up and ready to roll!"
STARTUP = [ARGS, WEIGHTS]
SERVING = [ARGS, WEIGHTS, KV, STARTED, READY]
TRACEBACK = ["Traceback (most recent call last):",
             '  File "/x/sglang/srt/managers/scheduler.py", line 10, in run_scheduler_process',
             "    raise RuntimeError('boom')",
             "RuntimeError: something unusual broke here"]




def alive(pid: int) -> bool:
    info = process_info(pid)
    return bool(info and info.alive)


def stamp(dt: datetime, *lines: str, pid: int = 999_999_1) -> str:
    """Lines with ``{ts}`` filled with ``dt`` (local naive time), one per line."""
    return "".join(line.format(ts=dt.strftime(FMT), pid=pid) + "\n" for line in lines)


def age_file(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def wait_lines(log: Path, n: int) -> None:
    assert wait_for(lambda: log.exists() and log.read_text().count("\n") >= n), log.read_text()


def status_of(log: Path, **kw) -> tuple:
    report = explain(str(log), options=Options(status=True, **kw))
    assert isinstance(report.status, Status)
    return report, report.status


def ids(report) -> list[str]:
    return [f.id for f in report.findings]


# — EMPTY ————————————————————————————————————————————————————————————————————————————


def test_empty_log_no_process(tmp_path):
    log = tmp_path / "server.log"
    log.touch()
    report, st = status_of(log)
    assert st.state == "EMPTY" and report.verdict == "empty" and report.exit_code == EXIT_INCONCLUSIVE
    assert ids(report) == ["log_empty"]
    f = report.findings[0]
    assert f.severity == "warning" and not f.is_problem
    assert "logx run --log FILE" in f.fix
    assert "died before" in f.explanation and "elsewhere" in f.explanation
    assert st.facts["size_bytes"] == 0 and st.facts["mtime"]
    assert "live_servers" in f.facts
    json.dumps(report.to_json())
    assert report.to_json()["status"]["state"] == "EMPTY"


def test_empty_log_names_a_live_server_and_where_it_writes(tmp_path, spawn):
    log = tmp_path / "server.log"
    log.touch()
    other = tmp_path / "elsewhere.log"
    # cmdline contains "sglang.launch_server": it looks like a server whose output went elsewhere
    p = spawn("sleep5", log=other, extra=("-m", "sglang.launch_server"))
    assert wait_for(lambda: alive(p.pid))
    report, st = status_of(log)
    assert st.state == "EMPTY"
    servers = {s["pid"]: s for s in st.facts["live_servers"]}
    assert p.pid in servers
    assert str(other) in servers[p.pid]["writes_to"]
    assert any(str(p.pid) in r for r in st.reasons)
    assert str(other) in report.findings[0].fix or len(servers) > 1


def test_empty_log_of_a_live_pid_writing_elsewhere_is_empty_once_old(tmp_path, spawn):
    log = tmp_path / "server.log"
    log.touch()
    p = spawn("sleep5")  # output to /dev/null
    assert wait_for(lambda: alive(p.pid))
    _, young = status_of(log, pid=p.pid)
    assert young.state == "FRESH" and "no output yet" in young.reasons[0]
    time.sleep(0.4)
    report, st = status_of(log, pid=p.pid, silence=0.2)
    assert st.state == "EMPTY" and report.exit_code == EXIT_INCONCLUSIVE
    assert st.facts["process"]["alive"] is True
    assert st.facts["process"]["writes_to"] == ["/dev/null"]


def test_empty_log_of_a_live_writer_is_silent(tmp_path, spawn):
    log = tmp_path / "server.log"
    log.touch()
    p = spawn("sleep5", log=log)  # has the log open but prints nothing
    assert wait_for(lambda: alive(p.pid))
    time.sleep(0.4)
    report, st = status_of(log, pid=p.pid, silence=0.2)
    assert st.state == "SILENT"
    assert ids(report)[0] == "startup_hang"


# — STALE ————————————————————————————————————————————————————————————————————————————


def old_serving_log(path: Path, hours: float = 1.0, pid: int = 4242) -> None:
    path.write_text(stamp(datetime.now() - timedelta(hours=hours), *SERVING, pid=pid))
    age_file(path, hours * 3600)


def test_stale_by_mtime_and_timestamps_against_pid_start(tmp_path, spawn):
    log = tmp_path / "server.log"
    old_serving_log(log)
    p = spawn("sleep5")
    assert wait_for(lambda: alive(p.pid))
    report, st = status_of(log, pid=p.pid)
    assert st.state == "STALE" and st.verified
    assert report.verdict == "stale" and report.exit_code == EXIT_INCONCLUSIVE
    assert ids(report)[0] == "log_stale"
    f = report.findings[0]
    assert f.severity == "warning"
    assert any("last written" in r for r in st.reasons)
    assert any("last timestamp" in r for r in st.reasons)
    assert any("4242" in r for r in st.reasons)  # the printed pid is not the given one
    assert st.facts["process"]["pid"] == p.pid and st.facts["process"]["started_at"]
    assert st.facts["mtime_age_s"] >= 3500
    assert f.evidence and "fired up" in f.evidence[-1].text


def test_stale_with_since_duration(tmp_path):
    log = tmp_path / "server.log"
    old_serving_log(log, hours=2)
    report, st = status_of(log, since=parse_since("10m"))
    assert st.state == "STALE" and report.exit_code == EXIT_INCONCLUSIVE
    assert st.facts["since"]
    # the same log without --since: old but healthy, not stale
    report, st = status_of(log)
    assert st.state == "FRESH" and not st.verified and report.exit_code == EXIT_OK
    assert "4242" in st.reasons[0] and "no longer running" in st.reasons[0]
    assert not {f.found_by for f in report.findings} & set(VERDICT_STAGES)
    # and with no pid printed at all: nothing known about a process
    log.write_text(stamp(datetime.now() - timedelta(hours=2), ARGS, WEIGHTS, KV, READY))
    age_file(log, 7200)
    report, st = status_of(log)
    assert st.state == "FRESH" and not st.verified and "unverified" in st.reasons[0]


def test_stale_by_timestamps_even_if_the_file_was_touched(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(stamp(datetime.now() - timedelta(minutes=30), *STARTUP))  # mtime: now
    _, st = status_of(log, since=parse_since("5m"))
    assert st.state == "STALE"
    assert any("last timestamp" in r and "no timestamps" in r for r in st.reasons)


def test_fresh_with_since_when_written_after(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(stamp(datetime.now(), *SERVING))
    report, st = status_of(log, since=parse_since("5m"))
    assert st.state == "FRESH" and st.verified and report.verdict == "ready"


def test_small_clock_tolerance(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(stamp(datetime.now(), *SERVING))
    # a --since one second after the last write is within the tolerance
    _, st = status_of(log, since=time.time() + 1)
    assert st.state == "FRESH"
    _, st = status_of(log, since=time.time() + 30)
    assert st.state == "STALE"


def test_stale_when_the_printed_pid_is_another_live_writer(tmp_path, spawn):
    other = spawn("sleep5")  # the process the user asks about (started first)
    assert wait_for(lambda: alive(other.pid))
    log = tmp_path / "server.log"
    writer = spawn("sleep5", *SERVING, log=log)
    wait_lines(log, len(SERVING))
    report, st = status_of(log, pid=other.pid)
    assert st.state == "STALE", st.reasons
    assert any(f"pid {writer.pid}" in r and "another process" in r for r in st.reasons)
    # asking about the writer itself: fresh and verified
    report, st = status_of(log, pid=writer.pid)
    assert st.state == "FRESH" and st.verified and report.verdict == "ready"
    assert st.facts["process"]["writes_this_log"] is True


def test_a_gone_pid_is_said_to_be_gone_not_proof_of_staleness(tmp_path, spawn):
    """The log names another pid, but the --pid process no longer exists: nothing can be
    compared (its start time is gone with it), so it says so instead of "STALE (verified)"."""
    p = spawn("exit0")
    p.wait(timeout=3)
    log = tmp_path / "server.log"
    log.write_text(stamp(datetime.now(), *SERVING, pid=999_999_9))
    _, st = status_of(log, pid=p.pid)
    assert st.state == "FRESH" and not st.verified
    assert st.reasons[0].startswith(f"no process with pid {p.pid} exists on this host")
    assert not any(f"not by pid {p.pid}" in r for r in st.reasons)


def test_live_process_appending_nothing_to_an_old_log_is_stale(tmp_path, spawn):
    """`cmd >> log` of a new process that has not written yet: the content is the old run's."""
    log = tmp_path / "server.log"
    old_serving_log(log, hours=1, pid=999_999_8)
    p = spawn("sleep5", log=log)  # opens the log for appending, writes nothing
    assert wait_for(lambda: alive(p.pid))
    report, st = status_of(log)  # no --pid: found through its open file descriptor
    assert st.state == "STALE", st.reasons
    assert st.facts["process"]["source"] == "has the log open"
    assert report.exit_code == EXIT_INCONCLUSIVE


def test_log_times_are_local_time(tmp_path, monkeypatch):
    """Log timestamps are naive local times: a log written in Asia/Tokyo compares right."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        log = tmp_path / "server.log"
        log.write_text(stamp(datetime.now(), *SERVING))  # local (Tokyo) wall-clock time
        utc_now = datetime.now(UTC)
        _, st = status_of(log, since=parse_since((utc_now - timedelta(minutes=5)).isoformat()))
        assert st.state == "FRESH" and st.verified
        _, st = status_of(log, since=parse_since((utc_now + timedelta(minutes=5)).isoformat()))
        assert st.state == "STALE"
        assert st.facts["log_last_time"].endswith("+09:00")
        assert "clock_skew_s" not in st.facts
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_log_from_another_clock_is_not_judged_by_its_times(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(stamp(datetime.now() + timedelta(hours=5), *SERVING))  # container in another TZ
    _, st = status_of(log, since=parse_since("1m"))
    assert st.state == "FRESH"  # mtime is after --since; the shifted timestamps are not compared
    assert st.facts["clock_skew_s"] > 3600 and "timezone" in st.facts["clock_note"]


# — SILENT ———————————————————————————————————————————————————————————————————————————


def test_silent_startup_hang_with_pid(tmp_path, spawn):
    log = tmp_path / "server.log"
    p = spawn("sleep5", *STARTUP, log=log)
    wait_lines(log, len(STARTUP))
    time.sleep(0.5)
    report, st = status_of(log, pid=p.pid, silence=0.3)
    assert st.state == "SILENT" and st.verified
    assert report.verdict == "failed" and report.exit_code == EXIT_FAILURE
    f = report.findings[0]
    assert f.id == "startup_hang" and f.severity == "error" and f.phase == "weights"
    assert "Load weight begin" in f.evidence[-1].text
    assert "py-spy dump --pid" in f.fix
    assert st.facts["quiet_for_s"] >= 0 and st.facts["phase"] == "weights"
    # still within the silence window: fresh
    _, st = status_of(log, pid=p.pid, silence=60)
    assert st.state == "FRESH" and "starting (phase weights)" in st.reasons[0]


def test_silent_found_through_the_open_log_without_pid(tmp_path, spawn):
    log = tmp_path / "server.log"
    p = spawn("sleep5", *STARTUP, log=log)
    wait_lines(log, len(STARTUP))
    time.sleep(0.5)
    report, st = status_of(log, silence=0.3)
    assert st.state == "SILENT"
    assert st.facts["process"] == {**st.facts["process"], "pid": p.pid, "source": "has the log open"}


def test_silent_via_printed_pid(tmp_path, spawn):
    """A live process whose pid the log printed (uvicorn `Started server process [PID]`)."""
    log = tmp_path / "server.log"
    p = spawn("sleep5", ARGS, WEIGHTS, KV, STARTED, log=log)  # started, never ready (warmup)
    wait_lines(log, 4)
    time.sleep(0.5)
    report, st = status_of(log, silence=0.3)
    assert st.state == "SILENT"
    assert st.facts["process"]["source"] == "printed in the log" and st.facts["process"]["pid"] == p.pid
    assert report.findings[0].phase == "warmup"


def test_ready_and_quiet_is_fresh_not_silent(tmp_path, spawn):
    log = tmp_path / "server.log"
    p = spawn("sleep5", *SERVING, log=log)
    wait_lines(log, len(SERVING))
    time.sleep(0.4)
    report, st = status_of(log, silence=0.2)
    assert st.state == "FRESH" and st.verified and report.exit_code == EXIT_OK
    assert st.facts["process"]["pid"] == p.pid and "serving" in st.reasons[0]


# — DEAD —————————————————————————————————————————————————————————————————————————————


def test_dead_after_sigkill_mid_startup(tmp_path, spawn):
    log = tmp_path / "server.log"
    p = spawn("sleep5", *STARTUP, log=log)
    wait_lines(log, len(STARTUP))
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=3)
    report, st = status_of(log, pid=p.pid)
    assert st.state == "DEAD" and st.verified
    assert report.verdict == "failed" and report.exit_code == EXIT_FAILURE
    f = report.findings[0]
    assert f.id == "process_died_without_traceback" and f.severity == "fatal"
    assert report.primary is f
    assert "dmesg" in f.fix and "Load weight begin" in f.evidence[-1].text


def test_dead_via_printed_pid_is_flagged_unverified(tmp_path, spawn):
    log = tmp_path / "server.log"
    p = spawn("exit0", ARGS, WEIGHTS, KV, STARTED, log=log)
    p.wait(timeout=3)
    _, st = status_of(log)
    assert st.state == "DEAD" and not st.verified
    assert "another machine" in st.facts["process"]["note"]


def test_not_dead_when_a_traceback_explains_it(tmp_path, spawn):
    log = tmp_path / "server.log"
    p = spawn("exit1", *STARTUP, *TRACEBACK, log=log)
    p.wait(timeout=3)
    report, st = status_of(log, pid=p.pid)
    assert st.state == "FRESH" and not st.verified  # the pid is gone: nothing left to check it by
    assert "process_died_without_traceback" not in ids(report)
    assert report.primary is not None and report.primary.found_by not in VERDICT_STAGES


def test_dead_ready_server_is_fresh(tmp_path, spawn):
    log = tmp_path / "server.log"
    p = spawn("exit0", *SERVING, log=log)
    p.wait(timeout=3)
    report, st = status_of(log, pid=p.pid)
    assert st.state == "FRESH" and report.verdict == "ready"
    assert any("after the server was ready" in r for r in st.reasons)


# — sidecar (logx run) ————————————————————————————————————————————————————————————————


@pytest.fixture
def launched():
    started = []

    def _launch(action: str, *lines: str, log: Path, append: bool = False):
        res = launch([PY, "-c", CHILD, action, *lines], log, append=append)
        started.append(res)
        return res

    yield _launch
    for res in started:
        for pid in (res.pid, res.supervisor_pid):
            info = process_info(pid) if pid else None
            if info and info.alive and (CHILD.strip()[:20] in info.command_line or "--supervise" in info.command_line):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def wait_finished(log: Path):
    sc = wait_for(lambda: (s := read_sidecar(log)) is not None and s.finished and s)
    assert sc, read_sidecar(log)
    return sc


def test_sidecar_signal_9_is_a_fact(tmp_path, launched):
    log = tmp_path / "server.log"
    launched("kill9", *STARTUP, log=log)
    wait_finished(log)
    report, st = status_of(log)
    assert st.state == "DEAD" and st.verified
    f = report.findings[0]
    assert f.id == "process_died_without_traceback"
    assert "killed by signal 9" in f.title and f.facts["signal"] == 9
    assert "OOM killer" in f.fix and "dmesg -T | grep -i oom" in f.fix
    assert any("[sidecar" in e.text and "signal 9" in e.text for e in f.evidence)
    assert st.facts["sidecar"]["signal"] == 9 and st.facts["process"]["source"] == "sidecar"


def test_sidecar_exit_code_1_is_a_fact(tmp_path, launched):
    log = tmp_path / "server.log"
    launched("exit1", *STARTUP, log=log)
    wait_finished(log)
    report, st = status_of(log)
    assert st.state == "DEAD"
    assert "exited with code 1" in report.findings[0].title
    assert report.findings[0].facts["exit_code"] == 1


def test_sidecar_running_is_fresh_and_certain(tmp_path, launched):
    log = tmp_path / "server.log"
    res = launched("sleep5", *STARTUP, log=log)
    wait_lines(log, len(STARTUP))
    report, st = status_of(log)
    assert st.state == "FRESH" and st.verified
    assert st.facts["process"]["pid"] == res.pid and st.facts["process"]["writes_this_log"] is True


def test_sidecar_append_explains_only_the_new_run(tmp_path, launched):
    log = tmp_path / "server.log"
    old = stamp(datetime.now() - timedelta(minutes=10), *SERVING, pid=999_999_7)
    log.write_text(old)
    # the new run prints no server_args: only a run boundary at the sidecar's offset separates it
    res = launched("kill9", "[{ts} TP0] Load weight begin. avail mem=70.00 GB", log=log, append=True)
    wait_finished(log)
    assert read_sidecar(log).log_offset == len(old.encode())
    report, st = status_of(log)
    assert len(report.runs) == 2 and report.run.index == 2
    assert report.run.first_line == len(SERVING) + 1
    assert not report.run.ready
    assert st.state == "DEAD" and st.facts["bytes_before_run"] == len(old.encode())
    assert st.facts["process"]["pid"] == res.pid


def test_sidecar_append_with_nothing_written_is_empty(tmp_path, launched):
    log = tmp_path / "server.log"
    log.write_text(stamp(datetime.now() - timedelta(minutes=10), *SERVING))
    launched("exit3", log=log, append=True)
    wait_finished(log)
    report, st = status_of(log)
    assert st.state == "EMPTY" and report.run is None and report.exit_code == EXIT_INCONCLUSIVE
    assert "after byte" in st.reasons[0]
    assert "exited with code 3" in report.findings[0].explanation
    assert st.facts["bytes_since_start"] == 0


def test_sidecar_pid_reused_means_gone(tmp_path, spawn):
    log = tmp_path / "server.log"
    log.write_text(stamp(datetime.now(), *STARTUP))
    p = spawn("sleep5")  # alive, but started long after the sidecar says the server did
    assert wait_for(lambda: alive(p.pid))
    launched_at = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    Path(str(log) + ".logx.json").write_text(json.dumps({
        "schema": "logx.sidecar/1", "pid": p.pid, "supervisor_pid": None, "started_at": launched_at,
        "command": ["python", "-m", "sglang.launch_server"], "log": str(log), "log_offset": 0,
        "ended_at": None, "exit_code": None, "signal": None}))
    _, st = status_of(log)
    assert st.state == "DEAD"
    assert "another process" in st.facts["process"]["note"]


def test_sidecar_of_another_log_is_ignored(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(stamp(datetime.now(), *SERVING))
    Path(str(log) + ".logx.json").write_text(json.dumps({"pid": 1, "log": "/elsewhere/x.log"}))
    ctx = prepare(str(log))
    assert ctx.sidecar is None and "not this file" in ctx.sidecar_note


# — runs, streams, library —————————————————————————————————————————————————————————————


def test_second_run_appended_is_the_one_explained(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(stamp(datetime.now() - timedelta(hours=3), *SERVING)
                   + stamp(datetime.now(), *STARTUP))
    report, st = status_of(log, since=parse_since("5m"))
    assert len(report.runs) == 2 and report.run.index == 2
    assert st.state == "FRESH" and st.facts["runs"] == 2 and st.facts["explained_run"] == 2
    # the earlier run, chosen explicitly, predates --since
    report, st = status_of(log, since=parse_since("5m"), run_index=1)
    assert st.state == "STALE"


def test_streams_skip_the_detector_unless_asked(tmp_path):
    data = stamp(datetime.now() - timedelta(hours=1), *SERVING).encode()
    assert explain(data, options=Options(status=True)).status is None  # a stream: no mtime, no pid, no since
    report = explain(data, options=Options(status=True, since=parse_since("5m")))
    assert report.status.state == "STALE" and report.status.facts["source"] == "stream"
    assert explain(data, options=Options(since=parse_since("5m"))).status is None  # not asked


def test_assess_is_usable_with_an_analyzer(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(stamp(datetime.now(), *STARTUP))
    ctx = prepare(str(log))
    analyzer = Analyzer()
    analyzer.start_at(ctx.offset)
    for n, line in enumerate(log.read_bytes().splitlines(), 1):
        from logforensics._sources import RawLine

        analyzer.feed(RawLine(n, 0, line))
    analyzer.finish()
    report = analyzer.report(str(log), freshness=Check(ctx, Options()))
    st = report.status
    assert st.state == "FRESH" and not st.verified
    d = st.to_dict()
    assert set(d) == {"state", "verified", "reasons", "facts", "findings"}
    json.dumps(d)


def test_live_pid_without_the_log_open_is_not_called_a_hang(tmp_path, spawn):
    p = spawn("sleep5")  # writes to /dev/null, not to the log
    assert wait_for(lambda: alive(p.pid))
    log = tmp_path / "server.log"
    log.write_text(stamp(datetime.now(), *STARTUP))
    time.sleep(0.4)
    _, st = status_of(log, pid=p.pid, silence=0.2)
    assert st.state == "FRESH" and not st.verified
    assert "does not have this log open" in st.reasons[0]
    assert st.facts["process"]["writes_this_log"] is False


def test_sidecar_command_not_found_is_dead(tmp_path):
    log = tmp_path / "server.log"
    with pytest.raises(Exception, match="not found"):
        launch(["logx-no-such-command-xyz"], log)
    report, st = status_of(log)
    assert st.state == "DEAD" and st.facts["sidecar"]["exit_code"] == 127
    assert "code 127" in report.findings[0].title
    assert "never started" in st.reasons[0]


def test_sidecar_is_ignored_when_the_log_was_written_after_its_server_ended(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(stamp(datetime.now(), *STARTUP))
    ended = datetime.now(UTC) - timedelta(minutes=30)
    Path(str(log) + ".logx.json").write_text(json.dumps({
        "pid": 999_999_6, "started_at": (ended - timedelta(minutes=5)).isoformat(), "log": str(log),
        "log_offset": 0, "ended_at": ended.isoformat(), "exit_code": 0}))
    report, st = status_of(log)
    assert "another process wrote it" in st.facts["sidecar_note"]
    assert "sidecar" not in st.facts and st.state == "FRESH" and not st.verified


def test_only_servers_that_can_be_this_logs_are_named(tmp_path, monkeypatch):
    """On a shared host, another user's SGLang server cannot be this log's writer: an empty
    log's report names this user's servers, not theirs."""
    from logforensics import _procinfo as procinfo
    from logforensics._procinfo import ProcessInfo

    def server(pid: int, uid: int) -> ProcessInfo:
        return ProcessInfo(pid=pid, alive=True, start_time=datetime.now(UTC), ppid=1, uid=uid,
                           cmdline=["python", "-m", "sglang.launch_server", "--port", str(pid)])

    me, other = os.getuid(), os.getuid() + 4242
    monkeypatch.setattr(procinfo, "find_processes", lambda pattern: [server(111, other), server(222, me)])
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    status = explain(log, options=Options(status=True)).status
    assert [s["pid"] for s in status.facts["live_servers"]] == [222]
    assert "111" not in " ".join(status.reasons)


def test_the_verdict_enters_the_findings_before_the_report_is_built(tmp_path):
    """The detector decides on what the analysis read, before the report exists: a report with
    a freshness check carries the status and its findings first; the same analysis without one
    has neither (nothing is rewritten after the fact)."""
    log = tmp_path / "server.log"
    log.touch()
    analyzer = Analyzer()
    told = analyzer.report(str(log), freshness=Check(prepare(str(log)), Options()))
    assert told.status.state == "EMPTY" and [f.id for f in told.findings] == ["log_empty"]
    assert told.status.findings == told.findings
    plain = analyzer.report(str(log))
    assert plain.status is None and plain.findings == []
    reading = Reading(runs=[], run=None, findings=[], detection=None, lines=0, bytes=0)
    assert decide(Check(prepare(str(log)), Options()), reading).state == "EMPTY"


def test_a_logs_server_processes_are_its_own_servers(tmp_path, monkeypatch):
    """A vLLM log's status names live vLLM servers, never an SGLang server beside it (and the
    other way round); an empty log, which names no server, lists both."""
    from logforensics import _procinfo as procinfo
    from logforensics._procinfo import ProcessInfo

    me = os.getuid()
    commands = {111: ["python", "-m", "sglang.launch_server", "--port", "30000"],
                222: ["/usr/bin/python3", "/usr/local/bin/vllm", "serve", "/models/m", "--port", "8000"]}
    procs = [ProcessInfo(pid=pid, alive=True, start_time=datetime.now(UTC), ppid=1, uid=me, cmdline=cmd)
             for pid, cmd in commands.items()]
    monkeypatch.setattr(procinfo, "find_processes",
                        lambda name: [p for p in procs if name in " ".join(p.cmdline)])

    def listed(lines: list[str]) -> list[int]:
        log = tmp_path / "server.log"
        log.write_text("".join(f"{line}\n" for line in lines))
        os.utime(log, (time.time() - 3600, time.time() - 3600))
        status = explain(log, options=Options(status=True)).status
        return [s["pid"] for s in status.facts.get("live_servers", [])]

    assert listed(["INFO 11-20 09:15:02 [api_server.py:1351] vLLM API server version 0.13.0",
                   "INFO 11-20 09:15:03 [api_server.py:1352] args: Namespace(model='m')"]) == [222]
    assert listed(["[2026-11-20 09:15:02] server_args=ServerArgs(model_path='m', tp_size=1)"]) == [111]
    assert sorted(listed([])) == [111, 222]


def test_the_verdicts_are_builtin_patterns_and_a_hang_yields_to_a_cause(tmp_path):
    """The detector's findings are patterns/builtin/'s (a catalog's own pattern of the stage
    replaces the bundled text); a ``yields_to_cause`` one ranks among the run's catalog findings
    instead of leading them."""
    from conftest import make_catalog

    from logforensics._findings import Evidence, make_finding, stage_finding

    log = tmp_path / "server.log"
    log.touch()
    mine = make_catalog({"id": "log_empty", "severity": "warning", "title": "Nothing in {what}",
                         "match": [{"found_by": "empty_log"}]})
    status = Analyzer().report(str(log), freshness=Check(prepare(str(log)), Options(), mine)).status
    assert [f.title for f in status.findings] == [f"Nothing in {log} has 0 bytes"]
    hang = stage_finding(None, "silent_process", {"pid": 7, "quiet_for": "5 min"}, [], "status", 1, "weights")
    assert (hang.id, hang.phase, hang.confidence) == ("startup_hang", "weights", 0.85)
    assert hang.pattern is not None and hang.pattern.yields_to_cause
    nccl = make_catalog({"id": "nccl_init", "phase": "init", "priority": 70,
                         "match": [{"line": "NCCL error"}]}).patterns[0]
    cause = make_finding(nccl, {}, [Evidence(3, "NCCL error")], 0.9, 1, "init")
    assert [f.id for f in lead([cause], Status("SILENT", True, findings=[hang]))] == ["nccl_init", "startup_hang"]
    assert [f.id for f in lead([], Status("SILENT", True, findings=[hang]))] == ["startup_hang"]
