"""The views of ``logx watch``: ``PlainRenderer`` (one line per update, for pipes and logs),
``JsonRenderer`` (JSON lines) and, on a TTY, ``render/live.py``'s ``LiveRenderer`` (imported
only then: rich is not loaded for the other two). Each gets the watch loop's updates (a phase
reached, a run started, a finding, the process ending, the end).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, TextIO

from .._findings import Finding
from .._gate import Outcome, ProcessEnd, WatchView
from .._runs import Run


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

    def start(self, watcher: WatchView) -> None: ...

    def phase(self, run: Run, phase: str, line: int, ts: str | None) -> None: ...

    def new_run(self, run: Run, ts: str | None) -> None: ...

    def finding(self, finding: Finding, ts: str | None) -> None: ...

    def notice(self, kind: str, text: str, ts: str | None = None) -> None: ...

    def process(self, end: ProcessEnd, ts: str | None) -> None: ...

    def refresh(self, watcher: WatchView, force: bool = False) -> None: ...

    def end(self, outcome: Outcome, watcher: WatchView) -> None: ...

    def deployment_end(self, summary: dict[str, Any], lines: list[str]) -> None:
        """The end of several files watched together: ``summary`` for JSON, ``lines`` for text."""

    def stop(self) -> None:
        """Let go of the terminal (a live view), however the watch ended."""


class _LineWriter:
    """Writes whole lines to a text stream, UTF-8 whatever the locale, flushed at once;
    ``prefix`` starts each (the file's name when several are watched)."""

    def __init__(self, out: TextIO | None, prefix: str = ""):
        self.out = out if out is not None else sys.stdout
        self.prefix = prefix

    def write(self, text: str) -> None:
        text = self.prefix + text
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

    def __init__(self, out: TextIO | None = None, verbose: bool = False, label: str | None = None):
        self.w = _LineWriter(out, f"{label}: " if label else "")
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

    def deployment_end(self, summary: dict[str, Any], lines: list[str]) -> None:
        for text in lines:
            self.w.write(f"{clock(None)} {text}")

    def end(self, o: Outcome, watcher: WatchView) -> None:
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
    "exit_code", "reason", …}`` (with ``label``: a ``"file"`` key first in each)."""

    def __init__(self, out: TextIO | None = None, label: str | None = None):
        self.w = _LineWriter(out)
        self.label = label  # the file, when several are watched: a "file" key in every object

    def _emit(self, obj: dict[str, Any]) -> None:
        if self.label is not None:
            obj = {"file": self.label, **obj}
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

    def end(self, o: Outcome, watcher: WatchView) -> None:
        self._emit(o.to_dict())

    def deployment_end(self, summary: dict[str, Any], lines: list[str]) -> None:
        self._emit(summary)
