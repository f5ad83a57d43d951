"""The memory facts every dialect's findings can quote: torch's OOM figures in numbers and in
one sentence, who else held the GPU, and the ledger's plain figures (``{oom_summary}``,
``{other_process_arithmetic}``, ``{oom_requested_gib}``, …). A dialect adds its own sizing
sentences (SGLang's: ``dialects/sglang/fixes.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .build import build_ledger
from .ledger import Ledger, OOMRecord
from .torch_oom import TorchOOM, other_threshold_gib
from .units import gib_text, put_figure

PHASE_TEXT = {"init": "parallel init", "weights": "weight loading", "kv_alloc": "KV cache allocation",
              "cuda_graph": "CUDA graph capture", "warmup": "warm-up", "ready": "serving",
              "serving": "serving", "args": "argument handling", "import": "import"}


def phase_text(phase: str, words: Mapping[str, str]) -> str:
    """What ``phase`` is called in a sentence: the server's own words (``words``), else logx's."""
    return words.get(phase) or PHASE_TEXT.get(phase, phase)


def oom_sentence(rec: OOMRecord, words: Mapping[str, str]) -> str:
    """Torch's OOM figures in one sentence, with the unknowns named (``words``: the server's
    names of its phases, ``Ledger.phase_words``)."""
    o = rec.oom
    where = f" during {phase_text(rec.phase, words)}" if rec.phase else ""
    who = f" on {rec.tag}" if rec.tag else ""
    gpu = f"GPU {o.gpu}" if o.gpu is not None else "the GPU"
    parts = [f"torch ran out{who}{where}: asked for {gib_text(o.requested_gib)} GiB; {gpu} has "
             f"{gib_text(o.total_gib)} GiB in total, {gib_text(o.free_gib)} GiB free"]
    own = o.own_gib
    parts.append(f"this process {gib_text(own)} GiB" if own is not None
                 else "this process's use not in the message")
    others = o.other_processes
    if others:
        parts.append(", ".join(f"process {pid} {g:.2f} GiB" for pid, g in others))
    rest = o.unaccounted_gib
    if rest is not None and rest >= other_threshold_gib(o.total_gib):
        parts.append(f"{rest:.2f} GiB held by processes torch did not list (total − free − this process"
                     f"{' − others' if others else ''})")
    if o.reserved_unallocated_gib is not None:
        parts.append(f"{o.reserved_unallocated_gib:.2f} GiB reserved but unallocated")
    return "; ".join(parts) + "."


def fragmentation_sentence(oom: TorchOOM | None) -> str:
    if oom is None or not oom.fragmented:
        return ""
    return (f"The memory was there but fragmented: {oom.reserved_unallocated_gib:.2f} GiB reserved-but-unallocated + "
            f"{oom.free_gib:.2f} GiB free ≥ {oom.requested_gib:.2f} GiB asked; set "
            "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` first.")


def other_process_sentence(ledger: Ledger) -> str:
    """Who holds the GPU: the OOM's other processes / unaccounted memory, memory held before
    the weights, unequal ranks — and that without them the allocation would have fit."""
    out = []
    rec = ledger.oom
    if rec is not None:
        o = rec.oom
        gpu = f"GPU {o.gpu}" if o.gpu is not None else "the GPU"
        others = o.other_processes
        bits = []
        if others:
            bits.append(", ".join(f"process {pid} holds {g:.2f} GiB" for pid, g in others))
        rest = o.unaccounted_gib
        if rest is not None and rest >= other_threshold_gib(o.total_gib):
            bits.append(f"{rest:.2f} GiB is held by processes torch did not list "
                        f"(total − free − this process = {gib_text(o.total_gib)} − {gib_text(o.free_gib)} − "
                        f"{gib_text(o.own_gib)}{' − listed' if others else ''})")
        if bits:
            fit = ""
            if o.requested_gib is not None and o.free_gib is not None:
                fit = (f"; without them {o.free_gib + o.other_gib:.2f} GiB would have been free for the "
                       f"{o.requested_gib:.2f} GiB allocation")
            out.append(f"On {gpu} ({gib_text(o.total_gib)} GiB) {'; '.join(bits)}{fit}.")
    r = ledger.rank(rec.tag) if rec is not None else None
    if r is not None and r.held_before_start_gib is not None and r.gpu_total_source == "torch OOM message":
        held = r.held_before_start_gib
        if held >= other_threshold_gib(r.gpu_total_gib):
            out.append(f"Already before the weights only {r.avail_at_start_gib:.2f} of {r.gpu_total_gib:.2f} GiB "
                       f"were free: {held:.2f} GiB was taken by someone else.")
    if ledger.unbalanced_note:
        out.append(ledger.unbalanced_note)
    return " ".join(out) or "The log does not say how much memory the other processes hold."


def memory_facts(run: Any) -> dict[str, Any]:
    """Placeholders for the memory patterns of every dialect: atomic numbers (absent when
    unknown, so a template shows ``<name>``) and whole sentences with the log's numbers (which
    name what is unknown instead of inventing it). The dialect adds its own
    (``Dialect.memory_facts``)."""
    ledger = build_ledger(run)
    out: dict[str, Any] = {}
    total, _ = ledger.gpu_total
    put_figure(out, "gpu_total_gib", total)
    put_figure(out, "pre_model_load_gib", ledger.pre_gib)
    put_figure(out, "avail_after_weights_gib", ledger.avail_after_weights_gib)
    put_figure(out, "kv_room_gb", ledger.kv_rest)
    ws = [r.weights_gib for r in ledger.ranks if r.weights_gib is not None]
    put_figure(out, "weights_gib", max(ws) if ws else None)
    rec = ledger.oom
    if rec is not None:
        o = rec.oom
        put_figure(out, "oom_requested_gib", o.requested_gib)
        put_figure(out, "oom_total_gib", o.total_gib)
        put_figure(out, "oom_free_gib", o.free_gib)
        put_figure(out, "oom_this_process_gib", o.own_gib)
        put_figure(out, "oom_reserved_unallocated_gib", o.reserved_unallocated_gib)
        if o.other_gib >= other_threshold_gib(o.total_gib):
            put_figure(out, "other_process_gib", o.other_gib)
        put_figure(out, "other_pids", ", ".join(str(p) for p, _ in o.other_processes) or None)
        put_figure(out, "oom_phase", phase_text(rec.phase, ledger.phase_words) if rec.phase else None)
        put_figure(out, "oom_rank", rec.tag or None)
        out["oom_requested"] = (f"{o.requested_gib:.2f} GiB" if o.requested_gib is not None
                                else "size not in the log")
        out["oom_summary"] = oom_sentence(rec, ledger.phase_words)
    else:
        out["oom_requested"] = "size not in the log"
        out["oom_summary"] = "No torch OOM message with figures is in the log."
    out["fragmentation_note"] = fragmentation_sentence(rec.oom if rec else None)
    out["other_process_arithmetic"] = other_process_sentence(ledger)
    return out
