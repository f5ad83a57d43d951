"""The vLLM memory ledger (dialects/vllm/memory.py): vLLM's budget re-checked with the log's
numbers, and the fixes it turns into flags."""

from __future__ import annotations

from pathlib import Path

from logforensics._dialects.vllm.memory import VllmLedger, build, ceil2, floor_to

V0_NO_ROOM = [
    ("memory_budget", {"total_gib": 8.0, "util": 0.7, "budget_gib": 5.6}, 3),
    ("memory_split", {"weights_gib": 5.2, "non_torch_gib": 0.03, "activation_gib": 1.42, "kv_gib": -1.05}, 4),
    ("kv_blocks", {"device": "cuda", "gpu_blocks": 0, "cpu_blocks": 4681}, 5),
]


def test_v0_budget_is_rechecked_and_no_room_is_seen():
    led = build(V0_NO_ROOM)
    assert led.no_room
    assert round(led.non_kv_gib, 2) == 6.65
    assert round(led.kv_rest_gib, 2) == -1.05
    text = led.kv_arithmetic()
    assert "8.00 × 0.70 = 5.60" in text and "5.60 − 6.65 = -1.05" in text
    assert "vLLM printed" not in text  # the formula agrees with vLLM's own figure


def test_a_printed_kv_figure_that_disagrees_with_the_formula_is_named():
    events = V0_NO_ROOM[:1] + [("memory_split", {"weights_gib": 5.2, "non_torch_gib": 0.03,
                                                  "activation_gib": 1.42, "kv_gib": -0.5}, 4)]
    assert "(vLLM printed -0.50)" in build(events).kv_arithmetic()


def test_no_room_fix_raises_utilization_when_that_leaves_a_kv_cache():
    led = build([("memory_budget", {"total_gib": 24.0, "util": 0.5, "budget_gib": 12.0}, 1),
                 ("memory_split", {"weights_gib": 10.0, "non_torch_gib": 0.5, "activation_gib": 2.0,
                                   "kv_gib": -0.5}, 2)])
    # (10 + 0.5 + 2 + 1 GiB of KV) / 24 = 0.5625 -> 0.57
    assert "`--gpu-memory-utilization` to at least 0.57" in led.kv_fix()


def test_no_room_fix_says_when_no_utilization_is_enough():
    fix = build(V0_NO_ROOM).kv_fix()
    assert "Even `--gpu-memory-utilization 0.95` leaves only 0.95 GiB" in fix
    assert "--max-num-batched-tokens" in fix and "--tensor-parallel-size 2" in fix


def test_v0_capacity_message_gives_max_model_len():
    led = build([], [("ValueError: The model's max seq len (8192) is larger than the maximum number of tokens "
                      "that can be stored in KV cache (2400). Try increasing `gpu_memory_utilization`", 10)])
    assert (led.max_model_len, led.kv_tokens, led.fitting_len()) == (8192, 2400, 2400)
    fix = led.max_model_len_fix()
    assert "`--max-model-len 2400`" in fix and "`--kv-cache-dtype fp8` doubles it to about 4800" in fix


def test_v1_capacity_is_recomputed_and_the_smaller_length_wins():
    msg = ("ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV "
           "cache is needed, which is larger than the available KV cache memory (9.50 GiB). Based on the "
           "available memory, the estimated maximum model length is 77824. Try increasing `gpu_memory_utilization`")
    led = build([("memory_budget", {"total_gib": 80.0, "util": 0.9, "budget_gib": 72.0}, 1)], [(msg, 20)])
    # 9.50 / 16.00 × 131072 = 77824 exactly; a multiple of 16
    assert led.fitting_len() == 77824
    fix = led.max_model_len_fix()
    assert "9.50 / 16.00 × 131072 = 77824 tokens fit (vLLM estimates 77824)" in fix
    # util + (16 − 9.5) / 80 = 0.98125 -> above the cap: no figure suggested; fp8 doubles past 131072
    assert "`--gpu-memory-utilization 0." not in fix
    assert "`--kv-cache-dtype fp8` (half the bytes per token, about 155648 tokens) keeps 131072" in fix


def test_v1_capacity_suggests_the_utilization_that_keeps_the_length():
    msg = ("To serve at least one request with the model's max seq len (32768), (4.00 GiB KV cache is needed, "
           "which is larger than the available KV cache memory (3.00 GiB).")
    led = build([("server_args", {"args": {"gpu_memory_utilization": 0.8, "kv_cache_dtype": "fp8"}}, 1),
                 ("kv_available", {"kv_gib": 3.0}, 5)], [(msg, 6)])
    led.total_gib = 40.0
    fix = led.max_model_len_fix()
    assert "`--max-model-len 24576`" in fix  # 3/4 × 32768
    assert "`--gpu-memory-utilization 0.83` keeps 32768" in fix  # 0.8 + 1/40 = 0.825 -> 0.83
    assert "kv-cache-dtype" not in fix  # already fp8


def test_startup_free_memory_gives_the_utilization_that_fits():
    msg = ("ValueError: Free memory on device (67.24/79.25 GiB) on startup is less than desired GPU memory "
           "utilization (0.9, 71.33 GiB). Decrease GPU memory utilization")
    led = build([], [(msg, 1)])
    fix = led.other_process_fix()
    assert "about 12.01 GiB held elsewhere" in fix
    assert "`--gpu-memory-utilization 0.84`" in fix  # floor(67.24 / 79.25, 2)


def test_v1_lines_fill_the_ledger_and_graphs_count_from_0_21():
    events = [("server_version", {"version": "0.33.0", "config": {"max_seq_len": 40960, "kv_cache_dtype": "auto"}}, 1),
              ("weight_load_end", {"weights_gib": 15.27}, 2),
              ("kv_available", {"kv_gib": 13.69}, 3),
              ("kv_tokens", {"kv_tokens": 150745, "per_request": 124000, "concurrency": 1.2}, 4),
              ("cuda_graph_end", {"graph_gib": 0.84}, 5)]
    led = build(events)
    assert led.graphs_in_budget and led.version == (0, 33, 0)
    assert (led.weights_gib, led.kv_gib, led.kv_tokens, led.graph_gib) == (15.27, 13.69, 150745, 0.84)
    assert build(events[1:] + [("server_version", {"version": "0.13.0"}, 1)]).graphs_in_budget is False


def test_missing_figures_are_named_not_invented():
    led = VllmLedger()
    assert led.kv_arithmetic().startswith("The log does not show the budget")
    assert "Raise `--gpu-memory-utilization`" in led.kv_fix()
    assert led.max_model_len_fix() == ("Lower `--max-model-len` (the log does not show the KV cache's capacity). Or"
                                       " make room for more KV cache: a higher `--gpu-memory-utilization`, or"
                                       " more GPUs (`--tensor-parallel-size`).")
    assert all(v is not None for k, v in led.facts().items() if k.startswith("vllm_"))


def test_rounding_helpers():
    assert ceil2(0.5625) == 0.57 and ceil2(0.57) == 0.57
    assert floor_to(77830.4, 16) == 77824


def test_a_vllm_ledger_title_does_not_name_sglangs_static_fraction():
    """vLLM has no ``--mem-fraction-static``: its ledger (torch's OOM figures) is not told it
    lacks one; SGLang's says the fraction, or that the log does not give it."""
    from rich.console import Console

    from logforensics import explain
    from logforensics._memory import build_ledger
    from logforensics._render.memory import render_ledger

    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    titles = {}
    for name in ("vllm/forward_cuda_oom_activations__v1_013_long_prompts.log",
                 "kv_cache_no_room_mem_fraction__weights_leave_no_kv_tp2.log"):
        report = explain(fixtures / name)
        console = Console(width=200, record=True, color_system=None)
        console.print(render_ledger(build_ledger(report.run))[0])
        titles[name.split("/")[0]] = console.export_text()
    assert "mem_fraction_static" not in titles["vllm"]
    assert "mem_fraction_static" in titles["kv_cache_no_room_mem_fraction__weights_leave_no_kv_tp2.log"]


def test_an_oom_a_few_shards_into_loading_is_the_loader_not_the_models_size():
    """Most of the GPU allocated after 3% of the shards: the loader's copies, not the weights;
    the same OOM late in the loading is a model too large for the GPU."""
    from logforensics import explain

    log = (Path(__file__).resolve().parent.parent / "fixtures" / "vllm"
           / "weight_load_oom_version_regression__v1_013_first_shard.log").read_text()
    assert explain(log.encode()).findings[0].id == "weight_load_oom_version_regression"
    late = log.replace("3% Completed | 1/30", "60% Completed | 18/30")
    assert explain(late.encode()).findings[0].id == "weight_load_oom_model_too_large"


def test_a_034_extensible_kv_cache_that_took_all_memory_suggests_no_higher_utilization():
    """0.34's default KV cache is sized after warmup from all free memory (utilization 1.0) and
    its blocks are 64 tokens: the length that fits is a multiple of 64, and no utilization is
    offered that the budget cannot reach."""
    msg = ("ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV "
           "cache is needed, which is larger than the available KV cache memory (9.70 GiB). Based on the "
           "available memory, the estimated maximum model length is 79424. The extensible KV cache already "
           "takes all device memory left after the model, its activations, CUDA graphs and warmup; decrease "
           "`max_model_len` or `max_num_seqs`, or the model needs a device with more memory.")
    led = build([("server_version", {"version": "0.34.0"}, 1)], [(msg, 20)])
    led.total_gib = 80.0
    assert (led.util, led.block_size) == (1.0, 64)
    fix = led.max_model_len_fix()
    assert "`--max-model-len 79424` (a multiple of the block size 64)" in fix  # 79424 = 1241 × 64
    assert "--gpu-memory-utilization" not in fix
    given = build([("server_version", {"version": "0.34.0"}, 1),
                   ("server_args", {"args": {"block_size": 16}}, 2)], [(msg.replace("79424", "79440"), 20)])
    assert given.block_size == 16 and given.fitting_len() == 79440
