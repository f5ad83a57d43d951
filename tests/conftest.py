"""Shared helpers: small catalogs built from dicts, and logs built from lines."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import settings

from logforensics._catalog import Catalog, build_pattern
from logforensics._clock import Clock

# The property tests draw the same examples on every run (CI among them), so a red run is a
# change's, never the dice's; LOGX_HYPOTHESIS_EXPLORE=1 draws new ones (to look for bugs).
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile("explore" if os.environ.get("LOGX_HYPOTHESIS_EXPLORE") else "repeatable")

REPO = Path(__file__).resolve().parent.parent
# The suite reads the pattern files as they are: no disk cache kept between runs (logx's own
# processes inherit this); tests/test_cache.py turns it on where it is the subject.
os.environ["LOGX_NO_CACHE"] = "1"
FIXTURES = REPO / "fixtures"
CORPUS = REPO.parent / "shared" / "corpus"


def logx(*args, stdin: bytes | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``logx ARGS`` in this process: the console entry (``cli.main``: its one-line errors and exit
    codes) inside typer's ``CliRunner`` isolation (stdin, stdout, stderr, environment). The
    answer of ``subprocess.run`` without an interpreter start per call; tests where the process
    is the point (pipes, FIFOs, signals) spawn one."""
    from typer.testing import CliRunner

    from logforensics import _cli as cli

    argv = [str(a) for a in args]
    with CliRunner().isolation(input=stdin, env=env) as (out, err, _):
        try:
            cli.main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        sys.stdout.flush()
        sys.stderr.flush()
        return subprocess.CompletedProcess(["logx", *argv], code, out.getvalue(), err.getvalue())


def pattern_toml(pid: str, line: str) -> str:
    """A minimal pattern file: one pattern ``pid`` matching log lines by the regex ``line``."""
    return (f'[[pattern]]\nid = "{pid}"\ntitle = "t"\nseverity = "error"\nphase = "serving"\n'
            f"explanation = \"e\"\nfix = \"f\"\n  [[pattern.match]]\n  line = '{line}'\n")


def pattern_dir(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    """``tmp_path/pats`` (a user's pattern directory) with the pattern file ``name`` holding ``text``."""
    d = tmp_path / "pats"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)
    return d


def make_catalog(*tables: dict) -> Catalog:
    """A catalog from pattern dicts; defaults fill the fields a test does not care about."""
    patterns = []
    for i, table in enumerate(tables):
        full = {"title": table.get("id", "t"), "severity": "fatal", "phase": "any",
                "explanation": "because", "fix": "change it", **table}
        patterns.append(build_pattern(full, "<test>", i))
    return Catalog(patterns)


# A child process for tests that need a real server stand-in: prints argv[2:] (``{ts}`` = local
# time now, ``{pid}`` = its pid), then acts on argv[1]: ``sleepN``, ``exitN`` or ``kill9``.
CHILD = """
import datetime, os, sys, time
action, lines = sys.argv[1], sys.argv[2:]
for line in lines:
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    print(line.format(ts=now, pid=os.getpid()), flush=True)
if action.startswith("sleep"):
    time.sleep(float(action[5:]))
elif action.startswith("exit"):
    sys.exit(int(action[4:]))
elif action == "kill9":
    os.kill(os.getpid(), 9)
"""

# A writer process driven by a JSON list of steps: ["w", text] writes, flushes and reports the
# write time on stderr; ["sleep", s]; ["truncate"] (copytruncate: it keeps appending to the same
# file); ["rotate"] (mv path path.1, then a new path); ["rotate_gap", s] (the new file appears s
# later); ["wait", path] (until that file exists); ["exit", code]. Path "-" writes to stdout.
WRITER = r"""
import json, os, sys, time
path, steps = sys.argv[1], json.loads(sys.argv[2])
out = sys.stdout.buffer if path == "-" else None  # a file is opened (created) at the first write
for step in steps:
    kind = step[0]
    if kind == "w":
        if out is None:
            out = open(path, "ab", buffering=0)
        out.write(step[1].encode()); out.flush()
        sys.stderr.write("wrote %r %.6f\n" % (step[1][:20], time.monotonic())); sys.stderr.flush()
    elif kind == "sleep":
        time.sleep(step[1])
    elif kind == "truncate":
        os.truncate(path, 0)
    elif kind in ("rotate", "rotate_gap"):
        out.close(); os.rename(path, path + ".1")
        if kind == "rotate_gap":
            time.sleep(step[1])
        out = open(path, "ab", buffering=0)
    elif kind == "wait":
        while not os.path.exists(step[1]):
            time.sleep(0.01)
    elif kind == "exit":
        sys.exit(step[1])
"""


class ScriptedClock(Clock):
    """``logx watch``'s clock in a test: no real waiting. Each wait advances its time and then
    does what the writer's ``steps`` (WRITER's: ``w``, ``sleep``, ``truncate``, ``rotate``) do by
    then to ``path``, stamping the file's mtime with this clock's time, so a watch run in-process
    sees a log written with pauses exactly as a separate writer would write it. ``interrupt_at``:
    the elapsed time at which a wait raises KeyboardInterrupt (Ctrl-C); ``elapsed`` says how long
    the watch took, in the script's seconds."""

    def __init__(self, path: Path, steps: list, interrupt_at: float | None = None) -> None:
        self.path = Path(path)
        self.wall0 = time.time()
        self.elapsed = 0.0
        self.interrupt_at = interrupt_at
        self.pending: list[tuple[float, list]] = []
        at = 0.0
        for step in steps:
            if step[0] == "sleep":
                at += step[1]
            else:
                self.pending.append((at, step))
        self.written: list[tuple[str, float]] = []  # (text, elapsed at its write)

    def monotonic(self) -> float:
        return 1000.0 + self.elapsed

    def time(self) -> float:
        return self.wall0 + self.elapsed

    def sleep(self, seconds: float) -> None:
        self.elapsed += seconds
        while self.pending and self.pending[0][0] <= self.elapsed:
            self._do(self.pending.pop(0)[1])
        if self.interrupt_at is not None and self.elapsed >= self.interrupt_at:
            raise KeyboardInterrupt

    def wait_readable(self, fd: int, timeout: float) -> bool:
        ready, _, _ = select.select([fd], [], [], 0)
        if not ready:
            self.sleep(timeout)
        return bool(ready or select.select([fd], [], [], 0)[0])

    def _do(self, step: list) -> None:
        kind = step[0]
        if kind == "w":
            with open(self.path, "ab") as fh:
                fh.write(step[1].encode())
            self.written.append((step[1], self.elapsed))
        elif kind == "truncate":
            os.truncate(self.path, 0)
        elif kind == "rotate":
            os.rename(self.path, f"{self.path}.1")
            self.path.touch()
        else:
            raise ValueError(f"ScriptedClock: no step {kind!r}")
        os.utime(self.path, (self.time(), self.time()))


def wait_for(pred, timeout: float = 4.0, interval: float = 0.01):
    """Poll ``pred`` until it returns something truthy or ``timeout`` passes; return its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def log_bytes(*lines: str, newline_at_end: bool = True) -> bytes:
    text = "\n".join(lines) + ("\n" if newline_at_end else "")
    return text.encode()


@pytest.fixture
def write_log(tmp_path):
    def write(name: str, *lines: str) -> Path:
        path = tmp_path / name
        path.write_bytes(log_bytes(*lines))
        return path

    return write


@pytest.fixture
def popen():
    """``subprocess.Popen`` (stdin from /dev/null) that kills and reaps everything it started,
    and closes its pipes, when the test ends."""
    procs: list[subprocess.Popen] = []

    def _popen(args: list[str], **kw) -> subprocess.Popen:
        kw.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(args, **kw)
        procs.append(p)
        return p

    yield _popen
    for p in procs:
        if p.poll() is None:
            p.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=5)
        for stream in (p.stdout, p.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def spawn(popen):
    """Start the stand-in server ``CHILD`` doing ``action`` (optionally writing ``lines`` to a log)."""
    files = []

    def _spawn(action: str, *lines: str, log: Path | None = None, extra: tuple[str, ...] = ()) -> subprocess.Popen:
        out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - closed below
        if log is not None:
            files.append(out)
        return popen([sys.executable, "-c", CHILD, action, *lines, *extra], stdout=out, stderr=out)

    yield _spawn
    for f in files:
        f.close()
