"""vLLM's memory ledger: where the --gpu-memory-utilization budget went, and the fixes in numbers.

vLLM sizes everything from one budget, ``total GPU memory × gpu_memory_utilization``
(0.90 by default; 0.92 from 0.33). Out of it come the weights, non-torch memory (CUDA context,
NCCL buffers), the activation peak of a profiling forward pass over ``max_num_batched_tokens``,
and from 0.21 on the CUDA-graph estimate; the KV cache gets the rest:

    kv = total × util − weights − non_torch − activation_peak [− graphs, 0.21+]

Before 0.21 the graphs are captured after the KV cache is sized and must fit outside the
budget, in ``total × (1 − util)``. The checks at the limit (``_check_enough_kv_cache_memory``
in 0.33, ``raise_if_cache_size_invalid`` in V0): ``kv ≤ 0`` → "No available memory for the
cache blocks"; one ``max_model_len`` request needs more than ``kv`` → "To serve at least one
request …" (V1, printing the largest length that fits) or "The model's max seq len (N) is
larger than … KV cache (M)" (V0, M in tokens).

``build(events)`` reads the figures vLLM printed (its own events, see ``events.py``) into a
``VllmLedger``; a figure the log does not hold stays ``None`` and nothing is invented. The
sentences (``facts``) re-check vLLM's arithmetic with those numbers and turn it into flags.
See ``docs/vllm.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ..._lazyre import lazy
from ..._memory.torch_oom import parse_torch_oom
from ..._record import field, record

MIN_KV_GIB = 1.0  # a suggested utilization leaves at least this much for the KV cache
UTIL_CAP = 0.95  # never suggest a utilization above this (graphs and the sampler need the rest)
BLOCK_SIZE = 16  # vLLM's default KV block size: a suggested --max-model-len is a multiple of it
BLOCK_SIZE_SINCE = ((0, 34), 64)  # CacheConfig.DEFAULT_BLOCK_SIZE from 0.34
GRAPHS_IN_BUDGET_SINCE = (0, 21)  # CUDA-graph memory is estimated inside the budget from 0.21

# Figures that arrive inside an exception message rather than as a line of their own.
_CAPACITY_V1 = lazy(
    r"max seq len \((?P<max_len>\d+)\), \((?P<needed>[\d.]+) GiB KV cache is needed, which is larger than "
    r"the available KV cache memory \((?P<avail>-?[\d.]+) GiB\)\.(?: Based on the available memory, the "
    r"estimated maximum model length is (?P<est>\d+)\.)?")
_CAPACITY_V0 = lazy(r"The model's max seq len \((?P<max_len>\d+)\) is larger than the maximum number of "
                    r"tokens that can be stored in KV cache \((?P<kv_tokens>\d+)\)")
_STARTUP_FREE = lazy(r"(?:Free|Available) memory on (?:device|node) (?:\S+ )?\((?P<free>[\d.]+)/"
                     r"(?P<total>[\d.]+) GiB\) on "
                     r"startup is less than desired [GC]PU memory utilization \((?P<util>[\d.]+), "
                     r"(?P<req>[\d.]+) GiB\)")
_NO_ROOM = lazy(r"No available memory for the cache blocks")
# 0.34's extensible KV cache (the default on CUDA/ROCm) names the utilization it used, or says
# it took all the memory (its default, 1.0): the budget cannot grow then
_EXTENSIBLE_UTIL = lazy(r"within `gpu_memory_utilization`=(?P<util>[\d.]+);|"
                        r"(?P<all>The extensible KV cache already takes all device memory)")
_VERSION = lazy(r"(\d+)\.(\d+)(?:\.(\d+))?")


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    m = _VERSION.match(text or "")
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


def ceil2(x: float) -> float:
    return math.ceil(round(x * 100, 6)) / 100


def floor_to(n: float, step: int) -> int:
    return int(n // step * step)


@record(eq=False)
class VllmLedger:
    """The figures of one vLLM launch, GiB unless named otherwise; ``None``: not in the log."""

    version: tuple[int, ...] | None = None
    total_gib: float | None = None
    util: float | None = None
    util_source: str | None = None  # "report" (vLLM's own line), "args", "message"
    budget_gib: float | None = None
    weights_gib: float | None = None
    non_torch_gib: float | None = None
    activation_gib: float | None = None
    kv_gib: float | None = None  # what vLLM gave the KV cache (may be negative: no room)
    graph_gib: float | None = None  # measured after capture ("Graph capturing finished … took X GiB")
    graphs_in_budget: bool | None = None
    kv_tokens: int | None = None
    gpu_blocks: int | None = None
    block_size: int = BLOCK_SIZE
    max_model_len: int | None = None
    concurrency: float | None = None
    kv_cache_dtype: str | None = None
    max_num_seqs: int | None = None
    tp_size: int | None = None
    enforce_eager: bool | None = None
    free_at_start_gib: float | None = None
    requested_gib: float | None = None
    # the failure, when vLLM raised at its limit
    no_room: bool = False
    needed_gib: float | None = None  # V1: KV one max_model_len request needs
    available_gib: float | None = None  # V1: KV the budget left
    estimated_len: int | None = None  # V1: vLLM's own estimate of the longest length that fits
    lines: dict[str, int] = field(default_factory=dict)  # figure -> line number (evidence)

    # — arithmetic ————————————————————————————————————————————————————————————————
    @property
    def budget(self) -> float | None:
        if self.budget_gib is not None:
            return self.budget_gib
        if self.total_gib is not None and self.util is not None:
            return self.total_gib * self.util
        return None

    @property
    def non_kv_gib(self) -> float | None:
        """weights + non-torch + activation peak (+ graphs when 0.21+ counts them)."""
        if self.weights_gib is None or self.activation_gib is None:
            return None
        total = self.weights_gib + (self.non_torch_gib or 0.0) + self.activation_gib
        if self.graphs_in_budget and self.graph_gib is not None:
            total += self.graph_gib
        return total

    @property
    def kv_rest_gib(self) -> float | None:
        """budget − non_kv: the KV room the formula gives (re-checks vLLM's printed figure)."""
        budget, non_kv = self.budget, self.non_kv_gib
        return None if budget is None or non_kv is None else budget - non_kv

    @property
    def tokens_per_gib(self) -> float | None:
        if self.needed_gib and self.max_model_len:
            return self.max_model_len / self.needed_gib
        if self.kv_tokens and self.kv_gib and self.kv_gib > 0:
            return self.kv_tokens / self.kv_gib
        return None

    def fitting_len(self) -> int | None:
        """The longest --max-model-len the KV cache holds, a multiple of the block size:
        V0 prints the capacity in tokens; V1 prints the GiB one request needs and the GiB
        available, and (0.13+) its own estimate; the smaller of estimate and arithmetic wins."""
        candidates: list[float] = []
        if self.kv_tokens is not None and self.no_room is False and self.needed_gib is None:
            candidates.append(self.kv_tokens)
        if self.needed_gib and self.available_gib is not None and self.max_model_len:
            candidates.append(self.available_gib / self.needed_gib * self.max_model_len)
        if self.estimated_len is not None:
            candidates.append(self.estimated_len)
        if not candidates:
            return None
        return floor_to(min(candidates), self.block_size)

    def util_for(self, kv_gib: float) -> float | None:
        """The utilization whose budget holds the non-KV memory plus ``kv_gib`` of KV cache."""
        if self.total_gib is None:
            return None
        non_kv = self.non_kv_gib
        if non_kv is None and self.budget is not None and self.kv_gib is not None:
            non_kv = self.budget - self.kv_gib
        if non_kv is None:
            return None
        return ceil2((non_kv + kv_gib) / self.total_gib)

    # — sentences (catalog placeholders) ————————————————————————————————————————————
    def kv_arithmetic(self) -> str:
        """The budget formula with this log's numbers, or which figure is missing."""
        budget = self.budget
        if budget is None:
            return "The log does not show the budget (total GPU memory × --gpu-memory-utilization)."
        head = (f"Budget = total × util = {self.total_gib:.2f} × {self.util:.2f} = {budget:.2f} GiB"
                if self.total_gib is not None and self.util is not None else f"Budget = {budget:.2f} GiB")
        if self.non_kv_gib is None:
            if self.kv_gib is not None:
                return f"{head}; vLLM left {self.kv_gib:.2f} GiB for the KV cache."
            return f"{head}; the log does not show what the weights and activations took."
        parts = [f"weights {self.weights_gib:.2f}"]
        if self.non_torch_gib is not None:
            parts.append(f"non-torch {self.non_torch_gib:.2f}")
        parts.append(f"activation peak {self.activation_gib:.2f}")
        if self.graphs_in_budget and self.graph_gib is not None:
            parts.append(f"CUDA graphs {self.graph_gib:.2f}")
        rest = self.kv_rest_gib
        text = (f"{head}; {' + '.join(parts)} = {self.non_kv_gib:.2f} GiB; KV cache = {budget:.2f} −"
                f" {self.non_kv_gib:.2f} = {rest:.2f} GiB")
        if self.kv_gib is not None and rest is not None and abs(self.kv_gib - rest) > 0.05:
            text += f" (vLLM printed {self.kv_gib:.2f})"
        return text + "."

    def kv_fix(self) -> str:
        """For "no room": the utilization that leaves MIN_KV_GIB for the KV cache, or why none can."""
        arithmetic = self.kv_arithmetic()
        util = self.util_for(MIN_KV_GIB)
        if util is None and self.util is not None and self.util >= UTIL_CAP:
            return (f"{arithmetic} The budget is already {self.util:.2f} of the GPU: make the rest smaller"
                    f" (a quantized checkpoint or more GPUs for the weights, lower `--max-num-batched-tokens` /"
                    f" `--max-num-seqs` for the activations, fewer or smaller CUDA-graph capture sizes).")
        if util is None:
            return f"{arithmetic} Raise `--gpu-memory-utilization` (the log lacks the figures to say how far)."
        if util <= UTIL_CAP and (self.util is None or util > self.util):
            return (f"{arithmetic} Raise `--gpu-memory-utilization` to at least {util:.2f} "
                    f"(non-KV memory + {MIN_KV_GIB:.0f} GiB of KV cache over {self.total_gib:.2f} GiB); more"
                    f" leaves room for more requests.")
        at_cap = UTIL_CAP * (self.total_gib or 0.0) - (self.non_kv_gib or 0.0)
        smaller = []
        if self.activation_gib:
            smaller.append(f"the activation peak ({self.activation_gib:.2f} GiB: lower"
                           f" `--max-num-batched-tokens` / `--max-num-seqs`)")
        if self.weights_gib:
            tp = (self.tp_size or 1) * 2
            smaller.append(f"the weights ({self.weights_gib:.2f} GiB: a quantized checkpoint,"
                           f" `--tensor-parallel-size {tp}`, or `--cpu-offload-gb`)")
        also = f" Also shrink {' or '.join(smaller)}." if smaller else ""
        if at_cap > 0:
            return (f"{arithmetic} Even `--gpu-memory-utilization {UTIL_CAP}` leaves only {at_cap:.2f} GiB for"
                    f" the KV cache."
                    + also)
        return (f"{arithmetic} Even `--gpu-memory-utilization {UTIL_CAP}` leaves no KV cache (about"
                f" {-at_cap:.2f} GiB short)."
                + also)

    def max_model_len_fix(self) -> str:
        """For "does not fit one request": the --max-model-len the cache holds, re-checked."""
        fit = self.fitting_len()
        asked = self.max_model_len
        if fit is None or fit <= 0:
            return "Lower `--max-model-len` (the log does not show the KV cache's capacity). " + self.more_kv_room()
        parts = []
        if self.needed_gib and self.available_gib is not None and asked:
            parts.append(f"one {asked}-token request needs {self.needed_gib:.2f} GiB of KV cache,"
                         f" {self.available_gib:.2f} GiB "
                         f"is available: {self.available_gib:.2f} / {self.needed_gib:.2f} × {asked} = "
                         f"{self.available_gib / self.needed_gib * asked:.0f} tokens fit")
            if self.estimated_len is not None:
                parts[-1] += f" (vLLM estimates {self.estimated_len})"
        elif self.kv_tokens is not None and asked:
            parts.append(f"the KV cache holds {self.kv_tokens} tokens, one request of {asked} does not fit")
        text = (parts[0][0].upper() + parts[0][1:] + ". ") if parts else ""
        text += f"Set `--max-model-len {fit}` (a multiple of the block size {self.block_size})"
        extra = []
        if asked and self.needed_gib and self.available_gib is not None and self.total_gib:
            short_util = (self.needed_gib - self.available_gib) / self.total_gib
            util = ceil2(self.util + short_util) if self.util else None
            if util is not None and util <= UTIL_CAP:
                extra.append(f"`--gpu-memory-utilization {util:.2f}` keeps {asked}")
        if self.kv_cache_dtype in (None, "auto") and asked and fit * 2 >= asked:
            extra.append(f"`--kv-cache-dtype fp8` (half the bytes per token, about {fit * 2} tokens) keeps {asked}")
        elif self.kv_cache_dtype in (None, "auto"):
            extra.append(f"`--kv-cache-dtype fp8` doubles it to about {fit * 2}")
        if extra:
            text += "; or " + ", or ".join(extra)
        return text + ". " + self.more_kv_room()

    def more_kv_room(self) -> str:
        """The ways to a bigger KV cache: a higher utilization only while the budget can grow
        (0.34's extensible KV cache may already have taken all the memory: utilization 1.0)."""
        gpus = "more GPUs (`--tensor-parallel-size`)"
        if self.util is not None and self.util >= UTIL_CAP:
            return (f"Or make room for more KV cache: {gpus}, or fewer or smaller CUDA-graph capture sizes"
                    f" (the budget is already {self.util:.2f} of the GPU).")
        return f"Or make room for more KV cache: a higher `--gpu-memory-utilization`, or {gpus}."

    def other_process_fix(self) -> str:
        if self.free_at_start_gib is None or self.total_gib is None:
            return "Other processes hold part of this GPU."
        held = self.total_gib - self.free_at_start_gib
        util = math.floor(self.free_at_start_gib / self.total_gib * 100) / 100
        text = (f"{self.free_at_start_gib:.2f} of {self.total_gib:.2f} GiB were free at start (about {held:.2f}"
                f" GiB held elsewhere), "
                f"less than the {self.requested_gib if self.requested_gib is not None else self.budget or 0:.2f}"
                f" GiB the budget asks.")
        if util > 0:
            text += f" To share the GPU, `--gpu-memory-utilization {util:.2f}` is the most that fits in what is free."
        return text

    def facts(self) -> dict[str, Any]:
        """Catalog placeholders (every sentence always has a value)."""
        fit = self.fitting_len()
        return {
            "gpu_memory_utilization": self.util, "gpu_total_gib": self.total_gib,
            "vllm_kv_arithmetic": self.kv_arithmetic(), "vllm_kv_fix": self.kv_fix(),
            "vllm_max_model_len_fix": self.max_model_len_fix(),
            "vllm_other_process_fix": self.other_process_fix(),
            "suggested_max_model_len": fit if fit and fit > 0 else None,
            "max_model_len": self.max_model_len, "kv_tokens": self.kv_tokens,
        }

    def to_json(self) -> dict[str, Any]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 2)

        return {
            "gpu_total_gib": r(self.total_gib), "gpu_memory_utilization": self.util,
            "gpu_memory_utilization_source": self.util_source, "budget_gib": r(self.budget),
            "weights_gib": r(self.weights_gib), "non_torch_gib": r(self.non_torch_gib),
            "activation_peak_gib": r(self.activation_gib), "cuda_graphs_gib": r(self.graph_gib),
            "cuda_graphs_in_budget": self.graphs_in_budget, "kv_cache_gib": r(self.kv_gib),
            "kv_rest_gib": r(self.kv_rest_gib), "kv_tokens": self.kv_tokens, "gpu_blocks": self.gpu_blocks,
            "max_model_len": self.max_model_len, "max_concurrency": self.concurrency,
            "free_at_start_gib": r(self.free_at_start_gib), "no_room": self.no_room,
            "kv_needed_gib": r(self.needed_gib), "kv_available_gib": r(self.available_gib),
            "estimated_max_model_len": self.estimated_len, "suggested_max_model_len": self.fitting_len(),
        }


def build(events: Iterable[tuple[str, dict[str, Any], int]], messages: Iterable[tuple[str, int]] = ()) -> VllmLedger:
    """The ledger from ``(kind, fields, line)`` events of the vLLM table and the exception
    messages ``(text, line)`` that carry figures (the capacity and start-up checks)."""
    led = VllmLedger()
    block_given = None
    for kind, f, line in events:
        if kind == "server_version":
            led.version = led.version or version_tuple(str(f.get("version", "")))
            cfg = f.get("config") or {}
            if cfg.get("max_seq_len") is not None and led.max_model_len is None:
                led.max_model_len = int(cfg["max_seq_len"])
            if cfg.get("kv_cache_dtype"):
                led.kv_cache_dtype = str(cfg["kv_cache_dtype"])
            if cfg.get("tensor_parallel_size") is not None:
                led.tp_size = int(cfg["tensor_parallel_size"])
            if cfg.get("enforce_eager") is not None:
                led.enforce_eager = bool(cfg["enforce_eager"])
        elif kind == "server_args":
            args = f.get("args") or {}
            if isinstance(args.get("gpu_memory_utilization"), (int, float)):
                led.util, led.util_source = float(args["gpu_memory_utilization"]), "args"
            if isinstance(args.get("max_model_len"), int):
                led.max_model_len = args["max_model_len"]
            for key, attr in (("kv_cache_dtype", "kv_cache_dtype"), ("max_num_seqs", "max_num_seqs"),
                              ("tensor_parallel_size", "tp_size"), ("enforce_eager", "enforce_eager"),
                              ("block_size", "block_size")):
                if args.get(key) is not None:
                    setattr(led, attr, args[key])
            block_given = args.get("block_size", block_given)
        elif kind == "max_model_len":
            led.max_model_len = f.get("max_model_len", led.max_model_len)
        elif kind == "memory_budget":
            led.total_gib, led.util, led.util_source = f.get("total_gib"), f.get("util"), "report"
            led.budget_gib = f.get("budget_gib")
            led.lines["budget"] = line
        elif kind == "memory_split":
            led.weights_gib, led.non_torch_gib = f.get("weights_gib"), f.get("non_torch_gib")
            led.activation_gib, led.kv_gib = f.get("activation_gib"), f.get("kv_gib")
            led.lines["split"] = line
        elif kind == "weight_load_end" and led.weights_gib is None:
            led.weights_gib = f.get("weights_gib")
            led.lines["weights"] = line
        elif kind == "kv_available":
            led.kv_gib = f.get("kv_gib")
            if f.get("free_gib") is not None:
                led.free_at_start_gib = f["free_gib"]
            led.lines["kv"] = line
        elif kind == "graph_profiling":
            led.graphs_in_budget = f.get("state") == "enabled"
        elif kind == "kv_blocks":
            led.gpu_blocks = f.get("gpu_blocks")
            if led.gpu_blocks is not None:
                led.kv_tokens = led.gpu_blocks * led.block_size
            if led.gpu_blocks == 0:
                led.no_room = True
        elif kind == "kv_tokens":
            led.kv_tokens = f.get("kv_tokens")
            if f.get("concurrency") is not None:
                led.concurrency = f["concurrency"]
                led.max_model_len = led.max_model_len or f.get("per_request")
            led.lines["kv_tokens"] = line
        elif kind == "kv_concurrency":
            led.concurrency = f.get("concurrency")
            led.max_model_len = led.max_model_len or f.get("per_request")
        elif kind == "cuda_graph_end":
            led.graph_gib = f.get("graph_gib")
    for text, line in messages:
        m = _CAPACITY_V1.search(text)
        if m:
            led.max_model_len = int(m["max_len"])
            led.needed_gib, led.available_gib = float(m["needed"]), float(m["avail"])
            led.estimated_len = int(m["est"]) if m["est"] else None
            led.lines["capacity"] = line
        m = _CAPACITY_V0.search(text)
        if m:
            led.max_model_len, led.kv_tokens = int(m["max_len"]), int(m["kv_tokens"])
            led.lines["capacity"] = line
        m = _STARTUP_FREE.search(text)
        if m:
            led.free_at_start_gib, led.total_gib = float(m["free"]), float(m["total"])
            led.util, led.util_source, led.requested_gib = float(m["util"]), "message", float(m["req"])
            led.lines["startup"] = line
        if _NO_ROOM.search(text):
            led.no_room = True
        m = _EXTENSIBLE_UTIL.search(text)
        if m and led.util is None:
            led.util, led.util_source = (1.0 if m["all"] else float(m["util"])), "message"
    if block_given is None and led.version is not None and led.version >= BLOCK_SIZE_SINCE[0]:
        led.block_size = BLOCK_SIZE_SINCE[1]
    if led.graphs_in_budget is None and led.version is not None:
        led.graphs_in_budget = led.version >= GRAPHS_IN_BUDGET_SINCE
    return led


# — a run's ledger, the catalog's conditions and facts ————————————————————————————————

_OOM = lazy(r"(?:CUDA|HIP|NPU|XPU) out of memory|CUDA error: out of memory")
# How far the start-up got, by the last kind of line seen (order-independent: a log pasted
# newest-first still shows how far it got).
STAGE_OF = {
    "dist_rank": "init", "weight_load_begin": "weights",
    "weight_load_progress": "weights",
    "weight_load_end": "profiling", "torch_compile": "profiling",
    "memory_budget": "capture", "memory_split": "capture", "kv_available": "capture",
    "graph_profiling": "capture", "kv_blocks": "capture", "kv_tokens": "capture",
    "kv_concurrency": "capture", "cuda_graph_begin": "capture", "cuda_graph_progress": "capture",
    "cuda_graph_end": "warmup", "eager_mode": "warmup", "engine_ready": "warmup",
    "api_server_start": "serving", "ready": "serving",
}
STAGES = ("init", "weights", "profiling", "capture", "warmup", "serving")


def run_ledger(run: Any) -> VllmLedger:
    """The ledger of a vLLM run (``runs.Run``): its memory events and its exceptions' messages."""
    events = [(e.kind, e.fields, e.number) for e in run.memory_events]
    messages = [(exc.message or "", tb.first_line) for tb in run.tracebacks for exc in tb.exceptions]
    messages += [(text, n) for n, text in run.tail]
    return build(events, messages)


def furthest_stage(run: Any) -> str | None:
    stages = [STAGE_OF[e.kind] for e in run.memory_events if e.kind in STAGE_OF]
    return max(stages, key=STAGES.index) if stages else None


def _oom_evidence(run: Any) -> list[tuple[int, str]]:
    found = [(tb.first_line, f"{tb.exc_type}: {tb.message}"[:300]) for tb in run.tracebacks
             if _OOM.search(tb.message or "")]
    found += [(e.number, e.line.text[:300]) for e in run.memory_events if e.kind == "oom_line"]
    return found[:1]


def _oom_in(stage: str):
    def check(run: Any) -> list[tuple[int, str]] | None:
        if run.dialect.name != "vllm" or furthest_stage(run) != stage:
            return None
        oom = _oom_evidence(run)
        if not oom:
            return None
        last = [e for e in run.memory_events if STAGE_OF.get(e.kind) == stage][-1:]
        return oom + [(e.number, e.line.text[:300]) for e in last]

    check.__doc__ = f"a vLLM run ran out of GPU memory when its start-up had got as far as {stage}"
    return check


LOADER_PROGRESS_LIMIT = 5  # percent: no real checkpoint is 20x a GPU's memory per rank


def _oom_loading_far_beyond_the_shards(run: Any) -> list[tuple[int, str]] | None:
    """a vLLM run ran out of GPU memory with most of the GPU allocated by PyTorch while its
    weight loading had read at most ``LOADER_PROGRESS_LIMIT``% of the checkpoint: the weights
    so far cannot hold that memory, the loader does (extra copies: a loader regression), not a
    model too large for the GPU"""
    if run.dialect.name != "vllm" or furthest_stage(run) != "weights":
        return None
    progress = [e for e in run.memory_events if e.kind == "weight_load_progress"]
    if not progress or progress[-1].fields.get("percent", 100) > LOADER_PROGRESS_LIMIT:
        return None
    texts = [(tb.first_line, f"{tb.exc_type}: {tb.message}") for tb in run.tracebacks if tb.exc_type]
    texts += [(e.number, e.line.text) for e in run.memory_events if e.kind == "oom_line"]
    for number, text in texts:
        oom = parse_torch_oom(text)
        if oom is not None and oom.allocated_gib and oom.total_gib and oom.allocated_gib >= 0.8 * oom.total_gib:
            return [(number, text[:300]), (progress[-1].number, progress[-1].line.text[:300])]
    return None


# what a signal itself raises: the stop, not a failure that came before it
_SIGNAL_EXCEPTIONS = lazy(r"(?:^|\.)(?:KeyboardInterrupt|SystemExit|CancelledError)$")


def _shutdown_requested(run: Any) -> list[tuple[int, str]] | None:
    """a vLLM server was asked to stop (SIGINT/SIGTERM, "Shutting down.") before anything in it
    failed: the engine's death that follows is the shutdown, not a failure. A server whose engine
    died first (a fatal error, a process that died or was killed, a traceback while serving, the
    front end's own EngineDeadError) is shut down because of it: the shutdown is the aftermath."""
    if run.dialect.name != "vllm":
        return None
    stops = [e for e in run.endings if e.kind == "shutdown"]
    if not stops:
        return None
    stop = stops[0].number
    if any(e.kind != "shutdown" and e.number < stop for e in run.endings):
        return None  # "EngineCore encountered a fatal error", "… died unexpectedly", "Killed"
    ready = run.phase_lines.get("ready", 0)  # a traceback the start-up survived is no failure
    if any(ready <= tb.first_line < stop and not _SIGNAL_EXCEPTIONS.search(tb.exc_type or "")
           for tb in run.tracebacks):
        return None
    return [(stops[0].number, stops[0].line.text[:300])]


CONDITIONS = {
    "vllm_shutdown_requested": _shutdown_requested,
    "vllm_oom_during_weight_loading": _oom_in("weights"),
    "vllm_oom_loading_far_beyond_the_shards": _oom_loading_far_beyond_the_shards,
    "vllm_oom_during_profiling": _oom_in("profiling"),
    "vllm_oom_during_graph_capture": _oom_in("capture"),
    "vllm_oom_during_serving": _oom_in("serving"),
}


def memory_facts(run: Any, facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """Placeholders of the vLLM memory patterns, from the run's ledger (``Dialect.memory_facts``;
    they replace what ``facts`` holds: vLLM's own figures are the surer ones)."""
    return run_ledger(run).facts()
