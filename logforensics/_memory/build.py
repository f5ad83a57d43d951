"""One memory ledger per run: the catalog's conditions, the facts, the report and its views all
ask for the same run's ledger, so it is built once and kept with the run while it is unchanged.

The run's dialect decides how it is read (``Dialect.memory_ledger``: SGLang reads its own memory
lines); a dialect without a reader gets what torch's OOM messages say (``read_torch_ledger``).
"""

from __future__ import annotations

from typing import Any

from .ledger import Ledger, read_torch_ledger

_KEPT = "memory_ledger"  # the ledger's key in ``Run.derived``


def build_ledger(run: Any) -> Ledger:
    """Where each rank's GPU memory went, from the run's memory events and tracebacks. Kept in
    the run itself (``run.derived``), with the state it was read at and the run it was read
    for: a run whose memory events, tracebacks, phase or arguments changed since (a followed
    log) is read again, and another run, even a shallow copy sharing ``derived`` (``watch``
    makes one with a traceback still open), is never handed this one's ledger."""
    # what the readers read (not the run's last line: a followed log re-derives its findings at
    # every warning, and the ledger need not be read again for lines it does not read)
    state = (run.index, run.first_line, run.phase, len(run.phase_lines), len(run.memory_events),
             len(run.tracebacks), len(run.args), run.args_line, run.model, run.model_class)
    kept = run.derived.get(_KEPT)
    if kept is not None and kept[0] is run and kept[1] == state:  # a copy of the run shares ``derived``
        return kept[2]
    read = run.dialect.memory_ledger or read_torch_ledger
    try:
        ledger = read(run)
    except Exception as exc:  # a log logx cannot account for still gets a report
        ledger = Ledger(run_index=run.index, touched=run.memory_touched, phase=run.phase)
        ledger.error = f"memory ledger unavailable ({type(exc).__name__})"
    ledger.phase_words = dict(run.dialect.facts.phase_words)  # a dict: a ledger is pickled (explain -j)
    run.derived[_KEPT] = (run, state, ledger)  # the run itself (a cycle the collector frees; pickles)
    return ledger
