"""One memory ledger per run: the catalog's conditions, the facts, the report and its views all
ask for the same run's ledger, so it is built once and handed out again while the run is
unchanged."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ledger import Ledger

if TYPE_CHECKING:
    from ..runs import Run

_cache: dict[str, Any] = {"key": None, "ledger": None}


def build_ledger(run: Run) -> Ledger:
    """Rebuild where each rank's GPU memory went from the run's memory events and tracebacks.
    (The last result is cached while the run does not change: the catalog's conditions, the
    facts and the report all ask for the same run.)"""
    from ..dialects.sglang.memory import read_ledger

    key = (id(run), run.index, run.first_line, run.last_line, run.phase, len(run.memory_events),
           len(run.tracebacks), len(run.args))
    if _cache["key"] == key:
        return _cache["ledger"]
    try:
        ledger = read_ledger(run)
    except Exception as exc:  # a log logx cannot account for still gets a report
        ledger = Ledger(run_index=run.index, touched=run.memory_touched, phase=run.phase)
        ledger.error = f"memory ledger unavailable ({type(exc).__name__})"
    _cache["key"], _cache["ledger"] = key, ledger
    return ledger
