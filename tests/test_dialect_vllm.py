"""vLLM's dialect (dialects/vllm/): detection, its prefixes, events, per-process tracebacks,
phases, the memory ledger in a report, and the statistics lines."""

from __future__ import annotations

import pytest
from conftest import REPO

from logforensics._analysis import Options, explain
from logforensics._dialects import detect
from logforensics._dialects.vllm import DIALECT as VLLM
from logforensics._lines import LogLine, split_prefixes
from logforensics._pipeline import parse

V066 = "INFO 12-20 20:25:46 worker.py:241] Memory profiling takes 19.77 seconds"
V013 = ("(EngineCore_DP0 pid=7130) INFO 12-04 23:05:33 [core.py:93] Initializing a V1 LLM engine (v0.13.0) with"
        " config: model='m'")
V033 = "(APIServer pid=1) INFO 11-20 09:15:02 [entry.py:139] Starting vLLM server on http://0.0.0.0:8000"
SGL = "[2026-03-23 14:00:00] server_args=ServerArgs(model_path='m', tp_size=2)"


def line(text: str) -> LogLine:
    out = LogLine(1, 0, text, text)
    split_prefixes(out, VLLM.prefix)
    return out


@pytest.mark.parametrize("text", [
    V013, V033,
    "INFO 06-19 11:30:25 [api_server.py:1043] vLLM API server version 0.8.5.post1",
    "vllm-1  | (APIServer pid=1) INFO 11-20 09:15:02 [entry.py:139] Starting vLLM server on http://0.0.0.0:8000",
    "2026-05-12T08:01:39.331095044Z (EngineCore_DP0 pid=9) INFO 05-12 08:01:39 [core.py:93] Initializing a V1"
    " LLM engine (v0.13.0) with config: x",
    "(RayWorkerWrapper pid=2202821, ip=10.0.0.2) (VllmWorker rank=1 pid=63590) ERROR 06-20 01:02:03"
    " [multiproc_executor.py:527] x",
])
def test_vllm_is_recognised_from_one_line_of_any_release_and_wrapper(text):
    found = detect([text])
    assert (found.dialect.name, found.confidence) == ("vllm", "certain")


@pytest.mark.parametrize("text", [
    "(Worker_TP1 pid=9) INFO 11-20 09:16:10 [gpu_worker.py:120] x",
    "(Worker_DP0_PP1_TP0_EP0 pid=9) ERROR x",
    "(ApiServer_1 pid=3) INFO x",
    '  File "/usr/lib/python3/dist-packages/vllm/v1/engine/core.py", line 3, in run',
])
def test_a_worker_named_by_its_parallel_groups_or_a_debian_frame_is_vllm(text):
    assert (detect([text]).dialect.name, detect([text]).confidence) == ("vllm", "certain")


@pytest.mark.parametrize("text", [
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/platforms/cpu.py", line 243, in check_and_update_config',
    '  File "/src/vllm/vllm/model_executor/layers/linear.py", line 9, in forward',
    "(Worker pid=812) INFO x",
    "  Input should be greater than 0 [type=greater_than, input_value=0, input_type=int]",
])
def test_a_headless_paste_with_only_what_sglang_may_carry_too_is_likely_vllm(text):
    """SGLang imports vLLM code (its frames may show in SGLang's tracebacks) and uses pydantic
    for requests: such a line alone makes vLLM likely, never certain."""
    assert (detect(["noise", text]).dialect.name, detect(["noise", text]).confidence) == ("vllm", "likely")
    assert detect([SGL, text]).dialect.name == "sglang"


def test_v066_prefix_alone_makes_vllm_likely_and_sglang_stays_sglang():
    assert (detect(["noise", V066]).dialect.name, detect(["noise", V066]).confidence) == ("vllm", "likely")
    assert detect([SGL, V013]).dialect.name == "sglang"


@pytest.mark.parametrize("text, wrapper, level, ts, message", [
    (V066, "", "INFO", "12-20 20:25:46", "Memory profiling takes 19.77 seconds"),
    ("(VllmWorker rank=0 pid=63590) ERROR 06-20 01:02:03 [multiproc_executor.py:527] WorkerProc failed to start.",
     "VllmWorker pid=63590", "ERROR", "06-20 01:02:03", "WorkerProc failed to start."),
    ("(VllmWorker-0 pid=23575) ERROR 12-01 22:49:31 [multiproc_executor.py:1057] Traceback (most recent call last):",
     "VllmWorker-0 pid=23575", "ERROR", "12-01 22:49:31", "Traceback (most recent call last):"),
    ("ERROR 2025-07-21 14:34:24.934 async_trtllm_engine_factory.py:62] Bfloat16 is only supported",
     "", "ERROR", "2025-07-21 14:34:24.934", "Bfloat16 is only supported"),
    ("(Worker_TP1 pid=9) DEBUG 11-20 09:16:10 [v1/engine/.../core.py:310] x", "Worker_TP1 pid=9", "DEBUG",
     "11-20 09:16:10", "x"),
])
def test_prefixes_split_into_process_level_time_and_message(text, wrapper, level, ts, message):
    got = line(text)
    assert (got.wrapper, got.level, got.ts, got.message) == (wrapper, level, ts, message)


def test_events_read_vllm_lines_with_their_numbers():
    events = {e.kind: e.fields for e in (VLLM_TOKENIZER.tokenize(line(t)) for t in [
        "(EngineCore_DP0 pid=1) INFO 06-22 02:54:47 [kv_cache_utils.py:716] GPU KV cache size: 251,920 tokens",
        "INFO 05-07 02:13:52 [gpu_model_runner.py:1347] Model loading took 0.2533 GiB and 0.907387 seconds",
        "(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
        "Avg generation throughput: 1055.3 tokens/s, Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 87.7%, "
        "Prefix cache hit rate: 0.0%",
        "(APIServer pid=1) INFO 11-20 09:15:00 [startup.py:38] non-default args: {'model_tag': 'Qwen/Qwen3-8B', "
        "'max_model_len': 8192, 'gpu_memory_utilization': 0.85}",
        "(APIServer pid=1) INFO:     Application startup complete.",
    ])}
    assert events["kv_tokens"]["kv_tokens"] == 251920
    assert events["weight_load_end"]["weights_gib"] == 0.2533
    assert events["decode_batch"] == {"prompt_throughput": 0.0, "gen_throughput": 1055.3, "running_req": 18,
                                      "queue_req": 43, "token_usage": 0.877}
    assert events["server_args"]["args"]["gpu_memory_utilization"] == 0.85
    assert "ready" in events


@pytest.mark.parametrize("text", [
    "INFO 12-05 10:00:01 logger.py:37] Received request chatcmpl-9f3c0a1b2d: prompt: 'Traceback (most recent "
    "call last):', params: SamplingParams(n=1, temperature=0.7), prompt_token_ids: [1, 2], lora_request: None, "
    "prompt_adapter_request: None.",
    "INFO 12-05 10:00:01 async_llm_engine.py:211] Added request chatcmpl-9f3c0a1b2d.",
    "INFO 12-05 10:00:02 async_llm_engine.py:179] Finished request chatcmpl-9f3c0a1b2d.",
    "(APIServer pid=7) INFO 09-10 14:19:07 [logger.py:47] Received request chatcmpl-3fce: params: "
    "SamplingParams(n=1, max_tokens=512), lora_request: None.",
    "(APIServer pid=7) INFO 09-10 14:19:07 [async_llm.py:353] Added request chatcmpl-3fce.",
])
def test_request_logging_lines_are_request_logs_whatever_they_quote(text, tmp_path):
    """vLLM logs each request (by default up to 0.6.x, with --enable-log-requests since): its
    lines quote user content and are the statistics fast path's request lines (known by their
    head, ``StatsMarks.request_mark``: a request id of hex letters makes a template per line)."""
    assert VLLM_TOKENIZER.tokenize(line(text)).kind == "request_log"
    log = tmp_path / "requests.log"
    log.write_text("\n".join(["(APIServer pid=7) INFO 09-10 14:19:00 [api_server.py:1351] Starting vLLM API "
                              "server 0 on http://0.0.0.0:8000", text, text]) + "\n")
    assert not explain(str(log), options=Options()).runs[0].tracebacks


def test_a_traceback_with_the_prefix_on_every_line_is_one_traceback_per_process(tmp_path):
    worker = "(VllmWorker rank=1 pid=11) ERROR 06-20 01:02:03 [multiproc_executor.py:527] "
    engine = "(EngineCore_DP0 pid=10) ERROR 06-20 01:02:03 [core.py:700] "
    log = tmp_path / "x.log"
    log.write_text("\n".join([
        worker + "WorkerProc failed to start.",
        worker + "Traceback (most recent call last):",
        engine + "EngineCore failed to start.",
        worker + '  File "/x/vllm/v1/worker/gpu_worker.py", line 1, in init_device',
        engine + "Traceback (most recent call last):",
        worker + "    raise ValueError(",
        engine + '  File "/x/vllm/v1/engine/core.py", line 2, in __init__',
        worker + "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your"
                 " Tesla T4 GPU has compute capability 7.5.",
        engine + "Exception: WorkerProc initialization failed due to an exception in a background process. See"
                 " stack trace for root cause.",
    ]) + "\n")
    tbs = [e.traceback for e in parse(log) if e.kind == "traceback"]
    assert sorted((tb.wrapper, tb.exc_type, len(tb.frames)) for tb in tbs) == [
        ("EngineCore_DP0 pid=10", "Exception", 1), ("VllmWorker pid=11", "ValueError", 1)]
    report = explain(log, options=Options(status=False))
    assert [f.id for f in report.findings if f.is_problem][0] == "bf16_unsupported_gpu"
    assert report.findings[-1].id == "init_failed_see_above"  # the engine's wrapper is a symptom


def test_kv_capacity_failure_gets_the_ledger_and_a_rechecked_max_model_len():
    path = REPO / "fixtures" / "vllm" / "max_model_len_exceeds_kv_capacity__v1_013_tail5.log"
    report = explain(path, options=Options(status=False))
    top = [f for f in report.findings if f.is_problem][0]
    assert top.id == "max_model_len_exceeds_kv_capacity"
    assert "9.50 / 16.00 × 131072 = 77824 tokens fit" in top.fix
    assert "`--max-model-len 77824`" in top.fix


def test_no_room_failure_states_the_budget_arithmetic():
    path = REPO / "fixtures" / "vllm" / "kv_cache_no_room_gpu_mem_util__v0_066_report_tail.log"
    top = [f for f in explain(path, options=Options(status=False)).findings if f.is_problem][0]
    assert top.id == "kv_cache_no_room_gpu_mem_util"
    assert "22.05 × 0.70 = 15.43 GiB" in top.fix
    assert "`--gpu-memory-utilization` to at least 0.79" in top.fix  # (16.34 + 1) / 22.05 = 0.786


def test_phases_follow_vllm_lifecycle_and_the_api_server_line_means_ready(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("\n".join([
        V013,
        "(EngineCore_DP0 pid=7130) INFO 12-04 23:05:40 [gpu_model_runner.py:3549] Model loading took 0.93 GiB"
        " memory and 1.2 seconds",
        "(EngineCore_DP0 pid=7130) INFO 12-04 23:05:45 [gpu_worker.py:359] Available KV cache memory: 60.12 GiB",
        "(APIServer pid=7000) INFO 12-04 23:05:50 [api_server.py:1425] Starting vLLM API server 0 on http://0.0.0.0:8000",
    ]) + "\n")
    run = explain(log, options=Options(status=False)).runs[-1]
    assert run.phase == "ready"
    assert set(run.phase_lines) >= {"launch", "weights", "kv_alloc", "ready"}
    assert run.server_version == "0.13.0"


def test_oom_is_told_apart_by_how_far_the_start_up_got(tmp_path):
    head = ("(EngineCore_DP0 pid=5) INFO 12-04 23:05:33 [core.py:93] Initializing a V1 LLM engine (v0.13.0) with"
            " config: model='m'\n")
    oom = ("(EngineCore_DP0 pid=5) ERROR 12-04 23:06:00 [core.py:866] torch.OutOfMemoryError: CUDA out of memory. "
           "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.00 GiB is free. "
           "Including non-PyTorch memory, this process has 78.10 GiB memory in use. Of the allocated memory 77.00 GiB "
           "is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.\n")
    stages = {
        "weight_load_oom_model_too_large": "(EngineCore_DP0 pid=5) INFO 12-04 23:05:40"
                                           " [gpu_model_runner.py:3467] Starting to load model m...\n",
        "activation_profile_oom": "(EngineCore_DP0 pid=5) INFO 12-04 23:05:50 [gpu_model_runner.py:3549] Model"
                                  " loading took 70.1 GiB memory and 9.0 seconds\n",
        "cuda_graph_capture_oom": "(EngineCore_DP0 pid=5) INFO 12-04 23:05:55 [gpu_worker.py:359] Available KV"
                                  " cache memory: 2.12 GiB\n",
    }
    # 0.34's only model runner (V2) announces the load without the model's name
    v034 = ("(EngineCore pid=5) INFO 12-01 10:02:34 [model_runner.py:412] Loading model from scratch...\n",
            "weight_load_oom_model_too_large")
    for name, (stage, want) in {**{w: (s, w) for w, s in stages.items()}, "v034": v034}.items():
        log = tmp_path / f"{name}.log"
        log.write_text(head + stage + oom)
        got = [f.id for f in explain(log, options=Options(status=False)).findings if f.is_problem]
        assert got[0] == want, (want, got)


VLLM_TOKENIZER = __import__("logforensics._events", fromlist=["Tokenizer"]).Tokenizer(VLLM.rules)


@pytest.mark.parametrize("name, code", [("none__healthy_cpu_startup", 0),
                                        ("vllm_c_extension_missing__cuda_wheel_on_cpu", 1)])
def test_watch_until_ready_gates_a_vllm_start_up_from_a_pipe(name, code):
    """`… | logx watch - --until ready`: 0 at vLLM's ready line, 1 when the start-up failed."""
    import subprocess
    import sys

    log = (REPO / "fixtures" / "vllm" / f"{name}.log").read_bytes()
    done = subprocess.run([sys.executable, "-m", "logforensics", "watch", "-", "--until", "ready", "--plain"],
                          input=log, capture_output=True, timeout=120)
    assert done.returncode == code, done.stdout.decode()[-500:]
    assert (b"end READY" if code == 0 else b"vllm_c_extension_missing") in done.stdout


def test_vllm_facts_name_the_capture_flag_as_the_release_spells_it_and_bound_the_release():
    from logforensics._runs import Run

    run = Run(index=1, first_line=1, dialect=VLLM)
    run.server_version = "0.9.2"
    assert run.flag_names() == {"cudagraph_capture_flag": "--max-seq-len-to-capture"}
    run.server_version = "0.13.0"
    assert run.flag_names() == {"cudagraph_capture_flag": "--max-cudagraph-capture-size"}
    run.server_version = None
    run.version_hints.add("<=0.10.2")  # a V0 memory report, no banner
    assert run.flag_names() == {"cudagraph_capture_flag": "--max-seq-len-to-capture"}
    assert VLLM.version_hints("memory_split", {"weights_gib": 5.2}) == {"<=0.10.2"}
    assert VLLM.version_hints("kv_blocks", {"device": "GPU"}) == {"<=0.6.6.post1"}
    assert VLLM.version_hints("kv_blocks", {"device": "cuda"}) == {"<=0.10.2"}


def test_a_v0_log_without_a_banner_gets_the_capture_flag_of_its_release():
    """A V0 memory report bounds the release (≤0.10), so the graph-capture OOM's fix names
    the flag V0 releases had; a 0.13 log names the new one."""
    v0 = [
        "INFO 02-26 09:54:05 worker.py:267] model weights take 5.20GiB; non_torch_memory takes 0.03GiB; "
        "PyTorch activation peak memory takes 1.42GiB; the rest of the memory reserved for KV Cache is 9.05GiB.",
        "INFO 02-26 09:54:06 executor_base.py:111] # cuda blocks: 10591, # CPU blocks: 4681",
        "INFO 02-26 09:54:09 model_runner.py:1115] Capturing cudagraphs for decoding.",
        "ERROR 02-26 09:54:12 engine.py:366] CUDA out of memory. Tried to allocate 20.00 MiB.",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/model_runner.py", line 1415, in capture_model',
        "    graph_runner.capture(**capture_inputs)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of"
        " 15.77 GiB of which 3.12 MiB is free.",
    ]
    fix = explain("\n".join(v0).encode() + b"\n").findings[0]
    assert fix.id == "cuda_graph_capture_oom" and "--max-seq-len-to-capture" in fix.fix
    v013 = ["INFO 06-19 11:30:25 [api_server.py:1351] vLLM API server version 0.13.0", *v0[2:]]
    fix = explain("\n".join(v013).encode() + b"\n").findings[0]
    assert fix.id == "cuda_graph_capture_oom" and "--max-cudagraph-capture-size" in fix.fix
