"""SGLang's memory fixes in numbers: the sentences the memory patterns quote, each with its
formula, the log's figures and a flag value re-checked with the formula it inverts
(``{kv_room_arithmetic}``, ``{weights_arithmetic}``, ``{graph_arithmetic}``,
``{serving_arithmetic}``, ``{mamba_arithmetic}``, ``{mamba_fix}``, ``{long_context_arithmetic}``)."""

from __future__ import annotations

from typing import Any

from ..._memory.build import build_ledger
from ..._memory.checkpoint import NOMINAL_SHARE
from ..._memory.ledger import Ledger
from ..._memory.units import frac, gib_text, number, put_figure
from .memory import mamba_sentence, sglang_part
from .sizing import (
    GRAPH_FLOOR_SHARE,
    MFS_CAP,
    MFS_COMFORT,
    MIN_KV_ROOM_GIB,
    OOM_MARGIN_GIB,
    TP_WEIGHT_SHARE,
    ceil2,
    graph_need_gib,
    kv_rest_gib,
    kv_tokens_after,
    mamba_cache_size_for,
    mamba_requests_fit,
    mamba_slots_at_ratio,
    min_viable_mem_fraction_static,
    suggest_context_length,
    suggest_mamba_full_memory_ratio,
    suggest_mem_fraction_static,
    suggest_mfs_for_graphs,
    suggest_tp_size,
)


def kv_room_sentence(ledger: Ledger) -> str:
    """``rest = avail_after_weights − pre×(1−mfs)`` with the log's numbers, the minimum viable
    fraction, and a re-checked ``--mem-fraction-static`` suggestion (or what is unknown)."""
    sg = sglang_part(ledger)
    pre, pre_source = ledger.pre_for_formulas
    after = ledger.avail_after_weights_gib
    mfs = sg.mem_fraction_static
    if after is None or pre is None:
        missing = []
        if after is None:
            missing.append("the free memory after the weights ('Load weight end. avail mem')")
        if pre is None:
            missing.append("the free memory before them ('Load weight begin. avail mem')")
        return ("The KV arithmetic (rest = avail_after_weights − pre×(1−mfs) must be > 0) cannot be done: "
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not in the log.")
    out = []
    if mfs is not None:
        rest = kv_rest_gib(after, pre, mfs)
        out.append(f"KV pool needs rest > 0 where rest = avail_after_weights − pre×(1−mfs) = {after:.2f} − "
                   f"{pre:.2f}×(1−{frac(mfs)}) = {gib_text(rest)} GiB (pre = {pre_source}).")
    else:
        out.append(f"--mem-fraction-static is not in the log, so rest = avail_after_weights − pre×(1−mfs) "
                   f"cannot be evaluated (avail_after_weights = {after:.2f}, pre = {pre:.2f} GiB).")
    viable = min_viable_mem_fraction_static(after, pre)
    out.append(f"Minimum viable mfs = 1 − {after:.2f}/{pre:.2f} = {viable:.3f}.")
    s = suggest_mem_fraction_static(after, pre)
    if s is not None:
        out.append(f"`--mem-fraction-static {s.value:.2f}` leaves {after:.2f} − {pre:.2f}×(1−{s.value:.2f}) = "
                   f"{s.kv_room_gib:.2f} GiB for the KV cache (re-checked) and {s.outside_gib:.2f} GiB outside "
                   "the static pools for CUDA graphs and activations.")
        if s.value > MFS_COMFORT:
            out.append(f"That is little headroom above {MFS_COMFORT}; if CUDA graph capture then runs out, "
                       "use more GPUs instead.")
    else:
        out.append(f"No --mem-fraction-static up to {MFS_CAP} leaves {MIN_KV_ROOM_GIB:.0f} GiB: "
                   + weights_budget_sentence(ledger))
    return " ".join(out)


def weights_budget_sentence(ledger: Ledger) -> str:
    """How large the weights are per GPU against what a GPU can give them, and the ``--tp-size``
    at which they fit (``suggest_tp_size``)."""
    pre, pre_source = ledger.pre_for_formulas
    weights, lower = None, False
    ws = [r.weights_gib for r in ledger.ranks if r.weights_gib is not None]
    if ws:
        weights = max(ws)
    oom = ledger.oom.oom if ledger.oom is not None else None
    rank = ledger.rank(ledger.oom.tag) if ledger.oom is not None else None
    loading = ledger.oom is not None and ledger.oom.phase in (None, "init", "weights")
    how = ""
    if weights is None and oom is not None and oom.own_gib is not None and loading:
        before = rank.before_weights_gib if rank is not None and rank.before_weights_gib else 0.0
        weights, lower = oom.own_gib - before + (oom.requested_gib or 0.0), True
        init = (f" − {before:.2f} init use" if rank is not None and rank.before_weights_gib is not None
                else " (init use not in the log)")
        how = (f" (= {oom.own_gib:.2f} this process held{init} + {oom.requested_gib or 0.0:.2f} that failed; "
               "loading had not finished)")
    checkpoint = ledger.checkpoint
    if weights is None and checkpoint is not None:
        shards = (ledger.tp_size or 1) * (ledger.pp_size or 1)
        weights, lower = checkpoint.per_gpu_gib(shards), True
        how = (f" (the checkpoint's name: {checkpoint.params_billion:g}B parameters × "
               f"{checkpoint.bytes_per_param:g} bytes ({checkpoint.storage}) × {NOMINAL_SHARE} ≈ "
               f"{checkpoint.gib:.2f} GiB, split over TP×PP = {shards})")
    tp = ledger.tp_size or 1
    if weights is None:
        return ("the weights' size is not in the log (no 'Load weight end. mem usage' and no torch OOM "
                f"figures); use more GPUs (`--tp-size` above {tp}) or a quantized checkpoint.")
    size = f"{'more than ' if lower else ''}{weights:.2f} GiB per GPU"
    subject = "loading the weights needs" if lower else "the weights need"
    if pre is None:
        return f"{subject} {size}{how}; the free memory before them is not in the log."
    t = suggest_tp_size(weights, tp, pre)
    budget = TP_WEIGHT_SHARE * pre - MIN_KV_ROOM_GIB
    against = (f"{pre:.2f} GiB free before loading" if ledger.pre_gib is not None
               else f"the GPU's {pre:.2f} GiB total (the free memory before loading is not in the log)")
    head = f"{subject} {size}{how} against {against}."
    if t is not None and t > tp:
        quant = ("" if ledger.quantized else
                 f"; an FP8 checkpoint of a 16-bit model would need ≈ {weights / 2:.2f} GiB at the current TP")
        return (f"{head} `--tp-size {t}` (now {tp}) puts ≈ {weights * tp / t:.2f} GiB on each GPU "
                f"(weights×{tp}/{t}), within {TP_WEIGHT_SHARE}×{pre:.2f} − {MIN_KV_ROOM_GIB:.0f} = {budget:.2f} GiB"
                f"{quant}.")
    if t == tp:
        return (f"{head} They fit within {TP_WEIGHT_SHARE}×pre − {MIN_KV_ROOM_GIB:.0f} = {budget:.2f} GiB, "
                "so a GPU that held less memory at start (another process) is the likelier cause.")
    return f"{head} Even --tp-size 64 does not bring them under {budget:.2f} GiB per GPU."


def graph_sentence(ledger: Ledger, flag: str) -> str:
    """CUDA graph capture headroom: what capture had and needed, and how much to give back from
    the static fraction (``suggest_mfs_for_graphs``), re-checked, or the capture-size flag."""
    sg = sglang_part(ledger)
    oom_rec = ledger.oom
    r = ledger.rank(oom_rec.tag) if oom_rec is not None else None
    if r is None or r.graph_begin_avail_gib is None:
        cands = [x for x in ledger.ranks if x.graph_begin_avail_gib is not None]
        r = cands[0] if cands else r
    pre, pre_source = ledger.pre_for_formulas
    mfs = sg.mem_fraction_static
    begin = r.graph_begin_avail_gib if r is not None else None
    if begin is None and r is not None:
        begin = r.avail_after_pools_gib
    oom = oom_rec.oom if oom_rec is not None else None
    max_bs = r.graph_last_bs if r is not None else None
    if max_bs is None:  # the capture bar is printed by the first rank only
        max_bs = next((x.graph_last_bs for x in ledger.ranks if x.graph_last_bs is not None), None)
    if begin is None or pre is None or mfs is None:
        missing = [name for name, v in (("the free memory when capture began", begin),
                                        ("the free memory before the weights", pre),
                                        ("--mem-fraction-static", mfs)) if v is None]
        return (f"The graph-headroom arithmetic is incomplete: {', '.join(missing)} not in the log. "
                f"Lower --mem-fraction-static by 0.05-0.1, or capture smaller batches with `{flag}`.")
    need = graph_need_gib(begin, oom.free_gib if oom else None, oom.requested_gib if oom else None,
                          r.graph_last_avail_gib if r is not None else None)
    out = [f"Outside the static pools SGLang left pre×(1−mfs) = {pre:.2f}×(1−{frac(mfs)}) = {pre * (1 - mfs):.2f} GiB "
           f"(pre = {pre_source}); capture began with {begin:.2f} GiB free and needed at least {need:.2f} GiB "
           "(used before failing + the failed allocation)."]
    s = suggest_mfs_for_graphs(pre, mfs, need)
    if s is not None:
        value, target = s
        give = pre * (mfs - value)
        kv = ""
        kv_tokens = r.kv_tokens if r is not None else None
        kv_gib = r.kv_gib if r is not None else None
        if kv_tokens and kv_gib:
            kv = (f"; the KV pool shrinks by pre×(mfs−s') = {give:.2f} GiB, to ≈ "
                  f"{kv_tokens_after(kv_tokens, kv_gib, give):,} of {kv_tokens:,} tokens")
        out.append(f"Give graphs G = max(2×{need:.2f}, {GRAPH_FLOOR_SHARE}×{pre:.2f}) = {target:.2f} GiB: "
                   f"`--mem-fraction-static {value:.2f}` leaves {pre:.2f}×(1−{value:.2f}) = "
                   f"{pre * (1 - value):.2f} GiB (re-checked){kv}.")
        rest = ledger.kv_rest
        if rest is not None and rest - give <= 0:
            out.append(f"But the KV room would drop to {gib_text(rest - give)} GiB: use more GPUs instead.")
    else:
        out.append("Lowering --mem-fraction-static alone does not make room.")
    if max_bs is not None:
        bs_arg = 1 << max(3, (max_bs // 2).bit_length() - 1)  # a power of two ≤ bs/2
        out.append(f"Or capture smaller batches: it was at bs≈{max_bs} when it ran out; `{flag} {bs_arg}` "
                   "captures fewer, smaller graphs.")
    else:
        out.append(f"Or capture smaller batches with `{flag} 16` (or lower).")
    return " ".join(out)


def serving_sentence(ledger: Ledger) -> str:
    """Runtime (activation) OOM: the shortfall and the static fraction that frees it."""
    sg = sglang_part(ledger)
    rec = ledger.oom
    if rec is None or rec.oom.requested_gib is None or rec.oom.free_gib is None:
        return ("The OOM's figures are not in the log; lower --mem-fraction-static by 0.02-0.05 "
                "for activation headroom.")
    o = rec.oom
    pre, pre_source = ledger.pre_for_formulas
    mfs = sg.mem_fraction_static
    short = o.requested_gib - o.free_gib  # type: ignore[operator]
    r = ledger.rank(rec.tag)
    after = None
    if r is not None:
        after = r.avail_after_graphs_gib
        if after is None and r.budget:
            after = number(r.budget.get("available_gpu_mem"))
    out = [f"The allocation was {short:.2f} GiB short (asked {o.requested_gib:.2f}, {o.free_gib:.2f} free)"
           + (f"; after start-up {after:.2f} GiB were left for activations." if after is not None else ".")]
    if pre is not None and mfs is not None:
        delta = ceil2((max(short, 0.0) + OOM_MARGIN_GIB) / pre)
        value = round(mfs - delta, 2)
        out.append(f"`--mem-fraction-static {value:.2f}` (= mfs − ceil₀.₀₁((shortfall + {OOM_MARGIN_GIB:.0f})/pre) = "
                   f"{frac(mfs)} − {delta:.2f}, pre = {pre:.2f}: {pre_source}) gives {pre * delta:.2f} GiB "
                   "more headroom outside the static pools.")
    return " ".join(out)


def mamba_fix_sentence(ledger: Ledger, strategy_flag: str) -> str:
    """Concrete values for --mamba-full-memory-ratio / --max-mamba-cache-size that double the
    requests the pool holds, with their cost in KV memory."""
    sg = sglang_part(ledger)
    k, ratio, per = sg.mamba_slots, sg.slots_per_request, sg.mamba_per_slot_gib
    if k is None or not ratio:
        return ""
    fit = mamba_requests_fit(k, ratio)
    target_req = max(2 * fit, 1)
    target_k = mamba_cache_size_for(target_req, ratio)
    out = [f"To hold {target_req} requests the pool needs K = {target_req}×{ratio} = {target_k} slots:"]
    extra = (target_k - k) * per if per is not None else None
    cost = f" (+{extra:.2f} GiB taken from the KV pool)" if extra is not None else ""
    out.append(f"`--max-mamba-cache-size {target_k}`{cost}")
    kv_now = next((x.kv_gib for x in ledger.ranks if x.kv_gib is not None), None)
    if extra is not None and kv_now is not None:
        cost = f" (+{extra:.2f} GiB taken from the KV pool: {kv_now:.2f} → {kv_now - extra:.2f} GiB)"
        out[-1] = f"`--max-mamba-cache-size {target_k}`{cost}"
    r = sg.mamba_full_memory_ratio
    rest = ledger.kv_rest
    if r is not None and sg.max_mamba_cache_size_arg is None:
        r2 = suggest_mamba_full_memory_ratio(k, r, target_k)
        if r2 is not None:
            kv = ""
            if rest is not None:
                kv = f"; the KV pool gets rest/(1+r): {rest / (1 + r):.2f} → {rest / (1 + r2):.2f} GiB"
            check = ""
            if rest is not None and per:
                check = f"; re-checked: SGLang would size K = {mamba_slots_at_ratio(rest, per, r2)}"
            out.append(f"or `--mamba-full-memory-ratio {r2:.2f}` (now {frac(r)}; the Mamba pool gets "
                       f"rest×r/(1+r){kv}{check})")
    text = " ".join(out[:1]) + " " + ", ".join(out[1:]) + "."
    if ratio > 1:
        text += (f" `--disable-radix-cache` makes it 1 slot per request ({k} requests), at the cost of prefix "
                 "caching")
        if sg.mamba_strategy and sg.mamba_strategy.startswith("extra_buffer"):
            text += f"; `{strategy_flag} no_buffer` holds 3 per request ({k // 3} requests)"
        text += "."
    return text


def long_context_sentence(ledger: Ledger, context_length: Any) -> str:
    """A single allocation against the GPU's capacity, and the context length that shrinks it."""
    rec = ledger.oom
    asked = rec.oom.requested_gib if rec is not None else None
    if rec is None or not asked:
        return "The size of the failed allocation is not in the log."
    o = rec.oom
    if not o.total_gib:
        return f"torch asked for one buffer of {asked:.2f} GiB; the GPU's total is not in the message."
    rel = ("more than" if o.exceeds_capacity else f"{asked / o.total_gib:.0%} of")
    out = [f"torch asked for one buffer of {asked:.2f} GiB, {rel} the whole GPU ({o.total_gib:.2f} GiB)"]
    if o.exceeds_capacity:
        out[0] += ": no memory flag and no freeing of the GPU can make it fit"
    out[0] += "."
    ctx = context_length if isinstance(context_length, int) else None
    if ctx is None:
        for r in ledger.ranks:
            if r.budget and isinstance(r.budget.get("context_len"), int):
                ctx = r.budget["context_len"]
    if ctx:
        c2 = suggest_context_length(ctx, asked, o.total_gib)
        out.append(f"The buffer grows linearly with the context length ({ctx:,} now): `--context-length {c2}` "
                   f"brings it to ≈ {asked * c2 / ctx:.2f} GiB (≤ 10% of the GPU).")
    else:
        out.append("The current context length is not in the log (the model's default applies).")
    return " ".join(out)


def memory_facts(run: Any, facts: dict[str, Any]) -> dict[str, Any]:
    """The placeholders of SGLang's memory patterns (``Dialect.memory_facts``): the sentences
    above and the numbers they suggest (``{suggested_mem_fraction_static}``,
    ``{suggested_tp_size}``, …). ``facts`` (the run's so far) names the flags of the run's
    release; a value it already holds (a flag the log set) is not replaced."""
    ledger = build_ledger(run)
    sg = sglang_part(ledger)
    out: dict[str, Any] = {}
    pre, _ = ledger.pre_for_formulas
    after = ledger.avail_after_weights_gib
    if after is not None and pre is not None:
        put_figure(out, "min_viable_mem_fraction_static", min_viable_mem_fraction_static(after, pre), 3)
        s = suggest_mem_fraction_static(after, pre)
        mfs = sg.mem_fraction_static
        if s is not None and (mfs is None or s.value > mfs):  # raising it is the fix
            put_figure(out, "suggested_mem_fraction_static", s.value)
            put_figure(out, "suggested_mfs_kv_room_gib", s.kv_room_gib)
    out["kv_room_arithmetic"] = kv_room_sentence(ledger)
    text = weights_budget_sentence(ledger)
    out["weights_arithmetic"] = text[:1].upper() + text[1:]
    flag = str(facts.get("cuda_graph_max_bs_flag") or "--cuda-graph-max-bs")
    out["graph_arithmetic"] = graph_sentence(ledger, flag)
    out["serving_arithmetic"] = serving_sentence(ledger)
    out["long_context_arithmetic"] = long_context_sentence(ledger, run.args.get("context_length"))
    if ledger.hybrid:
        out["mamba_arithmetic"] = mamba_sentence(ledger)
        out["mamba_fix"] = mamba_fix_sentence(ledger, str(facts.get("mamba_strategy_flag")
                                                          or "--mamba-radix-cache-strategy"))
        put_figure(out, "mamba_requests_fit", sg.mamba_requests_fit)
        put_figure(out, "mamba_slots", sg.mamba_slots)
        put_figure(out, "mamba_slots_per_request", sg.slots_per_request)
    else:
        out["mamba_arithmetic"] = "The Mamba pool's figures are not in the log."
        out["mamba_fix"] = ""
    budgets = [r.budget for r in ledger.ranks if r.budget]
    if budgets:  # the effective values when server_args left them to SGLang ("now …" in fixes)
        put_figure(out, "max_running_requests", budgets[0].get("max_running_requests"))
        put_figure(out, "context_length", budgets[0].get("context_len"))
    ws = [r.weights_gib for r in ledger.ranks if r.weights_gib is not None]
    if ws and pre is not None:
        put_figure(out, "suggested_tp_size", suggest_tp_size(max(ws), ledger.tp_size or 1, pre))
    return {k: v for k, v in out.items() if k not in facts}
