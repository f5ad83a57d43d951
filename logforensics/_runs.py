"""Stage 5a — runs: split a log into launches and follow each launch through its phases.

One file often holds several launches appended together (``>>`` redirects, restarts). A new
``server_args`` dump or launch command, a startup line after the previous launch was already
up, or a timestamp jump backwards starts a new run. Each run keeps only what a report needs
— its facts, memory events, tracebacks and a short tail of lines — so memory stays bounded
whatever the file's size.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime, timedelta
from typing import Any

from ._dialects import DEFAULT, DIALECTS, PHASE_RANK, PHASES, Dialect
from ._dialects.base import version_tuple
from ._events import Event
from ._lines import parse_timestamp
from ._record import field, record, replace
from ._serving import HEALTH_PATHS, SERVING_KINDS, ServingStats
from ._tracebacks import Traceback, is_caret_line

__all__ = ["PHASES", "PHASE_RANK", "Run", "RunTracker", "phase_from_frames"]

MAX_MEMORY_EVENTS = 4000
MAX_TRACEBACKS = 200
MAX_ENDINGS = 50
TAIL_LINES = 12
BACKWARD_JUMP = timedelta(minutes=5)

def phase_from_frames(tb: Traceback, dialect: Dialect) -> str | None:
    """The phase ``tb`` was raised in, read from its frames (a tail -5 paste often has no
    phase lines at all, but its frames say where the launch was)."""
    return dialect.phase_from_frames([f.location for f in tb.frames], [f.function for f in tb.frames])


@record(eq=False)
class Run:
    """One launch of the server, as far as the log shows it."""

    index: int
    first_line: int
    dialect: Dialect = DEFAULT  # the server whose log this is
    last_line: int = 0
    started_at: str | None = None
    ended_at: str | None = None
    phase: str = "launch"
    phase_lines: dict[str, int] = field(default_factory=dict)  # phase -> first line proving it
    args: dict[str, Any] = field(default_factory=dict)
    args_line: int | None = None
    server_version: str | None = None  # the release the log names
    version_hints: set[str] = field(default_factory=set)
    model_class: str | None = None
    pids: list[int] = field(default_factory=list)  # server PIDs printed in the log
    memory_events: list[Event] = field(default_factory=list)
    tracebacks: list[Traceback] = field(default_factory=list)
    endings: list[Event] = field(default_factory=list)  # how it ended: sigquit, Killed, …
    batches: int = 0
    last_prefill: dict[str, Any] | None = None
    last_decode: dict[str, Any] | None = None
    requests: int = 0
    http_errors: int = 0
    tail: deque = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    last_serving_line: int = 0  # last batch or successful request: the server was alive there
    startup_seen: set = field(default_factory=set)  # (kind, stream) of startup lines seen
    # what later stages derive from this run once (the memory ledger), with the state it was
    # derived at: kept in the run, so no other run can be handed it
    derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    serving: ServingStats = field(default_factory=ServingStats)  # serving.py: degraded serving
    # every run of the log this one is part of (the tracker's list, shared): what the earlier
    # runs showed is a fact of this one (``loaded_before``)
    log_runs: list[Run] = field(default_factory=list, repr=False, compare=False)

    @property
    def model(self) -> str | None:
        # SGLang's model_path, vLLM's model (model_tag: the positional argument of `vllm serve`)
        return (self.args.get("model_path") or self.args.get("model") or self.args.get("model_tag")
                or self.args.get("served_model_name"))

    @property
    def version_bounds(self) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
        """``(low, high)``: the oldest and newest release the log's formats allow
        (``version_hints`` such as ``>=0.5.19`` and ``<=0.5.9``), ``None`` where unbounded."""
        lows = [_vt(h[2:]) for h in self.version_hints if h.startswith(">=")]
        highs = [_vt(h[2:]) for h in self.version_hints if h.startswith("<=")]
        return (max(lows) if lows else None), (min(highs) if highs else None)

    @property
    def version_range(self) -> str | None:
        """The release range the log's formats allow: "0.5.19 or later", "0.5.9 or earlier",
        "0.5.14–0.5.18"."""
        low, high = self.version_bounds
        if low and high:
            return f"{_vs(low)}–{_vs(high)}" if low <= high else None
        if low:
            return f"{_vs(low)} or later"
        if high:
            return f"{_vs(high)} or earlier"
        return None

    @property
    def ready(self) -> bool:
        return PHASE_RANK[self.phase] >= PHASE_RANK["ready"]

    @property
    def memory_touched(self) -> bool:
        """Whether the run got as far as GPU work (weights, pools, graphs)."""
        return PHASE_RANK[self.phase] >= PHASE_RANK["init"] or bool(self.memory_events)

    def reach(self, phase: str, line: int) -> None:
        self.phase_lines.setdefault(phase, line)
        if PHASE_RANK[phase] > PHASE_RANK[self.phase]:
            self.phase = phase

    def reached(self, phase: str, line: int) -> Run:
        """The run as the report tells it: ``phase`` reached at ``line`` (the root cause says
        where the launch was even when the log does not). A copy: the run read from the log
        stays as the log showed it (``logx watch`` goes on reading into it)."""
        if phase in self.phase_lines and PHASE_RANK[phase] <= PHASE_RANK[self.phase]:
            return self
        told = replace(self, phase_lines=dict(self.phase_lines))
        told.reach(phase, line)
        return told

    @property
    def loaded_before(self) -> list[tuple[int, str]]:
        """The "Load weight end" lines ``(line, text)`` of earlier runs of the same model in
        this log: the weights fitted then, so an OOM while loading them now is a change
        (release, flags), not size. A run whose model the log does not name (an excerpt
        without its server_args) counts."""
        model = self.args.get("model_path")
        out = []
        for earlier in self.log_runs:
            other = earlier.args.get("model_path")
            if earlier.index >= self.index or (model and other and other != model):
                continue
            ends = [e for e in earlier.memory_events if e.kind == "weight_load_end"]
            if ends:
                out.append((ends[0].number, ends[0].line.text))
        return out

    def with_release_hints(self, hints: set[str]) -> Run:
        """The run as the findings tell it: ``hints`` (the releases the server's failure sites
        that matched allow, ``>=0.5.9``/``<=0.5.14``) beside the log format's own. A copy when
        they add any: the run read from the log keeps what the log showed."""
        if hints <= self.version_hints:
            return self
        return replace(self, version_hints=self.version_hints | hints)

    @property
    def sglang_version(self) -> str | None:
        """The release, when the server is SGLang (the JSON's ``sglang_version``)."""
        return self.server_version if self.dialect.name == "sglang" else None

    def flag_names(self) -> dict[str, str]:
        """``{placeholder: flag}``: each renamed flag's name in this run's release."""
        messages = " ".join(tb.message for tb in self.tracebacks)
        version = version_tuple(self.server_version)
        bounds = self.version_bounds
        return {r.fact: r.name_in(self.args, version, bounds, messages, self.dialect.label)
                for r in self.dialect.facts.flag_renames}

    def key_args(self) -> dict[str, Any]:
        return {k: self.args[k] for k in self.dialect.key_args if k in self.args}


class RunTracker:
    """Feeds events into runs; ``runs`` holds them in file order. In a mixed file each
    server's events (``Event.dialect``) go to that server's latest run: a run is one
    server's launch."""

    def __init__(self, dialect: Dialect = DEFAULT) -> None:
        self.dialect = dialect
        self.runs: list[Run] = []
        # per server (a mixed file's servers keep their own clocks): its latest time, and
        # whether its clock went backwards since its last run boundary
        self._last_time: dict[str, datetime] = {}
        self._jumped: set[str] = set()
        self._latest: dict[str, Run] = {}  # dialect name -> its latest run (a mixed file's)
        self._last: Run | None = None  # the run of the latest event
        self.replaying = False  # feeding the fast path's representatives (counted already)

    @property
    def current(self) -> Run:
        if not self.runs:
            self._new_run(1)
        return self._last or self.runs[-1]

    @property
    def own(self) -> Run | None:
        """The latest run of the file's own server, where its statistics lines count (in a
        mixed file the latest event may be another server's); None before its first."""
        return self._latest.get(self.dialect.name)

    def _new_run(self, line: int, dialect: Dialect | None = None) -> Run:
        run = Run(index=len(self.runs) + 1, first_line=line, dialect=dialect or self.dialect,
                  log_runs=self.runs)
        self.runs.append(run)
        self._latest[run.dialect.name] = self._last = run
        return run

    def _run_of(self, event: Event) -> Run:
        """The latest run of the event's server (a first run for a server new to the file)."""
        if event.dialect is None or event.dialect == self.dialect.name:
            if not self.runs:
                return self._new_run(1)
            return self._latest.get(self.dialect.name) or self._new_run(event.number)
        return self._latest.get(event.dialect) or self._new_run(event.number, DIALECTS[event.dialect])

    def _starts_new_run(self, event: Event, run: Run) -> bool:
        """Whether ``event`` marks a new launch. A startup line is a relaunch when the run
        already reached ready or ended, when the same rank already logged it in this run, or
        when the clock jumped backwards just before it (an older launch appended later). A
        backward jump alone does not split: pasted excerpts jump in time too."""
        kind = event.kind
        if kind in run.dialect.launch_kinds:
            return run.args_line is not None or PHASE_RANK[run.phase] > PHASE_RANK["args"]
        if kind in run.dialect.startup_kinds:
            return (run.ready or run.dialect.name in self._jumped
                    or (kind, event.line.stream) in run.startup_seen
                    or any(e.kind in ("shutdown", "kill_process_tree", "killed") for e in run.endings))
        return False

    def feed(self, event: Event) -> Run:
        """Attribute ``event`` to a run (starting a new one when it marks a launch)."""
        run = self._run_of(event)
        number = event.line.number
        ts = event.line.ts
        t = parse_timestamp(ts) if ts else None
        server = run.dialect.name
        last = self._last_time.get(server)
        if t is not None and last is not None and t < last - BACKWARD_JUMP:
            self._jumped.add(server)
        if run.first_line and self._starts_new_run(event, run) and number > run.first_line:
            run = self._new_run(number, run.dialect)
            self._jumped.discard(server)
        if ts:
            if t is not None:
                self._last_time[server] = t
            if run.started_at is None:
                run.started_at = ts
            run.ended_at = ts
        if event.kind in run.dialect.startup_kinds:
            run.startup_seen.add((event.kind, event.line.stream))
        run.last_line = max(run.last_line, event.line.number if event.line.number > 0 else 0)
        self._record(run, event)
        self._latest[run.dialect.name] = self._last = run
        return run

    def _record(self, run: Run, event: Event) -> None:
        kind = event.kind
        f = event.fields
        dialect = run.dialect
        phase = dialect.event_phase.get(kind)
        if phase:
            run.reach(phase, event.number)
        if kind == "traceback":
            tb = event.traceback
            if tb is not None:
                run.last_line = max(run.last_line, tb.last_line)
                if len(run.tracebacks) < MAX_TRACEBACKS:
                    run.tracebacks.append(tb)
                phase = phase_from_frames(tb, dialect)
                if phase is not None:
                    run.reach(phase, tb.first_line)
                run.tail.extend([(n, text) for n, text in tb.lines if not is_caret_line(text)][-3:])
            return
        if not is_caret_line(event.line.text):
            run.tail.append((event.number, event.line.text))
        if kind in SERVING_KINDS or (kind in ("line", "warning", "error_line") and run.batches):
            run.serving.on_event(kind, f, event.number, event.line.ts, event.line.text)
        if kind == "health_check_failed" or (kind == "access_log" and f.get("status", 200) >= 500
                                             and str(f.get("path", "")).startswith(HEALTH_PATHS)):
            run.serving.on_health_failure(run.batches + run.requests - run.http_errors, run.ended_at,
                                          event.number, event.line.ts, event.line.text, kind == "access_log")
        if kind in ("line", "error_line"):
            return
        if kind in ("prefill_batch", "decode_batch"):
            run.last_serving_line = event.number
            run.batches += 1
            if kind == "prefill_batch":
                run.last_prefill = f
            else:
                run.last_decode = f
                if not self.replaying:
                    run.serving.series.add_line(event.line.text.encode(), dialect.stats.series)
            return
        if kind == "access_log":
            if f.get("status", 200) < 500:
                run.last_serving_line = event.number
            run.requests += 1
            if f.get("status", 200) >= 500:
                run.http_errors += 1
            return
        if kind in dialect.memory_kinds and len(run.memory_events) < MAX_MEMORY_EVENTS:
            run.memory_events.append(event)
        if kind in dialect.ending_kinds and len(run.endings) < MAX_ENDINGS:
            run.endings.append(event)
        run.version_hints |= dialect.version_hints(kind, f)
        if kind == "server_args":
            run.args = f.get("args", {})
            run.args_line = event.number
        elif kind == "server_version":
            run.server_version = str(f.get("version"))
        elif kind == "weight_load_end":
            run.model_class = f.get("model_class") or run.model_class
        elif kind == "server_started":
            pid = f.get("pid")
            if isinstance(pid, int) and pid not in run.pids:
                run.pids.append(pid)
        if dialect.pid_wrappers and event.line.wrapper.startswith(dialect.pid_wrappers):
            pid = convert_pid(event.line.wrapper)
            if pid is not None and pid not in run.pids:
                run.pids.append(pid)


def _vt(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def _vs(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def convert_pid(wrapper: str) -> int | None:
    _, _, rest = wrapper.partition("pid=")
    return int(rest) if rest.isdigit() else None
