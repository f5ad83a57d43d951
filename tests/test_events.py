"""Stage 3 — events: one real line per rule kind, typed fields, server_args in both forms.

Lines come from shared/reference/sglang-log-format.md §2 (wording across releases) and the
field corpus; ``regexes.tested_samples`` of sglang-source.json are replayed as well.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logforensics._dialects.sglang import DIALECT as SGLANG
from logforensics._dialects.sglang.events import RULES
from logforensics._events import Event, Rule, Tokenizer, convert
from logforensics._lines import decode
from logforensics._pipeline import parse
from logforensics._sources import RawLine

REFERENCE = Path(__file__).resolve().parent.parent.parent / "shared" / "reference" / "sglang-source.json"
TS = "[2026-03-23 14:01:38 TP0] "
LTS = "[2026-03-23 14:01:38] "


TOKENIZER = Tokenizer(RULES)


def tokenize(line):
    """SGLang's table on one decoded line."""
    return TOKENIZER.tokenize(line)


def decode_sglang(raw: RawLine):
    return decode(raw, SGLANG.prefix)


def event(text: str) -> Event:
    return tokenize(decode_sglang(RawLine(1, 0, text.encode())))


def assert_fields(actual: dict, expected: dict) -> None:
    """Every expected field is present with the same value *and type* (12 ≠ 12.0 ≠ True)."""
    for key, want in expected.items():
        assert key in actual, f"missing field {key!r} in {actual}"
        got = actual[key]
        assert got == want and type(got) is type(want), f"{key}: {got!r} ({type(got).__name__}) != {want!r}"


# (line, kind, expected fields ⊆ event.fields)
CASES = [
    # — launch —  (server_args in depth: test_server_args_* below)
    ("server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2)", "server_args", {"form": "repr"}),
    ("python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --port 30000", "launch_command", {}),
    ("$ sglang serve --model-path Qwen/Qwen3-8B", "launch_command", {}),
    ("/usr/lib/python3.12/site-packages/sglang/launch_server.py:12: UserWarning: 'python -m sglang.launch_server' "
     "is still supported, but 'sglang serve' is the recommended entrypoint.", "launch_banner", {}),
    ("sglang version: 0.5.9", "server_version", {"version": "0.5.9"}),
    ("sglang==0.5.3rc0", "server_version", {"version": "0.5.3rc0"}),
    # — distributed init —
    (TS + "Init torch distributed begin.", "dist_init_begin", {}),
    (TS + "Init parallel begin.", "dist_init_begin", {}),
    (TS + "Init torch distributed ends. mem usage=0.55 GB", "dist_init_end", {"mem_usage_gb": 0.55}),
    (TS + "Init torch distributed ends. elapsed=1.23 s, mem usage=0.55 GB", "dist_init_end",
     {"elapsed": 1.23, "mem_usage_gb": 0.55}),
    (TS + "Init parallel ends. elapsed=2.10 s", "dist_init_end", {"elapsed": 2.1}),
    (TS + "Memory baseline taken. mem usage=0.61 GB", "memory_baseline", {"mem_usage_gb": 0.61}),
    (TS + "The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
     "pre_model_load_memory=20.5, local_gpu_memory=79.1, local_gpu_memory * 0.9=71.19", "mem_unbalanced",
     {"pre_model_load_memory": 20.5, "local_gpu_memory": 79.1}),
    # — weights —
    (TS + "Load weight begin. avail mem=78.50 GB", "weight_load_begin", {"avail_gb": 78.5}),
    (TS + "Load weight end. type=MistralForCausalLM, dtype=torch.bfloat16, avail mem=9.69 GB", "weight_load_end",
     {"model_class": "MistralForCausalLM", "dtype": "torch.bfloat16", "avail_gb": 9.69}),
    (TS + "Load weight end. elapsed=12.30 s, type=Qwen3ForCausalLM, quant=fp8, fmt=e4m3, avail mem=63.40 GB, "
     "mem usage=15.10 GB.", "weight_load_end",
     {"elapsed": 12.3, "model_class": "Qwen3ForCausalLM", "avail_gb": 63.4, "mem_usage_gb": 15.1}),
    (TS + "Load weight end. Committed real weights after CUDA graph capture in 3.10 s (capture overlap window "
     "2.00 s, startup overlap total 5.00 s)", "weight_load_end", {"elapsed": 3.1}),
    # — memory pools —
    (TS + "KV Cache is allocated. #tokens: 412345, K size: 25.17 GB, V size: 25.17 GB", "kv_cache_alloc",
     {"tokens": 412345, "k_gb": 25.17, "v_gb": 25.17}),
    (TS + "KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: 812345, KV size: 40.00 GB", "kv_cache_alloc",
     {"dtype": "torch.float8_e4m3fn", "tokens": 812345, "kv_gb": 40.0}),
    (TS + "Draft KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1000, K size: 1.17 GB, V size: 1.17 GB",
     "kv_cache_alloc", {"label": "Draft", "tokens": 1000, "k_gb": 1.17}),
    (TS + "KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 412345, K size: 25.17 GB, V size: 25.17 GB",
     "kv_cache_alloc", {"tokens": 412345}),
    (TS + "Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: 500000, KV size: 30.00 GB, "
     "avail mem=5.00 GB", "kv_cache_alloc", {"tokens": 500000, "kv_gb": 30.0, "avail_gb": 5.0}),
    (TS + "Mamba Cache is allocated. max_mamba_cache_size: 512, conv_state size: 0.73GB, ssm_state size: 23.44GB ",
     "mamba_cache_alloc", {"max_mamba_cache_size": 512, "conv_gb": 0.73, "ssm_gb": 23.44}),
    (TS + "Mamba Cache is allocated. max_mamba_cache_size: 512, conv_state size: 0.73GB, ssm_state size: 23.44GB "
     "intermediate_ssm_state_cache size: 4.00GB intermediate_conv_window_cache size: 0.10GB ", "mamba_cache_alloc",
     {"inter_ssm_gb": 4.0, "inter_conv_gb": 0.1}),
    (TS + "Use sliding window memory pool. full_layer_tokens=100000, swa_layer_tokens=80000", "swa_pool",
     {"full_tokens": 100000, "swa_tokens": 80000}),
    (TS + "Use sliding window memory pool (all SWA). swa_layer_tokens=80000", "swa_pool", {"swa_tokens": 80000}),
    (TS + "Allocating 120.00 GB host memory for hierarchical KV cache.", "hicache_alloc", {"gb": 120.0}),
    (TS + "Allocating KV hierarchical KV host pool: 800000 tokens, 120.00 GB host memory.", "hicache_alloc",
     {"tokens": 800000, "gb2": 120.0}),
    (TS + "Memory pool end. avail mem=12.34 GB", "memory_pool_end", {"avail_gb": 12.34}),
    # — CUDA graphs —
    (TS + "Capture cuda graph begin. This can take up to several minutes. avail mem=12.00 GB", "cuda_graph_begin",
     {"avail_gb": 12.0}),
    (TS + "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4, 8], "
     "avail mem=12.00 GB", "cuda_graph_begin", {"avail_gb": 12.0}),
    (TS + "Capture piecewise CUDA graph begin. avail mem=11.00 GB", "cuda_graph_begin", {"avail_gb": 11.0}),
    (TS + "Capture cuda graph end. Time elapsed: 30.12 s. mem usage=1.20 GB. avail mem=10.80 GB.", "cuda_graph_end",
     {"elapsed": 30.12, "mem_usage_gb": 1.2, "avail_gb": 10.8}),
    # 0.4.6 printed avail mem before mem usage
    (TS + "Capture cuda graph end. Time elapsed: 30.12 s. avail mem=10.80 GB. mem usage=1.20 GB.", "cuda_graph_end",
     {"elapsed": 30.12, "mem_usage_gb": 1.2, "avail_gb": 10.8}),
    (TS + "Capture cuda graph end. Time elapsed: 2.19 s", "cuda_graph_end", {"elapsed": 2.19}),
    (TS + "Capture target decode CUDA graph end. bs=[1, 2, 4], elapsed=21.00 s, mem usage=0.90 GB, "
     "avail mem=11.10 GB.", "cuda_graph_end", {"elapsed": 21.0, "mem_usage_gb": 0.9, "avail_gb": 11.1}),
    ("Capturing batches (bs=1 avail_mem=38.07 GB): 100%|\u2588\u2588\u2588\u2588| 36/36 [00:04<00:00,  7.54it/s]",
     "cuda_graph_progress", {"bs": 1, "avail_gb": 38.07, "percent": 100}),
    ("Capturing batches (avail_mem=12.55 GB):   0%|          | 0/23 [00:00<?, ?it/s]", "cuda_graph_progress",
     {"avail_gb": 12.55, "percent": 0}),
    (TS + "Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB", "cuda_graph_failed",
     {"error": "CUDA out of memory. Tried to allocate 2.00 GiB"}),
    # — budget and ready —
    (TS + "max_total_num_tokens=412345, chunked_prefill_size=8192, max_prefill_tokens=16384, "
     "max_running_requests=2048, context_len=40960, available_gpu_mem=10.80 GB", "scheduler_budget",
     {"max_total_num_tokens": 412345, "chunked_prefill_size": 8192, "max_prefill_tokens": 16384,
      "max_running_requests": 2048, "context_len": 40960, "available_gpu_mem": 10.8}),
    (TS + "max_total_num_tokens=56524, max_prefill_tokens=16384, max_running_requests=2049, context_len=32768",
     "scheduler_budget", {"max_total_num_tokens": 56524, "max_running_requests": 2049}),
    (LTS + "max_running_requests is capped to 102 by the mamba state cache (max_mamba_cache_size=512, 5 state "
     "slots per request). To raise it: increase --mamba-full-memory-ratio", "max_running_capped",
     {"max_running_requests": 102, "max_mamba_cache_size": 512, "slots_per_req": 5}),
    (LTS + "Engine startup timings (s): load_weight=12.30, kv_cache_allocation=1.00, scheduler_e2e=60.00, "
     "cuda_graph={decode=20.00}, tokenizer_e2e=65.00", "startup_timings",
     {"load_weight": 12.3, "scheduler_e2e": 60.0, "tokenizer_e2e": 65.0}),
    (LTS + "INFO:     Started server process [3831493]", "server_started", {"pid": 3831493}),
    ("INFO:     Started server process [12345]", "server_started", {"pid": 12345}),
    (LTS + "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)", "uvicorn_running",
     {"url": "http://0.0.0.0:30000"}),
    (LTS + "The server is fired up and ready to roll!", "ready", {}),
    # — serving —
    (TS + "Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, "
     "#queue-req: 0", "prefill_batch", {"new_seq": 1, "new_token": 7, "token_usage": 0.0, "queue_req": 0}),
    (TS + "Prefill batch [42], #new-seq: 1, #new-token: 7, #cached-token: 0, full token usage: 0.00, mamba usage: "
     "0.01, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 0.00",
     "prefill_batch", {"iter": 42, "mamba_usage": 0.01, "pending_token": 0, "cuda_graph": False}),
    (TS + "Decode batch, #running-req: 1, #token: 40, token usage: 0.00, accept len: 2.90, accept rate: 0.63, "
     "cuda graph: True, gen throughput (token/s): 80.79, #queue-req: 0", "decode_batch",
     {"running_req": 1, "token": 40, "accept_len": 2.9, "accept_rate": 0.63, "cuda_graph": True, "queue_req": 0}),
    (LTS + 'INFO:     127.0.0.1:40418 - "GET / HTTP/1.1" 404 Not Found', "access_log",
     {"client": "127.0.0.1:40418", "method": "GET", "path": "/", "status": 404}),
    (LTS + "Receive: obj=GenerateReqInput(rid='9f2c', text='Traceback (most recent call last): CUDA out of memory', "
     "sampling_params={'max_new_tokens': 8})", "request_log", {"verb": "Receive"}),
    (TS + "KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_tokens_gained: 1200, "
     "#new_token_ratio: 0.7000 -> 0.8000", "kv_retract", {"n": 3, "retracted_reqs": 3, "new_tokens_gained": 1200}),
    (TS + "Input length (160062 tokens) exceeds the maximum allowed length (59862 tokens). Use a shorter input or "
     "enable --allow-auto-truncate.", "input_too_long", {"input_tokens": 160062, "max_tokens": 59862}),
    (LTS + "The input (5000 tokens) is longer than the model's context length (4096 tokens).", "input_too_long",
     {"input_tokens": 5000, "max_tokens": 4096}),
    # — failure and end of life —
    (TS + "Scheduler hit an exception: Traceback (most recent call last):", "component_exception",
     {"component": "Scheduler"}),
    (LTS + "DetokenizerManager hit an exception: Traceback (most recent call last):", "component_exception",
     {"component": "DetokenizerManager"}),
    (LTS + "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start "
     "time: 12:00:00. last_heartbeat time: 11:59:00", "health_check_failed",
     {"component": "detokenizer", "timeout": 20}),
    (TS.replace("TP0", "TP1") + "Decode transfer failed for request rank=1 decode_req.req.rid='3ce8' "
     "decode_req.req.bootstrap_room=165 with exception KVTransferError(bootstrap_room=165): Failed due to an "
     "unknown reason from another rank", "kv_transfer_failed",
     {"side": "Decode", "rank": 1,
      "error": "KVTransferError(bootstrap_room=165): Failed due to an unknown reason from another rank"}),
    ("Failed: Cuda error /home/runner/work/vllm/vllm/csrc/custom_all_reduce.cuh:307 'peer access is not supported "
     "between these two devices'", "cuda_error",
     {"location": "/home/runner/work/vllm/vllm/csrc/custom_all_reduce.cuh:307",
      "error": "peer access is not supported between these two devices"}),
    (LTS + "Received sigquit from a child process. It usually means the child failed.", "sigquit_child", {}),
    (LTS + "Received sigquit from a child proces. It usually means the child failed.", "sigquit_child", {}),
    (LTS + "SIGQUIT received. signum=3, frame=<frame at 0x7f, file 'x.py', line 1, code f>. It usually means one "
     "child failed.", "sigquit_running", {}),
    (LTS + "SIGTERM received. signum=15 frame=None. Draining requests and shutting down...", "sigterm", {}),
    (LTS + "Rank 0 scheduler is dead. Please check if there are relevant logs.", "rank_dead", {"rank": 0}),
    ("RuntimeError: Rank 3 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a "
     "common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.", "rank_died",
     {"rank": 3, "exit_code": -9}),
    (LTS + "Exit code: -9", "exit_code", {"exit_code": -9}),
    (LTS + "Subprocess scheduler_0 (pid=2345) crashed with exit code -6. Triggering SIGQUIT for cleanup...",
     "subprocess_crashed", {"name": "scheduler_0", "pid": 2345, "exit_code": -6}),
    ("Killed", "killed", {}),
    ("[1]+  Killed                  python -m sglang.launch_server --model-path Qwen/Qwen3-8B", "killed", {}),
    ("bash: line 1: 12345 Killed                  python3 -m sglang.launch_server --tp 2", "killed", {"pid": 12345}),
    (TS.replace("TP0", "TP3") + "Watchdog timeout (self.watchdog_timeout=300)", "watchdog_timeout", {"timeout": 300}),
    (LTS + "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)", "watchdog_timeout",
     {"timeout": 300}),
    (LTS + "kill_process_tree called: parent_pid=1234, include_parent=True, pid=1234", "kill_process_tree",
     {"parent_pid": 1234, "include_parent": True}),
    (LTS + "Initialization failed. warmup error: Traceback (most recent call last):", "warmup_failed", {}),
    ("RuntimeError: Initialization failed. Please see the error messages above.", "init_failed", {}),
    (LTS + "INFO:     Shutting down", "shutdown", {}),
    (LTS + "INFO:     Finished server process [123]", "shutdown", {"pid": 123}),
    (TS + "Decode out of memory happened. #retracted_reqs: 3, #new_token_ratio: 0.1200 -> 0.8000", "kv_retract",
     {"n": 3}),
    ("usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH]", "argparse_usage",
     {"prog": "launch_server.py"}),
    ("launch_server.py: error: unrecognized arguments: --tp-szie 2", "argparse_error",
     {"prog": "launch_server.py", "error": "unrecognized arguments: --tp-szie 2"}),
    ("error: argument --quantization: invalid choice: 'fp9'", "argparse_error",
     {"error": "argument --quantization: invalid choice: 'fp9'"}),
    ("INFO 04-02 10:11:12 __init__.py:211] No platform detected, vLLM is running on UnspecifiedPlatform",
     "platform_missing", {"platform": "UnspecifiedPlatform"}),
    # — warnings —
    ("/usr/lib/python3/site-packages/torch/cuda/__init__.py:61: FutureWarning: The pynvml package is deprecated.",
     "warning", {}),
    (LTS + "WARNING:  Invalid HTTP request received.", "warning", {"text": "Invalid HTTP request received."}),
    ("2025-03-27 21:33:31,320 - WARNING - flashinfer.jit: fallback", "warning", {"text": "flashinfer.jit: fallback"}),
    ("[rank1]:[W623 15:37:01.824135523 socket.cpp:485] [c10d] waitForInput: socket timed out after 1800000ms",
     "warning", {}),
]


@pytest.mark.parametrize("text, kind, expected", CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_rule(text, kind, expected):
    ev = event(text)
    assert ev.kind == kind, f"{text!r} -> {ev.kind} {ev.fields}"
    assert_fields(ev.fields, expected)
    assert ev.number == 1 and ev.traceback is None


@pytest.mark.parametrize("text, level", [
    ("E0301 09:15:02.123456 4242 transfer_engine.cpp:88] Failed to open segment: no such device", "ERROR"),
    ("[rank2]:[E301 09:15:02.123456789 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation "
     "timeout", "ERROR"),
    ("[rank3]:E0301 09:15:02.123000 777 site-packages/torch/distributed/elastic/agent.py:77] worker exited", "ERROR"),
    ("2026-03-01 09:15:02,123 - ERROR - sglang.srt.utils: scheduler crashed", "ERROR"),
    (LTS + "ERROR:    Exception in ASGI application", "ERROR"),
    ("[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/x.cpp func=cu_mem_create line=90", None),
    (LTS + "Server warmup failed; aborting startup: HTTP server did not become ready", None),
    (" /opt/venv/lib/python3.11/site-packages/foo_cuda.so: undefined symbol: _ZN2at4_ops5zeros4call", None),
])
def test_a_failure_no_rule_knows_is_an_error_line(text, level):
    ev = event(text)
    assert ev.kind == "error_line", f"{text!r} -> {ev.kind}"
    assert ev.line.level == level
    assert ev.fields["text"] == ev.line.message


def test_glog_and_bare_torch_prefixes_are_split():
    ev = event("W0301 09:15:02.123456 4242 worker_pool.cpp:303] Too many errors found in local RNIC")
    assert (ev.line.level, ev.line.message) == ("WARNING", "Too many errors found in local RNIC")
    ev = event("(head, rank=0, pid=8292) [rank5]:W0215 12:25:06.525000 14707 torch/x.py:504] [12/0_1] boom")
    assert (ev.line.wrapper, ev.line.tag, ev.line.level) == ("head pid=8292", "rank5", "WARNING")
    assert ev.line.message == "[12/0_1] boom"


def test_every_rule_kind_has_a_case():
    covered = {kind for _, kind, _ in CASES}
    kinds = {rule.kind for rule in RULES}
    assert kinds - covered == set(), "add a real line to CASES for each new rule kind"


def test_memory_sizes_are_floats_and_counts_are_ints():
    for text, _, _ in CASES:
        fields = event(text).fields
        for key, value in fields.items():
            if key.endswith("_gb") or key in ("gb", "gb2", "elapsed"):
                assert type(value) is float, (text, key, value)
            if key in ("tokens", "pid", "rank", "exit_code", "max_total_num_tokens", "max_running_requests"):
                assert type(value) is int, (text, key, value)


@pytest.mark.parametrize(
    "text",
    [
        "Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]",
        TS + "Registering 0 cuda graph addresses",
        "Special tokens have been added in the vocabulary, make sure the associated word embeddings are fine-tuned.",
        "",
        "   ",
        "   scheduler.event_loop_normal()",
        "Capture",
        "Load weight end.",  # a rule's literal without the rest of its format
        "Killed-by-design is a band name",
    ],
)
def test_unknown_lines_pass_through_as_line(text):
    ev = event(text)
    assert ev.kind == "line" and ev.fields == {}
    assert ev.line.text == text.strip("\r")


def test_convert():
    assert [convert(v) for v in ("12", "-9", "0.55", "1e-05", "True", "False", "None", "abc", None)] == [
        12, -9, 0.55, 1e-05, True, False, None, "abc", None]
    assert type(convert("12")) is int and type(convert("12.0")) is float


def test_custom_rule_table():
    rules = (Rule("custom", r"Hello (?P<who>\w+) (?P<n>\d+)", starts="Hello "),
             Rule("other", r"needle=(?P<v>[\d.]+)", contains="needle="))
    tok = Tokenizer(rules)
    ev = tok.tokenize(decode_sglang(RawLine(1, 0, b"[2026-03-23 14:01:38] Hello world 42")))
    assert (ev.kind, ev.fields) == ("custom", {"who": "world", "n": 42})
    ev = tok.tokenize(decode_sglang(RawLine(1, 0, b"x needle=1.5 y")))
    assert (ev.kind, ev.fields) == ("other", {"v": 1.5})
    assert tok.tokenize(decode_sglang(RawLine(1, 0, b"Hello"))).kind == "line"


# — server_args —

KEY_ARGS = {
    "model_path": "Qwen/Qwen3.5-27B", "tp_size": 4, "dp_size": 2, "pp_size": 1, "ep_size": 1,
    "mem_fraction_static": 0.85, "speculative_algorithm": "EAGLE", "disable_radix_cache": False,
    "enable_hierarchical_cache": False, "page_size": 1, "chunked_prefill_size": 8192, "context_length": 262144,
    "max_running_requests": 48, "attention_backend": "fa3", "port": 30000, "dtype": "auto", "quantization": None,
}

SERVER_ARGS_REPR = (
    "[2026-03-23 14:01:38] server_args=ServerArgs(model_path='Qwen/Qwen3.5-27B', tokenizer_path='Qwen/Qwen3.5-27B', "
    "tokenizer_mode='auto', skip_tokenizer_init=False, load_format='auto', model_loader_extra_config='{}', "
    "trust_remote_code=True, context_length=262144, is_embedding=False, revision=None, host='0.0.0.0', port=30000, "
    "nccl_port=None, dtype='auto', quantization=None, kv_cache_dtype='auto', mem_fraction_static=0.85, "
    "max_running_requests=48, max_total_tokens=None, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "schedule_policy='fcfs', page_size=1, tp_size=4, pp_size=1, dp_size=2, ep_size=1, "
    "served_model_name='Qwen/Qwen3.5-27B', json_model_override_args='{\"rope_scaling\": {\"type\": \"yarn\", "
    "\"factor\": 4.0}}', lora_paths=None, cuda_graph_bs=[1, 2, 4, 8, 16], attention_backend='fa3', "
    "sampling_backend='flashinfer', speculative_algorithm='EAGLE', speculative_num_steps=3, "
    "speculative_eagle_topk=1, speculative_num_draft_tokens=4, disable_radix_cache=False, "
    "enable_hierarchical_cache=False, hicache_ratio=2.0, mamba_scheduler_strategy='no_buffer', random_seed=1234, "
    "watchdog_timeout=300, log_level='info', api_key=None, custom_weight_loader=[], "
    "served_model_name_alias=\"it's, (quoted)\", tiny_ratio=1e-05, neg=-1)"
)

SERVER_ARGS_DICT = (
    "[2026-09-21 06:30:00] server_args={'model_path': 'Qwen/Qwen3.5-27B', 'tokenizer_path': 'Qwen/Qwen3.5-27B', "
    "'trust_remote_code': True, 'context_length': 262144, 'host': '127.0.0.1', 'port': 30000, 'dtype': 'auto', "
    "'quantization': None, 'mem_fraction_static': 0.85, 'max_running_requests': 48, 'chunked_prefill_size': 8192, "
    "'page_size': 1, 'tp_size': 4, 'pp_size': 1, 'dp_size': 2, 'ep_size': 1, 'attention_backend': 'fa3', "
    "'model_loader_extra_config': {}, 'json_model_override_args': '{}', 'cuda_graph_bs_decode': [1, 2, 4], "
    "'speculative_algorithm': 'EAGLE', 'disable_radix_cache': False, 'enable_hierarchical_cache': False, "
    "'mamba_radix_cache_strategy': 'extra_buffer', 'served_model_name': \"Qwen's model\", "
    "'lora_paths': {'a': '/x', 'b': '/y'}, 'api_key': None, 'tool_call_parser': 'qwen25'}"
)


def test_server_args_repr_form():
    ev = event(SERVER_ARGS_REPR)
    assert ev.kind == "server_args" and ev.fields["form"] == "repr"
    args = ev.fields["args"]
    assert_fields(args, KEY_ARGS)
    assert_fields(args, {"mamba_scheduler_strategy": "no_buffer", "trust_remote_code": True,
                         "json_model_override_args": '{"rope_scaling": {"type": "yarn", "factor": 4.0}}',
                         "served_model_name_alias": "it's, (quoted)", "tiny_ratio": 1e-05, "neg": -1,
                         "log_level": "info", "api_key": None})
    assert "rope_scaling" not in args and "type" not in args  # nothing leaks out of quoted values


def test_server_args_dict_form():
    ev = event(SERVER_ARGS_DICT)
    assert ev.kind == "server_args" and ev.fields["form"] == "dict"
    args = ev.fields["args"]
    assert_fields(args, KEY_ARGS)
    assert_fields(args, {"mamba_radix_cache_strategy": "extra_buffer", "served_model_name": "Qwen's model",
                         "tool_call_parser": "qwen25", "api_key": None})
    assert "a" not in args and "b" not in args  # keys of a nested dict are not top-level args


@pytest.mark.parametrize("form", ["repr", "dict"])
def test_server_args_cut_line_keeps_what_was_printed(form):
    text = SERVER_ARGS_REPR if form == "repr" else SERVER_ARGS_DICT
    cut = text[: text.index("mem_fraction_static") + 30]
    ev = tokenize(decode_sglang(RawLine(1, 0, cut.encode(), eol=False)))
    assert ev.kind == "server_args"
    assert_fields(ev.fields["args"], {"model_path": "Qwen/Qwen3.5-27B", "port": 30000})


def test_server_args_with_prefix_wrappers():
    ev = event("sglang  | " + SERVER_ARGS_DICT)
    assert ev.kind == "server_args" and ev.fields["args"]["tp_size"] == 4
    assert ev.line.wrapper == "sglang"


# — the reference's own tested samples —


def _reference() -> dict:
    if not REFERENCE.is_file():
        pytest.skip(f"SGLang reference not found at {REFERENCE}")
    return json.loads(REFERENCE.read_text())


def test_reference_tested_samples_are_never_plain_lines():
    samples = _reference()["regexes"]["tested_samples"]
    assert len(samples) > 40
    lost = []
    for name, sample in samples:
        events = list(parse(sample.encode()))
        kinds = [e.kind for e in events]
        if not events or "line" in kinds:
            lost.append((name, sample, kinds))
            continue
        head = sample.split(":", 1)[0]
        if head.endswith("Error") and " " not in head and kinds == ["traceback"]:  # an exception line
            assert events[0].traceback.exc_type == head, (name, sample)
    assert lost == []


def test_reference_prefix_samples_split():
    for sample in _reference()["regexes"]["tested_prefix_samples"]:
        ll = decode_sglang(RawLine(1, 0, sample.encode()))
        assert ll.ts is not None and ll.message and not ll.message.startswith("["), sample
