"""Memory forensics: torch's OOM message, the per-rank ledger, the arithmetic behind every
memory fix, the numeric conditions the catalog uses, and the numbers the findings state.

The fixtures' figures are real (copied from the logs); every expected number below was worked
out by hand from the log lines with the formula in ``docs/memory.md``.
"""

from __future__ import annotations

import io
import json

import pytest
from conftest import FIXTURES, REPO, log_bytes
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from logforensics import _memory as memory
from logforensics._analysis import explain, run_facts
from logforensics._catalog import load_catalog
from logforensics._conditions import CONDITIONS
from logforensics._dialects.sglang import sizing
from logforensics._dialects.sglang.memory import SglangMemory, read_ledger, sglang_part
from logforensics._dialects.sglang.sizing import (
    kv_rest_gib,
    mamba_per_request_gib,
    mamba_requests_fit,
    mamba_slots_at_ratio,
    mamba_slots_per_request,
    min_viable_mem_fraction_static,
    suggest_context_length,
    suggest_mamba_full_memory_ratio,
    suggest_mem_fraction_static,
    suggest_mfs_for_graphs,
    suggest_tp_size,
)
from logforensics._memory import build_ledger, parse_torch_oom
from logforensics._memory.checkpoint import checkpoint_size, is_quantized
from logforensics._record import fields
from logforensics._render.report import render
from logforensics._runs import Run

CATALOG = load_catalog()

OOM_005 = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 80.04 GiB. GPU 3 has a total capacity of "
    "79.10 GiB of which 20.08 GiB is free. Process 806478 has 59.01 GiB memory in use. Of the allocated memory "
    "56.90 GiB is allocated by PyTorch, and 125.19 MiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
    "fragmentation.  See documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
OOM_092 = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "95.08 GiB of which 1.27 GiB is free. Including non-PyTorch memory, this process has 93.27 GiB memory in use. "
    "Of the allocated memory 92.83 GiB is allocated by PyTorch, and 5.54 MiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
    "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variable")
FRAMES_092 = [
    '  File "/usr/local/lib/python3.12/dist-packages/torch/utils/_device.py", line 103, in __torch_function__',
    "    return func(*args, **kwargs)",
    "           ^^^^^^^^^^^^^^^^^^^^^",
]


def report_of(name: str):
    path = FIXTURES / name
    return explain(path, name=str(path.relative_to(REPO)), catalog=CATALOG)


def ledger_of(name: str):
    return build_ledger(report_of(name).run)


def primary(report):
    return report.primary


def text_of(report, terminal: bool = False) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, color_system=None, force_terminal=terminal, highlight=False)
    render(report, console)
    return buffer.getvalue()


# — torch's OOM message ————————————————————————————————————————————————————————————


def test_parse_lone_process_entry_is_torch_itself():
    # Inside a container torch lists ITSELF as "Process P": it holds what PyTorch allocated.
    oom = parse_torch_oom(OOM_005)
    assert oom is not None
    assert (oom.requested_gib, oom.total_gib, oom.free_gib, oom.gpu) == (80.04, 79.10, 20.08, 3)
    assert oom.own_gib == 59.01 and oom.other_processes == []
    assert oom.other_gib == 0.0 and not oom.others_hold_memory
    assert oom.exceeds_capacity  # 80.04 > 79.10
    assert round(oom.reserved_unallocated_gib, 3) == round(125.19 / 1024, 3)


def test_parse_this_process_fills_the_gpu():
    oom = parse_torch_oom(OOM_092)
    assert oom is not None
    assert (oom.requested_gib, oom.total_gib, oom.free_gib, oom.own_gib) == (2.00, 95.08, 1.27, 93.27)
    assert round(oom.unaccounted_gib, 2) == 0.54  # 95.08 − 1.27 − 93.27: a CUDA context, not a co-tenant
    assert not oom.others_hold_memory and not oom.exceeds_capacity and not oom.fragmented


def test_parse_listed_other_process():
    oom = parse_torch_oom(
        "CUDA out of memory. Tried to allocate 340.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which "
        "173.06 MiB is free. Process 12345 has 60.00 GiB memory in use. Including non-PyTorch memory, this "
        "process has 19.00 GiB memory in use. Of the allocated memory 18.31 GiB is allocated by PyTorch, and "
        "26.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated m")
    assert oom.own_gib == 19.00 and oom.other_processes == [(12345, 60.00)]
    assert oom.other_gib == 60.00 and oom.others_hold_memory


def test_parse_unlisted_co_tenant_from_the_arithmetic():
    # tp2_unbalanced: torch lists nobody, but 79.19 − 0.14 − 31.02 = 48.03 GiB is held elsewhere
    oom = parse_torch_oom(
        "CUDA out of memory. Tried to allocate 224.00 MiB. GPU 1 has a total capacity of 79.19 GiB of which "
        "141.06 MiB is free. Including non-PyTorch memory, this process has 31.02 GiB memory in use. Of the "
        "allocated memory 29.88 GiB is allocated by PyTorch, and 3.13 MiB is reserved by PyTorch but unalloc")
    assert round(oom.unaccounted_gib, 2) == 48.03
    assert oom.others_hold_memory


def test_parse_cut_message_keeps_the_figures_before_the_cut():
    oom = parse_torch_oom("CUDA out of memory. Tried to allocate 340.00 MiB. GPU 0 has a total capacity of "
                          "79.19 GiB of which 173.06 MiB is free. Process 12345 has 60.00 GiB memory in use. "
                          "Including non-PyTo")
    assert oom.this_process_listed is False and oom.own_gib == 60.00  # lone entry, no proof it is another
    cut = parse_torch_oom("CUDA out of memory. Tried to allocate 340.00 MiB. GPU 0 has a total capacity of "
                          "79.19 GiB of which 173.06 MiB is free. Process 12345 has 60.00 GiB memory in use. "
                          "Including non-PyTorch memory, this process has 19.0")
    assert cut.this_process_listed and cut.own_gib is None  # the number was cut: never guessed
    assert cut.other_processes == [(12345, 60.0)] and cut.others_hold_memory


def test_parse_old_format():
    oom = parse_torch_oom("CUDA out of memory. Tried to allocate 1.02 GiB (GPU 0; 23.65 GiB total capacity; "
                          "0 bytes already allocated; 1.01 GiB free; 0 bytes reserved in total by PyTorch)")
    assert oom.old_format and (oom.total_gib, oom.free_gib, oom.own_gib) == (23.65, 1.01, 0.0)
    assert round(oom.other_gib, 2) == 22.64 and oom.others_hold_memory


def test_parse_fragmentation():
    oom = parse_torch_oom("CUDA out of memory. Tried to allocate 2.32 GiB. GPU 0 has a total capacity of 79.19 GiB "
                          "of which 1.94 GiB is free. Including non-PyTorch memory, this process has 77.24 GiB memory "
                          "in use. Of the allocated memory 74.10 GiB is allocated by PyTorch, and 1.21 GiB is "
                          "reserved by PyTorch but unallocated.")
    assert oom.fragmented  # 1.21 + 1.94 = 3.15 ≥ 2.32


@pytest.mark.parametrize("text", ["", "RuntimeError: Not enough memory.", "CUDA error: out of memory",
                                  "CUDA out of memory. Tried to allocate 2.0"])
def test_parse_nothing_to_parse(text):
    assert parse_torch_oom(text) is None


# — the arithmetic ————————————————————————————————————————————————————————————————————


def test_kv_rest_worked_example():
    # rest = avail_after_weights − pre×(1−mfs) = 10.20 − 79.10×(1−0.80) = −5.62
    assert round(kv_rest_gib(10.20, 79.10, 0.80), 2) == -5.62
    s = suggest_mem_fraction_static(10.20, 79.10)
    assert s is not None and s.value == 0.90
    assert round(s.kv_room_gib, 2) == 2.29  # 10.20 − 79.10×0.10
    assert round(kv_rest_gib(10.20, 79.10, s.value), 2) == 2.29  # re-checked


def test_min_viable_matches_sglangs_own_figure():
    # weights_leave_no_kv_tp2: SGLang printed "minimum viable = 1 - available/pre = 0.8527"
    assert round(min_viable_mem_fraction_static(11.56, 78.50), 4) == 0.8527


@given(after=st.floats(0.5, 90), pre=st.floats(10, 200))
def test_suggested_mem_fraction_static_rechecks_against_its_figures(after, pre):
    after = min(after, pre)
    s = suggest_mem_fraction_static(after, pre)
    if s is None:  # no fraction up to the cap leaves the minimum room
        assert kv_rest_gib(after, pre, sizing.MFS_CAP) < sizing.MIN_KV_ROOM_GIB + 1e-9
        return
    assert 0 < s.value <= sizing.MFS_CAP
    assert kv_rest_gib(after, pre, s.value) >= sizing.MIN_KV_ROOM_GIB - 1e-9
    assert abs(s.kv_room_gib - kv_rest_gib(after, pre, s.value)) < 1e-9
    if s.value > 0.01:  # the smallest such value
        assert kv_rest_gib(after, pre, round(s.value - 0.01, 2)) < sizing.MIN_KV_ROOM_GIB + 1e-9


def test_no_fraction_helps_when_the_weights_fill_the_gpu():
    assert suggest_mem_fraction_static(2.0, 79.19) is None  # even 0.95 leaves 2.0 − 3.96 < 2


@given(pre=st.floats(10, 200), mfs=st.floats(0.5, 0.99), need=st.floats(0.01, 20))
def test_graph_suggestion_rechecks(pre, mfs, need):
    got = suggest_mfs_for_graphs(pre, mfs, need)
    if got is None:
        return
    value, target = got
    assert value < mfs and value > 0
    assert pre * (1 - value) >= target - 1e-9
    assert target >= 2 * need - 1e-9 and target >= sizing.GRAPH_FLOOR_SHARE * pre - 1e-9


def test_graph_suggestion_worked_example():
    # target_decode_0_5_23: pre 78.50, mfs 0.95, capture began with 3.78 free, failed with 61.06 MiB free
    # asking 74.19 MiB → need = 3.78 − 0.06 + 0.07 = 3.79; G = max(7.58, 3.93) → 0.90 leaves 7.85
    need = sizing.graph_need_gib(3.78, 61.06 / 1024, 74.19 / 1024)
    assert round(need, 2) == 3.79
    value, target = suggest_mfs_for_graphs(78.50, 0.95, need)
    assert value == 0.90 and round(78.50 * (1 - value), 2) == 7.85 >= round(target, 2)


def test_mamba_arithmetic():
    # qwen3_next_extra_buffer: conv 0.11 + ssm 4.78 GiB over 271 + 1 slots, extra_buffer + overlap = 5 per request
    assert round(mamba_per_request_gib(0.11, 4.78, 271) * 1024, 1) == 18.4
    assert mamba_slots_per_request("extra_buffer", overlap=True) == 5
    assert mamba_slots_per_request("extra_buffer", overlap=False) == 4
    assert mamba_slots_per_request("no_buffer") == 3
    assert mamba_slots_per_request("extra_buffer", disable_radix_cache=True) == 1
    assert mamba_slots_per_request("auto") is None
    assert mamba_requests_fit(271, 5) == 54  # = the max_running_requests SGLang printed


def test_mamba_full_memory_ratio_suggestion_rechecks():
    # rest = 41.16 − 78.37×0.15 = 29.40 GiB; r = 0.2 gave K = 271; doubling the requests needs K ≥ 540
    rest, per = kv_rest_gib(41.16, 78.37, 0.85), mamba_per_request_gib(0.11, 4.78, 271)
    assert abs(mamba_slots_at_ratio(rest, per, 0.2) - 271) <= 1  # SGLang's own sizing, reproduced
    r2 = suggest_mamba_full_memory_ratio(271, 0.2, 540)
    assert r2 == 0.50
    assert mamba_slots_at_ratio(rest, per, r2) >= 540


def test_tp_and_context_suggestions():
    # 405B FP8 on TP4: > 78.91 GiB per GPU against pre 78.37 → TP8 puts 39.46 on each GPU
    assert suggest_tp_size(78.91, 4, 78.37) == 8
    assert suggest_tp_size(30.0, 2, 78.37) == 2
    # req_to_token buffer of 95.41 GiB at 12.5M tokens on a 79.19 GiB GPU → 524288 tokens ≈ 4 GiB
    assert suggest_context_length(12_500_000, 95.41, 79.19) == 524288


# — the ledger ————————————————————————————————————————————————————————————————————————


def test_ledger_single_gpu_healthy():
    led = ledger_of("none__healthy_tp1.log")
    assert led.status == "touched" and [r.rank for r in led.ranks] == [""]
    r = led.ranks[0]
    assert (r.before_weights_gib, r.avail_at_start_gib, r.weights_gib, r.avail_after_weights_gib) == \
        (0.62, 78.51, 15.27, 63.24)
    assert (r.kv_tokens, r.kv_gib, r.avail_after_pools_gib) == (374745, 51.46, 11.71)
    assert (r.graph_gib, r.avail_after_graphs_gib) == (1.33, 10.34)
    assert r.gpu_total_source.startswith("at least")  # no OOM message: free at start + init use
    assert round(led.kv_rest, 2) == 51.46  # 63.24 − 78.51×0.15 = the K+V SGLang allocated
    data = led.to_json()
    assert data["ranks"][0]["rank"] == "TP0"
    assert [s["state"] for s in data["ranks"][0]["steps"]] == ["done"] * 6


def test_ledger_tp2_one_rank_short():
    led = ledger_of("gpu_occupied_by_other_process__tp2_unbalanced.log")
    tp0, tp1 = led.ranks
    assert (tp0.rank, tp0.avail_at_start_gib, tp1.rank, tp1.avail_at_start_gib) == ("TP0", 78.27, "TP1", 30.41)
    assert led.pre_gib == 30.41  # SGLang sizes every rank by the smallest
    assert "TP1 started with 30.41 GiB free vs 78.27 GiB on TP0" in led.unbalanced_note
    assert tp1.oom is not None and tp1.gpu_total_gib == 79.19 and tp0.oom is None
    assert round(tp1.held_before_start_gib, 2) == 48.07  # 79.19 − 30.41 − 0.71
    steps = {s["step"]: s["state"] for s in tp1.steps(led.run_reached, led.hybrid)}
    assert steps["weights"] == "ran_out" and steps["kv_cache"] == "not_reached"
    assert {s["step"]: s["state"] for s in tp0.steps(led.run_reached, led.hybrid)}["weights"] == "in_progress"


def test_ledger_hybrid_mamba_extra_buffer():
    led = ledger_of("mamba_slot_exhaustion__qwen3_next_extra_buffer.log")
    sg = sglang_part(led)
    assert led.hybrid and sg.mamba_strategy == "extra_buffer"
    assert (sg.mamba_slots, sg.slots_per_request, sg.mamba_requests_fit) == (271, 5, 54)
    data = led.to_json()["mamba"]
    assert data["per_slot_gib"] == round(4.89 / 272, 4) and data["mamba_full_memory_ratio"] == 0.2
    healthy = ledger_of("none__healthy_hybrid_mamba.log")
    # "max_running_requests is capped to 154 … 5 state slots per request": SGLang's own figure wins
    hs = sglang_part(healthy)
    assert (hs.mamba_slots, hs.slots_per_request, hs.mamba_requests_fit) == (773, 5, 154)
    assert hs.slots_per_request_source == "from SGLang's own line"


def test_ledger_oom_at_each_phase():
    weights = ledger_of("weight_load_oom_model_too_large__405b_fp8_tp4.log")
    assert weights.oom.tag == "TP2" and weights.oom.phase == "weights"
    assert [r.rank for r in weights.ranks] == ["TP0", "TP1", "TP2", "TP3"]
    kv = ledger_of("oom_at_model_init_long_context__exceeds_capacity_with_co_tenant.log")
    assert kv.oom.phase == "kv_alloc" and kv.oom.oom.exceeds_capacity
    graph = ledger_of("cuda_graph_capture_oom__interleaved_ranks.log")
    assert graph.oom.tag == "TP1" and graph.oom.phase == "cuda_graph"  # TP1 ran out first (line 19)
    assert graph.rank("TP0").graph_last_bs is not None  # the capture bar (TP0's) is attributed
    serving = ledger_of("forward_cuda_oom_activations__long_prefill_batch.log")
    assert serving.oom.phase == "serving" and serving.oom.oom.fragmented
    steps = {s["step"]: s["state"] for s in serving.ranks[0].steps(serving.run_reached, serving.hybrid)}
    assert steps["serving"] == "ran_out" and steps["init"] == "unknown"  # never invented


def test_ledger_dp_ranks():
    led = ledger_of("none__healthy_dp2_attention.log")
    assert [r.rank for r in led.ranks] == ["DP0 TP0", "DP1 TP1"]
    assert [label for label, _ in led.groups()] == ["DP0 TP0, DP1 TP1"]  # identical figures: one column


def test_the_generic_ledger_names_no_server_and_one_schema_serves_all():
    """SGLang's settings live in its part (``Ledger.server``); every ledger's JSON has the same keys."""
    names = {f.name for f in fields(memory.Ledger)}
    assert not [n for n in names if any(w in n for w in ("mamba", "fraction", "mfs", "sglang", "radix"))]
    sglang = ledger_of("mamba_slot_exhaustion__qwen3_next_extra_buffer.log")
    assert isinstance(sglang.server, SglangMemory) and sglang.setting("mem_fraction_static") is not None
    vllm = ledger_of("vllm/weight_load_oom_model_too_large__v1_033_shards.log")
    assert vllm.server is None and vllm.setting("mem_fraction_static") is None
    assert set(sglang.to_json()) == set(vllm.to_json()) >= set(memory.ledger.SERVER_JSON_KEYS)
    assert vllm.to_json()["mem_fraction_static"] is None and sglang.to_json()["mamba"]["slots"] == 271


def test_ledger_not_touched_for_argument_errors():
    report = report_of("spec_decode_radix_mamba_no_buffer__tail5_cut.log")
    assert report.memory_untouched
    led = build_ledger(report.run)
    assert led.status == "not touched"
    payload = report.to_json()
    assert payload["runs"][-1]["memory"]["status"] == "not touched"
    text = text_of(report)
    assert "never touched" in text and "Memory (GiB" not in text


def test_ledger_json_in_every_run():
    payload = report_of("kv_cache_no_room_mem_fraction__after_healthy_run.log").to_json()
    first, second = (run["memory"] for run in payload["runs"])
    assert first["status"] == second["status"] == "touched"
    assert first["kv_room_gib"] > 0 and second["kv_room_gib"] == -13.92
    json.dumps(payload)


def test_text_table_and_bars_only_on_a_terminal():
    report = report_of("gpu_occupied_by_other_process__tp2_unbalanced.log")
    plain = text_of(report)
    assert "Memory (GiB per GPU" in plain and "GPU total" in plain and "✗ asked 0.22, 0.14 free" in plain
    assert "█" not in plain  # no bars in a pipe or a file
    assert "█" in text_of(report, terminal=True)


# — conditions and findings' numbers ————————————————————————————————————————————————


def test_conditions_are_registered_and_documented():
    readme = (REPO / "patterns" / "README.md").read_text()
    for name in memory.CONDITIONS:
        assert name in CONDITIONS
        assert name in readme


def explain_bytes(*lines: str):
    return explain(log_bytes(*lines), catalog=CATALOG)


def test_single_allocation_larger_than_the_gpu_is_the_context_length():
    report = explain_bytes(OOM_005)
    assert primary(report).id == "oom_at_model_init_long_context"
    assert "80.04 GiB, more than the whole GPU (79.10 GiB)" in primary(report).explanation
    # the same, with another process listed: freeing it would still not make 80.04 GiB fit
    other = OOM_005.replace("Process 806478 has 59.01 GiB memory in use.",
                            "Process 806478 has 30.00 GiB memory in use. Including non-PyTorch memory, this "
                            "process has 29.01 GiB memory in use.")
    assert primary(explain_bytes(other)).id == "oom_at_model_init_long_context"


def test_this_process_full_during_weight_loading_is_the_model_size():
    report = explain_bytes(*FRAMES_092, OOM_092)
    f = primary(report)
    assert f.id == "weight_load_oom_model_too_large"
    # 93.27 held + 2.00 asked > the GPU's 95.08: at least TP2
    assert "more than 95.27 GiB per GPU" in f.fix and "`--tp-size 2`" in f.fix


def test_other_process_only_when_it_would_have_fit():
    listed = ("CUDA out of memory. Tried to allocate 340.00 MiB. GPU 0 has a total capacity of 79.19 GiB of "
              "which 173.06 MiB is free. Process 12345 has 60.00 GiB memory in use. Including non-PyTorch "
              "memory, this process has 19.00 GiB memory in use.")
    report = explain_bytes(*FRAMES_092, "torch.OutOfMemoryError: " + listed)
    assert primary(report).id == "gpu_occupied_by_other_process"
    assert "process 12345 holds 60.00 GiB" in primary(report).explanation
    assert CONDITIONS["oom_other_process_holds_memory"](report.run)


@pytest.mark.parametrize("name, expected", [
    ("kv_cache_no_room_mem_fraction__weights_leave_no_kv_tp2.log",
     ["rest = avail_after_weights − pre×(1−mfs) = 11.56 − 78.50×(1−0.80) = −4.14 GiB",
      "Minimum viable mfs = 1 − 11.56/78.50 = 0.853.",
      "`--mem-fraction-static 0.88` leaves 11.56 − 78.50×(1−0.88) = 2.14 GiB for the KV cache (re-checked)"]),
    ("kv_cache_no_room_mem_fraction__old_not_enough_memory_tp2.log",
     ["12.75 − 78.48×(1−0.80) = −2.95 GiB", "`--mem-fraction-static 0.87` leaves", "= 2.55 GiB"]),
    ("kv_cache_no_room_mem_fraction__after_healthy_run.log",
     ["17.48 − 78.51×(1−0.60) = −13.92 GiB", "`--mem-fraction-static 0.81`"]),
    ("cuda_graph_capture_oom__target_decode_0_5_23.log",
     ["pre×(1−mfs) = 78.50×(1−0.95) = 3.93 GiB", "`--mem-fraction-static 0.90` leaves 78.50×(1−0.90) = 7.85 GiB",
      "to ≈ 150,416 of 193,276 tokens", "`--cuda-graph-max-bs-decode"]),
    ("cuda_graph_capture_oom__interleaved_ranks.log",
     ["78.44×(1−0.975) = 1.96 GiB", "`--mem-fraction-static 0.95`"]),
    ("mamba_slot_exhaustion__qwen3_next_extra_buffer.log",
     ["K // 5 = 54 requests fit", "`--max-mamba-cache-size 540`", "`--mamba-full-memory-ratio 0.50` (now 0.20",
      "`--mamba-scheduler-strategy no_buffer` holds 3 per request (90 requests)"]),
    ("gpu_occupied_by_other_process__other_pid_60gib.log",
     ["process 12345 holds 60.00 GiB", "without them 60.17 GiB would have been free for the 0.33 GiB allocation",
      "only 18.65 of 79.19 GiB were free"]),
    ("gpu_occupied_by_other_process__tp2_unbalanced.log",
     ["48.03 GiB is held by processes torch did not list (total − free − this process = 79.19 − 0.14 − 31.02)"]),
    ("gpu_occupied_by_other_process__old_torch_format_24gb.log",
     ["22.64 GiB is held by processes torch did not list"]),
    ("oom_at_model_init_long_context__exceeds_capacity_with_co_tenant.log",
     ["one buffer of 95.41 GiB, more than the whole GPU (79.19 GiB)", "`--context-length 524288`"]),
    ("weight_load_oom_model_too_large__405b_fp8_tp4.log",
     ["(= 78.12 this process held − 0.83 init use + 1.62 that failed", "`--tp-size 8` (now 4)"]),
    ("forward_cuda_oom_activations__long_prefill_batch.log",
     ["1.21 GiB reserved-but-unallocated + 1.94 GiB free ≥ 2.32 GiB asked",
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "`--mem-fraction-static 0.91`"]),
])
def test_findings_state_the_numbers(name, expected):
    report = report_of(name)
    f = primary(report)
    assert f.id == name.split("__", 1)[0]
    text = f.explanation + " " + f.fix
    for piece in expected:
        assert piece in text, f"{piece!r} not in {text!r}"
    assert "<" not in f.fix.replace("<name>", "")  # every placeholder filled


def test_unknown_figures_are_named_not_invented():
    # a tail paste: no server_args, no 'Load weight' lines
    report = explain_bytes("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
    f = primary(report)
    assert f.id == "kv_cache_no_room_mem_fraction"
    assert "cannot be done" in f.fix and "not in the log" in f.fix


def test_memory_facts_placeholders():
    facts = run_facts(report_of("kv_cache_no_room_mem_fraction__weights_leave_no_kv_tp2.log").run)
    assert facts["suggested_mem_fraction_static"] == "0.88" and facts["kv_room_gb"] == "-4.14"
    facts = run_facts(report_of("gpu_occupied_by_other_process__other_pid_60gib.log").run)
    assert (facts["oom_requested_gib"], facts["oom_total_gib"], facts["other_process_gib"]) == \
        ("0.33", "79.19", "60.00")
    facts = run_facts(report_of("mamba_slot_exhaustion__qwen3_next_extra_buffer.log").run)
    assert facts["mamba_requests_fit"] == 54



def test_each_run_keeps_its_own_ledger_built_once():
    """The ledger is kept in its run (never looked up by ``id(run)``, which a later run may
    reuse): asking for two runs in turn reads each once, and a run that grew is read again."""
    first = Run(index=1, first_line=1, args={"mem_fraction_static": 0.8})
    second = Run(index=1, first_line=1, args={"mem_fraction_static": 0.9})
    ledger = build_ledger(first)
    assert build_ledger(second).setting("mem_fraction_static") == 0.9
    assert build_ledger(first) is ledger and ledger.setting("mem_fraction_static") == 0.8
    first.args["tp_size"] = 2  # the run grew (a followed log): read again
    assert build_ledger(first) is not ledger and build_ledger(first).tp_size == 2
    ledger = build_ledger(first)
    first.last_line += 500  # lines no reader reads (batch lines, warnings): kept
    assert build_ledger(first) is ledger


@pytest.mark.parametrize("name", ["kv_cache_no_room_mem_fraction__figures_then_sigquit_tp2.log",
                                  "cuda_graph_capture_oom__interleaved_ranks.log",
                                  "forward_cuda_oom_activations__kernel_frames_only_after_ready.log",
                                  "vllm/activation_profile_oom__v1_013_batched_tokens.log"])
def test_a_kept_ledger_is_the_one_read_afresh_at_every_line(name):
    """A followed log asks for the ledger after line after line: the one kept (read at an
    earlier state of the run) is always what reading the run again gives."""
    from logforensics._analysis import Analyzer
    from logforensics._memory.ledger import read_torch_ledger
    from logforensics._pipeline import raw_lines

    analyzer = Analyzer()
    last: dict[int, object] = {}
    reads = 0
    for raw in raw_lines((FIXTURES / name).read_bytes()):
        analyzer.feed(raw)
        for run in analyzer.runs:
            ledger = build_ledger(run)
            reads += ledger is not last.get(run.index)
            last[run.index] = ledger
            assert ledger.to_json() == (run.dialect.memory_ledger or read_torch_ledger)(run).to_json(), raw.number
    assert 1 < reads < analyzer.lines  # read again as the run grew, but not at every line


@pytest.mark.parametrize("name", ["kv_cache_no_room_mem_fraction__figures_then_sigquit_tp2.log",
                                  "decode_retraction_kv_pressure__retraction_storm.log",
                                  "vllm/activation_profile_oom__v1_013_batched_tokens.log"])
def test_kept_facts_are_the_ones_read_afresh_at_every_line(name):
    """The placeholders' facts are kept in the run like its ledger: at every line of a followed
    log, the kept ones are what reading the run again gives."""
    from logforensics._analysis import Analyzer, _read_facts
    from logforensics._pipeline import raw_lines

    analyzer = Analyzer()
    for raw in raw_lines((FIXTURES / name).read_bytes()):
        analyzer.feed(raw)
        for run in analyzer.runs:
            assert run_facts(run) == _read_facts(run), raw.number


def test_the_dialect_decides_which_ledger_reads_the_log():
    """vLLM's "Model loading took 44.72 GiB" is not SGLang's "Load weight end": SGLang's reader
    does not run on a vLLM log, nor do SGLang's sizing sentences; the torch reader takes the
    weights' figure from the weight_load_end event, torch's OOM figures are read for both, and
    the OOM's phase is worded as the log's server calls it."""
    vllm_run = report_of("vllm/activation_profile_oom__v1_013_batched_tokens.log").run
    assert vllm_run.dialect.name == "vllm"
    ledger = build_ledger(vllm_run)
    assert [(r.weights_done, r.weights_gib) for r in ledger.ranks] == [(True, 44.7161)]
    assert "during memory profiling or KV cache allocation" in run_facts(vllm_run)["oom_summary"]
    assert ledger.oom is not None and ledger.oom.oom.requested_gib == 10.0
    facts = run_facts(vllm_run)
    assert "kv_room_arithmetic" not in facts and facts["oom_requested_gib"] == "10.00"
    sglang_run = report_of("kv_cache_no_room_mem_fraction__weights_leave_no_kv_tp2.log").run
    assert all(r.weights_done for r in build_ledger(sglang_run).ranks)
    assert "kv_room_arithmetic" in run_facts(sglang_run)

WEIRD = [
    ["[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=1.0, tp_size=0)",
     "[2026-01-01 00:00:01] Load weight begin. avail mem=0.00 GB",
     "[2026-01-01 00:00:02] Load weight end. type=X, avail mem=0.00 GB, mem usage=0.00 GB.",
     "[2026-01-01 00:00:02] Mamba Cache is allocated. max_mamba_cache_size: 0, conv_state size: 0.00GB, "
     "ssm_state size: 0.00GB ",
     "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
     "mem_fraction_static=0.80."],
    ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 0 bytes. GPU 0 has a total capacity of 0 bytes "
     "of which 0 bytes is free. Process 1 has 0 bytes memory in use."],
    ["[2026-01-01 00:00:02 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=0.00 GB",
     "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
     "capacity of 1.00 GiB of which 0 bytes is free."],
    ["RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
     "max_mamba_cache_size=0, mamba_ratio=0, resulting max_num_reqs=0."],
]


@pytest.mark.parametrize("lines", WEIRD)
def test_degenerate_figures_never_crash(lines):
    report = explain_bytes(*lines)
    read_ledger(report.run)  # unguarded: a crash here is a bug
    text_of(report, terminal=True)
    json.dumps(report.to_json())


def test_shuffled_fixture_lines_never_crash():
    import random

    pool = [line for p in sorted(FIXTURES.glob("*.log")) for line in p.read_bytes().split(b"\n")]
    rng = random.Random(6)
    for _ in range(150):
        chunk = rng.sample(pool, rng.randint(1, 40))
        chunk = [c[: rng.randint(0, len(c))] if rng.random() < 0.3 else c for c in chunk]
        report = explain(b"\n".join(chunk), catalog=CATALOG)
        if report.run is not None:
            read_ledger(report.run)
            run_facts(report.run)


# — the figures prove there is no KV room (condition sglang_figures_leave_no_kv_room) ——————

NO_ROOM = FIXTURES / "kv_cache_no_room_mem_fraction__figures_then_sigquit_tp2.log"


def _no_room_lines(*, keep=lambda line: True, mfs: str = "0.8", nnodes: int = 1) -> list[str]:
    lines = NO_ROOM.read_text().splitlines()
    lines[0] = lines[0].replace("'mem_fraction_static': 0.8,", f"'mem_fraction_static': {mfs},").replace(
        "'nnodes': 1,", f"'nnodes': {nnodes},")
    return [line for line in lines if keep(line)]


@pytest.mark.parametrize("name, rest", [
    ("kv_cache_no_room_mem_fraction__figures_then_sigquit_tp2.log", "12.60 − 78.38×(1−0.80) = −3.08 GiB"),
    ("kv_cache_no_room_mem_fraction__figures_traceback_cut_tp4.log", "9.86 − 43.77×(1−0.75) = −1.08 GiB"),
    ("kv_cache_no_room_mem_fraction__figures_log_ends_tp1.log", "7.58 − 22.90×(1−0.60) = −1.58 GiB"),
])
def test_figures_alone_prove_no_kv_room(name, rest):
    """SGLang's message cut or missing, only a SIGQUIT, or nothing after the weights: the
    figures decide, and outrank the symptom."""
    report = report_of(name)
    f = primary(report)
    assert f.id == "kv_cache_no_room_mem_fraction" and f.role == "cause"
    assert rest in f.fix and "`--mem-fraction-static 0." in f.fix
    assert any("Load weight end" in e.text for e in f.evidence)
    assert CONDITIONS["sglang_figures_leave_no_kv_room"](report.run)


def test_sigquit_after_the_figures_is_their_symptom():
    ids = [f.id for f in report_of(NO_ROOM.name).findings]
    assert ids[0] == "kv_cache_no_room_mem_fraction" and "child_failed_sigquit" in ids[1:]


def test_other_ranks_nccl_timeouts_after_the_figures_are_their_symptom():
    lines = _no_room_lines(keep=lambda x: "sigquit" not in x and "kill_process_tree" not in x and x != "Killed")
    lines.append("[rank1]:[E1109 08:24:49.604417283 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
                 "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                 "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.")
    report = explain_bytes(*lines)
    ids = [f.id for f in report.findings if f.is_problem]
    assert ids[0] == "kv_cache_no_room_mem_fraction" and len(ids) > 1, ids


@pytest.mark.parametrize("why, lines", [
    ("room small but positive, still starting", _no_room_lines(mfs="0.85", keep=lambda x: "sigquit" not in x
                                                                and "kill_process_tree" not in x and x != "Killed")),
    ("room small but positive, then a SIGQUIT", _no_room_lines(mfs="0.85")),
    ("no --mem-fraction-static in the log", _no_room_lines(keep=lambda x: "server_args" not in x)),
    ("a rank still loading", _no_room_lines(keep=lambda x: "TP1] Load weight end" not in x and "sigquit" not in x
                                            and "kill_process_tree" not in x and x != "Killed")),
    ("one node of several", _no_room_lines(nnodes=2)),
])
def test_figures_that_do_not_prove_no_room_say_nothing(why, lines):
    report = explain_bytes(*lines)
    assert "kv_cache_no_room_mem_fraction" not in [f.id for f in report.findings], why
    assert not CONDITIONS["sglang_figures_leave_no_kv_room"](report.run), why


def test_a_run_that_reached_the_kv_pool_is_not_judged_by_its_weights():
    lines = _no_room_lines(keep=lambda x: "sigquit" not in x)
    at = next(i for i, x in enumerate(lines) if "TP0] Load weight end" in x) + 1
    lines.insert(at, "[2026-11-09 08:14:48 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1024, "
                     "K size: 0.08 GB, V size: 0.08 GB")
    assert not CONDITIONS["sglang_figures_leave_no_kv_room"](explain_bytes(*lines).run)


def test_healthy_small_kv_room_is_healthy():
    report = report_of("none__healthy_small_kv_room_tp2.log")
    assert report.exit_code == 0 and not any(f.is_problem for f in report.findings)
    assert build_ledger(report.run).kv_rest == pytest.approx(12.60 - 78.38 * 0.15)


# — the weights cannot fit (condition sglang_weights_exceed_free_memory) ————————————————————

TOO_LARGE = FIXTURES / "weight_load_oom_model_too_large__figures_235b_tp4_sigquit.log"


@pytest.mark.parametrize("model, quantization, dtype, expected", [
    ("meta-llama/Llama-3.3-70B-Instruct", None, "auto", (70, 2.0)),
    ("Qwen/Qwen3-30B-A3B", None, "bfloat16", (30, 2.0)),  # A3B is the active count
    ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", None, "auto", (235, 1.0)),
    ("Qwen/Qwen2.5-72B-Instruct-AWQ", "awq_marlin", "auto", (72, 0.5)),
    ("openai/gpt-oss-120b", None, "auto", (120, 0.5)),  # ships MXFP4
    ("Qwen/Qwen2.5-0.5B-Instruct", "fp8", "auto", (0.5, 1.0)),
    ("google/gemma-2-27b-it", None, "float32", (27, 4.0)),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", None, "auto", None),  # 8x7B is not the total
    ("deepseek-ai/DeepSeek-V3", None, "auto", None),  # no count
    ("Qwen/Qwen2.5-72B-Instruct", "bitsandbytes", "auto", (72, 0.5)),  # 4 or 8 bits: the fewer
    ("Qwen/Qwen2.5-72B-Instruct", "some_new_method", "auto", None),  # storage unsettled
    ("TheBloke/Llama-2-70B-GGUF", None, "auto", None),
    (None, None, None, None),
])
def test_checkpoint_size_from_the_name(model, quantization, dtype, expected):
    size = checkpoint_size(model, quantization, dtype)
    assert (None if size is None else (size.params_billion, size.bytes_per_param)) == expected


def test_quantized_from_the_same_hints():
    assert is_quantized("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8") and is_quantized("openai/gpt-oss-120b")
    assert is_quantized("meta-llama/Llama-3.3-70B-Instruct", "fp8") and is_quantized("x/Llama-2-70B-GGUF")
    assert not is_quantized("meta-llama/Llama-3.3-70B-Instruct") and not is_quantized(None)


def test_weights_larger_than_the_free_memory_from_the_figures():
    report = report_of(TOO_LARGE.name)
    f = primary(report)
    assert f.id == "weight_load_oom_model_too_large" and f.role == "cause"
    # 235e9 × 2 B × 0.95 / 2^30 = 415.84 GiB, / TP 4 = 103.96 > 78.37 free on every rank
    assert "more than 103.96 GiB per GPU" in f.fix and "`--tp-size 8` (now 4)" in f.fix
    assert [f.id for f in report.findings][1:2] == ["child_failed_sigquit"]
    cut = primary(report_of("weight_load_oom_model_too_large__figures_70b_tp1_traceback_cut.log"))
    assert cut.id == "weight_load_oom_model_too_large" and "`--tp-size 2` (now 1)" in cut.fix


def _too_large_lines(model: str = "Qwen/Qwen3-235B-A22B-Instruct-2507", tp: int = 4, keep=lambda line: True):
    lines = TOO_LARGE.read_text().splitlines()
    lines[0] = lines[0].replace("Qwen/Qwen3-235B-A22B-Instruct-2507", model).replace("'tp_size': 4", f"'tp_size': {tp}")
    return [line for line in lines if keep(line)]


@pytest.mark.parametrize("why, lines", [
    ("the weights fit (32B on TP4)", _too_large_lines(model="Qwen/Qwen3-32B")),
    ("the weights fit (gpt-oss-120b is 4-bit)", _too_large_lines(model="openai/gpt-oss-120b", tp=1)),
    ("no count in the name", _too_large_lines(model="deepseek-ai/DeepSeek-V3")),
    ("still loading", _too_large_lines(keep=lambda x: "sigquit" not in x and "kill_process_tree" not in x
                                       and x != "Killed")),
    ("only the shell's Killed (host RAM)", _too_large_lines(keep=lambda x: "sigquit" not in x
                                                            and "kill_process_tree" not in x)),
])
def test_weights_that_may_fit_say_nothing(why, lines):
    report = explain_bytes(*lines)
    assert "weight_load_oom_model_too_large" not in [f.id for f in report.findings], why


def test_a_message_names_the_cause_not_the_name():
    lines = _too_large_lines(keep=lambda x: "sigquit" not in x)
    at = next(i for i, x in enumerate(lines) if x.startswith("Loading safetensors checkpoint shards:  75%")) + 1
    lines[at:at] = ["[2026-11-15 02:33:19 TP0] Scheduler hit an exception: Traceback (most recent call last):",
                    '  File "/sgl-workspace/sglang/python/sglang/srt/model_loader/loader.py", line 751, in '
                    "load_weights_and_postprocess", "    model.load_weights(weights)",
                    "KeyError: 'model.layers.0.mlp.experts.w2_weight_scale'"]
    report = explain_bytes(*lines)
    assert not CONDITIONS["sglang_weights_exceed_free_memory"](report.run)


# — snapshots of the ledger (regenerated by the owner with --snapshot-update) ——————————————

MEMORY_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.log") if p.name.split("__")[0] in {
    "kv_cache_no_room_mem_fraction", "gpu_occupied_by_other_process", "cuda_graph_capture_oom",
    "mamba_slot_exhaustion", "oom_at_model_init_long_context", "weight_load_oom_model_too_large",
    "forward_cuda_oom_activations", "none"})


@pytest.mark.parametrize("name", MEMORY_FIXTURES)
def test_ledger_snapshot(name, snapshot):
    report = report_of(name)
    payload = {"ledger": build_ledger(report.run).to_json(),
               "primary": None if report.primary is None else {
                   "id": report.primary.id, "explanation": report.primary.explanation,
                   "fix": report.primary.fix}}
    assert json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True) == snapshot


SERVED = ("[2026-02-11 08:30:02] server_args=ServerArgs(model_path='m', tp_size=2)",
          "[2026-02-11 08:30:16 TP0] Load weight begin. avail mem=78.61 GB",
          "[2026-02-11 08:30:16 TP1] Load weight begin. avail mem=78.61 GB",
          "[2026-02-11 08:30:42 TP0] Memory pool end. avail mem=10.25 GB",
          "[2026-02-11 08:30:42 TP1] Memory pool end. avail mem=10.25 GB",
          "[2026-02-11 08:31:05 TP0] Capture cuda graph end. Time elapsed: 22.48 s. mem usage=1.02 GB. "
          "avail mem=9.17 GB.",
          "[2026-02-11 08:31:10] The server is fired up and ready to roll!")
KERNEL_OOM = ("  File \"/x/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py\", line 1388, in fused_experts_impl",
              "    intermediate_cache1 = torch.empty(",
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.25 GiB. GPU 1 has a total "
              "capacity of 79.19 GiB of which 1.94 GiB is free. Process 40188 has 77.24 GiB memory in use.")


def test_an_oom_after_the_server_was_ready_is_a_serving_one_on_every_rank():
    """TP1 prints no capture-end or batch line (only the first rank does), yet the run was ready
    before its OOM: the ledger places it in serving, and the frames a paste kept do not matter."""
    report = explain_bytes(*SERVED, "[2026-02-11 08:52:32 TP1] Scheduler hit an exception: Traceback "
                           "(most recent call last):", *KERNEL_OOM)
    assert [r.phase for r in build_ledger(report.run).ooms] == ["serving"]
    assert CONDITIONS["oom_while_serving"](report.run)
    assert primary(report).id == "forward_cuda_oom_activations"


def test_an_oom_before_the_ready_line_is_not_a_serving_one():
    before_ready = SERVED[:-1] + ("[2026-02-11 08:31:06 TP1] Scheduler hit an exception: Traceback "
                                  "(most recent call last):", *KERNEL_OOM)
    report = explain_bytes(*before_ready)
    assert not CONDITIONS["oom_while_serving"](report.run)
    assert primary(report).id != "forward_cuda_oom_activations"
