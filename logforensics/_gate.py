"""What ``logx watch`` knows and decides, shared by the watch loop (``watcher.py``) and its
views (``render/watch.py``): the options, how the watched process ended (``ProcessEnd``, from
the ``logx run`` sidecar or a PID: ``ProcessMonitor``), how the watch ended (``Outcome``), and
when a run counts as ready for the gate (``gate_ready``).
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from ._clock import Clock
from ._findings import Finding
from ._follow import POLL_SECONDS
from ._launcher import Sidecar, read_sidecar
from ._procinfo import process_info
from ._record import field, record
from ._runs import Run

UNTIL = ("ready", "exit")
SETTLE_SECONDS = 0.3  # a problem seen while lines still pour in is decided at most this late
SIDECAR_MTIME_SLACK = 2.0  # a log written this long after the sidecar's ended_at: new writer


@record
class WatchOptions:
    """How to watch. ``mode``: ``auto`` (live view on a TTY, plain lines otherwise),
    ``live``, ``plain`` or ``json``."""

    until: str | None = None  # None | "ready" | "exit"
    timeout: float | None = None  # seconds from the start
    silence: float | None = None  # seconds without a new line
    from_end: bool = False
    mode: str = "auto"
    verbose: bool = False  # also show info-severity findings (plain/live; JSON shows all)
    pid: int | None = None  # a process to watch besides the sidecar's
    since: float | None = None  # epoch seconds the run of interest started (older lines: stale)
    use_sidecar: bool = True
    idle_flush: float = 0.5
    poll: float = POLL_SECONDS
    process_poll: float = 0.5
    width: int | None = None
    dialect: str | None = None  # the server's dialect (None: detected from the first lines)


@record
class ProcessEnd:
    """How the watched process ended, as far as the sidecar or /proc tell."""

    pid: int | None
    exit_code: int | None = None
    signal: int | None = None
    source: str = "pid"  # "sidecar" | "pid" | "stream"

    @property
    def abnormal(self) -> bool:
        return self.signal is not None or self.exit_code not in (0, None)

    def how(self) -> str:
        """``exited with code 1``, ``was killed by signal 9``, … (after "the process")."""
        if self.source == "stream":
            return "stopped writing (the input stream ended)"
        if self.signal is not None:
            return f"was killed by signal {self.signal}"
        if self.exit_code is not None:
            return f"exited with code {self.exit_code}"
        return "ended"

    def describe(self) -> str:
        """``process 42 exited with code 1``, ``the input stream ended``, …"""
        if self.source == "stream":
            return "the input stream ended"
        who = f"process {self.pid}" if self.pid else "the process"
        how = self.how()
        return f"{who} is gone" if how == "ended" else f"{who} {how}"

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "exit_code": self.exit_code, "signal": self.signal,
                "source": self.source}


def _describes(car, log_path: str) -> bool:
    """The sidecar is about this log (not a copy moved next to another file)."""
    if not car.log:
        return True
    try:
        return os.path.samefile(car.log, log_path)
    except OSError:
        return os.path.realpath(car.log) == os.path.realpath(log_path)


class ProcessMonitor:
    """Notices the server ending: the ``logx run`` sidecar's ``ended_at`` or the PID (from the
    sidecar or ``--pid``) no longer alive. ``poll()`` never raises."""

    def __init__(self, log_path: str | None, pid: int | None = None, use_sidecar: bool = True):
        self.log_path = log_path if use_sidecar else None
        self.explicit_pid = pid
        self.pid = pid
        self.sidecar: Sidecar | None = None

    @property
    def active(self) -> bool:
        return self.log_path is not None or self.explicit_pid is not None

    def poll(self) -> ProcessEnd | None:
        if self.log_path is not None:
            car = read_sidecar(self.log_path)
            if car is not None and not self._stale(car) and _describes(car, self.log_path):
                self.sidecar = car
                if self.explicit_pid is None and car.pid:
                    self.pid = car.pid
                if car.finished or car.error:
                    return ProcessEnd(car.pid, car.exit_code, car.signal, "sidecar")
        if self.pid:
            info = process_info(self.pid)
            if info is None or not info.alive:
                car = read_sidecar(self.log_path) if self.log_path else None
                if car is not None and car.pid == self.pid and car.finished:
                    return ProcessEnd(self.pid, car.exit_code, car.signal, "sidecar")
                return ProcessEnd(self.pid, None, None, "pid")
        return None

    def _stale(self, car) -> bool:
        """A sidecar that ended before the log was last written belongs to an earlier run."""
        ended = car.ended_at_dt
        if ended is None or self.log_path is None:
            return False
        try:
            mtime = os.stat(self.log_path).st_mtime
        except OSError:
            return False
        return mtime > ended.timestamp() + SIDECAR_MTIME_SLACK


@record
class Outcome:
    """How the watch ended."""

    reason: str  # ready | failed | exited | eof | timeout | silence | interrupted
    exit_code: int
    verdict: str
    primary: Finding | None = None
    run: Run | None = None
    process: ProcessEnd | None = None
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        run = self.run
        out = {"type": "end", "verdict": self.verdict, "exit_code": self.exit_code,
               "reason": self.reason, "message": self.message,
               "run": run.index if run else None, "phase": display_phase(run) if run else None,
               "primary": self.primary.id if self.primary else None,
               "process": self.process.to_dict() if self.process else None}
        out.update(self.extra)
        return out



def display_phase(run: Run) -> str:
    """The run's phase for display: batch lines before the ready line are the warmup."""
    if run.phase == "serving" and not gate_ready(run):
        return "warmup"
    return run.phase



_STARTUP_PHASES = ("args", "import", "init", "weights", "kv_alloc", "cuda_graph", "warmup")


def gate_ready(run: Run | None) -> bool:
    """Ready for ``--until ready``: the "fired up and ready to roll" line — SGLang prints it
    only after its warmup request succeeded (the warmup's own batch lines come before it).
    A run joined already serving (``--from-end``: no startup line seen) counts as ready at
    its first batch line."""
    if run is None:
        return False
    if "ready" in run.phase_lines:
        return True
    return run.phase == "serving" and not any(p in run.phase_lines for p in _STARTUP_PHASES)



class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, ``kill``): ends the watch like Ctrl-C, and is reported as itself."""


class WatchView(Protocol):
    """What a view reads of the watch loop (``watcher.Watcher`` is one)."""

    name: str
    started: float  # by ``clock``
    clock: Clock
    waiting: bool
    options: WatchOptions
    process_end: ProcessEnd | None

    @property
    def run(self) -> Run | None: ...

    @property
    def lines(self) -> int: ...

    @property
    def run_count(self) -> int: ...

    def current_findings(self) -> list[Finding]: ...

