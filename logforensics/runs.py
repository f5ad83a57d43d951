"""Stage 5a — runs: split a log into launches and follow each launch through its phases.

One file often holds several launches appended together (``>>`` redirects, restarts). A new
``server_args`` dump or launch command, a startup line after the previous launch was already
up, or a timestamp jump backwards starts a new run. Each run keeps only what a report needs
— its facts, memory events, tracebacks and a short tail of lines — so memory stays bounded
whatever the file's size.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from .events import Event
from .lines import parse_timestamp
from .tracebacks import Traceback

PHASES = ("launch", "args", "import", "init", "weights", "kv_alloc", "cuda_graph", "warmup", "ready",
          "serving")
PHASE_RANK = {p: i for i, p in enumerate(PHASES)}

# Which phase an event proves the run has reached.
EVENT_PHASE = {
    "launch_command": "launch", "launch_banner": "launch", "server_args": "args",
    "dist_init_begin": "init", "dist_init_end": "init", "memory_baseline": "init",
    "mem_unbalanced": "init",
    "weight_load_begin": "weights", "weight_load_end": "weights",
    "kv_cache_alloc": "kv_alloc", "mamba_cache_alloc": "kv_alloc", "swa_pool": "kv_alloc",
    "hicache_alloc": "kv_alloc", "memory_pool_end": "kv_alloc",
    "cuda_graph_begin": "cuda_graph", "cuda_graph_progress": "cuda_graph",
    "cuda_graph_end": "cuda_graph",
    "scheduler_budget": "warmup", "startup_timings": "warmup", "server_started": "warmup",
    "uvicorn_running": "warmup",
    "ready": "ready",
    "prefill_batch": "serving", "decode_batch": "serving", "kv_retract": "serving",
}
MEMORY_KINDS = frozenset({
    "dist_init_end", "memory_baseline", "mem_unbalanced", "weight_load_begin", "weight_load_end",
    "kv_cache_alloc", "mamba_cache_alloc", "swa_pool", "hicache_alloc", "memory_pool_end",
    "cuda_graph_begin", "cuda_graph_end", "scheduler_budget",
    "cuda_graph_progress", "max_running_capped",  # memory.py: capture progress, Mamba slots/request
})
ENDING_KINDS = frozenset({
    "sigquit_child", "sigquit_running", "sigterm", "rank_dead", "rank_died", "exit_code",
    "subprocess_crashed", "killed", "kill_process_tree", "shutdown", "warmup_failed",
    "init_failed", "watchdog_timeout",
})
STARTUP_KINDS = frozenset({"dist_init_begin", "weight_load_begin"})
KEY_ARGS = (
    "model_path", "served_model_name", "tp_size", "dp_size", "pp_size", "ep_size",
    "mem_fraction_static", "context_length", "chunked_prefill_size", "page_size",
    "max_running_requests", "max_total_tokens", "attention_backend", "dtype", "kv_cache_dtype",
    "quantization", "speculative_algorithm", "speculative_num_draft_tokens",
    "disable_radix_cache", "enable_hierarchical_cache", "mamba_scheduler_strategy",
    "mamba_radix_cache_strategy", "max_mamba_cache_size", "mamba_full_memory_ratio",
    "cuda_graph_max_bs", "disable_cuda_graph", "enable_torch_compile", "enable_dp_attention",
    "mm_enable_dp_encoder", "trust_remote_code", "port", "host", "dist_init_addr", "nnodes",
)
MAX_MEMORY_EVENTS = 4000
MAX_TRACEBACKS = 200
MAX_ENDINGS = 50
TAIL_LINES = 12
BACKWARD_JUMP = timedelta(minutes=5)

# The phase a traceback was raised in, read from its frames (innermost match wins): a tail -5
# paste often has no phase lines at all, but its frames say where the launch was.
FRAME_PHASES = (
    ("args", re.compile(r"server_args\.py|/arg_groups/|argparse\.py")),
    ("init", re.compile(r"init_torch_distributed|initialize_model_parallel|init_distributed|"
                        r"parallel_state\.py|bootstrap\.py|rendezvous|pynccl")),
    ("weights", re.compile(r"load_weights?\b|model_loader|weight_utils|load_model\b|"
                           r"from_pretrained|safetensors")),
    ("kv_alloc", re.compile(r"memory_pool|init_memory_pool|kv_cache_configurator|"
                            r"pool_configurator|init_cache_with_memory_pool|hiradix_cache")),
    ("cuda_graph", re.compile(r"cuda_graph|graph_runner|\bcapture\b|init_device_graphs")),
    ("warmup", re.compile(r"_wait_and_warmup|\bwarmup\b")),
    ("serving", re.compile(r"event_loop|run_batch|forward_batch|process_batch_result|"
                           r"handle_generate_request|detokenizer_manager|self_check_during_idle")),
)


def phase_from_frames(tb: Traceback) -> str | None:
    """The phase named by the innermost frame that names one (``None`` when none does)."""
    for frame in reversed(tb.frames):
        location = frame.location
        for phase, rx in FRAME_PHASES:
            if rx.search(location):
                return phase
    if tb.frames and all(f.function == "<module>" for f in tb.frames[-3:]):
        return "import"
    return None


@dataclass
class Run:
    """One launch of the server, as far as the log shows it."""

    index: int
    first_line: int
    last_line: int = 0
    started_at: str | None = None
    ended_at: str | None = None
    phase: str = "launch"
    phase_lines: dict[str, int] = field(default_factory=dict)  # phase -> first line proving it
    args: dict[str, Any] = field(default_factory=dict)
    args_line: int | None = None
    sglang_version: str | None = None
    version_hints: set[str] = field(default_factory=set)
    model_class: str | None = None
    pids: list[int] = field(default_factory=list)  # server PIDs printed in the log
    memory_events: list[Event] = field(default_factory=list)
    tracebacks: list[Traceback] = field(default_factory=list)
    endings: list[Event] = field(default_factory=list)  # how it ended: sigquit, Killed, …
    warnings: int = 0
    batches: int = 0
    last_prefill: dict[str, Any] | None = None
    last_decode: dict[str, Any] | None = None
    requests: int = 0
    http_errors: int = 0
    tail: deque = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    last_serving_line: int = 0  # last batch or successful request: the server was alive there
    startup_seen: set = field(default_factory=set)  # (kind, stream) of startup lines seen

    @property
    def model(self) -> str | None:
        return self.args.get("model_path") or self.args.get("served_model_name")

    @property
    def version_range(self) -> str | None:
        """The release range the log's formats allow, from ``version_hints`` such as
        ``>=0.5.19`` and ``<=0.5.9``: "0.5.19 or later", "0.5.9 or earlier", "0.5.14–0.5.18"."""
        lows = [_vt(h[2:]) for h in self.version_hints if h.startswith(">=")]
        highs = [_vt(h[2:]) for h in self.version_hints if h.startswith("<=")]
        low = max(lows) if lows else None
        high = min(highs) if highs else None
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

    def key_args(self) -> dict[str, Any]:
        return {k: self.args[k] for k in KEY_ARGS if k in self.args}


class RunTracker:
    """Feeds events into runs; ``runs`` holds them in file order."""

    def __init__(self) -> None:
        self.runs: list[Run] = []
        self._last_time = None
        self._jumped = False  # the clock went backwards since the last run boundary

    @property
    def current(self) -> Run:
        if not self.runs:
            self.runs.append(Run(index=1, first_line=1))
        return self.runs[-1]

    def _new_run(self, line: int) -> Run:
        run = Run(index=len(self.runs) + 1, first_line=line)
        self.runs.append(run)
        return run

    def _starts_new_run(self, event: Event, run: Run) -> bool:
        """Whether ``event`` marks a new launch. A startup line is a relaunch when the run
        already reached ready or ended, when the same rank already logged it in this run, or
        when the clock jumped backwards just before it (an older launch appended later). A
        backward jump alone does not split: pasted excerpts jump in time too."""
        kind = event.kind
        if kind == "server_args":
            return run.args_line is not None or PHASE_RANK[run.phase] > PHASE_RANK["args"]
        if kind in ("launch_command", "launch_banner"):
            return run.args_line is not None or PHASE_RANK[run.phase] > PHASE_RANK["args"]
        if kind in STARTUP_KINDS:
            return (run.ready or self._jumped
                    or (kind, event.line.stream) in run.startup_seen
                    or any(e.kind in ("shutdown", "kill_process_tree", "killed") for e in run.endings))
        return False

    def feed(self, event: Event) -> Run:
        """Attribute ``event`` to a run (starting a new one when it marks a launch)."""
        run = self.current
        number = event.line.number
        ts = event.line.ts
        t = parse_timestamp(ts) if ts else None
        if t is not None and self._last_time is not None and t < self._last_time - BACKWARD_JUMP:
            self._jumped = True
        if run.first_line and self._starts_new_run(event, run) and number > run.first_line:
            run = self._new_run(number)
            self._jumped = False
        if ts:
            if t is not None:
                self._last_time = t
            if run.started_at is None:
                run.started_at = ts
            run.ended_at = ts
        if event.kind in STARTUP_KINDS:
            run.startup_seen.add((event.kind, event.line.stream))
        run.last_line = max(run.last_line, event.line.number if event.line.number > 0 else 0)
        self._record(run, event)
        return run

    def _record(self, run: Run, event: Event) -> None:
        kind = event.kind
        f = event.fields
        phase = EVENT_PHASE.get(kind)
        if phase:
            run.reach(phase, event.number)
        if kind == "traceback":
            tb = event.traceback
            if tb is not None:
                run.last_line = max(run.last_line, tb.last_line)
                if len(run.tracebacks) < MAX_TRACEBACKS:
                    run.tracebacks.append(tb)
                phase = phase_from_frames(tb)
                if phase is not None:
                    run.reach(phase, tb.first_line)
                for n, text in tb.lines[-3:]:
                    run.tail.append((n, text))
            return
        run.tail.append((event.number, event.line.text))
        if kind in ("line", "error_line"):
            return
        if kind in ("prefill_batch", "decode_batch"):
            run.last_serving_line = event.number
            run.batches += 1
            if kind == "prefill_batch":
                run.last_prefill = f
            else:
                run.last_decode = f
            return
        if kind == "access_log":
            if f.get("status", 200) < 500:
                run.last_serving_line = event.number
            run.requests += 1
            if f.get("status", 200) >= 500:
                run.http_errors += 1
            return
        if kind in MEMORY_KINDS and len(run.memory_events) < MAX_MEMORY_EVENTS:
            run.memory_events.append(event)
        if kind in ENDING_KINDS and len(run.endings) < MAX_ENDINGS:
            run.endings.append(event)
        if kind == "server_args":
            run.args = f.get("args", {})
            run.args_line = event.number
            run.version_hints.add(">=0.5.19" if f.get("form") == "dict" else "<=0.5.18")
        elif kind == "sglang_version":
            run.sglang_version = str(f.get("version"))
        elif kind == "weight_load_end":
            run.model_class = f.get("model_class") or run.model_class
            if "dtype" in f:
                run.version_hints.add("<=0.5.9")
        elif kind == "server_started":
            pid = f.get("pid")
            if isinstance(pid, int) and pid not in run.pids:
                run.pids.append(pid)
        elif kind == "warning":
            run.warnings += 1
        if event.line.wrapper.startswith(("SGLangEngine pid=", "SchedulerActor pid=")):
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
