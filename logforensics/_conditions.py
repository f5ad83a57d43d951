"""The catalog's named conditions on a run's state (``condition = "…"`` in a pattern), and
``Evidence``, the lines that prove a finding.

A condition reads the facts the stages before it produced (the run, its memory ledger) and
returns the evidence lines when it holds, ``None`` when not. The catalog checks condition names
against ``CONDITIONS`` at load; the findings stage evaluates them.
"""

from __future__ import annotations

from collections.abc import Callable

from . import _memory
from ._dialects import DIALECTS
from ._record import record
from ._runs import Run


@record
class Evidence:
    line: int
    text: str

    def to_dict(self) -> dict:
        return {"line": self.line, "text": self.text}


# — named conditions on a run's state —————————————————————————————————————————————


def _killed_from_outside(run: Run) -> list[Evidence] | None:
    """The shell reported the server "Killed" (SIGKILL) and SGLang had not failed first: no
    traceback, no SIGQUIT from a child, no ``kill_process_tree`` of its own. After a failure
    SGLang kills itself and the shell prints the same word, so that case is not this one."""
    if run.tracebacks:
        return None
    own = {"sigquit_child", "sigquit_running", "kill_process_tree", "rank_died", "rank_dead"}
    for event in run.endings:
        if event.kind in own:
            return None
        if event.kind == "killed":
            return [Evidence(event.number, event.line.text)]
    return None


def _avail_mem_far_below_capacity(run: Run) -> list[Evidence] | None:
    """Ranks started with very different free memory, or SGLang said the capacity is
    unbalanced: another process holds part of a GPU."""
    out = [Evidence(e.number, e.line.text) for e in run.memory_events if e.kind == "mem_unbalanced"]
    begins = [e for e in run.memory_events if e.kind == "weight_load_begin"
              and isinstance(e.fields.get("avail_gb"), int | float)]
    if len(begins) >= 2:
        values = [e.fields["avail_gb"] for e in begins]
        hi, lo = max(values), min(values)
        if hi > 0 and lo < 0.8 * hi:
            low = min(begins, key=lambda e: e.fields["avail_gb"])
            high = max(begins, key=lambda e: e.fields["avail_gb"])
            out += [Evidence(high.number, high.line.text), Evidence(low.number, low.line.text)]
    return out or None


def _dp_encoder_with_dp_attention_stalled(run: Run) -> list[Evidence] | None:
    """``--mm-enable-dp-encoder`` with DP attention, and the log stops in graph capture."""
    a = run.args
    if not (a.get("mm_enable_dp_encoder") and (a.get("enable_dp_attention")
                                               or (a.get("attn_dp_size") or 1) > 1)):
        return None
    if run.phase != "cuda_graph" or run.tracebacks:
        return None
    ev = [Evidence(run.args_line or run.first_line, "server_args: mm_enable_dp_encoder=True, "
                   "enable_dp_attention=True")]
    ev += [Evidence(e.number, e.line.text) for e in run.memory_events
           if e.kind == "cuda_graph_begin"][:2]
    return ev


def _crash_marker_without_traceback(run: Run) -> list[Evidence] | None:
    """A process announced its crash ("Scheduler hit an exception:", vLLM's "EngineCore
    encountered a fatal error": the dialect's ``component_exception`` rules) and no traceback
    follows it: the log was cut right after the announcement."""
    last_tb = max((tb.first_line for tb in run.tracebacks), default=0)
    markers = [e for e in run.endings if e.kind == "component_exception" and e.number > last_tb]
    return [Evidence(e.number, e.line.text) for e in markers[:3]] or None


CONDITIONS: dict[str, Callable[[Run], list[Evidence] | None]] = {
    "killed_from_outside": _killed_from_outside,
    "avail_mem_far_below_capacity": _avail_mem_far_below_capacity,
    "dp_encoder_with_dp_attention_stalled": _dp_encoder_with_dp_attention_stalled,
    "crash_marker_without_traceback": _crash_marker_without_traceback,
}


def _memory_condition(check: Callable[[Run], list[tuple[int, str]] | None]):
    def condition(run: Run) -> list[Evidence] | None:
        found = check(run)
        return [Evidence(n, text) for n, text in found] if found else None

    condition.__doc__ = check.__doc__
    return condition


# Conditions on the numbers of the memory ledger and torch's OOM message (memory.py documents each).
CONDITIONS.update({name: _memory_condition(check) for name, check in _memory.CONDITIONS.items()})
# and the dialects' own (vLLM's OOM phases and shutdown, dialects/vllm/memory.py)
CONDITIONS.update({name: _memory_condition(check) for dialect in DIALECTS.values()
                   for name, check in dialect.conditions.items()})
