"""The named conditions the catalog uses to tell memory causes apart by their numbers
(registered in ``conditions.CONDITIONS``). Each returns the evidence lines ``[(line, text)]``
when it holds, else ``None``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .build import build_ledger
from .ledger import OOMRecord
from .torch_oom import other_threshold_gib


def _oom_records(run: Any) -> list[OOMRecord]:
    return build_ledger(run).ooms


def cond_oom_single_allocation_exceeds_capacity(run: Any) -> list[tuple[int, str]] | None:
    """A torch OOM asked for one allocation larger than the GPU's total capacity
    (requested > total): freeing memory cannot help; the buffer itself is too large."""
    hits = [(r.line, r.text) for r in _oom_records(run) if r.oom.exceeds_capacity]
    return hits[:3] or None


def cond_oom_other_process_holds_memory(run: Any) -> list[tuple[int, str]] | None:
    """A torch OOM whose figures show other processes holding memory (listed, or total − free −
    this process ≥ max(1.5 GiB, 3%)) or a rank that had far less free memory at start than its
    GPU's total — and the allocation would have fit without them (requested ≤ free + other)."""
    ledger = build_ledger(run)
    hits: list[tuple[int, str]] = []
    for rec in ledger.ooms:
        o = rec.oom
        if o.others_hold_memory:
            hits.append((rec.line, rec.text))
            continue
        r = ledger.rank(rec.tag)
        if (r is not None and r.gpu_total_source == "torch OOM message" and not o.exceeds_capacity
                and r.held_before_start_gib is not None
                and r.held_before_start_gib >= other_threshold_gib(r.gpu_total_gib)
                and (o.requested_gib is None or o.free_gib is None
                     or o.requested_gib <= o.free_gib + r.held_before_start_gib)):
            hits.append((rec.line, rec.text))
            if "weights" in r.lines:  # the "Load weight begin. avail mem=…" line
                hits.append((r.lines["weights"], r.texts["weights"]))
    return hits[:4] or None


def cond_oom_fragmentation(run: Any) -> list[tuple[int, str]] | None:
    """A torch OOM where reserved-but-unallocated + free ≥ requested: the memory existed but
    not in one piece (``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``)."""
    hits = [(r.line, r.text) for r in _oom_records(run) if r.oom.fragmented]
    return hits[:3] or None


def cond_oom_loading_weights_that_fit_before(run: Any) -> list[tuple[int, str]] | None:
    """A torch OOM while loading the weights, and an earlier run of the same model in this
    log finished loading them: they fit then, so the regression is in what changed."""
    if not run.loaded_before:
        return None
    hits = [(r.line, r.text) for r in _oom_records(run) if r.phase == "weights"]
    return (run.loaded_before[-1:] + hits[:2]) if hits else None


def cond_oom_while_serving(run: Any) -> list[tuple[int, str]] | None:
    """A torch OOM the ledger places in serving (its frames, else the step its rank had reached:
    the server was ready): a forward pass's activations ran out, whatever frames a paste kept."""
    hits = [(r.line, r.text) for r in _oom_records(run) if r.phase == "serving"]
    return hits[:3] or None


CONDITIONS: dict[str, Callable[[Any], list[tuple[int, str]] | None]] = {
    "oom_while_serving": cond_oom_while_serving,
    "oom_loading_weights_that_fit_before": cond_oom_loading_weights_that_fit_before,
    "oom_single_allocation_exceeds_capacity": cond_oom_single_allocation_exceeds_capacity,
    "oom_other_process_holds_memory": cond_oom_other_process_holds_memory,
    "oom_fragmentation": cond_oom_fragmentation,
}
