"""``logx watch`` — follow a log as it is written and say, live, where the launch is and what
went wrong the moment it goes wrong.

    from logforensics.watch import WatchOptions, watch
    code = watch("server.log", WatchOptions(until="ready", timeout=600))   # gate for scripts
    code = watch("-")                                                       # tail -f … | logx watch

The loop (``Watcher.run``) pulls lines and idle ticks from ``follow.py``, feeds every line to
the incremental ``Analyzer`` (the same one ``explain`` uses) and turns what changed into
updates: a phase reached, a run started, a finding (the same ``Finding.to_dict`` schema as
``explain --json``), the process ending, the file truncated/rotated, and the end. A renderer
shows them: ``PlainRenderer`` (one line each, for pipes and logs), ``JsonRenderer`` (JSON
lines) or ``LiveRenderer`` (a rich Live view on a TTY).

A traceback is reported as soon as it is complete. One still open when the stream has been
idle for ``idle_flush`` seconds (the crashing process printed its last line and died) is
matched from a snapshot (``TracebackAssembler.pending``) on a throwaway ``Matcher`` seeded
with the run's hits, so a crash is never hidden by the line that never comes. Findings are
keyed (run, id — and for unclassified exceptions the traceback's first line), so a finding
seen in a snapshot is not reported again when its traceback completes.

Gate mode (``until``): ``"ready"`` ends with 0 at "The server is fired up and ready to roll!",
1 as soon as a fatal/error finding is seen (decided on the best-ranked problem finding once
the lines already written are read) or the process dies (the ``logx run`` sidecar or
``pid``, polled every ``process_poll`` seconds; a pipe's EOF); ``"exit"`` waits for the
process or stream to end and exits with explain's exit code. ``timeout`` and ``silence`` end
with 3 (naming the phase it stalled in). Without ``until``: until Ctrl-C or EOF of a pipe,
then a summary and explain's exit code. Exit codes are those of ``report.py``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from . import sites, staleness
from .analysis import Analyzer, Options, run_facts
from .catalog import Catalog, load_catalog
from .errors import EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK
from .findings import Evidence, Finding, Matcher, fill, rank
from .follow import POLL_SECONDS, FollowItem, Tick, follow_file, follow_stream
from .launcher import read_sidecar
from .procinfo import process_info
from .report import Report, serving_json
from .runs import PHASE_RANK, PHASES, Run
from .sources import RawLine, SourceError
from .tracebacks import Traceback

PHASE_LABELS = {
    "launch": "launch", "args": "args", "import": "import", "init": "dist init", "weights": "weights",
    "kv_alloc": "KV cache", "cuda_graph": "CUDA graphs", "warmup": "warmup", "ready": "ready",
    "serving": "serving",
}
UNTIL = ("ready", "exit")
SETTLE_SECONDS = 0.3  # a problem seen while lines still pour in is decided at most this late
SIDECAR_MTIME_SLACK = 2.0  # a log written this long after the sidecar's ended_at: new writer
_STYLE = {"fatal": "bold red", "error": "red", "warning": "yellow", "info": "cyan"}

# Built-in texts for the two findings only watch can see (a pattern with the same id in the
# catalog replaces them).
_SYNTHETIC = {
    "process_died_without_traceback": dict(
        title="The server process ended before it was ready, without a traceback",
        severity="fatal",
        explanation=("The process {how} while in the {phase} phase and the log shows no error "
                     "explaining it: it was killed (the host OOM killer, a container limit, "
                     "a signal) or its error went to another stream."),
        fix=("Check `dmesg` / `journalctl -k` for the OOM killer and the container's memory "
             "limit; make sure stderr goes to this log (`logx run --log FILE -- CMD`)."),
    ),
    "log_empty": dict(
        title="The process ended and the log is empty",
        severity="fatal",
        explanation=("The process {how} and wrote nothing to this log: it died before logging, "
                     "or its output went elsewhere (a lost nohup/ssh redirect)."),
        fix="Launch with the output captured by a launcher that opens the log first: "
            "`logx run --log FILE -- {launch_example}`.",
    ),
}


@dataclass
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


@dataclass
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
        who = f"process {self.pid}" if self.pid else "the process"
        if self.source == "stream":
            return "the input stream ended"
        if self.signal is not None:
            return f"{who} was killed by signal {self.signal}"
        if self.exit_code is not None:
            return f"{who} exited with code {self.exit_code}"
        return f"{who} is gone"

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
        self.sidecar = None

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


@dataclass
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


# — renderers —————————————————————————————————————————————————————————————————————


def clock(ts: str | None) -> str:
    """``HH:MM:SS`` of a log timestamp, or the local time now when the line had none."""
    if ts:
        part = ts.rsplit(" ", 1)[-1]
        if len(part) >= 8 and part[2] == ":":
            return part[:8]
    return time.strftime("%H:%M:%S")


def one_line(text: str) -> str:
    return " ".join(text.split())


class Renderer:
    """What the watcher calls; every method may raise ``BrokenPipeError``."""

    def start(self, watcher: Watcher) -> None: ...

    def phase(self, run: Run, phase: str, line: int, ts: str | None) -> None: ...

    def new_run(self, run: Run, ts: str | None) -> None: ...

    def finding(self, finding: Finding, ts: str | None) -> None: ...

    def notice(self, kind: str, text: str, ts: str | None = None) -> None: ...

    def process(self, end: ProcessEnd, ts: str | None) -> None: ...

    def refresh(self, watcher: Watcher, force: bool = False) -> None: ...

    def end(self, outcome: Outcome, watcher: Watcher) -> None: ...


class _LineWriter:
    """Writes whole lines to a text stream, UTF-8 whatever the locale, flushed at once."""

    def __init__(self, out: TextIO | None):
        self.out = out if out is not None else sys.stdout

    def write(self, text: str) -> None:
        buffer = getattr(self.out, "buffer", None)
        if buffer is not None:
            buffer.write((text + "\n").encode("utf-8", "replace"))
            buffer.flush()
        else:
            self.out.write(text + "\n")
            self.out.flush()


class PlainRenderer(Renderer):
    """One plain line per phase change, finding, process end and source event::

        14:01:38 phase args (line 1)
        14:01:40 FATAL spec_decode_radix_mamba_no_buffer: <title> — fix: <fix>
    """

    def __init__(self, out: TextIO | None = None, verbose: bool = False):
        self.w = _LineWriter(out)
        self.verbose = verbose

    def phase(self, run: Run, phase: str, line: int, ts: str | None) -> None:
        self.w.write(f"{clock(ts)} phase {phase} (line {line})")

    def new_run(self, run: Run, ts: str | None) -> None:
        self.w.write(f"{clock(ts)} run {run.index} started (line {run.first_line}): a new launch "
                     "in the same log")

    def finding(self, f: Finding, ts: str | None) -> None:
        if f.severity == "info" and not self.verbose:
            return
        self.w.write(f"{clock(ts)} {f.severity.upper()} {f.id}: {one_line(f.title)} — fix: "
                     f"{one_line(f.fix)}")

    def notice(self, kind: str, text: str, ts: str | None = None) -> None:
        self.w.write(f"{clock(ts)} {kind} {text}")

    def process(self, end: ProcessEnd, ts: str | None) -> None:
        self.w.write(f"{clock(None)} process {end.pid or '?'} {end.how()}")

    def end(self, o: Outcome, watcher: Watcher) -> None:
        head = f"{clock(None)} end {o.reason.upper()}: verdict {o.verdict}, exit {o.exit_code}"
        if o.message:
            head += f" — {one_line(o.message)}"
        self.w.write(head)
        if o.primary is not None:
            self.w.write(f"{clock(None)} cause {o.primary.id}: {one_line(o.primary.title)} — fix: "
                         f"{one_line(o.primary.fix)}")


class JsonRenderer(Renderer):
    """JSON lines: ``{"type": "phase", "phase", "line", "run", "time"}``, ``{"type": "run",
    …}``, ``{"type": "finding", **Finding.to_dict()}``, ``{"type": "process", …}``,
    ``{"type": "source", "event", "detail"}`` and finally ``{"type": "end", "verdict",
    "exit_code", "reason", …}``."""

    def __init__(self, out: TextIO | None = None):
        self.w = _LineWriter(out)

    def _emit(self, obj: dict[str, Any]) -> None:
        self.w.write(json.dumps(obj, ensure_ascii=False))

    def phase(self, run: Run, phase: str, line: int, ts: str | None) -> None:
        self._emit({"type": "phase", "phase": phase, "line": line, "run": run.index, "time": ts})

    def new_run(self, run: Run, ts: str | None) -> None:
        self._emit({"type": "run", "run": run.index, "line": run.first_line, "time": ts})

    def finding(self, f: Finding, ts: str | None) -> None:
        self._emit({"type": "finding", **f.to_dict()})

    def notice(self, kind: str, text: str, ts: str | None = None) -> None:
        self._emit({"type": "source", "event": kind, "detail": text})

    def process(self, end: ProcessEnd, ts: str | None) -> None:
        self._emit({"type": "process", "ended": True, **end.to_dict(), "detail": end.describe()})

    def end(self, o: Outcome, watcher: Watcher) -> None:
        self._emit(o.to_dict())


def memory_rows(run: Run) -> list[tuple[str, str]]:
    """The memory figures a launch has printed so far, one row per stage (several ranks:
    the lowest available memory, the first rank's sizes)."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for e in run.memory_events:
        by_kind.setdefault(e.kind, []).append(e.fields)

    def gb(v: Any) -> str:
        return f"{v:.2f} GB" if isinstance(v, int | float) else "?"

    def low(kind: str, key: str = "avail_gb") -> Any:
        values = [f[key] for f in by_kind.get(kind, []) if isinstance(f.get(key), int | float)]
        return min(values) if values else None

    def ranks(kind: str) -> str:
        n = len(by_kind.get(kind, []))
        return f" ({n} ranks)" if n > 1 else ""

    rows: list[tuple[str, str]] = []
    if (v := low("weight_load_begin")) is not None:
        rows.append(("free at start", f"{gb(v)}{ranks('weight_load_begin')}"))
    if ends := by_kind.get("weight_load_end"):
        f = ends[0]
        text = f"{gb(f.get('mem_usage_gb'))}" if f.get("mem_usage_gb") is not None else "loaded"
        text += f", avail after {gb(low('weight_load_end'))}"
        rows.append(("weights", text))
    if kv := by_kind.get("kv_cache_alloc"):
        f = kv[0]
        size = (f"K {gb(f.get('k_gb'))} + V {gb(f.get('v_gb'))}" if f.get("k_gb") is not None
                else f"KV {gb(f.get('kv_gb'))}")
        rows.append(("KV cache", f"{f.get('tokens', '?')} tokens, {size}"))
    if mamba := by_kind.get("mamba_cache_alloc"):
        f = mamba[0]
        rows.append(("mamba cache", f"conv {gb(f.get('conv_gb'))}, ssm {gb(f.get('ssm_gb'))}"))
    if (v := low("memory_pool_end")) is not None:
        rows.append(("after pools", f"avail {gb(v)}"))
    if graphs := by_kind.get("cuda_graph_end"):
        f = graphs[0]
        rows.append(("CUDA graphs", f"mem usage {gb(f.get('mem_usage_gb'))}, avail after "
                                    f"{gb(low('cuda_graph_end'))}"))
    if budget := by_kind.get("scheduler_budget"):
        f = budget[0]
        rows.append(("token budget", f"max_total_num_tokens={f.get('max_total_num_tokens')}, "
                                     f"max_running_requests={f.get('max_running_requests')}"))
    return rows


def display_phase(run: Run) -> str:
    """The run's phase for display: batch lines before the ready line are the warmup."""
    if run.phase == "serving" and not gate_ready(run):
        return "warmup"
    return run.phase


def phase_line(run: Run | None, failed: bool) -> Text:
    """Every phase, in order: reached ✓, the current one highlighted (✗ when the run
    failed), the rest dim. ``import`` (a failure path, not a startup step) only when seen."""
    text = Text()
    reached = PHASE_RANK[display_phase(run)] if run is not None else -1
    first = True
    for i, phase in enumerate(PHASES):
        if phase == "import" and (run is None or "import" not in run.phase_lines):
            continue
        if not first:
            text.append(" → ", style="dim")
        first = False
        label = PHASE_LABELS.get(phase, phase)
        if run is None or i > reached:
            text.append(label, style="dim")
        elif i == reached:
            mark, style = ("✗", "bold red") if failed else ("●", "bold cyan")
            text.append(f"{label} {mark}", style=style)
        elif phase in run.phase_lines:
            text.append(f"{label} ✓", style="green")
        else:
            text.append(f"{label} ·", style="dim")
    return text


class LiveRenderer(Renderer):
    """A rich Live view redrawn in place: status, phase timeline, memory, serving stats and
    findings with their fix. Redrawn from the main loop (no refresh thread)."""

    MAX_FINDINGS = 6

    def __init__(self, console: Console, verbose: bool = False, refresh_every: float = 0.2):
        self.console = console
        self.verbose = verbose
        self.refresh_every = refresh_every
        self.live: Live | None = None
        self.notes: list[str] = []
        self._last = 0.0
        self._dirty = True

    def start(self, watcher: Watcher) -> None:
        self.live = Live(console=self.console, auto_refresh=False, transient=False,
                         redirect_stdout=False, redirect_stderr=False)
        self.live.start()
        self.refresh(watcher, force=True)

    def _touch(self) -> None:
        self._dirty = True  # shown at the next refresh, without waiting for the rate limit

    def phase(self, run: Run, phase: str, line: int, ts: str | None) -> None:
        self._touch()

    def new_run(self, run: Run, ts: str | None) -> None:
        self.notes.append(f"{clock(ts)} run {run.index} started at line {run.first_line}")
        self._touch()

    def finding(self, finding: Finding, ts: str | None) -> None:
        self._touch()

    def notice(self, kind: str, text: str, ts: str | None = None) -> None:
        self.notes.append(f"{clock(ts)} {kind}: {text}")
        self._touch()

    def process(self, end: ProcessEnd, ts: str | None) -> None:
        self.notes.append(f"{clock(None)} {end.describe()}")
        self._touch()

    def refresh(self, watcher: Watcher, force: bool = False) -> None:
        if self.live is None:
            return
        now = time.monotonic()
        if not (force or self._dirty) and now - self._last < self.refresh_every:
            return
        self._last = now
        self._dirty = False
        self.live.update(self.view(watcher), refresh=True)

    def view(self, w: Watcher, outcome: Outcome | None = None) -> RenderableType:
        run = w.run
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column()
        status = "waiting for the log" if w.waiting else ("ended" if outcome else "following")
        head = Text.assemble(("logx watch ", "bold"), (w.name, "bold underline"),
                             f"  {status} · {w.analyzer.lines} lines · "
                             f"{time.monotonic() - w.started:.0f} s")
        if run is not None and len(w.analyzer.runs) > 1:
            head.append(f" · run {run.index} of {len(w.analyzer.runs)}", style="dim")
        if w.options.until:
            head.append(f" · until {w.options.until}", style="dim")
        shown = [f for f in w.current_findings() if self.verbose or f.severity != "info"]
        failed = any(f.is_problem for f in shown)
        grid.add_row("Phase", phase_line(run, failed))
        if run is not None:
            if run.model:
                grid.add_row("Model", escape(run.model + (f" ({run.model_class})" if run.model_class
                                                          else "")))
            for i, (label, value) in enumerate(memory_rows(run)):
                grid.add_row("" if i else "Memory", Text.assemble((f"{label}: ", "bold dim"), value))
            serving = serving_json(run)
            if serving:
                parts = [f"running {serving['running_req']} req" if serving.get("running_req")
                         is not None else None,
                         f"queue {serving['queue_req']}" if serving.get("queue_req") is not None
                         else None,
                         f"token usage {serving['token_usage']}" if serving.get("token_usage")
                         is not None else None,
                         f"gen {serving['gen_throughput']} tok/s" if serving.get("gen_throughput")
                         is not None else None,
                         f"{serving['requests']} requests" if serving.get("requests") else None]
                grid.add_row("Serving", " · ".join(p for p in parts if p) or "batches seen")
        if w.process_end is not None:
            grid.add_row("Process", Text(w.process_end.describe(), style="bold red"
                                         if w.process_end.abnormal else ""))
        for note in self.notes[-3:]:
            grid.add_row("Note", Text(note, style="dim"))
        parts: list[RenderableType] = [head, grid]
        if not shown:
            parts.append(Text("No findings yet.", style="dim green"))
        for f in shown[: self.MAX_FINDINGS]:
            body = Text.assemble(("Fix: ", "bold green"), f.fix)
            where = f" · line {f.evidence[0].line}" if f.evidence else ""
            parts.append(Panel(body, title=Text(f"{f.title}", style=_STYLE.get(f.severity, "")),
                               title_align="left", border_style=_STYLE.get(f.severity, ""),
                               subtitle=Text(f"{f.id} · {f.severity} · phase {f.phase}{where}",
                                             style="dim"), subtitle_align="right"))
        if len(shown) > self.MAX_FINDINGS:
            parts.append(Text(f"+ {len(shown) - self.MAX_FINDINGS} more finding(s)", style="dim"))
        if outcome is not None:
            style = {0: "bold green", 1: "bold red"}.get(outcome.exit_code, "bold yellow")
            line = Text.assemble(("Result: ", "bold"), (outcome.reason.upper(), style),
                                 f" (verdict {outcome.verdict}, exit {outcome.exit_code})")
            if outcome.message:
                line.append(f" — {outcome.message}")
            parts.append(line)
        return Group(*parts)

    def end(self, outcome: Outcome, watcher: Watcher) -> None:
        if self.live is not None:
            self.live.update(self.view(watcher, outcome), refresh=True)
            self.live.stop()
            self.live = None

    def stop(self) -> None:
        if self.live is not None:
            with contextlib.suppress(Exception):
                self.live.stop()
            self.live = None


# — the watcher ————————————————————————————————————————————————————————————————————


_BATCH_KINDS = frozenset({"prefill_batch", "decode_batch"})
# Events that can change a run's findings besides a new catalog hit: the named conditions look
# at endings, memory events and the phase (a phase change also triggers a check).
_TRIGGER_KINDS = frozenset({"server_args", "traceback", "ready"})
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


def _finding_key(f: Finding) -> tuple:
    if f.id == "unclassified_exception":
        anchor = f.traceback.first_line if f.traceback is not None else f.title
        return (f.run, f.id, anchor)
    return (f.run, f.id)


class Watcher:
    """The watch loop. ``items`` are ``RawLine``s and ``Tick``s (``follow.py``)."""

    def __init__(self, items: Iterable[FollowItem], renderer: Renderer,
                 options: WatchOptions | None = None, catalog: Catalog | None = None,
                 name: str = "<stream>", monitor: ProcessMonitor | None = None,
                 path: str | None = None, context: staleness.Context | None = None):
        self.items = items
        self.path = path  # a followed file: the stale-log detector checks the final report
        self.context = context
        self.renderer = renderer
        self.options = options or WatchOptions()
        self.catalog = catalog or load_catalog()
        self.analyzer = Analyzer(self.catalog, dialect=self.options.dialect)
        self.name = name
        self.monitor = monitor
        self.started = time.monotonic()
        self.last_line_at = self.started
        self.waiting = False
        self.last_ts: str | None = None
        self.reported: set[tuple] = set()
        self.reported_list: list[Finding] = []
        self._phase_rank: dict[int, int] = {}
        self._runs_seen = 0
        self._hits_seen: dict[int, int] = {}
        self._last_phase: dict[int, str] = {}
        self._flushed_at = -1
        self._pending_hits: list = []  # hits from the last idle-flush snapshot
        self._pending_tracebacks: list[Traceback] = []  # the open tracebacks it matched
        self._findings: list[Finding] = []  # the current run's findings, ranked
        self.problem_since: float | None = None
        self.process_end: ProcessEnd | None = None
        self._death_drained = False
        self._death_reported = False
        self._next_poll = self.started
        self.finished = False
        self.eof = False
        self.live = False  # caught up with what the source held when the watch started
        self.history_lines: int | None = None  # the lines it held then (None: not caught up yet)
        self.synthetic: list[Finding] = []

    # — state ——————————————————————————————————————————————————————————————

    @property
    def run(self) -> Run | None:
        runs = self.analyzer.runs
        return runs[-1] if runs else None

    def current_findings(self) -> list[Finding]:
        return rank(self._findings + [f for f in self.synthetic
                                      if self.run is None or f.run == self.run.index])

    def best_problem(self) -> Finding | None:
        return next((f for f in self.current_findings() if f.is_problem), None)

    def _ingest(self, events: list) -> None:
        interesting = trigger = False
        dialect = self.analyzer.dialect
        triggers = dialect.ending_kinds | dialect.memory_kinds | _TRIGGER_KINDS
        for e in events:
            if e.line.ts:
                self.last_ts = e.line.ts
            kind = e.kind
            if kind != "line":
                interesting = True
                if kind in triggers:
                    trigger = True
        if self._pending_hits and (not self.analyzer.events.assembler.has_open
                                   or any(e.kind == "traceback" for e in events)):
            self._clear_pending()  # the snapshot's traceback completed: its real hits count now
        runs = self.analyzer.runs
        if not runs:
            return
        if len(runs) != self._runs_seen:
            # A new run: the previous run's problems no longer decide (its own are checked below).
            self._clear_pending()
            self.problem_since = None
            for run in runs[max(self._runs_seen - 1, 0):]:
                self._check_phases(run)
                self._check_findings(run)
            for run in runs[max(self._runs_seen, 1):]:
                if run.index > 1:
                    self.renderer.new_run(run, self.last_ts)
            self._runs_seen = len(runs)
        run = runs[-1]
        hits = len(self.analyzer.matcher.hits.get(run.index, ()))
        if interesting:
            phase = run.phase
            self._check_phases(run, events)
            if phase != self._last_phase.get(run.index):
                self._last_phase[run.index] = phase
                trigger = True
        if trigger or hits != self._hits_seen.get(run.index):
            self._check_findings(run)

    def feed(self, raw: RawLine) -> None:
        """One line, through the analysis' per-line fast path for statistics lines."""
        self._ingest(self.analyzer.feed_fast(raw))

    def _flush_bulk(self) -> None:
        self._ingest(self.analyzer.flush_bulk())

    def _check_phases(self, run: Run, events: list | None = None) -> None:
        best = self._phase_rank.get(run.index, -1)
        new = [(PHASE_RANK[p], p, line) for p, line in run.phase_lines.items() if PHASE_RANK[p] > best]
        for rank_, phase, line in sorted(new):
            if phase == "serving":
                # The warmup request's batch lines come before the ready line: serving starts
                # at the first batch after it.
                if not gate_ready(run):
                    continue
                ready_at = run.phase_lines.get("ready")
                if ready_at is not None and line < ready_at:
                    later = [e.number for e in events or () if e.kind in _BATCH_KINDS
                             and e.number > ready_at]
                    if not later:
                        continue
                    line = later[0]
            self.renderer.phase(run, phase, line, self.last_ts)
            best = rank_
        self._phase_rank[run.index] = best

    def _check_findings(self, run: Run, pending: list[Traceback] | None = None) -> None:
        self._hits_seen[run.index] = len(self.analyzer.matcher.hits.get(run.index, ()))
        if pending:
            scratch = Matcher(self.catalog)
            scratch.hits = {run.index: list(self.analyzer.matcher.hits.get(run.index, ()))}
            self._pending_tracebacks = list(pending)
            for tb in pending:
                self._pending_hits.extend(scratch.on_traceback(tb, run))
        findings = self.snapshot_findings(run)
        if run is self.run:
            self._findings = findings
        for f in findings:
            self._report(f)

    def snapshot_findings(self, run: Run) -> list[Finding]:
        """``run``'s ranked findings now, including those of a traceback still open at the
        last idle flush (matched on a throwaway ``Matcher`` seeded with the run's hits)."""
        if self._pending_hits and run is self.run:
            scratch = Matcher(self.catalog)
            scratch.hits = {run.index: list(self.analyzer.matcher.hits.get(run.index, ()))
                            + self._pending_hits}
            # the facts as explain's would be once the open traceback is part of the run
            seen = copy.copy(run)
            seen.tracebacks = run.tracebacks + self._pending_tracebacks
            return scratch.findings(seen, run_facts(seen))
        return self.analyzer.findings(run)

    def _report(self, f: Finding) -> None:
        key = _finding_key(f)
        if key in self.reported:
            return
        self.reported.add(key)
        self.reported_list.append(f)
        self.renderer.finding(f, self.last_ts)
        if f.is_problem and self.problem_since is None and (self.run is None or f.run == self.run.index):
            self.problem_since = time.monotonic()

    def _clear_pending(self) -> None:
        self._pending_hits = []
        self._pending_tracebacks = []

    def _idle_flush(self, now: float, quiet: bool = False) -> None:
        """Match a traceback still open once the writer went quiet (``quiet``: the source
        says it has been, e.g. a file last written long ago) or ``idle_flush`` s passed."""
        if not (quiet or now - self.last_line_at >= self.options.idle_flush) \
                or self._flushed_at == self.analyzer.lines:
            return
        self._flushed_at = self.analyzer.lines
        pending = self.analyzer.events.assembler.pending()
        if pending:
            if self.run is None:  # a cut log may be nothing but an open traceback: no run yet
                self.analyzer.tracker.current  # noqa: B018 - makes the run, as explain's finish would
                self._ingest([])
            run = self.analyzer.tracker.current
            self._clear_pending()
            self._check_findings(run, pending)

    def _finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        self._flush_bulk()
        self._clear_pending()
        events = self.analyzer.finish()
        self._ingest(events)
        if self.run is not None:
            self._check_findings(self.run)

    def _death_findings(self) -> None:
        """The process ended before ready: the stale-log detector's finding for a followed
        file (``process_died_without_traceback``, ``log_empty``), else watch's own."""
        if self._death_reported:
            return
        self._death_reported = True
        if self.path is not None:
            report = self.report(status=True)
            own = [f for f in report.findings if f.id in staleness.STATUS_IDS and f.is_problem]
            if own:
                for f in own:
                    f.run = f.run or (self.run.index if self.run else 1)
                    self.synthetic.append(f)
                    self._report(f)
                return
        self._synthesize_death()

    def _synthesize_death(self) -> Finding | None:
        """A finding for a process (or input stream) that ended before ready with no problem
        finding."""
        end = self.process_end or (ProcessEnd(None, source="stream") if self.eof else None)
        run = self.run
        if end is None or gate_ready(run) or self.best_problem() is not None:
            return None
        pid, how = end.pid, end.how()
        ident = "log_empty" if self.analyzer.lines == 0 else "process_died_without_traceback"
        phase = run.phase if run is not None else "launch"
        values = {**(run_facts(run) if run is not None else {}), "how": how, "phase": phase,
                  "launch_example": self.analyzer.dialect.launch_example,
                  "pid": pid, "exit_code": end.exit_code, "signal": end.signal}
        pattern = self.catalog.by_id.get(ident)
        base = _SYNTHETIC[ident]
        title = fill(pattern.title if pattern else base["title"], values)
        explanation = fill(pattern.explanation if pattern else base["explanation"], values)
        fix = fill(pattern.fix if pattern else base["fix"], values)
        evidence = [Evidence(n, text) for n, text in list(run.tail)[-3:]] if run is not None else []
        finding = Finding(id=ident, title=title, severity=pattern.severity if pattern else "fatal",
                          confidence=0.7, phase=phase, run=run.index if run else 1,
                          evidence=evidence, explanation=explanation, fix=fix,
                          priority=pattern.priority if pattern else 40,
                          facts={"exit_code": end.exit_code, "signal": end.signal, "pid": pid})
        self.synthetic.append(finding)
        self._report(finding)
        return finding

    def report(self, status: bool = False) -> Report:
        """The explain-style report of what was seen: the last run, its findings as of now
        (an open traceback's snapshot and watch's own process-death finding included). With
        ``status``, a followed file also goes through the stale-log detector, as in
        ``explain``, so the exit code is the one ``explain`` would give."""
        report = self.analyzer.report(self.name, Options())
        if report.run is not None:
            extra = [f for f in self.synthetic if f.run == report.run.index]
            report.findings = rank(self.snapshot_findings(report.run) + extra)
        if status and self.path is not None:
            opts = Options(pid=self.options.pid, since=self.options.since,
                           silence=self.options.silence or 120.0)
            try:
                found = staleness.assess(self.path, report, opts, context=self.context)
            except Exception:  # noqa: BLE001 - the detector is advisory here; never lose the end
                found = None
            if found is not None:
                staleness.apply(report, found)
        return report

    # — decisions ————————————————————————————————————————————————————————————

    def _outcome(self, reason: str, code: int | None = None, message: str = "",
                 **extra: Any) -> Outcome:
        report = self.report(status=reason in ("exited", "eof", "interrupted")
                             or (code is None and reason in ("timeout", "silence")))
        for f in report.findings:
            if (report.run is None or f.run in (0, report.run.index)) and f.id in staleness.STATUS_IDS:
                self._report(f)
        primary = report.primary
        if code is None:
            code = report.exit_code
        verdict = report.verdict
        if reason == "failed":
            verdict, primary = "failed", self.best_problem() or primary
        return Outcome(reason, code, verdict, primary, self.run, self.process_end, message, extra)

    def _stale_history(self, line: int) -> Outcome | None:
        """A gate decided on ``line``, which was already in the file when the watch started:
        make sure it is this run's (the stale-log detector), not a previous run's output."""
        if self.path is None or (self.history_lines is not None and line > self.history_lines):
            return None
        report = self.report(status=True)
        if report.verdict != "stale":
            return None
        for f in report.findings:
            if f.id in staleness.STATUS_IDS:
                self._report(f)
        why = report.status.summary if report.status is not None else "an earlier run's output"
        return Outcome("stale", EXIT_INCONCLUSIVE, "stale", report.primary, self.run, self.process_end,
                       f"the log holds an earlier run's output: {why}")

    def _settled(self, now: float, idle: bool) -> bool:
        """A problem can decide the gate: all that was written has been read (``idle``) or it
        has stood ``SETTLE_SECONDS`` while lines still arrive. A traceback still open may name
        the cause the problem only announces ("EngineCore failed to start." comes before its
        traceback): it gets until the idle flush has matched it."""
        waited = now - self.problem_since if self.problem_since is not None else 0.0
        if self.analyzer.events.assembler.has_open and not self._pending_hits:
            return waited >= SETTLE_SECONDS + self.options.idle_flush
        return idle or waited >= SETTLE_SECONDS

    def _where(self, what: str, verb: str) -> str:
        run = self.run
        phase = display_phase(run) if run is not None else "launch"
        last = self.analyzer.lines
        where = f"{verb} phase {phase}" + (f" (last line {last})" if last else " (no line yet)")
        return f"{what}; {where}"

    def _decide(self, now: float, idle: bool) -> Outcome | None:
        o = self.options
        run = self.run
        until = o.until
        died = self.process_end is not None and self._death_drained
        if until == "ready":
            ended = self.eof or died
            if ended:
                self._finish()
            # While the history is still being read nothing is decided: the gate judges the
            # run the log is about once it has read what the log already holds, as explain does.
            if self.live or ended:
                run = self.run
                problem = self.best_problem()
                if problem is not None and (ended or self._settled(now, idle)):
                    if not ended or gate_ready(run):
                        at = problem.evidence[0].line if problem.evidence else self.analyzer.lines
                        return self._stale_history(at) or self._outcome(
                            "failed", EXIT_FAILURE, f"{problem.id}: {problem.title}")
                elif problem is None and gate_ready(run):
                    line = run.phase_lines.get("ready") or run.phase_lines.get("serving") or 0
                    return self._stale_history(line) or self._outcome(
                        "ready", EXIT_OK, f"the server is ready (line {line})")
            if ended:
                self._death_findings()
                problem = self.best_problem()
                what = self.process_end.describe() if self.process_end else "the input stream ended"
                msg = f"{what} before the server was ready"
                if problem is not None:
                    msg += f": {problem.id}: {problem.title}"
                return self._outcome("exited" if self.process_end else "eof", EXIT_FAILURE, msg)
        elif self.eof or (died and until == "exit"):
            self._finish()
            if self.process_end is not None and (self.process_end.abnormal or not gate_ready(self.run)):
                self._death_findings()
            what = self.process_end.describe() if self.process_end else "the input stream ended"
            return self._outcome("exited" if self.process_end else "eof", None, what)
        elif died and not self._death_reported and not gate_ready(run):
            self._death_findings()  # without --until: say so, and keep following (tail -F)
        gate = until is not None
        if o.timeout is not None and now - self.started >= o.timeout:
            return self._outcome("timeout", EXIT_INCONCLUSIVE if gate else None,
                                 self._where(f"no decision after {o.timeout:g} s", "still in"),
                                 waited=round(now - self.started, 3))
        if o.silence is not None and now - self.last_line_at >= o.silence:
            return self._outcome("silence", EXIT_INCONCLUSIVE if gate else None,
                                 self._where(f"no new line for {o.silence:g} s", "stalled in"),
                                 silent_for=round(now - self.last_line_at, 3))
        return None

    def _poll_process(self, now: float) -> None:
        if self.monitor is None or self.process_end is not None or now < self._next_poll:
            return
        self._next_poll = now + self.options.process_poll
        end = self.monitor.poll()
        if end is not None:
            self.process_end = end
            self.renderer.process(end, self.last_ts)

    # — the loop ————————————————————————————————————————————————————————————

    def run_loop(self) -> Outcome:
        """Consume items until a decision (or Ctrl-C); returns how it ended."""
        self.renderer.start(self)
        iterator: Iterator[FollowItem] = iter(self.items)
        outcome: Outcome | None = None
        try:
            for item in iterator:
                now = time.monotonic()
                idle = False
                if isinstance(item, RawLine):
                    self.waiting = False
                    if item.eol:  # a line without newline comes once the writer went quiet
                        self.last_line_at = now
                    self.feed(item)
                else:
                    idle = self._on_tick(item, now)
                self._poll_process(now)
                outcome = self._decide(now, idle)
                if outcome is not None:
                    break
                self.renderer.refresh(self)
            else:
                self.eof = True
                outcome = self._decide(time.monotonic(), True)
        except KeyboardInterrupt as exc:
            self._finish()
            how = "stopped (SIGTERM)" if isinstance(exc, Terminated) else "stopped (Ctrl-C)"
            outcome = self._outcome("interrupted", None, how)
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()
        if outcome is None:  # pragma: no cover - the for/else always decides
            self._finish()
            outcome = self._outcome("eof")
        return outcome

    def _on_tick(self, tick: Tick, now: float) -> bool:
        kind = tick.kind
        if kind == "eof":
            self.eof = True
            return True
        if kind == "waiting":
            if not self.waiting:
                self.waiting = True
                self.renderer.notice("waiting", f"for {self.name} to appear")
            if self.process_end is not None:
                self._death_drained = True
            return True
        if kind in ("truncated", "rotated"):
            self.renderer.notice(kind, tick.detail, self.last_ts)
            return False
        if kind == "opened":
            self.waiting = False
            return False
        # idle: everything the source holds has been read
        if not self.live:
            self.live = True
            self.history_lines = self.analyzer.lines
        self._flush_bulk()
        if self.process_end is not None:
            self._death_drained = True
        self._idle_flush(now, quiet=tick.detail == "quiet")
        return True

    def execute(self) -> int:
        """Run the loop, print the end, and return the exit code."""
        outcome = self.run_loop()
        self.renderer.end(outcome, self)
        return outcome.exit_code



# — entry point ————————————————————————————————————————————————————————————————————


def open_source(source: str, options: WatchOptions,
                context: staleness.Context | None = None) -> tuple[Iterator[FollowItem], str]:
    """The follower for ``source`` (``-`` = standard input) and its display name. A file
    that does not exist yet is fine (it is waited for); a directory is a ``SourceError``.
    A ``logx run --append`` sidecar (``context.offset``) starts the file where its run began."""
    if source == "-":
        stdin = sys.stdin
        if stdin is None or stdin.isatty():
            raise SourceError("no log to watch: name a file (logx watch server.log) or pipe one "
                              "in (tail -f server.log | logx watch)")
        return follow_stream(stdin.buffer, poll=options.poll,
                             partial_after=options.idle_flush), "<stdin>"
    if os.path.isdir(source):
        raise SourceError(f"{source}: is a directory, not a log file")
    offset = context.offset if context is not None and not options.from_end else 0
    return follow_file(source, from_end=options.from_end, start_offset=offset,
                       poll=options.poll, partial_after=options.idle_flush), source


def make_renderer(options: WatchOptions, out: TextIO | None = None,
                  console: Console | None = None) -> Renderer:
    mode = options.mode
    stream = out if out is not None else sys.stdout
    if mode == "auto":
        mode = "live" if getattr(stream, "isatty", lambda: False)() else "plain"
    if mode == "json":
        return JsonRenderer(stream)
    if mode == "live":
        console = console or Console(file=stream, width=options.width, highlight=False)
        return LiveRenderer(console, verbose=options.verbose)
    if mode == "plain":
        return PlainRenderer(stream, verbose=options.verbose)
    raise ValueError(f"unknown watch mode {mode!r}")


class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, ``kill``): ends the watch like Ctrl-C, and is reported as itself."""


def _terminate(signum, frame) -> None:
    raise Terminated


def _silence_stdout() -> None:
    """After ``| head`` closed the pipe: make later writes and the final flush quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def watch(source: str = "-", options: WatchOptions | None = None, *,
          catalog: Catalog | None = None, out: TextIO | None = None,
          console: Console | None = None) -> int:
    """Follow ``source`` (a path, or ``-`` for standard input) and return the exit code:
    0 ready / no failure, 1 a fatal/error finding or the process died before ready,
    3 timeout or silence. Raises ``SourceError`` for a source that cannot be followed and
    ``ValueError`` for bad options."""
    options = options or WatchOptions()
    if options.until not in (None, *UNTIL):
        raise ValueError(f"--until must be one of {', '.join(UNTIL)}")
    for name in ("timeout", "silence"):
        value = getattr(options, name)
        if value is not None and value <= 0:
            raise ValueError(f"--{name} must be a positive number of seconds")
    catalog = catalog or load_catalog()
    sites.load_in_background()
    path = None if source == "-" else source
    monitor = ProcessMonitor(path, options.pid, options.use_sidecar)
    context = None
    if path is not None:
        context = staleness.prepare(path, Options(pid=options.pid, since=options.since)) \
            if options.use_sidecar \
            else staleness.Context(path=path)
    items, name = open_source(source, options, context)
    renderer = make_renderer(options, out, console)
    watcher = Watcher(items, renderer, options, catalog, name, monitor if monitor.active else None,
                      path=path, context=context)
    if options.until == "exit" and source != "-" and options.pid is None and (
            not options.use_sidecar or read_sidecar(source) is None):
        renderer.notice("note", "no `logx run` sidecar and no --pid: --until exit cannot see the "
                                "process end; it stops at Ctrl-C or --timeout")
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate)  # `timeout`, kill: end like Ctrl-C
    try:
        return watcher.execute()
    except BrokenPipeError:
        if out is None or out is sys.stdout:
            _silence_stdout()
        return EXIT_OK
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if isinstance(renderer, LiveRenderer):
            renderer.stop()
        close = getattr(items, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):
                close()
