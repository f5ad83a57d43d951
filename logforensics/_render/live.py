"""``LiveRenderer``: ``logx watch``'s rich Live view on a TTY (status, phase timeline, memory,
serving stats and findings with their fix), redrawn in place. ``render/watch.py`` imports it
only for a terminal, so plain and JSON watches never load rich.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .._findings import Finding
from .._gate import Outcome, ProcessEnd, WatchView, display_phase
from .._report import serving_json
from .._runs import PHASE_RANK, PHASES, Run
from .watch import Renderer, clock

PHASE_LABELS = {
    "launch": "launch", "args": "args", "import": "import", "init": "dist init", "weights": "weights",
    "kv_alloc": "KV cache", "cuda_graph": "CUDA graphs", "warmup": "warmup", "ready": "ready",
    "serving": "serving",
}
_STYLE = {"fatal": "bold red", "error": "red", "warning": "yellow", "info": "cyan"}


def make_live_console(stream: TextIO, width: int | None) -> Console:
    """The live view's console on ``stream`` (colour only on a TTY; rich honours NO_COLOR)."""
    return Console(file=stream, width=width, highlight=False)


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

    def start(self, watcher: WatchView) -> None:
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

    def refresh(self, watcher: WatchView, force: bool = False) -> None:
        if self.live is None:
            return
        now = time.monotonic()
        if not (force or self._dirty) and now - self._last < self.refresh_every:
            return
        self._last = now
        self._dirty = False
        self.live.update(self.view(watcher), refresh=True)

    def view(self, w: WatchView, outcome: Outcome | None = None) -> RenderableType:
        run = w.run
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column()
        status = "waiting for the log" if w.waiting else ("ended" if outcome else "following")
        head = Text.assemble(("logx watch ", "bold"), (w.name, "bold underline"),
                             f"  {status} · {w.lines} lines · "
                             f"{w.clock.monotonic() - w.started:.0f} s")
        if run is not None and w.run_count > 1:
            head.append(f" · run {run.index} of {w.run_count}", style="dim")
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
                stats = [f"running {serving['running_req']} req" if serving.get("running_req")
                         is not None else None,
                         f"queue {serving['queue_req']}" if serving.get("queue_req") is not None
                         else None,
                         f"token usage {serving['token_usage']}" if serving.get("token_usage")
                         is not None else None,
                         f"gen {serving['gen_throughput']} tok/s" if serving.get("gen_throughput")
                         is not None else None,
                         f"{serving['requests']} requests" if serving.get("requests") else None]
                grid.add_row("Serving", " · ".join(p for p in stats if p) or "batches seen")
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

    def end(self, outcome: Outcome, watcher: WatchView) -> None:
        if self.live is not None:
            self.live.update(self.view(watcher, outcome), refresh=True)
            self.live.stop()
            self.live = None

    def stop(self) -> None:
        if self.live is not None:
            with contextlib.suppress(Exception):
                self.live.stop()
            self.live = None
