"""``logx watch``: gate exit codes (ready 0, failure/death 1, timeout/silence 3), the idle flush
of a half-written traceback, truncation and rotation, the ``logx run`` sidecar, Ctrl-C, a closed
pipe downstream, and the live view in a pty.

A file written with pauses is watched in-process on a scripted clock (conftest's
``ScriptedClock``: the writer's steps happen as the watch waits, no real sleeping); what needs
processes — a pipe from another process, a live server PID, a signal, a closed stdout, a
terminal, the CLI's own argument errors — runs the real CLI beside a separate writer."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import WRITER, ScriptedClock
from rich.console import Console

from logforensics import _watch as watch_module
from logforensics._analysis import Options, explain
from logforensics._catalog import load_catalog
from logforensics._clock import parse_since
from logforensics._follow import IDLE, PARTIAL, QUIET, STILL
from logforensics._render.live import LiveRenderer
from logforensics._render.watch import JsonRenderer
from logforensics._sources import RawLine
from logforensics._watch import WatchOptions, watch
from logforensics._watcher import Watcher

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
LOGX = [sys.executable, "-m", "logforensics", "watch"]
CATALOG_IDS = {p.id for p in load_catalog().patterns}



def ts(sec: int) -> str:
    return f"[2026-03-23 14:02:{sec:02d}]"


SEED = [
    "[2026-03-23 14:01:38] server_args=ServerArgs(model_path='Qwen/Qwen3.5-35B-A3B', tp_size=1, "
    "speculative_algorithm='EAGLE', mamba_scheduler_strategy='no_buffer', disable_radix_cache=False)",
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", line 24, in <module>',
    "    server_args = prepare_server_args(sys.argv[1:])",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/server_args.py", line 4620, in prepare_server_args',
    "    return ServerArgs.from_cli_args(raw_args)",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/server_args.py", line 612, in __post_init__',
    "    self._handle_mamba_radix_cache(model_arch)",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/server_args.py", line 1501, in '
    "_handle_mamba_radix_cache",
    "    raise ValueError(",
    "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache "
    "when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use "
    "--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.",
]
SEED_ID = "spec_decode_radix_mamba_no_buffer"

HEALTHY = [
    f"{ts(0)} server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=1, mem_fraction_static=0.85, port=30000)",
    f"{ts(1)} Init torch distributed begin.",
    f"{ts(2)} Init torch distributed ends. mem usage=0.50 GB",
    f"{ts(2)} Load weight begin. avail mem=78.50 GB",
    f"{ts(9)} Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=63.20 GB, mem usage=15.30 GB.",
    f"{ts(10)} KV Cache is allocated. #tokens: 412000, K size: 28.00 GB, V size: 28.00 GB",
    f"{ts(10)} Memory pool end. avail mem=6.90 GB",
    f"{ts(11)} Capture cuda graph begin. This can take up to several minutes. avail mem=6.80 GB",
    f"{ts(15)} Capture cuda graph end. Time elapsed: 4.10 s. mem usage=0.60 GB. avail mem=6.20 GB.",
    f"{ts(15)} max_total_num_tokens=412000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "max_running_requests=2048, context_len=40960, available_gpu_mem=6.20 GB",
    f"{ts(16)} INFO:     Started server process [4242]",
    f"{ts(16)} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    f'{ts(17)} INFO:     127.0.0.1:40000 - "GET /get_model_info HTTP/1.1" 200 OK',
    f"{ts(17)} Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
    "#running-req: 0, #queue-req: 0",
    f"{ts(18)} The server is fired up and ready to roll!",
]
STARTUP_PHASES = ["args", "init", "weights", "kv_alloc", "cuda_graph", "warmup", "ready"]
KV_FAIL = HEALTHY[:6] + [
    f"{ts(10)} Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 2950, in '
    "run_scheduler_process",
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/model_runner.py", line 1530, in '
    "init_memory_pool",
    "    raise RuntimeError(",
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
]
BOOM = [  # a traceback no pattern knows, cut after its exception line
    f"{ts(20)} Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/opt/watchtest/worker.py", line 7, in step',
    "    explode()",
    "RuntimeError: watchtest boom 7f3a",
]


def fresh(lines: list[str]) -> list[str]:
    """The same lines stamped with the local time now (the stale-log detector compares log
    timestamps with the process start)."""
    now = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    return [re.sub(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "[" + now, text) for text in lines]


def lines_steps(lines: list[str], pause: float = 0.03) -> list:
    steps: list = []
    for text in lines:
        steps += [["w", text + "\n"], ["sleep", pause]]
    return steps


class Procs:
    """Starts writer and logx processes through conftest's ``popen`` (which kills and reaps
    whatever is left at the end)."""

    def __init__(self, popen) -> None:
        self.popen = popen

    def writer(self, path, steps, **kw) -> subprocess.Popen:
        return self.popen([sys.executable, "-c", WRITER, str(path), json.dumps(steps)], stderr=subprocess.PIPE, **kw)

    def logx(self, *args: str, **kw) -> subprocess.Popen:
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        return self.popen([*LOGX, *args], cwd=REPO, **kw)

    def follow(self, log: Path, *args: str, **kw) -> subprocess.Popen:
        """``logx watch LOG ARGS…``, returned once it has the log open (so a writer started
        next cannot outrun it). The log is created empty if it does not exist."""
        if not log.exists():
            log.write_bytes(b"")
        p = self.logx(str(log), *args, **kw)
        target = os.path.realpath(log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and p.poll() is None:
            with contextlib.suppress(OSError):
                for fd in os.listdir(f"/proc/{p.pid}/fd"):
                    with contextlib.suppress(OSError):
                        if os.readlink(f"/proc/{p.pid}/fd/{fd}") == target:
                            return p
            time.sleep(0.01)
        raise AssertionError(f"logx watch did not open {log}")

@pytest.fixture
def procs(popen):
    return Procs(popen)


class LineReader:
    """Reads a process's stdout in a thread, timestamping every line (time.monotonic)."""

    def __init__(self, stream) -> None:
        self.lines: list[tuple[float, str]] = []
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self._thread.start()

    def _run(self, stream) -> None:
        for raw in iter(stream.readline, b""):
            self.lines.append((time.monotonic(), raw.decode("utf-8", "replace").rstrip("\n")))

    def join(self, timeout: float = 90) -> list[str]:
        self._thread.join(timeout)
        return [text for _, text in self.lines]

    def wait_for(self, needle: str, timeout: float = 60) -> float | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, text in self.lines:
                if needle in text:
                    return at
            time.sleep(0.02)
        return None


class StampedOut(io.StringIO):
    """The watch's output, each write stamped with the scripted clock's elapsed time."""

    def __init__(self, clock: ScriptedClock) -> None:
        super().__init__()
        self.clock = clock
        self.stamps: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        if text.strip():
            self.stamps.append((self.clock.elapsed, text))
        return super().write(text)


def watch_scripted(log: Path, steps: list, *, catalog=None, interrupt_at: float | None = None,
                   create: bool = True, **options) -> tuple[int, list[dict], ScriptedClock, StampedOut]:
    """``logx watch LOG --json`` in-process while ``steps`` write the log (``ScriptedClock``);
    ``options`` are ``WatchOptions``'. The log is created empty first unless ``create`` is off."""
    if create and not log.exists():
        log.write_bytes(b"")
    clock = ScriptedClock(log, steps, interrupt_at)
    out = StampedOut(clock)
    options.setdefault("mode", "json")
    code = watch(str(log), WatchOptions(**options), catalog=catalog, out=out, clock=clock)
    return code, jsonl(out.getvalue()) if options["mode"] == "json" else [], clock, out


def run_logx(p: subprocess.Popen, timeout: float = 90) -> tuple[int, str, str]:
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out.decode(), err.decode()


def jsonl(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def assert_seed_finding(findings: list[dict]) -> dict:
    """The seed's ValueError is reported as a fatal/error finding (by its catalog id once the
    catalog has it)."""
    problems = [f for f in findings if f["severity"] in ("fatal", "error")]
    assert problems, findings
    with_exc = [f for f in problems if (f.get("exception") or {}).get("type") == "ValueError"]
    assert with_exc, problems
    if SEED_ID in CATALOG_IDS:
        assert SEED_ID in {f["id"] for f in problems}
    return with_exc[0]


# — the seed: a launch that dies at argument validation ————————————————————————————


def test_seed_file_until_ready_exits_1_after_idle_flush(tmp_path):
    log = tmp_path / "server.log"
    code, objs, clock, _ = watch_scripted(log, lines_steps(SEED, 0.04) + [["sleep", 90]],  # dies, no more lines
                                          until="ready", timeout=60)
    assert code == 1, objs
    assert clock.elapsed < 60  # decided while the stream was still open: the idle flush
    assert objs[0] == {"type": "phase", "phase": "args", "line": 1, "run": 1, "time": "2026-03-23 14:01:38"}
    assert_seed_finding([o for o in objs if o["type"] == "finding"])
    end = objs[-1]
    assert end["type"] == "end" and end["verdict"] == "failed" and end["exit_code"] == 1
    assert end["reason"] == "failed" and end["phase"] == "args"
    if SEED_ID in CATALOG_IDS:
        assert end["primary"] == SEED_ID


def test_seed_through_a_pipe_plain_lines(procs):
    writer = procs.writer("-", lines_steps(SEED, 0.03) + [["sleep", 90]], stdout=subprocess.PIPE)
    p = procs.logx("--until", "ready", stdin=writer.stdout)
    writer.stdout.close()
    code, out, err = run_logx(p)
    assert code == 1, (out, err)
    lines = out.splitlines()
    assert re.fullmatch(r"14:01:38 phase args \(line 1\)", lines[0])
    found = [ln for ln in lines if re.match(r"\d\d:\d\d:\d\d (FATAL|ERROR) \w+: .+ — fix: .+", ln)]
    assert found, out
    if SEED_ID in CATALOG_IDS:
        assert any(f" {SEED_ID}: " in ln for ln in found)
    assert re.search(r"end FAILED: verdict failed, exit 1", out)


def test_gate_decides_on_the_best_ranked_problem(tmp_path):
    pats = tmp_path / "pats"
    pats.mkdir()
    (pats / "t.toml").write_text('''
[[pattern]]
id = "watchtest_symptom"
title = "A symptom"
severity = "fatal"
phase = "any"
priority = 10
explanation = "x"
fix = "nothing"
  [[pattern.match]]
  line = 'WATCHTEST symptom'

[[pattern]]
id = "watchtest_cause"
title = "The cause"
severity = "fatal"
phase = "any"
priority = 95
explanation = "x"
fix = "fix the cause"
  [[pattern.match]]
  line = 'WATCHTEST cause'
''')
    log = tmp_path / "server.log"
    code, objs, _, _ = watch_scripted(log, lines_steps(HEALTHY[:3]) + [
        ["w", f"{ts(5)} WATCHTEST symptom\n{ts(5)} WATCHTEST cause\n"], ["sleep", 90]],
        catalog=load_catalog([pats]), until="ready", timeout=60)
    assert code == 1
    assert {o["id"] for o in objs if o["type"] == "finding"} >= {"watchtest_symptom", "watchtest_cause"}
    assert objs[-1]["primary"] == "watchtest_cause"


# — healthy, silent, missing ——————————————————————————————————————————————————————


def test_healthy_startup_until_ready_exits_0(tmp_path, procs):
    log = tmp_path / "server.log"
    p = procs.follow(log, "--until", "ready", "--json", "--timeout", "60")
    writer = procs.writer(log, lines_steps(HEALTHY, 0.03) + [["sleep", 90]])
    code, out, err = run_logx(p)
    assert code == 0, (out, err)
    assert writer.poll() is None
    objs = jsonl(out)
    assert [o["phase"] for o in objs if o["type"] == "phase"] == STARTUP_PHASES
    assert not [o for o in objs if o["type"] == "finding" and o["severity"] in ("fatal", "error")]
    assert objs[-1] == {**objs[-1], "type": "end", "verdict": "ready", "exit_code": 0, "reason": "ready"}


def test_silence_exits_3_naming_the_phase(tmp_path):
    log = tmp_path / "server.log"
    code, objs, clock, _ = watch_scripted(log, lines_steps(HEALTHY[:4]) + [["sleep", 90]],  # stuck loading weights
                                          until="ready", silence=0.8)
    assert code == 3
    last_write = clock.written[-1][1]
    assert last_write + 0.8 <= clock.elapsed < 90  # never early, and not the end of the writer
    end = objs[-1]
    assert end["reason"] == "silence" and end["phase"] == "weights" and end["exit_code"] == 3
    assert "stalled in phase weights (last line 4)" in end["message"]


def test_timeout_while_waiting_for_a_missing_file(tmp_path):
    code, _, clock, out = watch_scripted(tmp_path / "not-yet.log", [], create=False, mode="plain",
                                         until="ready", timeout=0.7)
    assert code == 3 and 0.7 <= clock.elapsed < 1.0
    text = out.getvalue()
    assert "waiting for" in text and "end TIMEOUT" in text and "(no line yet)" in text


def test_file_appearing_late_is_followed(tmp_path):
    code, _, _, out = watch_scripted(tmp_path / "late.log", [["sleep", 0.2]] + lines_steps(HEALTHY, 0.01)
                                     + [["sleep", 90]], create=False, mode="plain", until="ready", timeout=60)
    text = out.getvalue()
    assert code == 0 and "waiting for" in text and "end READY" in text


# — a crash in the middle of a traceback ——————————————————————————————————————————


def test_crash_mid_traceback_reported_after_idle_flush_once(tmp_path):
    log = tmp_path / "server.log"
    steps = (lines_steps(HEALTHY[:4], 0.02) + lines_steps(BOOM, 0.02)
             + [["sleep", 3], ["w", f"{ts(22)} Received sigquit from a child process\n"]])
    code, objs, clock, out = watch_scripted(log, steps, interrupt_at=3.8)  # Ctrl-C once it is read
    seen_at = next(at for at, text in out.stamps if "watchtest boom" in text)
    sigquit_at = next(at for text, at in clock.written if text.startswith(ts(22)[:20]))
    boom_at = next(at for text, at in clock.written if text.startswith("RuntimeError: watch"))
    assert boom_at + 0.4 < seen_at < sigquit_at  # by the idle flush, before the line completing it
    booms = [o for o in objs if o["type"] == "finding" and "watchtest boom" in json.dumps(o)]
    assert len(booms) == 1  # not again when the traceback completed
    assert booms[0]["severity"] in ("fatal", "error")
    assert booms[0]["exception"]["type"] == "RuntimeError"
    assert objs[-1]["type"] == "end" and objs[-1]["exit_code"] == 1


def test_idle_flush_and_dedupe_in_the_library():
    """The same flow without processes: a pending snapshot reported once."""
    out = io.StringIO()
    items: list = [RawLine(i + 1, 0, text.encode()) for i, text in enumerate(HEALTHY[:4] + BOOM)]
    items += [IDLE, RawLine(len(items) + 1, 0, f"{ts(22)} Received sigquit from a child process".encode()), IDLE]
    watcher = Watcher(items, JsonRenderer(out), WatchOptions(idle_flush=0.0))
    assert watcher.execute() == 1  # EOF without --until: explain's exit code for a failure
    objs = jsonl(out.getvalue())
    booms = [o for o in objs if o["type"] == "finding" and (o.get("exception") or {}).get("type") == "RuntimeError"]
    assert len(booms) == 1
    assert objs.index(booms[0]) < len(objs) - 1 and objs[-1]["type"] == "end"


def test_an_input_that_ends_before_ready_is_the_builtin_patterns_finding():
    """Watch's end findings are patterns/builtin/'s: a stream that stops mid-startup is
    ``process_died_without_traceback`` (the pattern's texts, watch's confidence); one that held
    nothing is the stale-log detector's ``log_empty``, read as explain reads an empty input
    (verdict empty: exit 3 under --until exit, 1 under --until ready)."""
    out = io.StringIO()
    items: list = [RawLine(i + 1, 0, text.encode()) for i, text in enumerate(HEALTHY[:2])]
    assert Watcher(items, JsonRenderer(out), WatchOptions(until="ready")).execute() == 1
    died = next(o for o in jsonl(out.getvalue()) if o["type"] == "finding")
    pattern = load_catalog().found_by("process_gone")
    assert died["id"] == pattern.id == "process_died_without_traceback" and died["confidence"] == 0.7
    assert died["title"] == f"The process died in phase {died['phase']} without a traceback"
    assert died["severity"] == pattern.severity and "the input stream ended" in died["explanation"]
    for until, code in (("exit", 3), ("ready", 1)):
        out = io.StringIO()
        assert Watcher([], JsonRenderer(out), WatchOptions(until=until)).execute() == code
        objs = jsonl(out.getvalue())
        assert [o["id"] for o in objs if o["type"] == "finding"] == ["log_empty"]
        assert objs[-1]["verdict"] == "empty"


# — truncation and rotation ———————————————————————————————————————————————————————


def test_copytruncate_and_rotation_mid_stream(tmp_path):
    log = tmp_path / "server.log"
    steps = (lines_steps(HEALTHY[:4], 0.02) + [["sleep", 0.3], ["truncate"], ["sleep", 0.3]]
             + lines_steps(HEALTHY[4:9], 0.02) + [["sleep", 0.3], ["rotate"]]
             + lines_steps(HEALTHY[9:], 0.02) + [["sleep", 90]])
    code, objs, _, _ = watch_scripted(log, steps, until="ready", timeout=60)
    assert code == 0, objs
    assert [o["phase"] for o in objs if o["type"] == "phase"] == STARTUP_PHASES
    events = [o["event"] for o in objs if o["type"] == "source"]
    assert events == ["truncated", "rotated"]
    ready = next(o for o in objs if o["type"] == "phase" and o["phase"] == "ready")
    assert ready["line"] == len(HEALTHY)  # line numbers run on across both


# — the process: sidecar, pid, --until exit —————————————————————————————————————————


def sidecar(log: Path, pid: int, **extra) -> None:
    record = {"schema": "logx.sidecar/1", "pid": pid, "started_at": datetime.now(UTC).isoformat(),
              "command": ["python", "-m", "sglang.launch_server"], "log": str(log), "log_offset": 0,
              "ended_at": None, "exit_code": None, "signal": None}
    record.update(extra)
    log.with_name(log.name + ".logx.json").write_text(json.dumps(record))


def test_process_dying_without_a_word_is_noticed(tmp_path, procs):
    log = tmp_path / "server.log"
    go = tmp_path / "go"
    server = procs.writer(log, [["wait", str(go)]] + lines_steps(fresh(HEALTHY[:4])) + [["sleep", 0.4], ["exit", 0]])
    sidecar(log, server.pid)
    p = procs.follow(log, "--until", "ready", "--json", "--timeout", "60")
    go.write_text("")
    code, out, _ = run_logx(p)
    assert code == 1
    objs = jsonl(out)
    died = [o for o in objs if o["type"] == "finding" and o["id"] == "process_died_without_traceback"]
    assert died and died[0]["phase"] == "weights"
    assert any(o["type"] == "process" for o in objs)
    assert objs[-1]["reason"] == "exited" and objs[-1]["phase"] == "weights"


def test_without_until_a_death_is_reported_and_following_goes_on(tmp_path, procs):
    log = tmp_path / "server.log"
    go = tmp_path / "go"
    server = procs.writer(log, [["wait", str(go)]] + lines_steps(fresh(HEALTHY[:6])) + [["exit", 0]])
    sidecar(log, server.pid)
    p = procs.follow(log, "--json")
    go.write_text("")
    reader = LineReader(p.stdout)
    assert reader.wait_for("process_died_without_traceback") is not None
    time.sleep(0.3)
    assert p.poll() is None  # tail -F: a restarted server may write to the same log
    p.send_signal(signal.SIGINT)
    p.wait(timeout=90)
    objs = [json.loads(t) for t in reader.join()]
    assert p.returncode == 1  # explain's code for what it saw: the process died
    assert objs[-1]["reason"] == "interrupted" and objs[-1]["verdict"] == "failed"


def test_sidecar_offset_skips_the_previous_appended_run(tmp_path, procs):
    log = tmp_path / "server.log"
    log.write_text("\n".join(HEALTHY) + "\n")  # `logx run --append`: the previous run is above
    go = tmp_path / "go"
    server = procs.writer(log, [["wait", str(go)]] + lines_steps(fresh(SEED), 0.01) + [["sleep", 90]])
    sidecar(log, server.pid, log_offset=log.stat().st_size)
    p = procs.follow(log, "--until", "ready", "--json", "--timeout", "60")
    go.write_text("")
    code, out, _ = run_logx(p)
    assert code == 1
    objs = jsonl(out)
    assert objs[0] == {**objs[0], "type": "phase", "phase": "args", "line": len(HEALTHY) + 1}
    assert_seed_finding([o for o in objs if o["type"] == "finding"])


def test_until_exit_with_a_finished_sidecar(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("\n".join(fresh(SEED)) + "\n")
    sidecar(log, 999_999_999, ended_at=datetime.now(UTC).isoformat(), exit_code=1)
    code, objs, _, _ = watch_scripted(log, [], until="exit", timeout=60)
    assert code == 1 == explain(log, options=Options(status=True)).exit_code  # as `logx explain` says
    end = objs[-1]
    assert end["reason"] == "exited" and end["process"]["exit_code"] == 1 and end["verdict"] == "failed"


def test_until_exit_says_stale_like_explain(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("\n".join(SEED) + "\n")  # March timestamps, a process started now
    sidecar(log, 999_999_999, ended_at=datetime.now(UTC).isoformat(), exit_code=1)
    code, objs, _, _ = watch_scripted(log, [], until="exit", timeout=60)
    assert code == 3 == explain(log, options=Options(status=True)).exit_code  # as `logx explain` says
    assert objs[-1]["verdict"] == "stale"
    assert "log_stale" in {o["id"] for o in objs if o["type"] == "finding"}


def test_until_ready_does_not_trust_an_earlier_runs_ready_line(tmp_path, procs):
    log = tmp_path / "server.log"
    log.write_text("\n".join(HEALTHY) + "\n")  # an old run, ready; the new server writes elsewhere
    server = procs.writer(tmp_path / "elsewhere.log", [["sleep", 90]])
    sidecar(log, server.pid)
    code, out, _ = run_logx(procs.logx(str(log), "--until", "ready", "--json", "--timeout", "60"))
    assert code == 3
    end = jsonl(out)[-1]
    assert end["reason"] == "stale" and end["verdict"] == "stale"


@pytest.mark.parametrize("lines", [HEALTHY, SEED], ids=["healthy", "seed"])
def test_until_exit_on_a_pipe_returns_explains_code(procs, lines):
    writer = procs.writer("-", lines_steps(lines, 0.01), stdout=subprocess.PIPE)
    p = procs.logx("--until", "exit", "--json", stdin=writer.stdout)
    writer.stdout.close()
    code, out, _ = run_logx(p)
    assert code == explain(("\n".join(lines) + "\n").encode()).exit_code == (0 if lines is HEALTHY else 1)
    assert jsonl(out)[-1]["reason"] == "eof"


def test_without_until_a_pipe_ends_with_a_summary(procs):
    writer = procs.writer("-", lines_steps(KV_FAIL, 0.01), stdout=subprocess.PIPE)
    p = procs.logx(stdin=writer.stdout)
    writer.stdout.close()
    code, out, _ = run_logx(p)
    assert code == 1
    assert "phase kv_alloc" in out and "end EOF: verdict failed, exit 1" in out
    assert re.search(r"\n\d\d:\d\d:\d\d cause \w+: .+ — fix: ", out)


def test_from_end_ignores_an_earlier_ready_run(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("\n".join(HEALTHY) + "\n")  # yesterday's run, ready
    code, objs, _, _ = watch_scripted(log, [["sleep", 0.1]] + lines_steps(SEED, 0.01) + [["sleep", 90]],
                                      until="ready", from_end=True, timeout=60)
    assert code == 1
    assert objs[0]["type"] == "phase" and objs[0]["line"] == len(HEALTHY) + 1


# — Ctrl-C, closed pipes, usage —————————————————————————————————————————————————————


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_ends_cleanly_with_a_summary(tmp_path, procs, sig):
    log = tmp_path / "server.log"
    p = procs.follow(log, "--plain")
    procs.writer(log, lines_steps(HEALTHY[:5]) + [["sleep", 90]])
    reader = LineReader(p.stdout)
    assert reader.wait_for("phase weights") is not None
    p.send_signal(sig)
    p.wait(timeout=90)
    out = "\n".join(reader.join())
    assert p.returncode == 0  # explain's code for what it saw: no failure
    assert "end INTERRUPTED" in out
    assert ("stopped (SIGTERM)" if sig == signal.SIGTERM else "stopped (Ctrl-C)") in out
    assert b"Traceback" not in p.stderr.read()


def test_closed_pipe_downstream_is_quiet(tmp_path, procs):
    log = tmp_path / "server.log"
    p = procs.follow(log, "--json")
    procs.writer(log, lines_steps(HEALTHY[:2]) + [["sleep", 0.5]] + lines_steps(HEALTHY[2:], 0.02)
                 + [["sleep", 90]])
    first = p.stdout.readline()  # like `| head -1`
    assert json.loads(first)["type"] == "phase"
    p.stdout.close()
    p.wait(timeout=90)
    assert p.returncode == 0
    assert p.stderr.read() == b""


def test_usage_errors(tmp_path, procs):
    code, _, err = run_logx(procs.logx(str(tmp_path)))
    assert code == 2 and "directory" in err
    code, _, err = run_logx(procs.logx(str(tmp_path / "x.log"), "--timeout", "0"))
    assert code == 2 and "timeout" in err
    code, _, err = run_logx(procs.logx(str(tmp_path / "x.log"), "--until", "bogus"))
    assert code == 2


# — the live view in a pseudo-terminal ————————————————————————————————————————————————


def read_pty(master: int, p: subprocess.Popen, timeout: float) -> str:
    buf = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            buf += chunk
        elif p.poll() is not None:
            break
    text = buf.decode("utf-8", "replace")
    return re.sub(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]|\r", "", text)


def test_live_view_in_a_pty(tmp_path, procs):
    log = tmp_path / "server.log"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 140, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "140", "LINES": "50"}
    env.pop("NO_COLOR", None)
    try:
        p = procs.follow(log, "--until", "ready", "--timeout", "60", stdout=slave, stderr=slave, env=env)
        procs.writer(log, lines_steps(KV_FAIL, 0.05) + [["sleep", 90]])
        os.close(slave)
        slave = -1
        screen = read_pty(master, p, timeout=30)
        assert p.wait(timeout=90) == 1, screen
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    for phase in ("args ✓", "weights ✓", "KV cache", "CUDA graphs", "ready"):
        assert phase in screen, screen
    assert "free at start: 78.50 GB" in screen
    assert "KV cache: 412000 tokens" in screen
    assert "Fix:" in screen
    assert "kv_cache_no_room_mem_fraction" in screen or "unclassified_exception" in screen
    assert "FAILED" in screen


def test_live_view_memory_and_serving_figures():
    """The live view's content, rendered without a terminal: memory as it appears (Mamba
    included) and serving stats from the last decode batch."""
    mamba = (f"{ts(10)} Mamba Cache is allocated. max_mamba_cache_size: 773, conv_state size: 0.32GB, "
             "ssm_state size: 13.61GB ")
    decode = (f"{ts(30)} Decode batch. #running-req: 12, #token: 4000, token usage: 0.01, cuda graph: True, "
              "gen throughput (token/s): 1234.56, #queue-req: 3")
    lines = HEALTHY[:5] + [mamba] + HEALTHY[5:] + [decode]
    console = Console(file=io.StringIO(), width=150, force_terminal=False, color_system=None)
    renderer = LiveRenderer(console)
    watcher = Watcher([RawLine(i + 1, 0, t.encode()) for i, t in enumerate(lines)], renderer, WatchOptions())
    assert watcher.execute() == 0
    console.print(renderer.view(watcher))
    text = console.file.getvalue()
    for needle in ("args ✓", "weights ✓", "KV cache ✓", "CUDA graphs ✓", "ready ✓", "serving ●",
                   "free at start: 78.50 GB", "weights: 15.30 GB", "KV cache: 412000 tokens, K 28.00 GB + V 28.00 GB",
                   "mamba cache: conv 0.32 GB, ssm 13.61 GB", "after pools: avail 6.90 GB",
                   "running 12 req", "queue 3", "token usage 0.01", "gen 1234.56 tok/s", "No findings yet."):
        assert needle in text, (needle, text)


# — every fixture through the gate: decided, and as explain decides ————————————————————


def _watch_json(path: Path, **opts) -> list[dict]:
    """``logx watch PATH --json`` in process; ``--timeout`` is only the safety net."""
    out = io.StringIO()
    watch(str(path), WatchOptions(mode="json", timeout=60, **opts), out=out)
    return jsonl(out.getvalue())


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("*.log")), ids=lambda p: p.stem)
def test_every_fixture_decides_the_gate_as_explain_does(fixture):
    """A gate decides as soon as the run is decided, whatever it saw of the launch (a cut log,
    a last line without newline, no launch lines): never by the timeout. Its verdict, exit
    code, root cause and fix are explain's on the same bytes."""
    objs = _watch_json(fixture, until="ready")
    end = objs[-1]
    assert end["reason"] != "timeout", end
    report = explain(fixture)
    assert end["exit_code"] == report.exit_code, end
    assert end["reason"] == ("failed" if report.exit_code == 1 else "ready"), end
    primary = report.primary
    assert end["primary"] == (primary.id if primary and report.exit_code == 1 else None), end
    if primary is not None and report.exit_code == 1:
        seen = [o for o in objs if o["type"] == "finding" and o["id"] == primary.id]
        assert seen and seen[0]["fix"] == primary.fix and seen[0]["title"] == primary.title


SEED_CUT = SEED[1:]  # what `tail` shows: no launch line, no server_args


@pytest.mark.parametrize("shape", ["last_line_without_newline", "from_end", "rotated"])
def test_gate_decides_at_once_after_a_fatal_finding(tmp_path, shape):
    """The seed's crash decides the gate while the writer still holds the file open, whatever
    the watch saw of the launch: the last line has no newline (the process died mid-line), the
    watch joined with --from-end after an earlier ready run, or the log was rotated and the new
    file holds only the traceback."""
    log = tmp_path / "server.log"
    options: dict = {"until": "ready", "timeout": 60}
    if shape == "last_line_without_newline":
        steps = lines_steps(SEED_CUT[:-1], 0.01) + [["w", SEED_CUT[-1]], ["sleep", 90]]
    elif shape == "from_end":
        log.write_text("\n".join(HEALTHY) + "\n")
        options["from_end"] = True
        steps = lines_steps(SEED_CUT, 0.01) + [["sleep", 90]]
    else:
        steps = lines_steps(HEALTHY[:3], 0.01) + [["sleep", 0.2], ["rotate"]] + lines_steps(SEED_CUT, 0.01) \
            + [["sleep", 90]]
    code, objs, clock, _ = watch_scripted(log, steps, **options)
    assert code == 1, objs
    assert clock.elapsed < 60  # decided by the crash, not by the end of the writer or the timeout
    end = objs[-1]
    assert end["reason"] == "failed" and end["primary"] == SEED_ID, end


def _gate_on(items: list) -> list[dict]:
    out = io.StringIO()
    Watcher(items, JsonRenderer(out), WatchOptions(until="ready", idle_flush=0.0)).execute()
    return jsonl(out.getvalue())


def _seed_items(*ticks_before_message) -> list:
    head = [RawLine(i + 1, 0, text.encode()) for i, text in enumerate(SEED_CUT[:-1])]
    message = RawLine(len(head) + 1, 0, SEED_CUT[-1].encode(), eol=False)
    return head + list(ticks_before_message) + [message, QUIET]


def test_gate_waits_for_a_line_still_arriving():
    """The traceback's exception line is being written (the source holds its first bytes):
    the open traceback is not matched, so the gate decides on the whole one."""
    objs = _gate_on(_seed_items(PARTIAL, PARTIAL, PARTIAL))
    assert [o["id"] for o in objs if o["type"] == "finding"] == [SEED_ID]
    assert objs[-1]["reason"] == "failed" and objs[-1]["primary"] == SEED_ID


def test_gate_does_not_decide_on_a_traceback_paused_inside_its_frames():
    """A loaded machine paused the writer inside the traceback's frames: the provisional
    finding is shown, but the gate decides on the traceback once its exception line came."""
    objs = _gate_on(_seed_items(QUIET, QUIET))
    assert objs[-1]["reason"] == "failed" and objs[-1]["primary"] == SEED_ID, objs[-1]


def test_gate_decides_on_a_traceback_cut_inside_its_frames_once_the_source_is_still():
    """The writer never finished the traceback: once the source has been still for
    STILL_SECONDS the cut traceback decides, without waiting for the end of the input."""
    objs = _gate_on(_seed_items(QUIET, STILL))
    assert objs[-1]["reason"] == "failed" and objs[-1]["primary"] != SEED_ID
    assert not any(o["type"] == "finding" and o["id"] == SEED_ID for o in objs)


def test_an_open_traceback_is_matched_with_the_runs_own_catalog(tmp_path):
    """The idle flush matches a traceback still open with the catalog of the log's server, as
    explain does: an SGLang log is never claimed by a vLLM pattern (here vLLM's wording of a
    context length above the model's)."""
    log = tmp_path / "server.log"
    log.write_text(f"{ts(0)} server_args=ServerArgs(model_path='m', tp_size=1)\n"
                   "Traceback (most recent call last):\n"
                   '  File "/x/sglang/srt/server_args.py", line 1, in f\n    raise ValueError(\n'
                   "ValueError: User-specified max_model_len (999999) is greater than the derived "
                   "max_model_len (max_position_embeddings=4096)")
    end = _watch_json(log, until="ready")[-1]
    assert end["primary"] == explain(log).primary.id != "context_length_exceeds_model"


def test_gate_on_a_healthy_run_then_a_failed_relaunch_is_failed(tmp_path):
    """The run the log is about now decides, not the first run's ready line."""
    log = tmp_path / "server.log"
    log.write_text("\n".join(HEALTHY + KV_FAIL) + "\n")
    end = _watch_json(log, until="ready")[-1]
    assert (end["reason"], end["exit_code"], end["run"]) == ("failed", 1, 2)
    assert explain(log, options=Options(status=True)).exit_code == 1


def test_gate_with_since_does_not_trust_an_earlier_runs_ready_line(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("\n".join(HEALTHY) + "\n")  # March timestamps: before the run of interest
    code, objs, _, _ = watch_scripted(log, [], until="ready", since=parse_since("10m"), timeout=60)
    assert code == 3
    end = objs[-1]
    assert end["reason"] == "stale" and end["verdict"] == "stale"


def test_timeout_holds_on_a_fifo_with_no_writer(tmp_path):
    """Opening a named pipe blocks until a writer opens it: the watch must not, so --timeout
    ends it (exit 3) though nobody ever writes."""
    fifo = tmp_path / "server.log"
    os.mkfifo(fifo)
    result: dict = {}

    def run() -> None:
        out = io.StringIO()
        result["code"] = watch(str(fifo), WatchOptions(mode="json", until="ready", timeout=0.3),
                               out=out)
        result["objs"] = jsonl(out.getvalue())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(20)
    if thread.is_alive():  # blocked in open(): release it before failing
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
        thread.join(5)
        pytest.fail("watch blocked opening a FIFO with no writer")
    assert result["code"] == 3
    assert result["objs"][-1]["reason"] == "timeout"


def test_gate_waits_for_the_traceback_a_crash_announcement_opens():
    """vLLM announces a crash ("EngineCore failed to start.") on the line before its
    traceback: while that traceback is still open (no next record yet), the announcement's
    symptom finding does not decide the gate; the idle flush's match of the traceback does."""
    lines = (FIXTURES / "vllm" / "max_model_len_exceeds_kv_capacity__v1_013_qwen3_32b.log").read_text().splitlines()
    cut = next(i for i, t in enumerate(lines) if "ValueError: To serve" in t) + 1
    ended: list[bool] = []

    def items():
        yield from (RawLine(i + 1, 0, t.encode()) for i, t in enumerate(lines[:cut]))
        for _ in range(60):  # the writer holds the file open, silent, for 3 s
            time.sleep(0.05)
            yield IDLE
        ended.append(True)

    out = io.StringIO()
    watcher = Watcher(items(), JsonRenderer(out), WatchOptions(until="ready"))
    assert watcher.execute() == 1
    assert not ended  # decided while the stream was still open
    end = jsonl(out.getvalue())[-1]
    assert end["primary"] == "max_model_len_exceeds_kv_capacity", end


def test_a_backtracking_user_pattern_is_said_once_while_watching():
    """The watch says once, as a note, that a pattern was disabled for timing out."""
    from conftest import make_catalog

    hostile = make_catalog({"id": "evil", "match": {"line": r"(a+)+$"}})
    lines = [f"{ts(i)} {'a' * 5000}!" for i in range(8)]
    out = io.StringIO()
    watcher = Watcher([RawLine(i + 1, 0, t.encode()) for i, t in enumerate(lines)], JsonRenderer(out),
                      WatchOptions(), catalog=hostile)
    watcher.execute()
    notes = [o for o in jsonl(out.getvalue()) if o["type"] == "source" and "pattern evil" in o["detail"]]
    assert len(notes) == 1 and "timed out 3×" in notes[0]["detail"]


# — the back-log ————————————————————————————————————————————————————————————————————


def _watch_told(path: Path) -> tuple:
    """What ``logx watch PATH --until ready --json`` decides and on what: its end, the phases
    each run reached, the problems it reported (not the times it said them at, nor the line a
    counted stretch of batches put "serving" at, nor the serving warnings, which the block
    scan's statistics give as explain's do)."""
    objs = _watch_json(path, until="ready")
    end = {k: v for k, v in objs[-1].items() if k not in ("time", "waited")}
    phases = {(o["run"], o["phase"]) for o in objs if o["type"] == "phase"}
    # (a survivable cause is shown as a problem until the server serves again: line by line
    # that moment is seen, a block read sees the run as it ends)
    survivable = {p.id for p in load_catalog().patterns if p.survivable}
    problems = {(o["run"], o["id"]) for o in objs if o["type"] == "finding"
                and o["severity"] in ("fatal", "error") and o["id"] not in survivable}
    return end, phases, problems


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("*.log"))[::6], ids=lambda p: p.stem)
def test_a_back_log_read_by_blocks_is_decided_as_line_by_line(fixture, monkeypatch):
    """A file that already holds more than BACKLOG_BYTES is read with explain's block scan
    before it is followed: the watch decides it as reading it line by line does, on the same
    phases and problems."""
    by_lines = _watch_told(fixture)
    monkeypatch.setattr(watch_module, "BACKLOG_BYTES", 0)
    assert watch_module._backlog(str(fixture), WatchOptions(), None) > 0
    assert _watch_told(fixture) == by_lines


def test_the_back_log_is_whole_lines_of_a_regular_file_followed_from_its_start(tmp_path, monkeypatch):
    monkeypatch.setattr(watch_module, "BACKLOG_BYTES", 10)
    log = tmp_path / "server.log"
    log.write_bytes(b"one line\nanother line\nhalf a li")
    assert watch_module._backlog(str(log), WatchOptions(), None) == len(b"one line\nanother line\n")
    assert watch_module._backlog(str(log), WatchOptions(from_end=True), None) == 0
    assert watch_module._backlog("-", WatchOptions(), None) == 0
    log.write_bytes(b"short")
    assert watch_module._backlog(str(log), WatchOptions(), None) == 0
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    assert watch_module._backlog(str(fifo), WatchOptions(), None) == 0  # not opened: no writer, no hang


def test_a_back_log_with_many_sightings_of_reported_findings_is_watched_as_when_each_derives(tmp_path, monkeypatch):
    """Catching up on a long log whose hits change many times (a retraction warning every
    ~2,000 lines of three runs): the findings derived from the hits that decide them
    (``Watcher._only_seen_hits``) report what deriving them in full from every hit reports,
    in the same order and with the same texts, lines and times, and the gate ends alike; once
    caught up, the current findings are the full derivation's, their counts too."""
    log = tmp_path / "server.log"
    subprocess.run([sys.executable, str(REPO / "bench" / "gen_log.py"), str(log), "--size", "6MB",
                    "--shape", "wide", "--ranks", "2"], check=True, capture_output=True)
    monkeypatch.setattr(watch_module, "BACKLOG_BYTES", 0)
    shortcut = Watcher._only_seen_hits
    taken = []

    def counted(self, run):
        took = shortcut(self, run)
        taken.append(took)
        return took

    def watched() -> tuple[list[dict], list[tuple]]:
        out = io.StringIO()
        seen: list[Watcher] = []
        execute = Watcher.execute
        monkeypatch.setattr(Watcher, "execute", lambda self: seen.append(self) or execute(self))
        watch(str(log), WatchOptions(mode="json", until="ready", timeout=60), out=out)
        monkeypatch.setattr(Watcher, "execute", execute)
        shown = [(f.id, f.severity, f.title, f.fix, [e.line for e in f.evidence], f.streams, f.at, f.occurrences)
                 for f in seen[0].current_findings()]  # (all of them: the back-log's end derives in full)
        return jsonl(out.getvalue()), shown

    monkeypatch.setattr(Watcher, "_only_seen_hits", counted)
    objs, shown = watched()
    assert sum(taken) > 20, taken  # the shortcut was taken, many times
    monkeypatch.setattr(Watcher, "_only_seen_hits", lambda self, run: False)  # every hit derives in full
    assert watched() == (objs, shown)
    assert [o for o in objs if o["type"] == "finding"] and objs[-1]["reason"] == "failed", objs[-1]

