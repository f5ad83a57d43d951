"""SGLang's memory sizing, as formulas: the KV room its static fraction leaves, the Mamba pool,
and the flag values that would make room, each re-checked with the formula it inverts.

The formulas are SGLang's (``shared/reference/sglang-log-format.md`` §4; ``docs/memory.md``
works an example): ``rest = avail_after_weights − pre × (1 − mem_fraction_static)`` feeds the
KV (and Mamba) pools, ``rest ≤ 0`` aborts the start-up. Pure arithmetic on GiB: no log is read
here (``memory.py`` reads the figures, ``fixes.py`` turns these into sentences).
"""

from __future__ import annotations

import math
from typing import NamedTuple

# — tunables (documented in docs/memory.md) ————————————————————————————————————————
MIN_KV_ROOM_GIB = 2.0  # a suggested --mem-fraction-static must leave at least this for the KV cache
MFS_CAP = 0.95  # never suggest a static fraction above this (graphs/activations need the rest)
MFS_COMFORT = 0.90  # above this, warn that little is left outside the static pools
GRAPH_FLOOR_SHARE = 0.05  # CUDA graphs + activations get at least 5% of the pre-load memory
OOM_MARGIN_GIB = 1.0  # extra room asked for on top of a runtime OOM's shortfall
TP_WEIGHT_SHARE = 0.90  # for --tp suggestions: weights + MIN_KV_ROOM must fit in 90% of pre


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


class MfsSuggestion(NamedTuple):
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
