"""SGLang's line rules: the event table its dialect tokenizes with.

The formats come from SGLang's source across releases 0.4.6–0.5.23 (see
``shared/reference/sglang-log-format.md``); regexes accept every release's wording. Order
matters among the ``contains`` rules: the first that matches wins, warnings come last.
"""

from __future__ import annotations

import re
from typing import Any

from ..._events import (
    ARGPARSE_ERROR,
    ARGPARSE_USAGE,
    SHELL_JOB_KILLED,
    SHELL_KILLED,
    UVICORN_ACCESS,
    UVICORN_FINISHED,
    UVICORN_RUNNING,
    UVICORN_SHUTTING_DOWN,
    UVICORN_STARTED,
    WARNING,
    Rule,
    pairs,
    parse_arg_value,
)
from ..._lazyre import lazy

# server_args: "ServerArgs(model_path='x', tp_size=2, …)" (≤0.5.18) or "{'model_path': 'x', …}"
_ARG_REPR = lazy(
    r"(\w{1,128})=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|\{[^}]*\}|[^,()]*(?:\([^()]*\))?)"
)
_ARG_DICT = lazy(
    r"'(\w+)': ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|\{[^}]*\}|[^,{}\[\]]*)"
)


def _server_args(m: re.Match[str], msg: str) -> dict[str, Any]:
    body = m.group("body")
    found = (_ARG_DICT if m.group("form") == "{" else _ARG_REPR).findall(body)
    return {
        "form": "dict" if m.group("form") == "{" else "repr",
        "args": {k: parse_arg_value(v) for k, v in found},
    }


RULES: tuple[Rule, ...] = (
    # — launch —
    Rule("server_args", r"server_args=(?P<form>ServerArgs\(|\{)(?P<body>.*)",
         starts="server_args=", parse=_server_args),
    # (before launch_command: both lines also name "python -m sglang.launch_server")
    Rule("launch_banner", r"'python -m sglang\.launch_server' is still supported",
         contains="is still supported"),
    SHELL_JOB_KILLED,
    Rule("launch_command", r"(?:python[\d.]*\s+-m\s+sglang\.launch_server|sglang serve)\b",
         contains="sglang"),
    Rule("server_version", r"(?:sglang version: |sglang: |sglang==)v?(?P<version>\d+\.\d+\.\d+\w*)",
         contains="sglang"),
    # — distributed init —
    Rule("dist_init_begin", r"Init (?:torch distributed|parallel) begin", starts="Init "),
    Rule("dist_init_end",
         r"Init (?:torch distributed|parallel) ends\.(?: elapsed=(?P<elapsed>[\d.]+) s)?,?"
         r"(?: mem usage=(?P<mem_usage_gb>-?[\d.]+) GB)?", starts="Init "),
    Rule("memory_baseline", r"Memory baseline taken\. mem usage=(?P<mem_usage_gb>-?[\d.]+) GB",
         starts="Memory baseline"),
    Rule("mem_unbalanced", r"The memory capacity is unbalanced", starts="The memory capacity",
         parse=pairs),
    # — weights —
    Rule("weight_load_begin", r"Load weight begin\.(?: avail mem=(?P<avail_gb>[\d.]+) GB)?",
         starts="Load weight begin"),
    Rule("weight_load_end",
         r"Load weight end\. (?:elapsed=(?P<elapsed>[\d.]+) s, )?type=(?P<model_class>\w+), "
         r"(?:dtype=(?P<dtype>[\w.]+), )?(?:(?P<quant>quant=[^\n]*?), )?"
         r"avail mem=(?P<avail_gb>[\d.]+) GB(?:, mem usage=(?P<mem_usage_gb>-?[\d.]+) GB)?",
         starts="Load weight end"),
    Rule("weight_load_end",
         r"Load weight end\. Committed real weights after CUDA graph capture in (?P<elapsed>[\d.]+) s",
         starts="Load weight end"),
    # — memory pools —
    Rule("kv_cache_alloc",
         r"(?:(?P<label>[\w -]{1,64}?) )?KV Cache (?:is allocated|VA upper bound|allocated)\. "
         r"(?:dtype: (?P<dtype>[\w.]+), )?#tokens: (?P<tokens>\d+), "
         r"(?:K size: (?P<k_gb>[\d.]+) GB, V size: (?P<v_gb>[\d.]+) GB|KV size: (?P<kv_gb>[\d.]+) GB)",
         contains="KV Cache"),
    Rule("kv_cache_alloc",
         r"Post-capture KV sizing: KV cache allocated\. (?:dtype: (?P<dtype>[\w.]+), )?"
         r"#tokens: (?P<tokens>\d+), KV size: (?P<kv_gb>[\d.]+) GB(?:, avail mem=(?P<avail_gb>[\d.]+) GB)?",
         starts="Post-capture KV sizing: KV cache"),
    Rule("mamba_cache_alloc",
         r"Mamba Cache is allocated\. (?:max_mamba_cache_size: (?P<max_mamba_cache_size>\d+), )?"
         r"conv_state size: (?P<conv_gb>[\d.]+) ?GB, ssm_state size: (?P<ssm_gb>[\d.]+) ?GB"
         r"(?:,? ?intermediate_ssm_state_cache size: (?P<inter_ssm_gb>[\d.]+) ?GB)?"
         r"(?:,? ?intermediate_conv_window_cache size: (?P<inter_conv_gb>[\d.]+) ?GB)?",
         starts="Mamba Cache"),
    Rule("swa_pool",
         r"Use sliding window memory pool(?: \(all SWA\))?\. "
         r"(?:full_layer_tokens=(?P<full_tokens>\d+), )?swa_layer_tokens=(?P<swa_tokens>\d+)",
         starts="Use sliding window"),
    Rule("hicache_alloc", r"Allocating (?:(?P<gb>[\d.]+) GB host memory for hierarchical|"
         r".*?hierarchical KV host pool: (?P<tokens>\d+) tokens, (?P<gb2>[\d.]+) GB)",
         starts="Allocating"),
    Rule("memory_pool_end", r"Memory pool end\. avail mem=(?P<avail_gb>[\d.]+) GB",
         starts="Memory pool end"),
    # — CUDA graphs —
    Rule("cuda_graph_begin",
         r"Capture (?P<name>.*?)(?:cuda|CUDA|cpu|CPU|npu|NPU|XPU|piecewise CUDA) graph begin\."
         r"(?:.*?avail mem=(?P<avail_gb>[\d.]+) GB)?", starts="Capture "),
    Rule("cuda_graph_end",
         r"Capture (?P<name>.*?)(?:cuda|CUDA|cpu|CPU|npu|NPU|XPU|piecewise CUDA) graph end\."
         r"(?=(?:.*?(?:Time elapsed: |elapsed=)(?P<elapsed>[\d.]+) s)?)"
         r"(?=(?:.*?mem usage=(?P<mem_usage_gb>-?[\d.]+) GB)?)"
         r"(?:.*?avail mem=(?P<avail_gb>[\d.]+) GB)?", starts="Capture "),
    Rule("cuda_graph_progress",
         r"Capturing batches \((?:bs=(?P<bs>\d+) )?avail_mem=(?P<avail_gb>[\d.]+) GB\)"
         r"(?::\s+(?P<percent>\d+)%)?", starts="Capturing batches"),
    Rule("cuda_graph_failed", r"Capture (?:cuda|CUDA) graph failed: ?(?P<error>.*)",
         contains="graph failed"),
    # — ready —
    Rule("scheduler_budget", r"max_total_num_tokens=(?P<max_total_num_tokens>\d+)",
         starts="max_total_num_tokens=", parse=pairs),
    Rule("startup_timings", r"Engine startup timings", starts="Engine startup", parse=pairs),
    UVICORN_STARTED,
    UVICORN_RUNNING,
    Rule("ready", r"The server is fired up and ready to roll", starts="The server is fired"),
    # — serving —
    Rule("prefill_batch", r"Prefill batch(?: \[(?P<iter>\d+)\])?[.,] ", starts="Prefill batch",
         parse=pairs),
    Rule("decode_batch", r"Decode batch(?: \[(?P<iter>\d+)\])?[.,] ", starts="Decode batch",
         parse=pairs),
    # --log-requests: "Receive: obj=GenerateReqInput(…)", "Finish: obj=…, out={…}" (user content)
    Rule("request_log", r"(?P<verb>Receive|Finish): obj=", starts="Receive: obj="),
    Rule("request_log", r"(?P<verb>Receive|Finish): obj=", starts="Finish: obj="),
    UVICORN_ACCESS,
    Rule("max_running_capped",
         r"max_running_requests is capped to (?P<max_running_requests>\d+) by the mamba state cache "
         r"\(max_mamba_cache_size=(?P<max_mamba_cache_size>\d+), (?P<slots_per_req>\d+) state slots",
         starts="max_running_requests is capped"),
    Rule("input_too_long",
         r"Input length \((?P<input_tokens>\d+) tokens\) exceeds the maximum allowed length "
         r"\((?P<max_tokens>\d+) tokens\)", starts="Input length ("),
    Rule("input_too_long",
         r"The input \((?P<input_tokens>\d+) tokens\) is longer than the model's context length "
         r"\((?P<max_tokens>\d+) tokens\)", starts="The input ("),
    Rule("kv_retract", r"KV cache pool is full\. Retract requests\. #retracted_reqs: (?P<n>\d+)",
         starts="KV cache pool is full", parse=pairs),
    Rule("kv_retract", r"Decode out of memory happened\. #retracted_reqs: (?P<n>\d+)",
         starts="Decode out of memory happened", parse=pairs),
    # — failure and end of life —
    ARGPARSE_USAGE,
    ARGPARSE_ERROR,
    Rule("health_check_failed",
         r"Health check failed\.(?: Server couldn't get a response from (?P<component>\w+) "
         r"for last (?P<timeout>\d+) seconds)?", starts="Health check failed"),
    Rule("kv_transfer_failed",
         r"(?P<side>Prefill|Decode) transfer failed for request(?: rank=(?P<rank>\d+))?"
         r".*?(?: with exception (?P<error>.*))?$", starts="Decode transfer failed"),
    Rule("kv_transfer_failed",
         r"(?P<side>Prefill|Decode) transfer failed for request(?: rank=(?P<rank>\d+))?"
         r".*?(?: with exception (?P<error>.*))?$", starts="Prefill transfer failed"),
    # vLLM's platform probe (vLLM is imported by SGLang's quantization and kernels too)
    Rule("platform_missing", r"No platform detected, vLLM is running on (?P<platform>\w+)",
         contains="No platform detected"),
    Rule("cuda_error", r"Failed: Cuda error (?P<location>\S+) '(?P<error>[^']*)", starts="Failed: Cuda error"),
    Rule("component_exception", r"(?P<component>\w{1,64}) hit an exception", contains="hit an exception"),
    Rule("sigquit_child", r"Received sigquit from a child proc", starts="Received sigquit"),
    Rule("sigquit_running", r"SIGQUIT received\.", starts="SIGQUIT received"),
    Rule("sigterm", r"SIGTERM received\.", starts="SIGTERM received"),
    Rule("rank_dead", r"Rank (?P<rank>\d+) scheduler is dead", starts="Rank "),
    Rule("rank_died",
         r"(?:RuntimeError: )?Rank (?P<rank>\d+) scheduler died during initialization "
         r"\(exit code: (?P<exit_code>-?\d+|None)\)", contains="scheduler died during"),
    Rule("exit_code", r"Exit code: (?P<exit_code>-?\d+)", starts="Exit code:"),
    Rule("subprocess_crashed",
         r"Subprocess (?P<name>\S+) \(pid=(?P<pid>\d+)\) crashed with exit code (?P<exit_code>-?\d+)",
         starts="Subprocess "),
    SHELL_KILLED,
    Rule("watchdog_timeout",
         r"(?P<component>\w{1,64} )?[Ww]atchdog timeout \(self\.watchdog_timeout=(?P<timeout>[\d.]+)",
         contains="atchdog timeout"),
    Rule("kill_process_tree",
         r"kill_process_tree called: parent_pid=(?P<parent_pid>\d+|None), "
         r"include_parent=(?P<include_parent>True|False)", starts="kill_process_tree"),
    Rule("warmup_failed", r"Initialization failed\. warmup error", starts="Initialization failed"),
    Rule("init_failed", r"Initialization failed\. Please see the error messages above",
         contains="Initialization failed. Please see"),
    UVICORN_SHUTTING_DOWN,
    UVICORN_FINISHED,
    # — warnings (last: anything more specific wins) —
    WARNING,
)


