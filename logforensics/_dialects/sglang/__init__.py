"""SGLang's dialect: its line prefix, event table, phases, arguments and release facts.

The event table is ``events.py``, the memory ledger ``memory.py`` (its formulas ``sizing.py``,
its fix sentences ``fixes.py``); the facts (flag renames, version hints, hybrid model
classes, hang hints) are ``patterns/sglang/facts.toml``; the catalog is ``patterns/sglang/``.
"""

from __future__ import annotations

from ..._lazyre import lazy
from ..._lines import ServerPrefix
from ..base import Dialect, LaunchArgs, SiteData, StatsMarks, bundled_dir, load_facts
from .events import RULES
from .fixes import memory_facts
from .memory import CONDITIONS, read_ledger

# "[2026-03-23 14:01:38(.123)? DP1 TP3 EP3] msg"; short "[03-23 14:01:38 TP0] msg"; the
# leading "[" may be lost when a paste is cut.
PREFIX = ServerPrefix(
    lazy(r"\[?(?P<ts>(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,](?P<frac>\d{1,6}))?"
         r"(?P<tags>(?: (?:[A-Z_]+\d+|encode_server|encode_dp_worker\[\d+\]))*)\] ?"),
    first="[0123456789",
)

DIALECT = Dialect(
    name="sglang",
    label="SGLang",
    prefix=PREFIX,
    rules=RULES,
    markers=(
        lazy(r"sglang\.launch_server|sglang serve\b|server_args=(?:ServerArgs\(|\{'model_path')|sglang[/.]srt[/.]"
             r"|sglang version: |The server is fired up and ready to roll"),
    ),
    hints=(),  # its frames (sglang/srt/) are markers: no other server's log carries them
    event_phase={
        "launch_command": "launch", "launch_banner": "launch", "server_args": "args",
        "dist_init_begin": "init", "dist_init_end": "init", "memory_baseline": "init",
        "mem_unbalanced": "init",
        "weight_load_begin": "weights", "weight_load_end": "weights",
        "kv_cache_alloc": "kv_alloc", "mamba_cache_alloc": "kv_alloc", "swa_pool": "kv_alloc",
        "hicache_alloc": "kv_alloc", "memory_pool_end": "kv_alloc",
        "cuda_graph_begin": "cuda_graph", "cuda_graph_progress": "cuda_graph",
        "cuda_graph_end": "cuda_graph",
        "scheduler_budget": "warmup", "startup_timings": "warmup", "server_started": "warmup",
        "uvicorn_running": "warmup",
        "ready": "ready",
        "prefill_batch": "serving", "decode_batch": "serving", "kv_retract": "serving",
    },
    # The phase a traceback was raised in, read from its frames (innermost match wins): a tail -5
    # paste often has no phase lines at all, but its frames say where the launch was.
    frame_phases=(
        ("args", lazy(r"server_args\.py|/arg_groups/|argparse\.py")),
        ("init", lazy(r"init_torch_distributed|initialize_model_parallel|init_distributed|"
                      r"parallel_state\.py|bootstrap\.py|rendezvous|pynccl")),
        ("weights", lazy(r"load_weights?\b|model_loader|weight_utils|load_model\b|"
                         r"from_pretrained|safetensors")),
        ("kv_alloc", lazy(r"memory_pool|init_memory_pool|kv_cache_configurator|"
                          r"pool_configurator|init_cache_with_memory_pool|hiradix_cache")),
        # a frame that captures or sets the graphs up, not a graph runner's replay (every decode
        # step while serving runs in cuda_graph_runner.py:replay)
        ("cuda_graph", lazy(r"graph_runner\w*\.py:(?:__init__|run_once)|:\w*capture|init_device_graphs|"
                            r"init_cuda_graphs|cuda_graph_setup|cuda/graphs\.py:__(?:enter|exit)__")),
        ("warmup", lazy(r"_wait_and_warmup|\bwarmup\b")),
        ("serving", lazy(r"event_loop|run_batch|forward_batch|process_batch_result|"
                         r"handle_generate_request|detokenizer_manager|self_check_during_idle")),
    ),
    memory_kinds=frozenset({
        "dist_init_end", "memory_baseline", "mem_unbalanced", "weight_load_begin", "weight_load_end",
        "kv_cache_alloc", "mamba_cache_alloc", "swa_pool", "hicache_alloc", "memory_pool_end",
        "cuda_graph_begin", "cuda_graph_end", "scheduler_budget",
        "cuda_graph_progress", "max_running_capped",  # capture progress, Mamba slots per request
    }),
    ending_kinds=frozenset({
        "sigquit_child", "sigquit_running", "sigterm", "rank_dead", "rank_died", "exit_code",
        "subprocess_crashed", "killed", "kill_process_tree", "shutdown", "warmup_failed",
        "init_failed", "watchdog_timeout", "component_exception",
    }),
    startup_kinds=frozenset({"dist_init_begin", "weight_load_begin"}),
    launch_kinds=frozenset({"server_args", "launch_command", "launch_banner"}),
    key_args=(
        "model_path", "served_model_name", "tp_size", "dp_size", "pp_size", "ep_size",
        "mem_fraction_static", "context_length", "chunked_prefill_size", "page_size",
        "max_running_requests", "max_total_tokens", "attention_backend", "dtype", "kv_cache_dtype",
        "quantization", "speculative_algorithm", "speculative_num_draft_tokens",
        "disable_radix_cache", "enable_hierarchical_cache", "mamba_scheduler_strategy",
        "mamba_radix_cache_strategy", "max_mamba_cache_size", "mamba_full_memory_ratio",
        "cuda_graph_max_bs", "disable_cuda_graph", "enable_torch_compile", "enable_dp_attention",
        "mm_enable_dp_encoder", "trust_remote_code", "port", "host", "dist_init_addr", "nnodes",
    ),
    pid_wrappers=("SGLangEngine pid=", "SchedulerActor pid="),
    server_command=lazy(r"sglang\.launch_server|sglang serve|sglang::|-m sglang\b|sglang\.srt"),
    process_name="sglang",
    launch_example="python -m sglang.launch_server …",
    ready_line="The server is fired up and ready to roll",
    memory_flags=("--mem-fraction-static", "--context-length"),
    stats=StatsMarks(request_mark=b": obj=",
                     series=((b"gen throughput (token/s): ",), (b"#queue-req: ",), (b"token usage: ",),
                             (b"#running-req: ",))),
    facts=load_facts(bundled_dir() / "sglang" / "facts.toml"),
    launch_args=LaunchArgs("nnodes", "node_rank", ("dist_init_addr",), "tp_size"),
    sites=SiteData(index_file="sglang_sites.idx", categories="site_categories.toml", package="sglang",
                   core="sglang/srt/", flags="sglang_flags.json.gz",
                   defaults="sglang_defaults.json"),
    memory_ledger=read_ledger,
    conditions=CONDITIONS,
    memory_facts=memory_facts,
)
