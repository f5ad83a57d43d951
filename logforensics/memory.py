"""Memory forensics: where each rank's GPU memory went, rebuilt from the lines a log holds.

Half of the failures people chase as "memory" are not, and half of the real ones are fixed by
the wrong flag. This module turns the memory figures SGLang and torch already print into

* a per-rank **ledger** (``build_ledger(run)`` → ``Ledger`` of ``RankLedger``): GPU total,
  memory used before the weights, weights, KV cache, Mamba state cache, CUDA graphs, what
  ``--mem-fraction-static`` reserved, and the free memory after each step. A step the log does
  not show is *unknown*, a step the run never reached is *not reached*: nothing is invented;
* the parsed torch OOM message (``parse_torch_oom``): requested, total, free, this process,
  other processes, reserved-but-unallocated;
* the **arithmetic** behind every memory fix (``kv_rest_gib``, ``suggest_mem_fraction_static``,
  ``suggest_mfs_for_graphs``, ``mamba_*``, ``suggest_tp_size`` …), each stating its formula;
* the named **conditions** the catalog uses to tell memory causes apart by their numbers
  (``CONDITIONS``; registered in ``conditions.CONDITIONS``);
* the **facts** (``memory_facts``) that fill the memory patterns' ``{placeholders}``.

Units: SGLang's ``avail mem``/``mem usage``/KV/Mamba sizes are GiB (2**30 bytes) although
printed as "GB"; torch prints GiB/MiB. Everything here is GiB.
See ``docs/memory.md`` for the formulas and a worked example.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from .runs import Run, phase_from_frames

if TYPE_CHECKING:
    from .tracebacks import Traceback

# — tunables (documented in docs/memory.md) ————————————————————————————————————————
MIN_KV_ROOM_GIB = 2.0  # a suggested --mem-fraction-static must leave at least this for the KV cache
MFS_CAP = 0.95  # never suggest a static fraction above this (graphs/activations need the rest)
MFS_COMFORT = 0.90  # above this, warn that little is left outside the static pools
GRAPH_FLOOR_SHARE = 0.05  # CUDA graphs + activations get at least 5% of the pre-load memory
OOM_MARGIN_GIB = 1.0  # extra room asked for on top of a runtime OOM's shortfall
TP_WEIGHT_SHARE = 0.90  # for --tp suggestions: weights + MIN_KV_ROOM must fit in 90% of pre


def other_threshold_gib(total: float | None) -> float:
    """Memory held outside this process that counts as "another process": at least 1.5 GiB
    and 3% of the GPU (smaller gaps are CUDA contexts and peer buffers)."""
    return max(1.5, 0.03 * total) if total else 1.5


# — torch's OOM message ———————————————————————————————————————————————————————————————

_UNIT = r"(bytes|B|KiB|MiB|GiB|TiB)"
_NUM = r"(\d+(?:\.\d+)?)"
_FACTOR = {"bytes": 1 / 2**30, "B": 1 / 2**30, "KiB": 1 / 2**20, "MiB": 1 / 2**10, "GiB": 1.0,
           "TiB": 1024.0}
_REQ = re.compile(rf"Tried to allocate {_NUM} ?{_UNIT}")
_NEW_TOTAL = re.compile(rf"GPU (\d+) has a total capac(?:ity|ty) of {_NUM} ?{_UNIT}")
_NEW_FREE = re.compile(rf"of which {_NUM} ?{_UNIT} is free")
_PROCESS = re.compile(rf"Process (\d+) has {_NUM} ?{_UNIT} memory in use")
_THIS = re.compile(rf"this process has {_NUM} ?{_UNIT} memory in use")
_ALLOCATED = re.compile(rf"Of the allocated memory {_NUM} ?{_UNIT} is allocated by PyTorch")
_RESERVED = re.compile(rf"{_NUM} ?{_UNIT} is reserved by PyTorch but unallocated")
_OLD_GPU = re.compile(rf"\(GPU (\d+); {_NUM} ?{_UNIT} total capacity")
_OLD_ALLOCATED = re.compile(rf"{_NUM} ?{_UNIT} already allocated")
_OLD_FREE = re.compile(rf"; {_NUM} ?{_UNIT} free")
_OLD_RESERVED = re.compile(rf"{_NUM} ?{_UNIT} reserved in total by PyTorch")
_OOM_TEXT = re.compile(r"(?:CUDA|HIP|NPU|XPU|MUSA) out of memory|CUDA error: out of memory")


def _gib(m: re.Match[str] | None, num: int = 1) -> float | None:
    if m is None:
        return None
    return float(m.group(num)) * _FACTOR[m.group(num + 1)]


@dataclass
class TorchOOM:
    """The figures of one torch CUDA out-of-memory message (GiB; ``None`` = not in the text).

    New format: "Tried to allocate X. GPU n has a total capacity of T of which F is free.
    [Process P has M memory in use.]* [Including non-PyTorch memory, this process has U memory
    in use.] Of the allocated memory A is allocated by PyTorch, and R is reserved by PyTorch
    but unallocated." Old format: "Tried to allocate X (GPU n; T total capacity; A already
    allocated; F free; R' reserved in total by PyTorch)"."""

    requested_gib: float | None = None
    gpu: int | None = None
    total_gib: float | None = None
    free_gib: float | None = None
    this_process_gib: float | None = None
    this_process_listed: bool = False  # "this process has" appears (even if its number was cut)
    processes: list[tuple[int, float]] = field(default_factory=list)  # "Process P has M"
    allocated_gib: float | None = None  # allocated by PyTorch
    reserved_unallocated_gib: float | None = None
    reserved_total_gib: float | None = None  # old format
    old_format: bool = False

    # — who holds the GPU ——————————————————————————————————————————————————————————

    def _self_index(self) -> int | None:
        """Which "Process P" entry is torch's own process, when it did not print "this
        process has" (inside a container torch cannot match its own PID and lists itself as a
        plain "Process P"). The entry whose size covers what PyTorch allocated is itself."""
        if self.this_process_listed or not self.processes:
            return None
        alloc = self.allocated_gib
        if len(self.processes) == 1:
            if alloc is not None and alloc > self.processes[0][1] + 0.5:
                return None  # it holds less than PyTorch allocated here: someone else
            return 0
        fits = [i for i, (_, gib) in enumerate(self.processes) if alloc is None or gib >= alloc - 0.5]
        if not fits:
            return None
        target = alloc if alloc is not None else max(g for _, g in self.processes)
        return min(fits, key=lambda i: abs(self.processes[i][1] - target))

    @property
    def own_gib(self) -> float | None:
        """Memory this process holds on the GPU."""
        if self.this_process_gib is not None:
            return self.this_process_gib
        i = self._self_index()
        if i is not None:
            return self.processes[i][1]
        if self.old_format:  # what torch reserved; else what it allocated (a lower bound)
            return self.reserved_total_gib if self.reserved_total_gib is not None else self.allocated_gib
        return None

    @property
    def other_processes(self) -> list[tuple[int, float]]:
        i = self._self_index()
        return [p for j, p in enumerate(self.processes) if j != i]

    @property
    def unaccounted_gib(self) -> float | None:
        """total − free − this process − listed others: memory held by processes torch did not
        list (another container, another user) — plus a CUDA context or two."""
        own = self.own_gib
        if self.total_gib is None or self.free_gib is None or own is None:
            return None
        return self.total_gib - self.free_gib - own - sum(g for _, g in self.other_processes)

    @property
    def other_gib(self) -> float:
        """Memory held by other processes: the listed ones plus, when it is large, the
        unaccounted rest (``other_threshold_gib``)."""
        listed = sum(g for _, g in self.other_processes)
        rest = self.unaccounted_gib
        if rest is not None and rest >= other_threshold_gib(self.total_gib):
            listed += rest
        return listed

    @property
    def others_hold_memory(self) -> bool:
        """Other processes hold a significant share, and without them the allocation would
        have fit: requested ≤ free + other + reserved-but-unallocated."""
        other = self.other_gib
        if other < other_threshold_gib(self.total_gib):
            return False
        if self.exceeds_capacity:
            return False
        if self.requested_gib is None or self.free_gib is None:
            return True
        return self.requested_gib <= self.free_gib + other + (self.reserved_unallocated_gib or 0.0)

    @property
    def exceeds_capacity(self) -> bool:
        """One allocation larger than the whole GPU: requested > total capacity."""
        return (self.requested_gib is not None and self.total_gib is not None
                and self.requested_gib > self.total_gib)

    @property
    def fragmented(self) -> bool:
        """The bytes were there but not in one piece: reserved-but-unallocated ≥ 0.5 GiB and
        free + reserved-but-unallocated ≥ requested."""
        r = self.reserved_unallocated_gib
        if r is None or r < 0.5 or self.requested_gib is None or self.free_gib is None:
            return False
        return self.free_gib + r >= self.requested_gib

    def to_json(self) -> dict[str, Any]:
        return {
            "requested_gib": _r(self.requested_gib), "gpu": self.gpu,
            "total_gib": _r(self.total_gib), "free_gib": _r(self.free_gib),
            "this_process_gib": _r(self.own_gib),
            "other_processes": [{"pid": p, "gib": _r(g)} for p, g in self.other_processes],
            "unaccounted_gib": _r(self.unaccounted_gib), "other_gib": _r(self.other_gib),
            "allocated_by_pytorch_gib": _r(self.allocated_gib),
            "reserved_unallocated_gib": _r(self.reserved_unallocated_gib),
            "exceeds_capacity": self.exceeds_capacity,
            "others_hold_memory": self.others_hold_memory, "fragmented": self.fragmented,
        }


def parse_torch_oom(message: str | None) -> TorchOOM | None:
    """Parse torch's CUDA OOM message (new or old format, possibly cut). ``None`` when the
    text is not an OOM or holds no figure at all; a cut message yields the figures before the
    cut (a number without its unit is ignored, never guessed)."""
    if not message or not _OOM_TEXT.search(message):
        return None
    oom = TorchOOM()
    oom.requested_gib = _gib(_REQ.search(message))
    m = _NEW_TOTAL.search(message)
    if m:
        oom.gpu = int(m.group(1))
        oom.total_gib = _gib(m, 2)
        oom.free_gib = _gib(_NEW_FREE.search(message))
        oom.processes = [(int(p.group(1)), _gib(p, 2) or 0.0) for p in _PROCESS.finditer(message)]
        oom.this_process_gib = _gib(_THIS.search(message))
        oom.this_process_listed = "this process has" in message
        oom.allocated_gib = _gib(_ALLOCATED.search(message))
        oom.reserved_unallocated_gib = _gib(_RESERVED.search(message))
    else:
        m = _OLD_GPU.search(message)
        if m:
            oom.old_format = True
            oom.gpu = int(m.group(1))
            oom.total_gib = _gib(m, 2)
            oom.allocated_gib = _gib(_OLD_ALLOCATED.search(message))
            oom.free_gib = _gib(_OLD_FREE.search(message))
            oom.reserved_total_gib = _gib(_OLD_RESERVED.search(message))
            if oom.reserved_total_gib is not None and oom.allocated_gib is not None:
                oom.reserved_unallocated_gib = max(0.0, oom.reserved_total_gib - oom.allocated_gib)
    if oom.requested_gib is None and oom.total_gib is None:
        return None
    return oom


# — the arithmetic ————————————————————————————————————————————————————————————————————


def ceil2(x: float) -> float:
    """Round up to 0.01 (tolerant of float noise)."""
    return math.ceil(round(x * 100, 6)) / 100


def floor2(x: float) -> float:
    """Round down to 0.01 (tolerant of float noise)."""
    return math.floor(round(x * 100, 6)) / 100


def kv_rest_gib(avail_after_weights: float, pre: float, mfs: float) -> float:
    """Memory SGLang can give the KV (and Mamba) pools:
    ``rest = avail_after_weights − pre × (1 − mfs)``, where ``pre`` is the free memory before
    the weights (``pre_model_load_memory``, min over ranks) and ``mfs`` is
    ``--mem-fraction-static``. ``rest ≤ 0`` aborts start-up ("Not enough memory" / "Loaded
    weights leave no GPU memory for the KV cache")."""
    return avail_after_weights - pre * (1.0 - mfs)


def min_viable_mem_fraction_static(avail_after_weights: float, pre: float) -> float:
    """The fraction at which ``rest`` is exactly 0: ``mfs_min = 1 − avail_after_weights / pre``
    (SGLang ≥ 0.5.14 prints the same figure as "minimum viable")."""
    return 1.0 - avail_after_weights / pre if pre > 0 else 1.0


@dataclass(frozen=True)
class MfsSuggestion:
    value: float  # the suggested --mem-fraction-static
    kv_room_gib: float  # rest at that value, re-computed with kv_rest_gib
    outside_gib: float  # pre × (1 − value): left for CUDA graphs and activations


def suggest_mem_fraction_static(avail_after_weights: float, pre: float,
                                min_room_gib: float = MIN_KV_ROOM_GIB,
                                cap: float = MFS_CAP) -> MfsSuggestion | None:
    """The smallest ``--mem-fraction-static`` (in steps of 0.01) that leaves at least
    ``min_room_gib`` for the KV pool:
    ``s = ceil₀.₀₁(1 − (avail_after_weights − min_room) / pre)``, re-checked with
    ``kv_rest_gib(avail_after_weights, pre, s) ≥ min_room``. ``None`` when ``s > cap``: no
    fraction leaves room, the weights are too large for this GPU (use ``suggest_tp_size``)."""
    if pre <= 0:
        return None
    s = ceil2(1.0 - (avail_after_weights - min_room_gib) / pre)
    s = max(s, 0.01)
    while kv_rest_gib(avail_after_weights, pre, s) < min_room_gib - 1e-9 and s <= cap:
        s = round(s + 0.01, 2)  # float noise: step until the re-check passes
    if s > cap:
        return None
    return MfsSuggestion(s, kv_rest_gib(avail_after_weights, pre, s), pre * (1.0 - s))


def graph_need_gib(begin_avail: float, free_at_oom: float | None, requested: float | None,
                   last_avail: float | None = None) -> float:
    """What CUDA-graph capture was seen to need before it ran out:
    ``need = (avail at capture begin − free when it failed) + the failed allocation``
    (the last progress ``avail_mem`` stands in for the free figure when torch's is missing)."""
    low = free_at_oom if free_at_oom is not None else (last_avail if last_avail is not None else 0.0)
    return max(0.0, begin_avail - low) + (requested or 0.0)


def suggest_mfs_for_graphs(pre: float, mfs: float, need_gib: float,
                           floor_share: float = GRAPH_FLOOR_SHARE) -> tuple[float, float] | None:
    """A lower ``--mem-fraction-static`` that leaves CUDA graphs room: target headroom
    ``G = max(2 × need, floor_share × pre)``, ``s' = floor₀.₀₁(1 − G / pre)``, re-checked with
    ``pre × (1 − s') ≥ G``. Returns ``(s', G)``; ``None`` when ``s'`` would not be below ``mfs``."""
    if pre <= 0:
        return None
    target = max(2.0 * need_gib, floor_share * pre)
    s = floor2(1.0 - target / pre)
    while s > 0 and pre * (1.0 - s) < target - 1e-9:
        s = round(s - 0.01, 2)
    if s <= 0 or s >= mfs:
        return None
    return s, target


def kv_tokens_after(tokens: int, kv_gib: float, give_back_gib: float) -> int:
    """KV tokens left when the pool shrinks by ``give_back_gib``:
    ``tokens × (kv_gib − give_back) / kv_gib`` (the pool is linear in tokens)."""
    if kv_gib <= 0:
        return 0
    return max(0, int(tokens * (kv_gib - give_back_gib) / kv_gib))


def mamba_per_request_gib(conv_gib: float, ssm_gib: float, slots: int) -> float:
    """State size of one Mamba slot from "Mamba Cache is allocated":
    ``per_slot ≈ (conv + ssm) / (K + 1)`` (SGLang allocates K slots plus one padding slot)."""
    return (conv_gib + ssm_gib) / (slots + 1) if slots >= 0 else 0.0


def mamba_slots_per_request(strategy: str | None, disable_radix_cache: bool = False,
                            overlap: bool = True) -> int | None:
    """Mamba slots one running request holds (SGLang's ``mamba_ratio``): 1 with
    ``--disable-radix-cache``; else ``no_buffer`` 3, ``extra_buffer`` 3 + 2 with the overlap
    scheduler (3 + 1 without), ``extra_buffer_lazy`` 4. ``None`` for ``auto``/unknown."""
    if disable_radix_cache:
        return 1
    if strategy == "no_buffer":
        return 3
    if strategy == "extra_buffer":
        return 5 if overlap else 4
    if strategy == "extra_buffer_lazy":
        return 4
    return None


def mamba_requests_fit(slots: int, per_request: int) -> int:
    """Running requests the Mamba pool holds: ``K // slots_per_request``."""
    return slots // per_request if per_request > 0 else 0


def mamba_cache_size_for(requests: int, per_request: int) -> int:
    """``--max-mamba-cache-size`` that holds ``requests``: ``requests × slots_per_request``."""
    return requests * per_request


def suggest_mamba_full_memory_ratio(slots: int, ratio: float, target_slots: int) -> float | None:
    """``--mamba-full-memory-ratio`` r' that grows the pool from K to K' slots. SGLang gives the
    Mamba pool ``rest × r/(1+r)`` and ``K + 1 ≈ budget / per_slot``, so
    ``q = (K'+1)/(K+1) × r/(1+r)`` and ``r' = ceil₀.₀₁(q / (1 − q))``; ``None`` when ``q ≥ 1``
    (the whole pool memory would not be enough)."""
    if slots < 0 or ratio <= 0:
        return None
    q = (target_slots + 1) / (slots + 1) * ratio / (1.0 + ratio)
    if q >= 1.0:
        return None
    return ceil2(q / (1.0 - q))


def mamba_slots_at_ratio(rest_gib: float, per_slot_gib: float, ratio: float) -> int:
    """Slots SGLang computes at ``--mamba-full-memory-ratio r``:
    ``K = floor(rest × r/(1+r) / per_slot) − 1``."""
    if per_slot_gib <= 0:
        return 0
    return int(rest_gib * ratio / (1.0 + ratio) / per_slot_gib) - 1


def suggest_tp_size(weights_per_gpu_gib: float, tp: int, pre: float,
                    share: float = TP_WEIGHT_SHARE, min_room_gib: float = MIN_KV_ROOM_GIB,
                    max_tp: int = 64) -> int | None:
    """The smallest ``--tp-size`` t (``tp`` × a power of two) at which the weights fit with
    room for the KV cache: ``weights × tp / t + min_room ≤ share × pre``."""
    t = max(1, tp)
    while t <= max_tp:
        if weights_per_gpu_gib * tp / t + min_room_gib <= share * pre:
            return t
        t *= 2
    return None


def suggest_context_length(context_len: int, requested_gib: float, total_gib: float,
                           share: float = 0.10) -> int:
    """A ``--context-length`` at which a buffer that grows linearly with it (rotary cos/sin
    cache, req_to_token table) takes at most ``share`` of the GPU:
    ``C' = pow2_floor(C × share × total / requested)``."""
    target = context_len * share * total_gib / requested_gib if requested_gib > 0 else context_len
    return 1 << max(10, int(math.floor(math.log2(max(target, 1024)))))


# — the ledger ————————————————————————————————————————————————————————————————————————

STEPS = ("init", "weights", "kv_cache", "mamba_cache", "pools", "cuda_graphs", "serving")
STEP_LABEL = {"init": "before weights", "weights": "weights", "kv_cache": "KV cache",
              "mamba_cache": "Mamba cache", "pools": "pools end", "cuda_graphs": "CUDA graphs",
              "serving": "serving"}
PHASE_STEP = {"init": "init", "weights": "weights", "kv_alloc": "kv_cache", "cuda_graph": "cuda_graphs",
              "warmup": "serving", "ready": "serving", "serving": "serving"}
_EVENT_STEP = {"dist_init_end": "init", "memory_baseline": "init", "weight_load_begin": "weights",
               "weight_load_end": "weights", "kv_cache_alloc": "kv_cache", "swa_pool": "kv_cache",
               "mamba_cache_alloc": "mamba_cache", "max_running_capped": "mamba_cache",
               "memory_pool_end": "pools", "cuda_graph_begin": "cuda_graphs",
               "cuda_graph_progress": "cuda_graphs", "cuda_graph_end": "cuda_graphs",
               "scheduler_budget": "serving"}
_TAG_TOKEN = re.compile(r"([A-Z_]+)(\d+)")
_MAMBA_NO_ROOM = re.compile(r"Computed max_mamba_cache_size=(-?\d+) \(total_rest_memory=(-?\d+(?:\.\d+)?) GB, "
                            r"mamba_cache_per_req=(\d+(?:\.\d+)?) MB\)")
_MAMBA_TOO_SMALL = re.compile(r"max_mamba_cache_size=(-?\d+), mamba_ratio=(\d+), resulting max_num_reqs=(-?\d+)")
_MAMBA_POOL_SIZE = re.compile(r"mamba_pool\.size=(\d+)")
_MFS_IN_TEXT = re.compile(r"mem_fraction_static=(\d+(?:\.\d+)?)|--mem-fraction-static=(\d+(?:\.\d+)?)")


def _r(x: float | None, nd: int = 2) -> float | None:
    return None if x is None else round(x, nd)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def gib_text(x: float | None) -> str:
    """``12.30``, ``−4.14`` (a real minus sign), or ``unknown``."""
    if x is None:
        return "unknown"
    text = f"{x:.2f}"
    return "\u2212" + text[1:] if text.startswith("-") else text


def frac(x: float) -> str:
    """A fraction as SGLang users write it: ``0.80``, ``0.975``."""
    text = f"{x:.3f}".rstrip("0")
    return text if len(text.split(".")[1]) >= 2 else f"{x:.2f}"


@dataclass
class OOMRecord:
    """One torch OOM seen in the run: where (line, rank) and in which phase."""

    oom: TorchOOM
    line: int
    tag: str
    phase: str | None
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "rank": _rank_label(self.tag), "phase": self.phase, **self.oom.to_json()}


@dataclass
class RankLedger:
    """Where one rank's (one GPU's) memory went. GiB; ``None`` = not in the log."""

    rank: str
    gpu_total_gib: float | None = None
    gpu_total_source: str | None = None
    before_weights_gib: float | None = None  # used by parallel init (NCCL, context)
    avail_at_start_gib: float | None = None  # "Load weight begin. avail mem"
    weights_gib: float | None = None  # "Load weight end. mem usage"
    avail_after_weights_gib: float | None = None
    weights_began: bool = False
    weights_done: bool = False
    kv_tokens: int | None = None
    kv_k_gib: float | None = None
    kv_v_gib: float | None = None
    kv_gib: float | None = None
    kv_dtype: str | None = None
    swa: dict[str, Any] | None = None
    mamba_slots: int | None = None
    mamba_conv_gib: float | None = None
    mamba_ssm_gib: float | None = None
    mamba_intermediate_gib: float | None = None
    mamba_slots_per_request_logged: int | None = None
    avail_after_pools_gib: float | None = None
    graph_begin_avail_gib: float | None = None
    graph_gib: float | None = None
    avail_after_graphs_gib: float | None = None
    graph_began: bool = False
    graph_done: bool = False
    graph_last_bs: int | None = None
    graph_last_avail_gib: float | None = None
    budget: dict[str, Any] | None = None
    oom: OOMRecord | None = None
    failed_phase: str | None = None  # where this rank's first traceback was raised
    lines: dict[str, int] = field(default_factory=dict)  # step -> first line showing it
    texts: dict[str, str] = field(default_factory=dict)  # step -> that line's text (evidence)

    @property
    def mamba_gib(self) -> float | None:
        if self.mamba_conv_gib is None and self.mamba_ssm_gib is None:
            return None
        return (self.mamba_conv_gib or 0.0) + (self.mamba_ssm_gib or 0.0) + (self.mamba_intermediate_gib or 0.0)

    @property
    def held_before_start_gib(self) -> float | None:
        """total − free at start − init use: memory someone else held before the weights."""
        if self.gpu_total_gib is None or self.avail_at_start_gib is None:
            return None
        return self.gpu_total_gib - self.avail_at_start_gib - (self.before_weights_gib or 0.0)

    def reached(self) -> int:
        """Index in STEPS of the furthest step this rank's lines show (-1: none)."""
        furthest = -1
        for step in self.lines:
            furthest = max(furthest, STEPS.index(step))
        return furthest

    def step_state(self, step: str, run_reached: int, hybrid: bool) -> str:
        """``done`` | ``ran_out`` (torch OOM) | ``failed`` (another error) | ``in_progress`` |
        ``unknown`` (a later step shows, this one is not in the log) | ``not_reached`` |
        ``not_logged`` (serving: only the first rank prints the budget) | ``n/a``."""
        i = STEPS.index(step)
        if self.oom is not None and self.oom.phase and PHASE_STEP.get(self.oom.phase) == step:
            return "ran_out"
        if step == "mamba_cache" and not hybrid:
            return "n/a"
        done = {
            "init": self.before_weights_gib is not None or self.avail_at_start_gib is not None,
            "weights": self.weights_done,
            "kv_cache": self.kv_gib is not None or self.kv_tokens is not None,
            "mamba_cache": self.mamba_slots is not None or self.mamba_gib is not None,
            "pools": self.avail_after_pools_gib is not None,
            "cuda_graphs": self.graph_done,
            "serving": self.budget is not None,
        }[step]
        if done:
            return "done"
        if self.failed_phase and PHASE_STEP.get(self.failed_phase) == step:
            return "failed"
        if (step == "weights" and self.weights_began) or (step == "cuda_graphs" and self.graph_began):
            return "in_progress"
        if step == "serving" and run_reached >= i:
            return "not_logged"  # the budget line is printed by the first rank only
        reached = max(self.reached(), run_reached)
        return "unknown" if i < reached else "not_reached"

    def steps(self, run_reached: int, hybrid: bool) -> list[dict[str, Any]]:
        out = []
        for step in STEPS:
            state = self.step_state(step, run_reached, hybrid)
            if state == "n/a":
                continue
            used, after = {
                "init": (self.before_weights_gib, self.avail_at_start_gib),
                "weights": (self.weights_gib, self.avail_after_weights_gib),
                "kv_cache": (self.kv_gib, None),
                "mamba_cache": (self.mamba_gib, None),
                "pools": (None, self.avail_after_pools_gib),
                "cuda_graphs": (self.graph_gib, self.avail_after_graphs_gib),
                "serving": (None, _num((self.budget or {}).get("available_gpu_mem"))),
            }[step]
            out.append({"step": step, "state": state, "used_gib": _r(used),
                        "avail_after_gib": _r(after), "line": self.lines.get(step)})
        return out

    def to_json(self, run_reached: int, hybrid: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rank": self.rank or "TP0",
            "gpu_total_gib": _r(self.gpu_total_gib), "gpu_total_source": self.gpu_total_source,
            "before_weights_gib": _r(self.before_weights_gib),
            "avail_at_start_gib": _r(self.avail_at_start_gib),
            "weights_gib": _r(self.weights_gib), "avail_after_weights_gib": _r(self.avail_after_weights_gib),
            "kv_cache": None if self.kv_gib is None and self.kv_tokens is None else {
                "tokens": self.kv_tokens, "k_gib": _r(self.kv_k_gib), "v_gib": _r(self.kv_v_gib),
                "gib": _r(self.kv_gib), "dtype": self.kv_dtype, "swa": self.swa},
            "mamba_cache": None if self.mamba_slots is None and self.mamba_gib is None else {
                "slots": self.mamba_slots, "conv_gib": _r(self.mamba_conv_gib),
                "ssm_gib": _r(self.mamba_ssm_gib), "intermediate_gib": _r(self.mamba_intermediate_gib),
                "gib": _r(self.mamba_gib)},
            "avail_after_pools_gib": _r(self.avail_after_pools_gib),
            "cuda_graphs": None if not self.graph_began and self.graph_gib is None else {
                "began_avail_gib": _r(self.graph_begin_avail_gib), "gib": _r(self.graph_gib),
                "done": self.graph_done, "last_bs": self.graph_last_bs,
                "last_avail_gib": _r(self.graph_last_avail_gib)},
            "avail_after_graphs_gib": _r(self.avail_after_graphs_gib),
            "held_before_start_gib": _r(self.held_before_start_gib),
            "oom": self.oom.to_json() if self.oom else None,
            "steps": self.steps(run_reached, hybrid),
        }
        return out


def _rank_sort_key(tag: str) -> tuple:
    return tuple((name, int(n)) for name, n in _TAG_TOKEN.findall(tag)) or (("", -1),)


def _rank_label(tag: str) -> str:
    return tag or "TP0"


def _collapse(labels: list[str]) -> str:
    """``TP0, TP1, TP2, TP3`` → ``TP0–TP3`` (only for plain consecutive single-token tags)."""
    if len(labels) == 1:
        return labels[0]
    parts = [_TAG_TOKEN.fullmatch(x) for x in labels]
    if all(parts) and len({p.group(1) for p in parts}) == 1:  # type: ignore[union-attr]
        nums = [int(p.group(2)) for p in parts]  # type: ignore[union-attr]
        if nums == list(range(nums[0], nums[0] + len(nums))):
            return f"{labels[0]}–{labels[-1]}"
    return ", ".join(labels)


@dataclass
class Ledger:
    """A run's GPU memory, rank by rank, plus the figures the memory fixes are computed from."""

    run_index: int
    touched: bool
    phase: str
    ranks: list[RankLedger] = field(default_factory=list)
    mem_fraction_static: float | None = None
    mfs_source: str | None = None
    tp_size: int | None = None
    ooms: list[OOMRecord] = field(default_factory=list)
    hybrid: bool = False
    mamba_strategy: str | None = None
    mamba_full_memory_ratio: float | None = None
    max_mamba_cache_size_arg: int | None = None
    slots_per_request: int | None = None
    slots_per_request_source: str | None = None
    disable_radix_cache: bool = False
    unbalanced_note: str | None = None
    sglang_min_viable: float | None = None  # from SGLang's own message, for cross-checking
    sglang_mamba: dict[str, Any] = field(default_factory=dict)  # figures from SGLang's Mamba errors
    quantized: bool = False  # --quantization set or a quantized checkpoint name
    error: str | None = None  # set when the ledger could not be built (a bug in logx, not in the log)

    # — figures across ranks (SGLang takes the minimum over ranks) ———————————————————

    def _min(self, attr: str) -> float | None:
        values = [getattr(r, attr) for r in self.ranks if getattr(r, attr) is not None]
        return min(values) if values else None

    @property
    def pre_gib(self) -> float | None:
        """``pre_model_load_memory``: free memory before the weights, min over ranks (``None``
        when not logged, or 0: no formula divides by it)."""
        pre = self._min("avail_at_start_gib")
        return pre if pre is not None and pre > 0 else None

    @property
    def avail_after_weights_gib(self) -> float | None:
        return self._min("avail_after_weights_gib")

    @property
    def oom(self) -> OOMRecord | None:
        """The first torch OOM of the run (the first rank to run out)."""
        return self.ooms[0] if self.ooms else None

    @property
    def gpu_total(self) -> tuple[float | None, str | None]:
        for r in self.ranks:
            if r.gpu_total_source == "torch OOM message" and r.gpu_total_gib:
                return r.gpu_total_gib, f"torch OOM message ({_rank_label(r.rank)})"
        for o in self.ooms:
            if o.oom.total_gib:
                return o.oom.total_gib, "torch OOM message"
        return None, None

    @property
    def pre_for_formulas(self) -> tuple[float | None, str]:
        """``pre`` for the formulas, and what it is: the logged free memory at start, else the
        GPU total from the OOM message (an upper bound, said so)."""
        if self.pre_gib is not None:
            n = sum(1 for r in self.ranks if r.avail_at_start_gib is not None)
            where = f", min over {n} ranks" if n > 1 else ""
            return self.pre_gib, f"free memory before the weights{where}"
        total, _ = self.gpu_total
        if total is not None:
            return total, ("the GPU total from torch's OOM message, an upper bound (the free memory before the "
                           "weights is not in the log)")
        return None, "unknown: the log has no 'Load weight begin. avail mem' line and no torch OOM figures"

    @property
    def kv_rest(self) -> float | None:
        """``rest = after − pre×(1−mfs)`` from logged figures only (``None`` when one is missing)."""
        pre = self.pre_gib
        after = self.avail_after_weights_gib
        if pre is None or after is None or self.mem_fraction_static is None:
            return None
        return kv_rest_gib(after, pre, self.mem_fraction_static)

    @property
    def has_figures(self) -> bool:
        return bool(self.ooms) or any(
            r.avail_at_start_gib is not None or r.weights_gib is not None or r.kv_gib is not None
            or r.avail_after_pools_gib is not None or r.graph_gib is not None or r.budget is not None
            or r.graph_began or r.before_weights_gib is not None for r in self.ranks)

    @property
    def status(self) -> str:
        if self.error:
            return self.error
        if not self.touched and not self.ooms:
            return "not touched"
        return "touched" if self.has_figures else "no memory figures in the log"

    @property
    def run_reached(self) -> int:
        step = PHASE_STEP.get(self.phase)
        return STEPS.index(step) if step else -1

    @property
    def mamba_slots(self) -> int | None:
        values = [r.mamba_slots for r in self.ranks if r.mamba_slots is not None]
        if not values and isinstance(self.sglang_mamba.get("slots"), int):
            return self.sglang_mamba["slots"]
        return min(values) if values else None

    @property
    def mamba_per_slot_gib(self) -> float | None:
        for r in self.ranks:
            if r.mamba_slots is not None and r.mamba_conv_gib is not None and r.mamba_ssm_gib is not None:
                return mamba_per_request_gib(r.mamba_conv_gib, r.mamba_ssm_gib, r.mamba_slots)
        return None

    @property
    def mamba_requests_fit(self) -> int | None:
        if self.mamba_slots is None or not self.slots_per_request:
            return None
        return mamba_requests_fit(self.mamba_slots, self.slots_per_request)

    def rank(self, tag: str) -> RankLedger | None:
        for r in self.ranks:
            if r.rank == tag:
                return r
        return None

    def groups(self) -> list[tuple[str, RankLedger]]:
        """Ranks with identical figures collapsed into one column (``TP0–TP3``)."""
        out: list[tuple[list[str], RankLedger, tuple]] = []
        for r in self.ranks:
            key = tuple((s["state"], s["used_gib"], s["avail_after_gib"])
                        for s in r.steps(self.run_reached, self.hybrid)
                        if s["step"] != "serving" or s["state"] in ("ran_out", "failed")) + (
                r.gpu_total_gib, r.kv_tokens, r.mamba_slots, r.oom is not None)
            for labels, _first, k in out:
                if k == key:
                    labels.append(_rank_label(r.rank))
                    break
            else:
                out.append(([_rank_label(r.rank)], r, key))
        return [(_collapse(labels), first) for labels, first, _ in out]

    def to_json(self) -> dict[str, Any]:
        pre, pre_source = self.pre_gib, self.pre_for_formulas[1]
        mfs = self.mem_fraction_static
        total, total_source = self.gpu_total
        out: dict[str, Any] = {
            "status": self.status, "touched": self.touched or bool(self.ooms), "unit": "GiB",
            "gpu_total_gib": _r(total), "gpu_total_source": total_source,
            "mem_fraction_static": mfs, "mem_fraction_static_source": self.mfs_source,
            "pre_model_load_gib": _r(pre), "pre_model_load_source": pre_source,
            "static_gib": _r(pre * mfs) if pre is not None and mfs is not None else None,
            "outside_static_gib": _r(pre * (1 - mfs)) if pre is not None and mfs is not None else None,
            "kv_room_gib": _r(self.kv_rest),
            "ranks": [r.to_json(self.run_reached, self.hybrid) for r in self.ranks],
            "oom": self.oom.to_json() if self.oom else None,
            "unbalanced": self.unbalanced_note,
            "mamba": None if not self.hybrid else {
                "strategy": self.mamba_strategy, "slots": self.mamba_slots,
                "slots_per_request": self.slots_per_request,
                "slots_per_request_source": self.slots_per_request_source,
                "per_slot_gib": _r(self.mamba_per_slot_gib, 4),
                "requests_fit": self.mamba_requests_fit,
                "mamba_full_memory_ratio": self.mamba_full_memory_ratio,
                "max_mamba_cache_size": self.max_mamba_cache_size_arg},
        }
        return out

    # — text ——————————————————————————————————————————————————————————————————————

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from render_ledger(self, bars=console.is_terminal)


def _first_oom(tb: Traceback) -> TorchOOM | None:
    best = None
    for exc in tb.exceptions:
        oom = parse_torch_oom(exc.message)
        if oom is not None and (best is None or _score(oom) > _score(best)):
            best = oom
    return best


def _score(oom: TorchOOM) -> int:
    return sum(x is not None for x in (oom.requested_gib, oom.total_gib, oom.free_gib, oom.own_gib,
                                       oom.allocated_gib, oom.reserved_unallocated_gib))


def _hybrid_hint(run: Run) -> bool:
    """A hybrid model by its class (the dialect's facts) or by what its errors say."""
    if run.dialect.facts.hybrid_model(run.model_class):
        return True
    return any("mamba" in (tb.message or "").lower() for tb in run.tracebacks)


_cache: dict[str, Any] = {"key": None, "ledger": None}


def build_ledger(run: Run) -> Ledger:
    """Rebuild where each rank's GPU memory went from the run's memory events and tracebacks.
    (The last result is cached while the run does not change: the catalog's conditions, the
    facts and the report all ask for the same run.)"""
    key = (id(run), run.index, run.first_line, run.last_line, run.phase, len(run.memory_events),
           len(run.tracebacks), len(run.args))
    if _cache["key"] == key:
        return _cache["ledger"]
    try:
        ledger = _build_ledger(run)
    except Exception as exc:  # a log logx cannot account for still gets a report
        ledger = Ledger(run_index=run.index, touched=run.memory_touched, phase=run.phase)
        ledger.error = f"memory ledger unavailable ({type(exc).__name__})"
    _cache["key"], _cache["ledger"] = key, ledger
    return ledger


def _build_ledger(run: Run) -> Ledger:
    args = run.args
    ledger = Ledger(run_index=run.index, touched=run.memory_touched, phase=run.phase)
    mfs = _num(args.get("mem_fraction_static"))
    if mfs is not None:
        ledger.mem_fraction_static, ledger.mfs_source = mfs, "server_args"
    tp = args.get("tp_size")
    ledger.tp_size = tp if isinstance(tp, int) else None
    ledger.quantized = bool(args.get("quantization")) or bool(
        re.search(r"(?i)fp8|fp4|awq|gptq|int4|int8|w4a|w8a|gguf|bnb", str(run.model or "")))
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
            if _num(f.get("mem_usage_gb")) is not None:
                r.before_weights_gib = _num(f.get("mem_usage_gb"))
        elif kind == "weight_load_begin":
            r.weights_began = True
            if r.avail_at_start_gib is None:
                r.avail_at_start_gib = _num(f.get("avail_gb"))
        elif kind == "weight_load_end":
            r.weights_done = True
            if _num(f.get("mem_usage_gb")) is not None:
                r.weights_gib = _num(f.get("mem_usage_gb"))
            if _num(f.get("avail_gb")) is not None:
                r.avail_after_weights_gib = _num(f.get("avail_gb"))
        elif kind == "kv_cache_alloc":
            k, v, kv = _num(f.get("k_gb")), _num(f.get("v_gb")), _num(f.get("kv_gb"))
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
            r.mamba_conv_gib, r.mamba_ssm_gib = _num(f.get("conv_gb")), _num(f.get("ssm_gb"))
            inter = [_num(f.get(k)) for k in ("inter_ssm_gb", "inter_conv_gb")]
            if any(x is not None for x in inter):
                r.mamba_intermediate_gib = sum(x or 0.0 for x in inter)
        elif kind == "max_running_capped":
            if isinstance(f.get("slots_per_req"), int):
                r.mamba_slots_per_request_logged = f["slots_per_req"]
            if r.mamba_slots is None and isinstance(f.get("max_mamba_cache_size"), int):
                r.mamba_slots = f["max_mamba_cache_size"]
        elif kind == "memory_pool_end":
            r.avail_after_pools_gib = _num(f.get("avail_gb"))
        elif kind == "cuda_graph_begin":
            if not r.graph_began:
                r.graph_begin_avail_gib = _num(f.get("avail_gb"))
            r.graph_began = True
            r.graph_done = False
        elif kind == "cuda_graph_progress":
            r.graph_began = True
            r.graph_last_bs = f.get("bs") if isinstance(f.get("bs"), int) else r.graph_last_bs
            r.graph_last_avail_gib = _num(f.get("avail_gb"))
        elif kind == "cuda_graph_end":
            r.graph_began = r.graph_done = True
            if _num(f.get("mem_usage_gb")) is not None:
                r.graph_gib = (r.graph_gib or 0.0) + _num(f.get("mem_usage_gb"))  # type: ignore[operator]
            if _num(f.get("avail_gb")) is not None:
                r.avail_after_graphs_gib = _num(f.get("avail_gb"))
        elif kind == "scheduler_budget":
            r.budget = {k: f.get(k) for k in ("max_total_num_tokens", "max_running_requests",
                                               "context_len", "available_gpu_mem") if k in f}
    # The tqdm capture bar is TP0's and has no rank prefix: with several ranks it attached to ""
    if "" in by_tag and len(by_tag) > 1:
        orphan = by_tag.pop("")
        target = by_tag.get("TP0") or by_tag[sorted(by_tag, key=_rank_sort_key)[0]]
        if orphan.graph_last_avail_gib is not None and target.graph_began and not target.graph_done:
            target.graph_last_bs, target.graph_last_avail_gib = orphan.graph_last_bs, orphan.graph_last_avail_gib
    # — torch OOMs ————————————————————————————————————————————————————————————————
    for tb in run.tracebacks:
        oom = _first_oom(tb)
        if oom is None:
            continue
        tag = tb.tag
        if tag not in by_tag and not tag and len(by_tag) == 1:
            tag = next(iter(by_tag))  # one rank: an untagged traceback is its own
        target: RankLedger | None = None
        if tag in by_tag:
            target = by_tag[tag]
        elif tag or not by_tag:  # a tail paste, or a rank whose memory lines are not in the log
            target = rank_of(tag)
            tag = target.rank
        phase = phase_from_frames(tb, run.dialect)
        if phase is None and "graph failed" in " ".join(e.message for e in tb.exceptions):
            phase = "cuda_graph"
        if phase is None and target is not None:
            phase = _next_phase(target)
        if phase is None and run.phase in PHASE_STEP:  # e.g. the primary finding's phase
            phase = run.phase
        line = next((n for n, t in tb.lines if _OOM_TEXT.search(t)), tb.first_line)
        text = next((t for n, t in tb.lines if n == line), "")
        rec = OOMRecord(oom, line, tag, phase, text)
        ledger.ooms.append(rec)
        if target is not None and target.oom is None:
            target.oom = rec
            if oom.total_gib is not None:
                target.gpu_total_gib, target.gpu_total_source = oom.total_gib, "torch OOM message"
    for tb in run.tracebacks:  # where each rank failed (any exception)
        phase = phase_from_frames(tb, run.dialect)
        tag = tb.tag if tb.tag in by_tag else (next(iter(by_tag)) if len(by_tag) == 1 and not tb.tag else None)
        if phase and tag is not None and by_tag[tag].failed_phase is None:
            by_tag[tag].failed_phase = phase
    ledger.ranks = sorted(by_tag.values(), key=lambda r: _rank_sort_key(r.rank))
    for r in ledger.ranks:
        if r.gpu_total_gib is None and r.avail_at_start_gib is not None:
            r.gpu_total_gib = r.avail_at_start_gib + (r.before_weights_gib or 0.0)
            r.gpu_total_source = "at least: free at start + init use"
        elif r.gpu_total_gib is None and r.budget and _num(r.budget.get("available_gpu_mem")) is not None:
            r.gpu_total_gib = _num(r.budget.get("available_gpu_mem"))
            r.gpu_total_source = "at least: available_gpu_mem after start-up"
    # — --mem-fraction-static from SGLang's own message when server_args is not in the log
    for tb in run.tracebacks:
        m = _MFS_IN_TEXT.search(tb.message or "")
        if m and ledger.mem_fraction_static is None:
            ledger.mem_fraction_static = float(m.group(1) or m.group(2))
            ledger.mfs_source = "error message"
        m2 = re.search(r"minimum viable = 1 - available/pre = (\d+(?:\.\d+)?)", tb.message or "")
        if m2:
            ledger.sglang_min_viable = float(m2.group(1))
        text = tb.message or ""
        if m3 := _MAMBA_NO_ROOM.search(text):
            ledger.sglang_mamba.update(slots=int(m3.group(1)), rest_gib=float(m3.group(2)),
                                       per_request_mib=float(m3.group(3)), line=tb.first_line)
        if m4 := _MAMBA_TOO_SMALL.search(text):
            ledger.sglang_mamba.update(slots=int(m4.group(1)), ratio=int(m4.group(2)),
                                       max_num_reqs=int(m4.group(3)))
        if (m5 := _MAMBA_POOL_SIZE.search(text)) and "slots" not in ledger.sglang_mamba:
            ledger.sglang_mamba["slots"] = int(m5.group(1))
    _mamba(run, ledger)
    _unbalanced(run, ledger)
    return ledger


def _next_phase(r: RankLedger) -> str | None:
    """The phase a rank was in when it ran out, from the steps its lines show."""
    if r.budget is not None or r.graph_done:
        return "serving"
    if r.graph_began or r.avail_after_pools_gib is not None:
        return "cuda_graph"
    if r.weights_done:
        return "kv_alloc"
    if r.weights_began:
        return "weights"
    return None


def _mamba(run: Run, ledger: Ledger) -> None:
    args = run.args
    has_events = any(r.mamba_slots is not None or r.mamba_gib is not None for r in ledger.ranks)
    ledger.hybrid = has_events or _hybrid_hint(run)
    if not ledger.hybrid:
        return
    strategy = args.get("mamba_radix_cache_strategy") or args.get("mamba_scheduler_strategy")
    ledger.mamba_strategy = strategy if isinstance(strategy, str) else None
    ledger.disable_radix_cache = bool(args.get("disable_radix_cache"))
    ledger.mamba_full_memory_ratio = _num(args.get("mamba_full_memory_ratio"))
    size = args.get("max_mamba_cache_size")
    ledger.max_mamba_cache_size_arg = size if isinstance(size, int) else None
    logged = [r.mamba_slots_per_request_logged for r in ledger.ranks if r.mamba_slots_per_request_logged]
    if isinstance(ledger.sglang_mamba.get("ratio"), int):
        logged.append(ledger.sglang_mamba["ratio"])
    if logged:
        ledger.slots_per_request, ledger.slots_per_request_source = logged[0], "from SGLang's own line"
        return
    ratio = mamba_slots_per_request(ledger.mamba_strategy, ledger.disable_radix_cache,
                                    overlap=not args.get("disable_overlap_schedule"))
    if ratio is not None:
        source = "--disable-radix-cache" if ledger.disable_radix_cache else f"strategy {ledger.mamba_strategy}"
        ledger.slots_per_request, ledger.slots_per_request_source = ratio, source
        return
    k = ledger.mamba_slots
    mrr = next((r.budget.get("max_running_requests") for r in ledger.ranks
                if r.budget and isinstance(r.budget.get("max_running_requests"), int)), None)
    if k and mrr:
        fits = [c for c in (5, 4, 3, 1) if k // c == mrr]
        if len(fits) == 1:
            ledger.slots_per_request = fits[0]
            ledger.slots_per_request_source = f"inferred: max_mamba_cache_size {k} // max_running_requests {mrr}"


def _unbalanced(run: Run, ledger: Ledger) -> None:
    starts = [(r, r.avail_at_start_gib) for r in ledger.ranks if r.avail_at_start_gib is not None]
    if len(starts) >= 2:
        hi_r, hi = max(starts, key=lambda x: x[1])  # type: ignore[arg-type,return-value]
        lo_r, lo = min(starts, key=lambda x: x[1])  # type: ignore[arg-type,return-value]
        gap = hi - lo  # type: ignore[operator]
        if gap >= other_threshold_gib(hi) and lo < 0.9 * hi:  # type: ignore[operator]
            short = [_rank_label(r.rank) for r, v in starts if hi - v >= other_threshold_gib(hi)]  # type: ignore[operator]
            ledger.unbalanced_note = (
                f"Unequal GPUs: {', '.join(short)} started with {lo:.2f} GiB free vs {hi:.2f} GiB on "
                f"{_rank_label(hi_r.rank)}: about {gap:.2f} GiB of {_rank_label(lo_r.rank)}'s GPU is held "
                f"by another process. SGLang sizes every rank by the smallest (pre = {lo:.2f} GiB).")
            return
    for e in run.memory_events:
        if e.kind == "mem_unbalanced":
            pre, local = _num(e.fields.get("pre_model_load_memory")), _num(e.fields.get("local_gpu_memory"))
            if pre is not None and local is not None:
                ledger.unbalanced_note = (
                    f"SGLang reports unequal GPUs: the smallest free memory over all ranks is {pre:.2f} GiB, "
                    f"this rank has {local:.2f} GiB: about {local - pre:.2f} GiB of one GPU is held by "
                    "another process.")
            else:
                ledger.unbalanced_note = "SGLang reports unequal GPUs: some may be used by other processes."
            return


# — rendering —————————————————————————————————————————————————————————————————————————

_MAX_COLUMNS = 4


def _cell(r: RankLedger, step: str, ledger: Ledger) -> str:
    state = r.step_state(step, ledger.run_reached, ledger.hybrid)
    if state == "not_reached":
        return "— not reached"
    if state == "unknown":
        return "unknown (not in log)"
    if state == "not_logged":
        return "(first rank prints it)"
    oom = r.oom.oom if r.oom is not None else None
    if state == "ran_out":
        assert oom is not None
        asked = f"asked {gib_text(oom.requested_gib)}" if oom.requested_gib is not None else "ran out"
        free = f", {gib_text(oom.free_gib)} free" if oom.free_gib is not None else ""
        prefix = ""
        if step == "cuda_graphs" and r.graph_last_bs is not None:
            prefix = f"bs≈{r.graph_last_bs}: "
        return f"✗ {prefix}{asked}{free}"
    if state == "failed":
        rest = ledger.kv_rest
        if step == "kv_cache" and rest is not None and rest <= 0:
            return f"✗ no room: rest = {gib_text(rest)}"
        return "✗ failed here"
    if state == "in_progress":
        if step == "cuda_graphs":
            where = f" at bs={r.graph_last_bs}, {gib_text(r.graph_last_avail_gib)} free" if r.graph_last_bs else ""
            return f"started, no end line{where}"
        return "started, no end line"
    if step == "init":
        return f"{gib_text(r.before_weights_gib)} → {gib_text(r.avail_at_start_gib)} free"
    if step == "weights":
        return f"{gib_text(r.weights_gib)} → {gib_text(r.avail_after_weights_gib)} free"
    if step == "kv_cache":
        if r.kv_k_gib is not None and r.kv_v_gib is not None:
            size = f"K {r.kv_k_gib:.2f} + V {r.kv_v_gib:.2f} = {gib_text(r.kv_gib)}"
        else:
            size = gib_text(r.kv_gib)
        tokens = f", {r.kv_tokens:,} tok" if r.kv_tokens is not None else ""
        return f"{size}{tokens}"
    if step == "mamba_cache":
        per = ""
        if ledger.slots_per_request and r.mamba_slots is not None:
            fit = mamba_requests_fit(r.mamba_slots, ledger.slots_per_request)
            per = f", {ledger.slots_per_request}/req → {fit} req"
        slots = f", {r.mamba_slots} slots" if r.mamba_slots is not None else ""
        return f"{gib_text(r.mamba_gib)}{slots}{per}"
    if step == "pools":
        return f"→ {gib_text(r.avail_after_pools_gib)} free"
    if step == "cuda_graphs":
        return f"{gib_text(r.graph_gib)} → {gib_text(r.avail_after_graphs_gib)} free"
    if step == "serving":
        b = r.budget or {}
        tail = f" → {gib_text(_num(b.get('available_gpu_mem')))} free" if b.get("available_gpu_mem") is not None else ""
        return f"max {b.get('max_running_requests', '?')} req{tail}"
    return ""


_BAR_STYLES = (("init", "cyan"), ("weights", "blue"), ("KV", "green"), ("Mamba", "magenta"),
               ("graphs", "yellow"), ("other process", "red"), ("free", "dim"))


def bar_segments(r: RankLedger) -> list[tuple[str, float]] | None:
    """What a rank's GPU holds, in GiB, for the bar: init, weights, KV, Mamba, graphs, other
    processes, free (the latest free figure). What the log does not show stays out (the bar's
    unfilled rest). ``None`` when the GPU total is unknown."""
    total = r.gpu_total_gib
    if not total or total <= 0:
        return None
    weights = r.weights_gib
    oom = r.oom.oom if r.oom is not None else None
    known = sum(x or 0.0 for x in (r.before_weights_gib, r.kv_gib, r.mamba_gib, r.graph_gib))
    if weights is None and oom is not None and oom.own_gib is not None and r.oom is not None \
            and r.oom.phase == "weights":
        weights = max(0.0, oom.own_gib - known)  # loaded so far
    other = max(0.0, r.held_before_start_gib or 0.0) if r.gpu_total_source == "torch OOM message" else 0.0
    if oom is not None and oom.other_gib:
        other = max(other, oom.other_gib)
    free = next((x for x in (oom.free_gib if oom else None, r.avail_after_graphs_gib, r.avail_after_pools_gib,
                             r.avail_after_weights_gib, r.avail_at_start_gib) if x is not None), None)
    sizes = [r.before_weights_gib, weights, r.kv_gib, r.mamba_gib, r.graph_gib, other, free]
    return [(label, max(0.0, size or 0.0)) for (label, _), size in zip(_BAR_STYLES, sizes, strict=True)]


def _bar(r: RankLedger, width: int = 40) -> Text | None:
    segments = bar_segments(r)
    if segments is None:
        return None
    total = r.gpu_total_gib or 1.0
    text = Text()
    used = 0
    for (label, style), (_, size) in zip(_BAR_STYLES, segments, strict=True):
        n = min(width - used, int(round(width * size / total)))
        if n > 0:
            text.append(("░" if label == "free" else "█") * n, style=style)
            used += n
    if used < width:
        text.append("·" * (width - used), style="dim")  # not in the log
    text.append(f" {total:.2f} GiB", style="dim")
    return text


def _legend() -> Text:
    text = Text(" " * 11)
    for label, style in _BAR_STYLES:
        text.append("░" if label == "free" else "█", style=style)
        text.append(f" {label}  ", style="dim")
    text.append("· not in the log", style="dim")
    return text


def render_ledger(ledger: Ledger, bars: bool = False) -> list:
    """The ledger as rich renderables: a compact table (one column per group of identical
    ranks), the static-fraction and KV-room arithmetic, and, on a terminal, one bar per rank."""
    out: list = []
    mfs = ledger.mem_fraction_static
    title = Text("Memory", style="bold")
    title.append(" (GiB per GPU; used → free after", style="dim")
    title.append(f"; mem_fraction_static={frac(mfs)}" if mfs is not None else "; mem_fraction_static unknown",
                 style="dim")
    title.append(")", style="dim")
    out.append(title)
    if ledger.status == "not touched":
        out.append(Text("GPU memory: not touched (the run stopped before any GPU allocation)."))
        return out
    header, rows, more = ledger_table(ledger)
    table = Table(box=None, padding=(0, 1), show_edge=False, pad_edge=False, header_style="bold")
    table.add_column(header[0], style="bold", no_wrap=True)
    for label in header[1:]:
        table.add_column(label, overflow="fold")
    for row in rows:
        table.add_row(*row)
    out.append(table)
    if more:
        out.append(Text(f"+ {more} more rank group(s) in --json", style="dim"))
    for line in ledger_lines(ledger):
        out.append(Text(line))
    if bars:
        for label, r in ledger.groups()[:_MAX_COLUMNS]:
            bar = _bar(r)
            if bar is not None:
                row = Text(f"{label:>10} ", style="bold")
                row.append_text(bar)
                out.append(row)
        out.append(_legend())
    return out


def ledger_table(ledger: Ledger) -> tuple[list[str], list[list[str]], int]:
    """The ledger's table as plain text, for any renderer: the header (``step``, then one
    column per group of identical ranks, at most ``_MAX_COLUMNS``), the rows, and how many
    rank groups did not fit."""
    groups = ledger.groups()
    shown = groups[:_MAX_COLUMNS]
    total_row = []
    for _, r in shown:
        if r.gpu_total_gib is None:
            total_row.append("unknown")
        elif r.gpu_total_source and r.gpu_total_source.startswith("at least"):
            total_row.append(f"≥ {r.gpu_total_gib:.2f}")
        else:
            total_row.append(f"{r.gpu_total_gib:.2f} (torch OOM)")
    rows = [["GPU total", *total_row]]
    for step in STEPS:
        cells = [_cell(r, step, ledger) if r.step_state(step, ledger.run_reached, ledger.hybrid) != "n/a"
                 else None for _, r in shown]
        if all(c is None for c in cells):
            continue
        if step == "serving" and all(c in ("— not reached", "(first rank prints it)", None) for c in cells):
            continue
        rows.append([STEP_LABEL[step], *[c or "—" for c in cells]])
    return ["step", *(label for label, _ in shown)], rows, max(0, len(groups) - _MAX_COLUMNS)


def ledger_lines(ledger: Ledger) -> list[str]:
    """The ledger's arithmetic, one sentence per line (used under the table)."""
    lines = []
    pre, _ = ledger.pre_for_formulas
    mfs = ledger.mem_fraction_static
    if pre is not None and mfs is not None and ledger.pre_gib is not None:
        lines.append(f"Static pools (weights + KV{' + Mamba' if ledger.hybrid else ''}) may use pre×mfs = "
                     f"{pre:.2f}×{frac(mfs)} = {pre * mfs:.2f}; outside them (CUDA graphs, activations) "
                     f"pre×(1−mfs) = {pre * (1 - mfs):.2f}.")
    rest = ledger.kv_rest
    if rest is not None and pre is not None and mfs is not None:
        after = ledger.avail_after_weights_gib
        lines.append(f"KV room: rest = avail_after_weights − pre×(1−mfs) = {after:.2f} − {pre:.2f}×(1−{frac(mfs)}) "
                     f"= {gib_text(rest)}.")
    if ledger.hybrid and ledger.mamba_slots is not None:
        lines.append(mamba_sentence(ledger))
    if ledger.oom is not None:
        lines.append(oom_sentence(ledger.oom))
    if ledger.unbalanced_note:
        lines.append(ledger.unbalanced_note)
    return lines


# — sentences for the catalog's placeholders ——————————————————————————————————————————

PHASE_TEXT = {"init": "parallel init", "weights": "weight loading", "kv_alloc": "KV/Mamba pool allocation",
              "cuda_graph": "CUDA graph capture", "warmup": "warm-up", "ready": "serving",
              "serving": "serving", "args": "argument handling", "import": "import"}


def oom_sentence(rec: OOMRecord) -> str:
    """Torch's OOM figures in one sentence, with the unknowns named."""
    o = rec.oom
    where = f" during {PHASE_TEXT.get(rec.phase or '', rec.phase)}" if rec.phase else ""
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


def kv_room_sentence(ledger: Ledger) -> str:
    """``rest = avail_after_weights − pre×(1−mfs)`` with the log's numbers, the minimum viable
    fraction, and a re-checked ``--mem-fraction-static`` suggestion (or what is unknown)."""
    pre, pre_source = ledger.pre_for_formulas
    after = ledger.avail_after_weights_gib
    mfs = ledger.mem_fraction_static
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
    agree = ""
    if ledger.sglang_min_viable is not None:
        agree = f" (SGLang's message says {ledger.sglang_min_viable})"
    out.append(f"Minimum viable mfs = 1 − {after:.2f}/{pre:.2f} = {viable:.3f}{agree}.")
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
    oom_rec = ledger.oom
    r = ledger.rank(oom_rec.tag) if oom_rec is not None else None
    if r is None or r.graph_begin_avail_gib is None:
        cands = [x for x in ledger.ranks if x.graph_begin_avail_gib is not None]
        r = cands[0] if cands else r
    pre, pre_source = ledger.pre_for_formulas
    mfs = ledger.mem_fraction_static
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
    rec = ledger.oom
    if rec is None or rec.oom.requested_gib is None or rec.oom.free_gib is None:
        return ("The OOM's figures are not in the log; lower --mem-fraction-static by 0.02-0.05 "
                "for activation headroom.")
    o = rec.oom
    pre, pre_source = ledger.pre_for_formulas
    mfs = ledger.mem_fraction_static
    short = o.requested_gib - o.free_gib  # type: ignore[operator]
    r = ledger.rank(rec.tag)
    after = None
    if r is not None:
        after = r.avail_after_graphs_gib
        if after is None and r.budget:
            after = _num(r.budget.get("available_gpu_mem"))
    out = [f"The allocation was {short:.2f} GiB short (asked {o.requested_gib:.2f}, {o.free_gib:.2f} free)"
           + (f"; after start-up {after:.2f} GiB were left for activations." if after is not None else ".")]
    if pre is not None and mfs is not None:
        delta = ceil2((max(short, 0.0) + OOM_MARGIN_GIB) / pre)
        value = round(mfs - delta, 2)
        out.append(f"`--mem-fraction-static {value:.2f}` (= mfs − ceil₀.₀₁((shortfall + {OOM_MARGIN_GIB:.0f})/pre) = "
                   f"{frac(mfs)} − {delta:.2f}, pre = {pre:.2f}: {pre_source}) gives {pre * delta:.2f} GiB "
                   "more headroom outside the static pools.")
    return " ".join(out)


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


def mamba_sentence(ledger: Ledger) -> str:
    """How many requests the Mamba pool holds: ``K // slots_per_request``, per-slot size, and
    the flags that would hold more (re-computed with SGLang's sizing)."""
    k = ledger.mamba_slots
    ratio = ledger.slots_per_request
    sg = ledger.sglang_mamba
    if "rest_gib" in sg:
        per_mib = sg["per_request_mib"]
        fits = sg["rest_gib"] * 1024 / per_mib if per_mib else 0.0
        return (f"SGLang had rest = {sg['rest_gib']:.2f} GiB left for the KV and Mamba pools after the weights "
                f"(rest = avail_after_weights − pre×(1−mfs)); one request's Mamba state is {per_mib:.2f} MiB, so "
                f"even all of rest holds only {fits:.1f} states before the KV share and speculative-decoding "
                f"copies are taken out: it computed K = {gib_text(sg['slots']).split('.')[0]} slots. "
                "Raising --mem-fraction-static by Δ adds pre×Δ GiB to rest.")
    if k is None:
        return ("The Mamba pool's size is not in the log (no 'Mamba Cache is allocated' line), so the "
                "requests it holds cannot be computed.")
    per = ledger.mamba_per_slot_gib
    per_text = f" of {per * 1024:.1f} MiB each ((conv+ssm)/(K+1))" if per is not None else ""
    strategy = ledger.mamba_strategy or "unknown"
    if not ratio:
        return (f"Mamba pool: K = {k} slots{per_text}; slots per request unknown (strategy {strategy}: "
                "no_buffer holds 3, extra_buffer with overlap 5).")
    fit = mamba_requests_fit(k, ratio)
    return (f"Mamba pool: K = {k} slots{per_text}; {ratio} slots per running request "
            f"({ledger.slots_per_request_source}) → K // {ratio} = {fit} requests fit.")


def mamba_fix_sentence(ledger: Ledger, strategy_flag: str) -> str:
    """Concrete values for --mamba-full-memory-ratio / --max-mamba-cache-size that double the
    requests the pool holds, with their cost in KV memory."""
    k, ratio, per = ledger.mamba_slots, ledger.slots_per_request, ledger.mamba_per_slot_gib
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
    r = ledger.mamba_full_memory_ratio
    rest = ledger.kv_rest
    if r is not None and ledger.max_mamba_cache_size_arg is None:
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
        if ledger.mamba_strategy and ledger.mamba_strategy.startswith("extra_buffer"):
            text += f"; `{strategy_flag} no_buffer` holds 3 per request ({k // 3} requests)"
        text += "."
    return text


def long_context_sentence(ledger: Ledger, context_length: Any) -> str:
    """A single allocation against the GPU's capacity, and the context length that shrinks it."""
    rec = ledger.oom
    if rec is None or not rec.oom.requested_gib:
        return "The size of the failed allocation is not in the log."
    o = rec.oom
    if not o.total_gib:
        return f"torch asked for one buffer of {o.requested_gib:.2f} GiB; the GPU's total is not in the message."
    rel = ("more than" if o.exceeds_capacity else f"{o.requested_gib / o.total_gib:.0%} of")
    out = [f"torch asked for one buffer of {o.requested_gib:.2f} GiB, {rel} the whole GPU ({o.total_gib:.2f} GiB)"]
    if o.exceeds_capacity:
        out[0] += ": no memory flag and no freeing of the GPU can make it fit"
    out[0] += "."
    ctx = context_length if isinstance(context_length, int) else None
    if ctx is None:
        for r in ledger.ranks:
            if r.budget and isinstance(r.budget.get("context_len"), int):
                ctx = r.budget["context_len"]
    if ctx:
        c2 = suggest_context_length(ctx, o.requested_gib, o.total_gib)
        out.append(f"The buffer grows linearly with the context length ({ctx:,} now): `--context-length {c2}` "
                   f"brings it to ≈ {o.requested_gib * c2 / ctx:.2f} GiB (≤ 10% of the GPU).")
    else:
        out.append("The current context length is not in the log (the model's default applies).")
    return " ".join(out)


# — facts for the catalog ——————————————————————————————————————————————————————————————


def memory_facts(run: Run, facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """Placeholders for the memory patterns: atomic numbers (absent when unknown, so a
    template shows ``<name>``) and whole sentences with the formula and the log's numbers (which
    name what is unknown instead of inventing it)."""
    facts = facts or {}
    ledger = build_ledger(run)
    out: dict[str, Any] = {}

    def put(name: str, value: Any, nd: int = 2) -> None:
        if value is not None:
            out[name] = f"{value:.{nd}f}" if isinstance(value, float) else value

    pre, _ = ledger.pre_for_formulas
    after = ledger.avail_after_weights_gib
    total, _ = ledger.gpu_total
    put("gpu_total_gib", total)
    put("pre_model_load_gib", ledger.pre_gib)
    put("avail_after_weights_gib", after)
    put("kv_room_gb", ledger.kv_rest)
    ws = [r.weights_gib for r in ledger.ranks if r.weights_gib is not None]
    put("weights_gib", max(ws) if ws else None)
    if after is not None and pre is not None:
        put("min_viable_mem_fraction_static", min_viable_mem_fraction_static(after, pre), 3)
        s = suggest_mem_fraction_static(after, pre)
        mfs = ledger.mem_fraction_static
        if s is not None and (mfs is None or s.value > mfs):  # raising it is the fix
            put("suggested_mem_fraction_static", s.value)
            put("suggested_mfs_kv_room_gib", s.kv_room_gib)
    rec = ledger.oom
    if rec is not None:
        o = rec.oom
        put("oom_requested_gib", o.requested_gib)
        put("oom_total_gib", o.total_gib)
        put("oom_free_gib", o.free_gib)
        put("oom_this_process_gib", o.own_gib)
        put("oom_reserved_unallocated_gib", o.reserved_unallocated_gib)
        if o.other_gib >= other_threshold_gib(o.total_gib):
            put("other_process_gib", o.other_gib)
        put("other_pids", ", ".join(str(p) for p, _ in o.other_processes) or None)
        put("oom_phase", PHASE_TEXT.get(rec.phase or "", rec.phase) if rec.phase else None)
        put("oom_rank", rec.tag or None)
        out["oom_requested"] = (f"{o.requested_gib:.2f} GiB" if o.requested_gib is not None
                                else "size not in the log")
        out["oom_summary"] = oom_sentence(rec)
    else:
        out["oom_requested"] = "size not in the log"
        out["oom_summary"] = "No torch OOM message with figures is in the log."
    out["fragmentation_note"] = fragmentation_sentence(rec.oom if rec else None)
    out["kv_room_arithmetic"] = kv_room_sentence(ledger)
    text = weights_budget_sentence(ledger)
    out["weights_arithmetic"] = text[:1].upper() + text[1:]
    flag = str(facts.get("cuda_graph_max_bs_flag") or "--cuda-graph-max-bs")
    out["graph_arithmetic"] = graph_sentence(ledger, flag)
    out["serving_arithmetic"] = serving_sentence(ledger)
    out["other_process_arithmetic"] = other_process_sentence(ledger)
    out["long_context_arithmetic"] = long_context_sentence(ledger, run.args.get("context_length"))
    if ledger.hybrid:
        out["mamba_arithmetic"] = mamba_sentence(ledger)
        out["mamba_fix"] = mamba_fix_sentence(ledger, str(facts.get("mamba_strategy_flag")
                                                          or "--mamba-radix-cache-strategy"))
        put("mamba_requests_fit", ledger.mamba_requests_fit)
        put("mamba_slots", ledger.mamba_slots)
        put("mamba_slots_per_request", ledger.slots_per_request)
    else:
        out["mamba_arithmetic"] = "The Mamba pool's figures are not in the log."
        out["mamba_fix"] = ""
    budgets = [r.budget for r in ledger.ranks if r.budget]
    if budgets:  # the effective values when server_args left them to SGLang ("now …" in fixes)
        put("max_running_requests", budgets[0].get("max_running_requests"))
        put("context_length", budgets[0].get("context_len"))
    pre_tp = pre
    weights = max(ws) if ws else None
    if weights is not None and pre_tp is not None:
        put("suggested_tp_size", suggest_tp_size(weights, ledger.tp_size or 1, pre_tp))
    return out


# — conditions (registered in conditions.CONDITIONS) —————————————————————————————————————
# Each returns the evidence lines ``[(line, text)]`` when it holds, else ``None``.


def _oom_records(run: Run) -> list[OOMRecord]:
    return build_ledger(run).ooms


def cond_oom_single_allocation_exceeds_capacity(run: Run) -> list[tuple[int, str]] | None:
    """A torch OOM asked for one allocation larger than the GPU's total capacity
    (requested > total): freeing memory cannot help; the buffer itself is too large."""
    hits = [(r.line, r.text) for r in _oom_records(run) if r.oom.exceeds_capacity]
    return hits[:3] or None


def cond_oom_other_process_holds_memory(run: Run) -> list[tuple[int, str]] | None:
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


def cond_oom_fragmentation(run: Run) -> list[tuple[int, str]] | None:
    """A torch OOM where reserved-but-unallocated + free ≥ requested: the memory existed but
    not in one piece (``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``)."""
    hits = [(r.line, r.text) for r in _oom_records(run) if r.oom.fragmented]
    return hits[:3] or None


def cond_oom_loading_weights_that_fit_before(run: Run) -> list[tuple[int, str]] | None:
    """A torch OOM while loading the weights, and an earlier run of the same model in this
    log finished loading them: they fit then, so the regression is in what changed."""
    if not run.loaded_before:
        return None
    hits = [(r.line, r.text) for r in _oom_records(run) if r.phase == "weights"]
    return (run.loaded_before[-1:] + hits[:2]) if hits else None


CONDITIONS: dict[str, Callable[[Run], list[tuple[int, str]] | None]] = {
    "oom_loading_weights_that_fit_before": cond_oom_loading_weights_that_fit_before,
    "oom_single_allocation_exceeds_capacity": cond_oom_single_allocation_exceeds_capacity,
    "oom_other_process_holds_memory": cond_oom_other_process_holds_memory,
    "oom_fragmentation": cond_oom_fragmentation,
}
