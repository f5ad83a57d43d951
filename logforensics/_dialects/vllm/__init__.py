"""vLLM's dialect: its line prefix, event table, phases, arguments and release facts.

The event table is ``events.py``, the memory ledger ``memory.py``; the catalog is
``patterns/vllm/``. Formats from vLLM's released source, 0.6.6 to 0.34
(``shared/reference/vllm-log-format.md``): the record prefix ``LEVEL mm-dd hh:mm:ss
[file:line] `` (no brackets before 0.8), the process prefix ``(EngineCore_DP0 pid=N)``,
``(VllmWorker rank=0 pid=N)``, ``(APIServer pid=N)`` in front of it (split off as the line's
wrapper, so each process's traceback is assembled on its own).
"""

from __future__ import annotations

from ..._lazyre import lazy
from ..._lines import ServerPrefix
from ..base import Dialect, LaunchArgs, SiteData, StatsMarks, bundled_dir, load_facts
from .events import RULES
from .memory import CONDITIONS, memory_facts

# "INFO 04-17 15:10:09 [engine.py:448] msg" (0.8+), "INFO 02-26 09:54:02 model_runner.py:1115] msg"
# (≤0.7), "ERROR 2025-07-21 14:34:24.934 file.py:62] msg" (NIM's format); with DEBUG the file is a
# shortened path ("v1/engine/.../core.py").
PREFIX = ServerPrefix(
    lazy(r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<ts>(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d)"
         r"(?:[.,](?P<frac>\d{1,6}))? \[?[\w.-]{1,120}(?:/[\w.-]{1,120}){0,12}:\d{1,6}\] ?"),
    first="DIWEC",
    repeated=True,
)

DIALECT = Dialect(
    name="vllm",
    label="vLLM",
    prefix=PREFIX,
    rules=RULES,
    markers=(
        lazy(r"vLLM API server version |Initializing an? (?:V\d )?LLM engine \(v|vllm serve\b|"
             r"\((?:EngineCore(?:_DP\d+|_\d+)?|APIServer) pid=\d+\)|Engine core initialization failed"
             r"|vllm/_C\b|\(VllmWorker(?:Process| rank=\d+|-\d+)? pid=|"
             r"\((?:ApiServer_\d+|Worker(?:_(?:DP|PP|PCP|TP|DCP|EP)\d+)+) pid=\d+\)|"
             r"\bvllm\.entrypoints\.openai\.api_server\b|vLLM server version |\u2588\s+version\s+\d+\.\d+|"
             r"\bgpu_memory_utilization\b|GPU memory utilization|Error initializing vLLM engine|vLLM config: |"
             r"^\s*Value error, |^usage: vllm \[|^vllm(?: serve)?: error: |"
             r"(?:site|dist)-packages/vllm/(?:v1|engine|worker|entrypoints|executor|tokenizers|transformers_utils|reasoning|tool_parsers|renderers)/"),
        # vLLM's engine configs are pydantic dataclasses (SGLang's ServerArgs is not): a headless
        # paste of their validation error is vLLM's
        lazy(r"\d+ validation errors? for (?:Vllm|Model|Cache|Parallel|Scheduler|Device|Load|LoRA|"
             r"Speculative|StructuredOutputs|Observability|KVTransfer|KVEvents|ECTransfer|Compilation|"
             r"Pass|MultiModal|Pooler|Decoding|SpeechToText|EPLB|Attention|Kernel|Profiler|\w*Offload)Config\b"),
    ),
    hints=(
        # a frame of vLLM's package outside the markers' (platforms/, model_executor/, utils…):
        # SGLang imports some of that code, so its tracebacks may show such frames too
        lazy(r"(?:site|dist)-packages/vllm/|/vllm/vllm/"),
        # the multiprocessing worker before its parallel groups exist (then "Worker_TP1"): a name
        # another program's process may have too
        lazy(r"^\(Worker pid=\d+\) "),
        # pydantic's error detail: vLLM's configs are pydantic dataclasses (SGLang's arguments
        # are not), a tail that lost the "N validation errors for …Config" header keeps this
        lazy(r"^\s*Input should be [^\n]{1,200}?\[type=\w+, input_value="),
    ),
    event_phase={
        "server_version": "launch", "server_args": "args", "max_model_len": "args",
        "architecture": "args", "platform": "init", "engine_started": "init", "dist_rank": "init",
        "weight_load_begin": "weights", "weight_load_end": "weights",
        "torch_compile": "kv_alloc", "memory_budget": "kv_alloc", "memory_split": "kv_alloc",
        "kv_available": "kv_alloc", "graph_profiling": "kv_alloc", "kv_blocks": "kv_alloc",
        "kv_tokens": "kv_alloc", "kv_concurrency": "kv_alloc",
        "cuda_graph_begin": "cuda_graph", "cuda_graph_progress": "cuda_graph", "cuda_graph_end": "cuda_graph",
        "eager_mode": "cuda_graph", "engine_ready": "warmup", "weight_load_progress": "weights",
        # vLLM prints its URL and routes once the engine is up; uvicorn's startup follows at once
        "api_server_start": "ready",
        "server_started": "warmup", "uvicorn_running": "warmup",
        "ready": "ready",
        "decode_batch": "serving",
    },
    frame_phases=(
        ("args", lazy(r"arg_utils\.py|vllm/config/|vllm/config\.py|argparse|cli_args\.py|"
                      r"transformers_utils/config\.py|create_engine_config")),
        ("init", lazy(r"init_device|init_distributed_environment|parallel_state\.py|pynccl|"
                      r"ensure_model_parallel_initialized|cpu_worker\.py:__init__")),
        ("weights", lazy(r"load_model|model_loader|load_weights|weight_utils|initialize_model")),
        ("kv_alloc", lazy(r"determine_available_memory|determine_num_available_blocks|profile_run|"
                          r"kv_cache_utils|kv_cache_planning|initialize_cache|_initialize_kv_caches|"
                          r"raise_if_cache_size_invalid")),
        # a frame that captures (capture_model, _capture_cudagraphs, …, torch's capture context),
        # not the graph wrapper every V1 forward passes (vllm/compilation/cuda_graph.py:__call__,
        # cudagraph_dispatcher): an OOM while serving has those frames too
        ("cuda_graph", lazy(r":\w*capture|cuda/graphs\.py:__(?:enter|exit)__")),
        ("warmup", lazy(r"_dummy_sampler_run|_dummy_pooler_run|compile_or_warm_up_model")),
        ("serving", lazy(r"execute_model|sample_tokens|step_with_batch_queue|run_busy_loop|"
                         r"process_input_sockets|output_handler")),
    ),
    memory_kinds=frozenset({
        "server_args", "max_model_len", "weight_load_end", "memory_budget", "memory_split",
        "kv_available", "graph_profiling", "kv_blocks", "kv_tokens", "kv_concurrency", "cuda_graph_end",
        "server_version", "weight_load_begin", "torch_compile", "cuda_graph_begin", "cuda_graph_progress",
        "eager_mode", "engine_ready", "api_server_start", "ready", "dist_rank", "weight_load_progress", "oom_line",
    }),
    ending_kinds=frozenset({"subprocess_crashed", "killed", "shutdown", "init_failed",
                            "component_exception"}),
    startup_kinds=frozenset({"weight_load_begin"}),
    launch_kinds=frozenset({"server_args"}),
    key_args=(
        "model", "model_tag", "served_model_name", "tensor_parallel_size", "pipeline_parallel_size",
        "data_parallel_size", "gpu_memory_utilization", "max_model_len", "max_num_seqs",
        "max_num_batched_tokens", "kv_cache_dtype", "dtype", "quantization", "enforce_eager",
        "cpu_offload_gb", "enable_prefix_caching", "trust_remote_code", "port", "host",
    ),
    # not Ray's wrappers: its workers may run on other hosts
    pid_wrappers=("APIServer pid=", "EngineCore", "VllmWorker", "Worker"),
    server_command=lazy(r"vllm serve|vllm\.entrypoints|VLLM::|-m vllm\b"),
    process_name="vllm",
    launch_example="vllm serve MODEL …",
    ready_line="Application startup complete.",
    memory_flags=("--gpu-memory-utilization", "--max-model-len"),
    stats=StatsMarks(request_mark=b" request ",  # (Received/Added/Finished request <id>)
                     series=((b"Avg generation throughput: ",), (b"Waiting: ", b"Pending: "),
                             (b"GPU KV cache usage: ", b"KV cache usage: "), (b"Running: ",)), usage_per_unit=100.0),
    facts=load_facts(bundled_dir() / "vllm" / "facts.toml"),
    memory_facts=memory_facts,
    facts_read_tail=True,  # its ledger reads OOM messages in the run's last lines (memory.run_ledger)
    conditions=CONDITIONS,
    # the multiprocessing executor's multi-node launch (--nnodes/--node-rank/--master-addr, 0.11+);
    # "non-default args" leaves out node_rank 0 and the default port
    launch_args=LaunchArgs("nnodes", "node_rank", ("master_addr", "master_port"), "tensor_parallel_size"),
    # vLLM's raise/assert/log sites over its wheels 0.6.6.post1-0.34.0 (tools/index_vllm.py)
    sites=SiteData(index_file="vllm_sites.idx", categories="vllm_site_categories.toml", package="vllm",
                   core="vllm/"),
)
