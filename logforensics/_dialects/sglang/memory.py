"""SGLang's memory lines, read into the memory ledger: which event fills which step, and the
figures SGLang prints only inside its own error messages.

SGLang prints ``avail mem``/``mem usage`` at each start-up step (``Load weight begin/end``,
``KV Cache is allocated``, ``Mamba Cache is allocated``, ``Memory pool end``, ``Capture … CUDA
graph begin/end``, the scheduler's ``max_total_num_tokens=…`` budget), on every rank; sizes are
GiB although printed as "GB". ``read_ledger(run)`` turns the run's events (the kinds in
``DIALECT.memory_kinds``) and tracebacks into a ``memory.Ledger``, then derives the KV room and
the Mamba pool's capacity with SGLang's formulas (``sizing.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..._lazyre import lazy
from ..._memory.build import build_ledger
from ..._memory.checkpoint import checkpoint_size, is_quantized
from ..._memory.ledger import STEPS, Ledger, RankLedger, attach_tracebacks, rank_label, rank_sort_key
from ..._memory.torch_oom import other_threshold_gib
from ..._memory.units import frac, gib_text, number, rounded
from ..._record import field, record
from .sizing import kv_rest_gib, mamba_per_request_gib, mamba_requests_fit, mamba_slots_per_request

if TYPE_CHECKING:
    from ..._tracebacks import Traceback

# which ledger step an event shows (its first line is the step's evidence)
_EVENT_STEP = {"dist_init_end": "init", "memory_baseline": "init", "weight_load_begin": "weights",
               "weight_load_end": "weights", "kv_cache_alloc": "kv_cache", "swa_pool": "kv_cache",
               "mamba_cache_alloc": "mamba_cache", "max_running_capped": "mamba_cache",
               "memory_pool_end": "pools", "cuda_graph_begin": "cuda_graphs",
               "cuda_graph_progress": "cuda_graphs", "cuda_graph_end": "cuda_graphs",
               "scheduler_budget": "serving"}
_MAMBA_NO_ROOM = lazy(r"Computed max_mamba_cache_size=(-?\d+) \(total_rest_memory=(-?\d+(?:\.\d+)?) GB, "
                      r"mamba_cache_per_req=(\d+(?:\.\d+)?) MB\)")
_MAMBA_TOO_SMALL = lazy(r"max_mamba_cache_size=(-?\d+), mamba_ratio=(\d+), resulting max_num_reqs=(-?\d+)")
_MAMBA_POOL_SIZE = lazy(r"mamba_pool\.size=(\d+)")
_MFS_IN_TEXT = lazy(r"mem_fraction_static=(\d+(?:\.\d+)?)|--mem-fraction-static=(\d+(?:\.\d+)?)")


@record(eq=False)
class SglangMemory:
    """SGLang's part of a run's ledger (``Ledger.server``): ``--mem-fraction-static`` and the
    Mamba pool's settings, the figures SGLang prints only inside its own errors, and what its
    sizing formulas derive from them."""

    mem_fraction_static: float | None = None
    mfs_source: str | None = None  # "server_args" or "error message"
    mamba_strategy: str | None = None
    mamba_full_memory_ratio: float | None = None
    max_mamba_cache_size_arg: int | None = None
    disable_radix_cache: bool = False
    slots_per_request: int | None = None
    slots_per_request_source: str | None = None
    mamba_from_errors: dict[str, Any] = field(default_factory=dict)  # figures of SGLang's Mamba errors
    mamba_slots: int | None = None  # K, min over ranks (else from SGLang's errors)
    mamba_per_slot_gib: float | None = None
    mamba_requests_fit: int | None = None

    def settings(self) -> Mapping[str, Any]:
        return {"mem_fraction_static": self.mem_fraction_static}

    def title_note(self) -> str | None:
        mfs = self.mem_fraction_static
        return f"mem_fraction_static={frac(mfs)}" if mfs is not None else "mem_fraction_static unknown"

    def notes(self, ledger: Ledger) -> list[str]:
        """SGLang's sizing arithmetic under the ledger's table: the static pools' share, the KV
        room it left, the Mamba pool's requests."""
        lines = []
        pre, _ = ledger.pre_for_formulas
        mfs = self.mem_fraction_static
        if pre is not None and mfs is not None and ledger.pre_gib is not None:
            lines.append(f"Static pools (weights + KV{' + Mamba' if ledger.hybrid else ''}) may use pre×mfs = "
                         f"{pre:.2f}×{frac(mfs)} = {pre * mfs:.2f}; outside them (CUDA graphs, activations) "
                         f"pre×(1−mfs) = {pre * (1 - mfs):.2f}.")
        rest = ledger.kv_rest
        if rest is not None and pre is not None and mfs is not None:
            after = ledger.avail_after_weights_gib
            lines.append(f"KV room: rest = avail_after_weights − pre×(1−mfs) = {after:.2f} − {pre:.2f}×(1−{frac(mfs)}) "
                         f"= {gib_text(rest)}.")
        if ledger.hybrid and self.mamba_slots is not None:
            lines.append(mamba_sentence(ledger))
        return lines

    def step_note(self, step: str, rank: RankLedger) -> str:
        """The Mamba pool's cell adds the requests its slots hold (slots per request known)."""
        per_request = self.slots_per_request
        if step != "mamba_cache" or not per_request or rank.mamba_slots is None:
            return ""
        return f", {per_request}/req → {mamba_requests_fit(rank.mamba_slots, per_request)} req"

    def to_json(self, ledger: Ledger) -> dict[str, Any]:
        pre, mfs = ledger.pre_gib, self.mem_fraction_static
        return {
            "mem_fraction_static": mfs, "mem_fraction_static_source": self.mfs_source,
            "static_gib": rounded(pre * mfs) if pre is not None and mfs is not None else None,
            "outside_static_gib": rounded(pre * (1 - mfs)) if pre is not None and mfs is not None else None,
            "mamba": None if not ledger.hybrid else {
                "strategy": self.mamba_strategy, "slots": self.mamba_slots,
                "slots_per_request": self.slots_per_request,
                "slots_per_request_source": self.slots_per_request_source,
                "per_slot_gib": rounded(self.mamba_per_slot_gib, 4),
                "requests_fit": self.mamba_requests_fit,
                "mamba_full_memory_ratio": self.mamba_full_memory_ratio,
                "max_mamba_cache_size": self.max_mamba_cache_size_arg},
        }


def sglang_part(ledger: Ledger) -> SglangMemory:
    """SGLang's part of ``ledger`` (an empty one for a ledger SGLang's reader did not fill)."""
    return ledger.server if isinstance(ledger.server, SglangMemory) else SglangMemory()


def mamba_sentence(ledger: Ledger) -> str:
    """How many requests the Mamba pool holds: ``K // slots_per_request``, per-slot size, and
    the flags that would hold more (re-computed with SGLang's sizing)."""
    sg = sglang_part(ledger)
    k = sg.mamba_slots
    ratio = sg.slots_per_request
    errors = sg.mamba_from_errors
    if "rest_gib" in errors:
        per_mib = errors["per_request_mib"]
        fits = errors["rest_gib"] * 1024 / per_mib if per_mib else 0.0
        return (f"SGLang had rest = {errors['rest_gib']:.2f} GiB left for the KV and Mamba pools after the weights "
                f"(rest = avail_after_weights − pre×(1−mfs)); one request's Mamba state is {per_mib:.2f} MiB, so "
                f"even all of rest holds only {fits:.1f} states before the KV share and speculative-decoding "
                f"copies are taken out: it computed K = {gib_text(errors['slots']).split('.')[0]} slots. "
                "Raising --mem-fraction-static by Δ adds pre×Δ GiB to rest.")
    if k is None:
        return ("The Mamba pool's size is not in the log (no 'Mamba Cache is allocated' line), so the "
                "requests it holds cannot be computed.")
    per = sg.mamba_per_slot_gib
    per_text = f" of {per * 1024:.1f} MiB each ((conv+ssm)/(K+1))" if per is not None else ""
    strategy = sg.mamba_strategy or "unknown"
    if not ratio:
        return (f"Mamba pool: K = {k} slots{per_text}; slots per request unknown (strategy {strategy}: "
                "no_buffer holds 3, extra_buffer with overlap 5).")
    fit = mamba_requests_fit(k, ratio)
    return (f"Mamba pool: K = {k} slots{per_text}; {ratio} slots per running request "
            f"({sg.slots_per_request_source}) → K // {ratio} = {fit} requests fit.")


def _hybrid_hint(run: Any) -> bool:
    """A hybrid model by its class (the dialect's facts) or by what its errors say."""
    if run.dialect.facts.hybrid_model(run.model_class):
        return True
    return any("mamba" in (tb.message or "").lower() for tb in run.tracebacks)


def read_ledger(run: Any) -> Ledger:
    """The run's ledger from its SGLang memory events and its tracebacks (torch OOMs, the
    phase each rank failed in, the figures of SGLang's own memory errors)."""
    args = run.args
    sg = SglangMemory()
    ledger = Ledger(run_index=run.index, touched=run.memory_touched, phase=run.phase, server=sg)
    mfs = number(args.get("mem_fraction_static"))
    if mfs is not None:
        sg.mem_fraction_static, sg.mfs_source = mfs, "server_args"
    tp, pp = args.get("tp_size"), args.get("pp_size")
    ledger.tp_size = tp if isinstance(tp, int) else None
    ledger.pp_size = pp if isinstance(pp, int) else None
    ledger.checkpoint = checkpoint_size(run.model, args.get("quantization"), args.get("dtype"))
    ledger.quantized = is_quantized(run.model, args.get("quantization"))
    by_tag: dict[str, RankLedger] = {}
    tagged = {e.line.tag for e in run.memory_events if e.line.tag}
    lone = next(iter(tagged)) if len(tagged) == 1 else None

    def rank_of(tag: str) -> RankLedger:
        if not tag and lone is not None:
            tag = lone
        if tag not in by_tag:
            by_tag[tag] = RankLedger(rank=tag)
        return by_tag[tag]

    for e in run.memory_events:
        f = e.fields
        kind = e.kind
        if kind in ("mem_unbalanced", "hicache_alloc"):
            continue
        r = rank_of(e.line.tag)
        step = _EVENT_STEP.get(kind)
        if step is not None and step not in r.lines:
            r.lines[step] = e.number
            r.texts[step] = e.line.text
        if kind in ("dist_init_end", "memory_baseline"):
            if number(f.get("mem_usage_gb")) is not None:
                r.before_weights_gib = number(f.get("mem_usage_gb"))
        elif kind == "weight_load_begin":
            r.weights_began = True
            if r.avail_at_start_gib is None:
                r.avail_at_start_gib = number(f.get("avail_gb"))
        elif kind == "weight_load_end":
            r.weights_done = True
            if number(f.get("mem_usage_gb")) is not None:
                r.weights_gib = number(f.get("mem_usage_gb"))
            if number(f.get("avail_gb")) is not None:
                r.avail_after_weights_gib = number(f.get("avail_gb"))
        elif kind == "kv_cache_alloc":
            k, v, kv = number(f.get("k_gb")), number(f.get("v_gb")), number(f.get("kv_gb"))
            size = kv if kv is not None else ((k or 0.0) + (v or 0.0) if k is not None or v is not None else None)
            if r.kv_tokens is None:
                r.kv_tokens = f.get("tokens") if isinstance(f.get("tokens"), int) else None
                r.kv_k_gib, r.kv_v_gib, r.kv_dtype = k, v, f.get("dtype")
                r.kv_gib = size
            elif size is not None:  # a second pool (draft model, "VA upper bound" …) adds up
                r.kv_gib = (r.kv_gib or 0.0) + size
        elif kind == "swa_pool":
            r.swa = {k: f.get(k) for k in ("full_tokens", "swa_tokens") if f.get(k) is not None}
        elif kind == "mamba_cache_alloc":
            r.mamba_slots = f.get("max_mamba_cache_size") if isinstance(f.get("max_mamba_cache_size"), int) else None
            r.mamba_conv_gib, r.mamba_ssm_gib = number(f.get("conv_gb")), number(f.get("ssm_gb"))
            inter = [number(f.get(k)) for k in ("inter_ssm_gb", "inter_conv_gb")]
            if any(x is not None for x in inter):
                r.mamba_intermediate_gib = sum(x or 0.0 for x in inter)
        elif kind == "max_running_capped":
            if isinstance(f.get("slots_per_req"), int):
                r.mamba_slots_per_request_logged = f["slots_per_req"]
            if r.mamba_slots is None and isinstance(f.get("max_mamba_cache_size"), int):
                r.mamba_slots = f["max_mamba_cache_size"]
        elif kind == "memory_pool_end":
            r.avail_after_pools_gib = number(f.get("avail_gb"))
        elif kind == "cuda_graph_begin":
            if not r.graph_began:
                r.graph_begin_avail_gib = number(f.get("avail_gb"))
            r.graph_began = True
            r.graph_done = False
        elif kind == "cuda_graph_progress":
            r.graph_began = True
            r.graph_last_bs = f.get("bs") if isinstance(f.get("bs"), int) else r.graph_last_bs
            r.graph_last_avail_gib = number(f.get("avail_gb"))
        elif kind == "cuda_graph_end":
            r.graph_began = r.graph_done = True
            if number(f.get("mem_usage_gb")) is not None:
                r.graph_gib = (r.graph_gib or 0.0) + number(f.get("mem_usage_gb"))  # type: ignore[operator]
            if number(f.get("avail_gb")) is not None:
                r.avail_after_graphs_gib = number(f.get("avail_gb"))
        elif kind == "scheduler_budget":
            r.budget = {k: f.get(k) for k in ("max_total_num_tokens", "max_running_requests",
                                               "context_len", "available_gpu_mem") if k in f}
    # The tqdm capture bar is TP0's and has no rank prefix: with several ranks it attached to ""
    if "" in by_tag and len(by_tag) > 1:
        orphan = by_tag.pop("")
        target = by_tag.get("TP0") or by_tag[sorted(by_tag, key=rank_sort_key)[0]]
        if orphan.graph_last_avail_gib is not None and target.graph_began and not target.graph_done:
            target.graph_last_bs, target.graph_last_avail_gib = orphan.graph_last_bs, orphan.graph_last_avail_gib
    attach_tracebacks(run, ledger, by_tag, rank_of, _graph_capture_failed)
    ledger.ranks = sorted(by_tag.values(), key=lambda r: rank_sort_key(r.rank))
    for r in ledger.ranks:
        if r.gpu_total_gib is None and r.avail_at_start_gib is not None:
            r.gpu_total_gib = r.avail_at_start_gib + (r.before_weights_gib or 0.0)
            r.gpu_total_source = "at least: free at start + init use"
        elif r.gpu_total_gib is None and r.budget and number(r.budget.get("available_gpu_mem")) is not None:
            r.gpu_total_gib = number(r.budget.get("available_gpu_mem"))
            r.gpu_total_source = "at least: available_gpu_mem after start-up"
    # — --mem-fraction-static from SGLang's own message when server_args is not in the log
    for tb in run.tracebacks:
        m = _MFS_IN_TEXT.search(tb.message or "")
        if m and sg.mem_fraction_static is None:
            sg.mem_fraction_static = float(m.group(1) or m.group(2))
            sg.mfs_source = "error message"
        text = tb.message or ""
        if m3 := _MAMBA_NO_ROOM.search(text):
            sg.mamba_from_errors.update(slots=int(m3.group(1)), rest_gib=float(m3.group(2)),
                                       per_request_mib=float(m3.group(3)), line=tb.first_line)
        if m4 := _MAMBA_TOO_SMALL.search(text):
            sg.mamba_from_errors.update(slots=int(m4.group(1)), ratio=int(m4.group(2)),
                                       max_num_reqs=int(m4.group(3)))
        if (m5 := _MAMBA_POOL_SIZE.search(text)) and "slots" not in sg.mamba_from_errors:
            sg.mamba_from_errors["slots"] = int(m5.group(1))
    slots = [r.mamba_slots for r in ledger.ranks if r.mamba_slots is not None]
    from_errors = sg.mamba_from_errors.get("slots")
    sg.mamba_slots = min(slots) if slots else from_errors if isinstance(from_errors, int) else None
    _mamba(run, ledger, sg)
    _unbalanced(run, ledger)
    _derive(ledger, sg)
    return ledger


def _graph_capture_failed(tb: Traceback) -> str | None:
    """SGLang wraps an OOM in graph capture as "Capture cuda graph failed: …"."""
    return "cuda_graph" if "graph failed" in " ".join(e.message for e in tb.exceptions) else None


def _derive(ledger: Ledger, sg: SglangMemory) -> None:
    """The figures SGLang's formulas give from the logged ones: the KV room
    ``rest = after − pre×(1−mfs)`` (logged figures only), one Mamba slot's size and how many
    requests the pool holds."""
    pre, after, mfs = ledger.pre_gib, ledger.avail_after_weights_gib, sg.mem_fraction_static
    if pre is not None and after is not None and mfs is not None:
        ledger.kv_rest = kv_rest_gib(after, pre, mfs)
    for r in ledger.ranks:
        if r.mamba_slots is not None and r.mamba_conv_gib is not None and r.mamba_ssm_gib is not None:
            sg.mamba_per_slot_gib = mamba_per_request_gib(r.mamba_conv_gib, r.mamba_ssm_gib, r.mamba_slots)
            break
    if sg.mamba_slots is not None and sg.slots_per_request:
        sg.mamba_requests_fit = mamba_requests_fit(sg.mamba_slots, sg.slots_per_request)


def _mamba(run: Any, ledger: Ledger, sg: SglangMemory) -> None:
    args = run.args
    has_events = any(r.mamba_slots is not None or r.mamba_gib is not None for r in ledger.ranks)
    ledger.hybrid = has_events or _hybrid_hint(run)
    if not ledger.hybrid:
        return
    strategy = args.get("mamba_radix_cache_strategy") or args.get("mamba_scheduler_strategy")
    sg.mamba_strategy = strategy if isinstance(strategy, str) else None
    sg.disable_radix_cache = bool(args.get("disable_radix_cache"))
    sg.mamba_full_memory_ratio = number(args.get("mamba_full_memory_ratio"))
    size = args.get("max_mamba_cache_size")
    sg.max_mamba_cache_size_arg = size if isinstance(size, int) else None
    logged = [r.mamba_slots_per_request_logged for r in ledger.ranks if r.mamba_slots_per_request_logged]
    if isinstance(sg.mamba_from_errors.get("ratio"), int):
        logged.append(sg.mamba_from_errors["ratio"])
    if logged:
        sg.slots_per_request, sg.slots_per_request_source = logged[0], "from SGLang's own line"
        return
    ratio = mamba_slots_per_request(sg.mamba_strategy, sg.disable_radix_cache,
                                    overlap=not args.get("disable_overlap_schedule"))
    if ratio is not None:
        source = "--disable-radix-cache" if sg.disable_radix_cache else f"strategy {sg.mamba_strategy}"
        sg.slots_per_request, sg.slots_per_request_source = ratio, source
        return
    k = sg.mamba_slots
    mrr = next((r.budget.get("max_running_requests") for r in ledger.ranks
                if r.budget and isinstance(r.budget.get("max_running_requests"), int)), None)
    if k and mrr:
        fits = [c for c in (5, 4, 3, 1) if k // c == mrr]
        if len(fits) == 1:
            sg.slots_per_request = fits[0]
            sg.slots_per_request_source = f"inferred: max_mamba_cache_size {k} // max_running_requests {mrr}"


def _unbalanced(run: Any, ledger: Ledger) -> None:
    starts = [(r, r.avail_at_start_gib) for r in ledger.ranks if r.avail_at_start_gib is not None]
    if len(starts) >= 2:
        hi_r, hi = max(starts, key=lambda x: x[1])
        lo_r, lo = min(starts, key=lambda x: x[1])
        gap = hi - lo
        if gap >= other_threshold_gib(hi) and lo < 0.9 * hi:
            short = [rank_label(r.rank) for r, v in starts if hi - v >= other_threshold_gib(hi)]
            ledger.unbalanced_note = (
                f"Unequal GPUs: {', '.join(short)} started with {lo:.2f} GiB free vs {hi:.2f} GiB on "
                f"{rank_label(hi_r.rank)}: about {gap:.2f} GiB of {rank_label(lo_r.rank)}'s GPU is held "
                f"by another process. SGLang sizes every rank by the smallest (pre = {lo:.2f} GiB).")
            return
    for e in run.memory_events:
        if e.kind == "mem_unbalanced":
            pre, local = number(e.fields.get("pre_model_load_memory")), number(e.fields.get("local_gpu_memory"))
            if pre is not None and local is not None:
                ledger.unbalanced_note = (
                    f"SGLang reports unequal GPUs: the smallest free memory over all ranks is {pre:.2f} GiB, "
                    f"this rank has {local:.2f} GiB: about {local - pre:.2f} GiB of one GPU is held by "
                    "another process.")
            else:
                ledger.unbalanced_note = "SGLang reports unequal GPUs: some may be used by other processes."
            return



def _figures_leave_no_kv_room(run: Any) -> list[tuple[int, str]] | None:
    """SGLang's own arithmetic on the logged figures leaves the KV pool no room:
    ``rest = after − pre×(1−mfs) ≤ 0``, with every rank that began loading the weights done
    (the figures are final: no later line changes them) and no rank at a pool yet. SGLang
    aborts there whatever the log shows next: its message, a cut of it, a SIGQUIT, nothing.
    Not for a multi-node run: SGLang takes the minimum over every node's ranks, a log holds
    one node's."""
    if run.dialect.name != "sglang" or run.ready or (number(run.args.get("nnodes")) or 1) > 1:
        return None
    ledger = build_ledger(run)
    rest = ledger.kv_rest
    began = [r for r in ledger.ranks if r.weights_began]
    if rest is None or rest > 0 or not began or not all(r.weights_done for r in began):
        return None
    if any(r.reached() >= STEPS.index("kv_cache") for r in ledger.ranks):
        return None
    evidence = []
    for kind in ("weight_load_begin", "weight_load_end"):  # the lowest of each: the figures SGLang takes
        found = [(avail, e) for e in run.memory_events if e.kind == kind
                 and (avail := number(e.fields.get("avail_gb"))) is not None]
        if found:
            lowest = min(found, key=lambda pair: pair[0])[1]
            evidence.append((lowest.number, lowest.line.text))
    sg = sglang_part(ledger)
    if sg.mfs_source == "server_args" and run.args_line is not None:
        evidence.insert(0, (run.args_line, f"server_args: mem_fraction_static={sg.mem_fraction_static}"))
    return evidence


# SGLang's own endings after a failure (not the shell's "Killed": the kernel's OOM killer of host RAM)
_OWN_ENDINGS = frozenset({"sigquit_child", "sigquit_running", "kill_process_tree", "rank_died", "rank_dead"})


def _weights_exceed_free_memory(run: Any) -> list[tuple[int, str]] | None:
    """The checkpoint's least size per GPU (``_memory/checkpoint.py``: its name's parameter
    count × the bytes its name or ``--quantization`` say, split over TP × PP) is more than any
    rank had free before loading, no rank finished loading, and the run stopped there with
    nothing that says why: no torch OOM figures, no traceback message (cut or missing), only
    SGLang's own SIGQUIT / kill_process_tree or a traceback's frames."""
    if run.dialect.name != "sglang" or run.ready or any(tb.message for tb in run.tracebacks):
        return None
    if not run.tracebacks and not any(e.kind in _OWN_ENDINGS for e in run.endings):
        return None
    ledger = build_ledger(run)
    size = ledger.checkpoint
    starts = [r for r in ledger.ranks if r.avail_at_start_gib is not None]
    if size is None or ledger.ooms or not starts or any(r.weights_done for r in ledger.ranks):
        return None
    roomiest = max(starts, key=lambda r: r.avail_at_start_gib or 0.0)
    shards = (ledger.tp_size or 1) * (ledger.pp_size or 1)
    if size.per_gpu_gib(shards) <= (roomiest.avail_at_start_gib or 0.0):
        return None
    said = ", ".join(f"{k}={run.args[k]!r}" for k in ("model_path", "tp_size", "pp_size", "quantization", "dtype")
                     if run.args.get(k) is not None)
    evidence = [(run.args_line, f"server_args: {said}")] if run.args_line is not None and said else []
    evidence.append((roomiest.lines["weights"], roomiest.texts["weights"]))
    if run.tracebacks:
        evidence.append(run.tracebacks[0].lines[0])
    else:
        stop = next(e for e in run.endings if e.kind in _OWN_ENDINGS)
        evidence.append((stop.number, stop.line.text))
    return evidence


CONDITIONS = {"sglang_figures_leave_no_kv_room": _figures_leave_no_kv_room,
              "sglang_weights_exceed_free_memory": _weights_exceed_free_memory}
