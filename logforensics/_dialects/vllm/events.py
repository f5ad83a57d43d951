"""vLLM's event table: the lines of its start-up, serving and shutdown, as data.

The formats come from vLLM's released source (0.6.6, 0.13, 0.33, 0.34; spot checks of 0.8.5 and
0.9.2), see ``shared/reference/vllm-log-format.md`` §3. Rules match the message after the
prefixes (``(EngineCore_DP0 pid=N)``, ``INFO mm-dd hh:mm:ss [file:line]``) are split off;
regexes accept every release's wording. Numbers printed with thousands separators
("251,920 tokens") are read by ``_numbers``.
"""

from __future__ import annotations

import re
from typing import Any

from ..._events import (
    SHELL_JOB_KILLED,
    SHELL_KILLED,
    UVICORN_ACCESS,
    UVICORN_FINISHED,
    UVICORN_RUNNING,
    UVICORN_SHUTTING_DOWN,
    UVICORN_STARTED,
    WARNING,
    Rule,
    convert,
    parse_arg_value,
)
from ..._lazyre import lazy


def _numbers(m: re.Match[str], _msg: str) -> dict[str, Any]:
    """Named groups as values; "251,920" → 251920."""
    out: dict[str, Any] = {}
    for key, value in m.groupdict().items():
        if value is not None:
            out[key] = convert(value.replace(",", "")) if re.fullmatch(r"-?[\d,]+(?:\.\d+)?", value) else convert(value)
    return out


# non-default args: {'model_tag': 'x', 'max_model_len': 8192, ...}; args: Namespace(k=v, ...)
_DICT_ITEM = lazy(r"'(\w{1,64})': ('(?:[^'\\]|\\.){0,2000}'|\"(?:[^\"\\]|\\.){0,2000}\"|[^,{}\[\]]{0,200})")
_KW_ITEM = lazy(r"(\w{1,64})=('(?:[^'\\]|\\.){0,2000}'|\"(?:[^\"\\]|\\.){0,2000}\"|[^,()]{0,200})")


def _args(m: re.Match[str], msg: str) -> dict[str, Any]:
    body = m.group("body")
    items = (_DICT_ITEM if m.group("form") == "{" else _KW_ITEM).findall(body)
    return {"args": {k: parse_arg_value(v) for k, v in items}}


def _engine_config(m: re.Match[str], msg: str) -> dict[str, Any]:
    """The engine banner: its version, and the config keys logx reads (the dump is long)."""
    out = _numbers(m, msg)
    config = {k: parse_arg_value(v) for k, v in _KW_ITEM.findall(m.group("config") or "")}
    keep = ("model", "dtype", "max_seq_len", "tensor_parallel_size", "pipeline_parallel_size",
            "quantization", "enforce_eager", "kv_cache_dtype", "device_config", "served_model_name")
    out["config"] = {k: config[k] for k in keep if k in config}
    return out


_METRICS_PAIR = lazy(r"(Running|Waiting|Swapped|Pending|Preemptions): (\d+)")
_KV_USAGE = lazy(r"(?:GPU )?KV cache usage: ([\d.]+)%")


def _metrics(m: re.Match[str], msg: str) -> dict[str, Any]:
    """vLLM's periodic statistics line, in the shared serving fields (``running_req``,
    ``queue_req``, ``token_usage`` as a fraction, ``gen_throughput``) so reports and the
    statistics fast path read it as they read SGLang's decode batch lines."""
    out: dict[str, Any] = {"prompt_throughput": float(m.group("prompt_tps")),
                           "gen_throughput": float(m.group("gen_tps"))}
    pairs = {k.lower(): int(v) for k, v in _METRICS_PAIR.findall(msg)}
    if "running" in pairs:
        out["running_req"] = pairs["running"]
    queued = pairs.get("waiting", pairs.get("pending"))
    if queued is not None:
        out["queue_req"] = queued
    if "preemptions" in pairs:
        out["preemptions"] = pairs["preemptions"]
    usage = _KV_USAGE.search(msg)
    if usage:
        out["token_usage"] = round(float(usage.group(1)) / 100, 4)
    return out


RULES: tuple[Rule, ...] = (
    # — launch: banner, arguments, model config —
    Rule("server_version", r"vLLM API server version (?P<version>\d+\.\d+\.\d+\S*)", starts="vLLM API server version"),
    Rule("server_version", r"vLLM server version (?P<version>\d+\.\d+\.\d+\S*), serving model (?P<model>\S+)",
         starts="vLLM server version"),
    Rule("server_version", r"\u2588\s+version\s+(?P<version>\d+\.\d+\.\d+\S*)\s*$", contains=" version "),
    Rule("server_args", r"non-default args: (?P<form>\{)(?P<body>.*)", starts="non-default args:", parse=_args),
    Rule("server_args", r"args: (?P<form>Namespace\()(?P<body>.*)", starts="args: Namespace(", parse=_args),
    Rule("platform", r"Automatically detected platform (?P<platform>\w+)\.", starts="Automatically detected"),
    Rule("no_platform", r"No platform detected", starts="No platform detected"),
    Rule("architecture", r"Resolved architecture: (?P<architecture>\w+)", starts="Resolved architecture"),
    Rule("max_model_len", r"Using max model len (?P<max_model_len>\d+)", starts="Using max model len"),
    # the engine's banner: its version is the surest release stamp, its config the limits
    Rule("server_version", r"Initializing an? (?:(?P<engine>V\d) )?LLM engine \(v(?P<version>[^)]+)\) with"
                           r" config: (?P<config>.*)",
         starts="Initializing", parse=_engine_config),
    Rule("engine_started", r"Started engine process with PID (?P<pid>\d+)", starts="Started engine process"),
    # — distributed init —
    Rule("dist_rank", r"rank (?P<rank>\d+) in world size (?P<world_size>\d+) is assigned as DP rank (?P<dp_rank>\d+), "
         r"PP rank (?P<pp_rank>\d+), (?:PCP rank \d+, )?TP rank (?P<tp_rank>\d+)", starts="rank ", parse=_numbers),
    # — weights —
    Rule("weight_load_begin", r"Starting to load model (?P<model>.+?)\.\.\.", starts="Starting to load model"),
    # Model Runner V2 (0.12+, opt-in; the only runner from 0.34) names no model
    Rule("weight_load_begin", r"Loading model from scratch\.\.\.", starts="Loading model from scratch"),
    Rule("weight_load_progress", r"Loading (?:safetensors|pt|bin)? ?checkpoint shards:\s+(?P<percent>\d+)% Completed",
         starts="Loading "),
    Rule("weight_load_end", r"Model loading took (?P<weights_gib>[\d.]+) ?GiB(?: memory)? and (?P<elapsed>[\d.]+) ?s",
         starts="Model loading took"),
    Rule("weight_load_end", r"Loading model weights took (?P<weights_gib>[\d.]+) GB", starts="Loading model"
                                                                                             " weights took"),
    # — torch.compile —
    Rule("torch_compile", r"(?:Dynamo bytecode transform time: (?P<dynamo_s>[\d.]+) s|torch\.compile (?:takes|took) "
         r"(?P<total_s>[\d.]+) s in total|Compiling a graph for .*? takes (?P<compile_s>[\d.]+) s|Directly load the "
         r"compiled graph)", contains="ompil"),
    Rule("torch_compile", r"Dynamo bytecode transform time: (?P<dynamo_s>[\d.]+) s", starts="Dynamo bytecode"),
    # — memory profiling and the KV cache —
    Rule("memory_budget", r"the current vLLM instance can use total_gpu_memory \((?P<total_gib>[\d.]+)GiB\) x "
         r"gpu_memory_utilization \((?P<util>[\d.]+)\) = (?P<budget_gib>[\d.]+)GiB", starts="the current vLLM"
                                                                                            " instance"),
    Rule("memory_split", r"model weights take (?P<weights_gib>-?[\d.]+)GiB; non_torch_memory takes "
                         r"(?P<non_torch_gib>-?[\d.]+)GiB; "
         r"PyTorch activation peak memory takes (?P<activation_gib>-?[\d.]+)GiB; the rest of the memory reserved for "
         r"KV Cache is (?P<kv_gib>-?[\d.]+)GiB", starts="model weights take"),
    Rule("kv_available", r"Available KV cache memory: (?P<kv_gib>-?[\d.]+) GiB", starts="Available KV cache memory"),
    Rule("kv_available", r"Initial free memory (?P<free_gib>[\d.]+) GiB, reserved (?P<kv_gib>[\d.]+) GiB memory"
                         r" for KV Cache",
         starts="Initial free memory"),
    Rule("graph_profiling", r"CUDA graph memory profiling is (?P<state>enabled|disabled)",
         starts="CUDA graph memory profiling"),
    Rule("kv_blocks", r"# (?P<device>GPU|cuda|cpu|xpu|hpu|tpu|neuron|npu) blocks: (?P<gpu_blocks>\d+)(?:, # CPU"
                      r" blocks: (?P<cpu_blocks>\d+))?",
         starts="# "),
    Rule("kv_tokens", r"(?:(?P<device>[A-Z]+(?: \+ host)?) )?KV cache size: (?P<kv_tokens>[\d,]+) tokens"
         r"(?:, Maximum concurrency for (?P<per_request>[\d,]+) tokens per request: (?P<concurrency>[\d.]+)x)?",
         contains="KV cache size:", parse=_numbers),
    Rule("kv_concurrency", r"Maximum concurrency for (?P<per_request>[\d,]+) tokens per request: "
                           r"(?P<concurrency>[\d.]+)x",
         starts="Maximum concurrency", parse=_numbers),
    # — CUDA graphs —
    Rule("cuda_graph_begin", r"Capturing (?:cudagraphs for decoding|the model for CUDA graphs)\.", starts="Capturing "),
    Rule("cuda_graph_progress", r"Capturing CUDA graph(?:s| shapes)(?: \((?P<graph_kind>[^,)]{1,40}), "
                                r"(?P<mode>[A-Z_]+)\))?:\s+(?P<percent>\d+)%",
         starts="Capturing CUDA graph"),
    Rule("cuda_graph_end", r"Graph capturing finished in (?P<elapsed>\d+) secs?, took (?P<graph_gib>-?[\d.]+) GiB",
         starts="Graph capturing finished"),
    Rule("eager_mode", r"Cudagraph is disabled under eager mode", starts="Cudagraph is disabled"),
    Rule("engine_ready", r"init engine \(profile, create kv cache, warmup model\) took (?P<elapsed>[\d.]+) ?s",
         starts="init engine"),
    # — API server up —
    Rule("api_server_start", r"Starting vLLM (?:API )?server(?: (?P<index>\d+))? on (?P<url>\S+)",
         starts="Starting vLLM"),
    UVICORN_STARTED,
    UVICORN_RUNNING,
    Rule("ready", r"Application startup complete\.", starts="Application startup complete"),
    # — serving —
    # One statistics line per interval (V1 "Engine 000: Avg prompt throughput: …", V0 without
    # the engine): the serving statistics event, as SGLang's decode batch line is.
    Rule("decode_batch", r"(?:(?:Engine \d{3}|\d+ Engines Aggregated): )?Avg prompt throughput: "
                         r"(?P<prompt_tps>[\d.]+) tokens/s, "
         r"Avg generation throughput: (?P<gen_tps>[\d.]+) tokens/s", contains="Avg prompt throughput", parse=_metrics),
    # request logging (on by default up to 0.6.x, --enable-log-requests since): "Received request
    # <id>: prompt: '…'" (user content), "Added request <id>.", "Finished request <id>." (0.6.6
    # entrypoints/logger.py, engine/async_llm_engine.py; 0.13 v1/engine/async_llm.py)
    Rule("request_log", r"(?P<verb>Received|Added|Finished) request ", starts="Received request "),
    Rule("request_log", r"(?P<verb>Received|Added|Finished) request ", starts="Added request "),
    Rule("request_log", r"(?P<verb>Received|Added|Finished) request ", starts="Finished request "),
    UVICORN_ACCESS,
    Rule("input_too_long", r"This model's maximum context length is (?P<max_tokens>\d+) tokens\. However, "
         r"(?:your request has|you requested|your prompt contains) (?P<input_tokens>\d+)",
         contains="maximum context length is"),
    # — failure and end of life —
    Rule("oom_line", r"(?:CUDA|HIP|NPU|XPU) out of memory|CUDA error: out of memory", contains=" out of memory"),
    Rule("component_exception", r"(?P<component>EngineCore|WorkerProc) (?:failed to start|hit an exception"
                                r"|encountered a fatal error)",
         contains="Core"),
    Rule("component_exception", r"(?P<component>WorkerProc) (?:failed to start|hit an exception)", starts="WorkerProc"),
    Rule("subprocess_crashed", r"Worker proc (?P<name>\S+) died unexpectedly(?: \(exit code: (?P<exit_code>-?\d+)\))?",
         starts="Worker proc"),
    Rule("subprocess_crashed", r"Engine core (?:proc|process) (?P<name>\S+) died unexpectedly", starts="Engine core"),
    Rule("init_failed", r"Engine core initialization failed\. See root cause above", contains="Engine core"
                                                                                              " initialization failed"),
    SHELL_JOB_KILLED,
    SHELL_KILLED,
    Rule("shutdown", r"Shutting down(?: FastAPI HTTP server| Ray distributed executor)?\.", starts="Shutting down"),
    Rule("shutdown", r"Engine is gracefully shutting down", starts="Engine is gracefully"),
    Rule("shutdown", r"\[shutdown\] (?:EngineCore: trigger received signal=(?P<signal>SIG[A-Z]+)|API server:"
                     r" shutdown triggered)",
         starts="[shutdown]"),
    Rule("shutdown", r"Application shutdown complete", starts="Application shutdown"),
    UVICORN_SHUTTING_DOWN,
    UVICORN_FINISHED,
    # — warnings (last: anything more specific wins) —
    WARNING,
)
