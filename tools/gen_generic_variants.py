#!/usr/bin/env python3
"""Write ``fixtures/generated/generic-variants/``: our own short logs of the generic failure
families (torch, CUDA, NCCL, Triton, Python) in the wordings of other releases than the catalog
was written from (torch 1.x-2.13, NCCL 2.14-2.27, Triton 2 and 3, CUDA 12.x runtime strings), each
behind an SGLang or vLLM launch, and ``labels.jsonl`` with the root cause a person names (written
before logx read them: a blind test). ``tests/test_generated_corpus.py`` scores the directory.

    python tools/gen_generic_variants.py fixtures/generated/generic-variants

Nothing is downloaded; the wordings were read from the released wheels' sources and strings.
"""
import json
import sys
from pathlib import Path

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
labels = []
PY = "/usr/local/lib/python3.12/dist-packages"
SG = f"{PY}/sglang/srt"
VL = f"{PY}/vllm"

def sgl_head(ts="2026-11-03 10:02", tp=1, model="Qwen/Qwen2.5-7B-Instruct", extra=""):
    args = (f"[{ts}:01] server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', "
            f"tokenizer_mode='auto', load_format='auto', trust_remote_code=False, dtype='auto', "
            f"host='0.0.0.0', port=30000, mem_fraction_static=0.88, max_running_requests=None, "
            f"chunked_prefill_size=8192, tp_size={tp}, pp_size=1, dp_size=1{extra})")
    lines = [args]
    for r in range(tp):
        lines.append(f"[{ts}:08 TP{r}] Init torch distributed begin.")
    return lines

def sgl_weights(ts="2026-11-03 10:02", tp=1, avail=78.2):
    out = []
    for r in range(tp):
        out.append(f"[{ts}:11 TP{r}] Init torch distributed ends. mem usage=0.41 GB")
    for r in range(tp):
        out.append(f"[{ts}:12 TP{r}] Load weight begin. avail mem={avail:.2f} GB")
    return out

def sgl_ready(ts="2026-11-03 10:03", tp=1):
    out = []
    for r in range(tp):
        out.append(f"[{ts}:02 TP{r}] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=62.95 GB, mem usage=15.25 GB.")
    for r in range(tp):
        out.append(f"[{ts}:03 TP{r}] KV Cache is allocated. #tokens: 905432, K size: 24.18 GB, V size: 24.18 GB")
    out.append(f"[{ts}:20 TP0] Capture cuda graph end. Time elapsed: 16.40 s. mem usage=1.12 GB. avail mem=13.51 GB.")
    out.append(f"[{ts}:24] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    out.append(f"[{ts}:25] The server is fired up and ready to roll!")
    out.append(f"[{ts}:40 TP0] Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0")
    out.append(f"[{ts}:41 TP0] Decode batch, #running-req: 1, #token: 545, token usage: 0.00, cuda graph: True, gen throughput (token/s): 88.10, #queue-req: 0")
    return out

def tb(frames, exc_lines, prefix=""):
    out = [prefix + "Traceback (most recent call last):"]
    for f, ln, fn, code in frames:
        out.append(prefix + f'  File "{f}", line {ln}, in {fn}')
        out.append(prefix + f"    {code}")
    out += [prefix + text for text in exc_lines]
    return out

SCHED = [(f"{SG}/managers/scheduler.py", 2980, "run_scheduler_process", "scheduler.event_loop_overlap()"),
         (f"{SG}/managers/scheduler.py", 1021, "event_loop_overlap", "batch_result = self.run_batch(batch)"),
         (f"{SG}/managers/scheduler.py", 1890, "run_batch", "batch_result = self.model_worker.forward_batch_generation(model_worker_batch)"),
         (f"{SG}/managers/tp_worker.py", 240, "forward_batch_generation", "logits_output, can_run_cuda_graph = self.model_runner.forward("),
         (f"{SG}/model_executor/model_runner.py", 2101, "forward_extend", "return self.model.forward("),
         (f"{SG}/models/qwen2.py", 488, "forward", "hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)")]
INIT = [(f"{SG}/managers/scheduler.py", 2960, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)"),
        (f"{SG}/managers/scheduler.py", 312, "__init__", "self.tp_worker = TpModelWorker("),
        (f"{SG}/managers/tp_worker.py", 82, "__init__", "self.model_runner = ModelRunner(")]
LOAD = INIT + [(f"{SG}/model_executor/model_runner.py", 262, "__init__", "self.initialize(min_per_gpu_memory)"),
               (f"{SG}/model_executor/model_runner.py", 330, "initialize", "self.load_model()"),
               (f"{SG}/model_executor/model_runner.py", 771, "load_model", "self.model = get_model("),
               (f"{SG}/model_loader/loader.py", 604, "load_model", "model.load_weights(self._get_all_weights(model_config, model))"),
               (f"{SG}/models/llama.py", 690, "load_weights", "weight_loader(param, loaded_weight)")]
DIST = INIT + [(f"{SG}/model_executor/model_runner.py", 262, "__init__", "min_per_gpu_memory = self.init_torch_distributed()"),
               (f"{SG}/model_executor/model_runner.py", 702, "init_torch_distributed", "initialize_model_parallel("),
               (f"{SG}/distributed/parallel_state.py", 1302, "initialize_model_parallel", "_TP = init_model_parallel_group("),
               (f"{SG}/distributed/parallel_state.py", 264, "__init__", "device_group = torch.distributed.new_group("),
               (f"{PY}/torch/distributed/distributed_c10d.py", 5012, "new_group", "return _new_group_with_tag("),
               (f"{PY}/torch/distributed/distributed_c10d.py", 5102, "_new_group_with_tag", "pg, pg_store = _new_process_group_helper(")]
GRAPH = INIT + [(f"{SG}/model_executor/model_runner.py", 262, "__init__", "self.initialize(min_per_gpu_memory)"),
                (f"{SG}/model_executor/model_runner.py", 402, "initialize", "self.init_device_graphs()"),
                (f"{SG}/model_executor/model_runner.py", 1710, "init_device_graphs", "self.graph_runner = graph_runners[self.device](self)"),
                (f"{SG}/model_executor/cuda_graph_runner.py", 380, "__init__", "self.capture()"),
                (f"{SG}/model_executor/cuda_graph_runner.py", 498, "capture", ") = self.capture_one_batch_size(bs, forward)")]
SAMPLE = SCHED[:4] + [(f"{SG}/model_executor/model_runner.py", 2160, "sample", "next_token_ids = self.sampler("),
                      (f"{SG}/layers/sampler.py", 110, "forward", "batch_next_token_ids = top_k_top_p_min_p_sampling_from_probs_torch(")]
CUDA_TAIL = ["CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
             "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
             "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."]

def sgl_crash(ts, rank, lines):
    return [f"[{ts} TP{rank}] Scheduler hit an exception:"] + lines + [f"[{ts}] Received sigquit from a child process. It usually means the child failed."]

def vl_head(pid=7, ver="0.11.0", model="meta-llama/Llama-3.1-8B-Instruct", ts="11-03 10:02"):
    p = f"(APIServer pid={pid}) INFO {ts}:01 [api_server.py:1839] "
    return [p + f"vLLM API server version {ver}",
            p + f"non-default args: {{'model': '{model}', 'tensor_parallel_size': 2}}",
            f"(APIServer pid={pid}) INFO {ts}:09 [model.py:547] Resolved architecture: LlamaForCausalLM",
            f"(APIServer pid={pid}) INFO {ts}:09 [model.py:1510] Using max model len 131072"]

def vl_err(tag, ts, lines):
    return [f"({tag}) ERROR {ts} [multiproc_executor.py:597] " + text for text in lines]

def case(cid, root, key, lines, summary):
    full = [text for text in lines if key in text]
    assert full, (cid, key)
    key = full[-1] if key.startswith("  what():") else full[0]
    (OUT / f"{cid}.log").write_text("\n".join(lines) + "\n")
    labels.append({"id": cid, "server": "generic", "root_cause": root, "summary": summary, "key_line": key})

# ---------------------------------------------------------------- torch OOM, by torch release
k = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 23.65 GiB total capacity; "
     "21.80 GiB already allocated; 1.02 GiB free; 21.90 GiB reserved in total by PyTorch) If reserved memory is >> allocated "
     "memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
case("oom_torch20_old_figures_weights", "weight_load_oom_model_too_large", k,
     sgl_head(model="meta-llama/Llama-2-13b-hf") + sgl_weights(avail=23.10) + sgl_crash("2026-11-03 10:02:40", 0, tb(LOAD, [k])),
     "torch 2.0 OOM wording (GPU 0; T total capacity; …) while loading weights")
k = ("RuntimeError: CUDA out of memory. Tried to allocate 896.00 MiB (GPU 0; 39.39 GiB total capacity; 37.92 GiB already allocated; "
     "402.19 MiB free; 38.10 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
case("oom_torch1x_runtimeerror_forward", "forward_cuda_oom_activations", k,
     sgl_head(ts="2026-11-03 10:02") + sgl_weights() + sgl_ready() + sgl_crash("2026-11-03 10:05:12", 0, tb(SCHED, [k])),
     "torch 1.x OOM as a RuntimeError, old figures, in the forward pass")
k = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacty of 79.15 GiB of which "
     "3.44 MiB is free. Process 3011 has 79.14 GiB memory in use. Of the allocated memory 77.51 GiB is allocated by PyTorch, and 1.01 GiB "
     "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
case("oom_torch21_capacty_forward", "forward_cuda_oom_activations", k,
     sgl_head() + sgl_weights() + sgl_ready() + sgl_crash("2026-11-03 10:06:00", 0, tb(SCHED, [k])),
     "torch 2.1 wording ('total capacty', lone Process entry = torch itself) in the forward pass")
k = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which "
     "1.31 GiB is free. Including non-PyTorch memory, this process has 77.87 GiB memory in use. Of the allocated memory 75.02 GiB is allocated "
     "by PyTorch, with 1.90 GiB allocated in private pools (e.g., CUDA Graphs), and 1.33 GiB is reserved by PyTorch but unallocated. If reserved "
     "but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
case("oom_torch24_private_pools_graph", "cuda_graph_capture_oom", k,
     sgl_head() + sgl_weights() + sgl_ready()[:3] + ["[2026-11-03 10:03:05 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=14.02 GB"]
     + sgl_crash("2026-11-03 10:03:19", 0, tb(GRAPH, [k])),
     "torch 2.4 wording with 'allocated in private pools (e.g., CUDA Graphs)' during graph capture")
k = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a total capacity of 44.40 GiB of which 1.02 GiB is free. "
     "Including non-PyTorch memory, this process has 43.37 GiB memory in use. Of the allocated memory 42.80 GiB is allocated by PyTorch, and "
     "61.18 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
case("oom_torch26_toplevel_type_tail", "weight_load_oom_model_too_large", k,
     [f'  File "{SG}/models/llama.py", line 690, in load_weights', "    weight_loader(param, loaded_weight)",
      f'  File "{SG}/layers/linear.py", line 412, in weight_loader', "    param_data.copy_(loaded_weight)", k,
      "[2026-11-03 10:02:41] Received sigquit from a child process. It usually means the child failed."],
     "torch 2.5+ type torch.OutOfMemoryError, a tail pasted from inside the weight loader")
k = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 310.00 MiB is free. "
     "Process 4242 has 40.02 GiB memory in use. Including non-PyTorch memory, this process has 38.86 GiB memory in use. Of the allocated memory 37.10 GiB "
     "is allocated by PyTorch, and 1.12 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
     "PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-alloc-conf)")
case("oom_torch29_alloc_conf_other_process", "gpu_occupied_by_other_process", k,
     sgl_head() + sgl_weights(avail=38.90) + sgl_crash("2026-11-03 10:02:30", 0, tb(LOAD, [k])),
     "torch 2.9+ wording (PYTORCH_ALLOC_CONF) with another process holding 40 GiB")
k = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 191.98 GiB of which 1.20 GiB is free. Of the allocated memory 186.20 GiB is allocated by PyTorch, and 2.91 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
case("oom_rocm_hip_forward", "forward_cuda_oom_activations", k,
     sgl_head(model="deepseek-ai/DeepSeek-V3") + sgl_weights(avail=190.1) + sgl_ready() + sgl_crash("2026-11-03 10:09:44", 0, tb(SCHED, [k])),
     "ROCm torch: HIP out of memory in the forward pass")
k = "RuntimeError: CUDA error: out of memory"
case("oom_cuda_error_out_of_memory_weights", "weight_load_oom_model_too_large", k,
     sgl_head(model="meta-llama/Llama-3.1-70B-Instruct") + sgl_weights(avail=78.3) + sgl_crash("2026-11-03 10:02:50", 0, tb(LOAD, [k] + CUDA_TAIL)),
     "cudaMalloc's own 'CUDA error: out of memory' (not the caching allocator's) while loading weights")
k = "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"
case("cublas_alloc_failed_forward", "forward_cuda_oom_activations", k,
     sgl_head() + sgl_weights() + sgl_ready() + sgl_crash("2026-11-03 10:07:01", 0, tb(SCHED + [(f"{SG}/layers/linear.py", 1290, "forward", "output = self.quant_method.apply(self, input_, bias)")], [k])),
     "cuBLAS could not allocate its handle/workspace (an OOM) in the forward pass")

# ---------------------------------------------------------------- NCCL, by torch release
k = "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1207, unhandled system error, NCCL version 2.14.3"
case("nccl_torch20_runtimeerror_shm", "nccl_init_system_error", k,
     sgl_head(tp=2) + sgl_crash("2026-11-03 10:02:12", 1, tb(DIST, [k, "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
                                                                   "Last error:", "Error while creating shared memory segment /dev/shm/nccl-ABCd12 (size 9637888)"])),
     "torch 2.0: RuntimeError 'NCCL error in: …ProcessGroupNCCL.cpp, unhandled system error' (shm)")
k = "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3"
case("nccl_torch21_distbackend_socket", "nccl_init_system_error", k,
     sgl_head(tp=2) + sgl_crash("2026-11-03 10:02:12", 0, tb(DIST, [k, "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
                                                                   "Last error:", "socketStartConnect: Connect to 172.17.0.3<45123> failed : Software caused connection abort"])),
     "torch 2.1-2.4: DistBackendError from NCCLUtils.hpp, socket connect failed")
k = "misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-Q7mE2a to 9637892 bytes, error: No space left on device (28)"
case("nccl_warn_lines_only_shm", "nccl_init_system_error", k,
     vl_head() + ["(Worker_TP1 pid=311) INFO 11-03 10:02:20 [pynccl.py:70] vLLM is using nccl==2.27.3",
                  "node3:311:311 [1] NCCL INFO cudaDriverVersion 12080",
                  "node3:311:311 [1] " + k,
                  "node3:311:311 [1] misc/shmutils.cc:106 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-Q7mE2a (size 9637888), error: No space left on device (28)",
                  "node3:311:311 [1] NCCL INFO transport/shm.cc:590 -> 2",
                  "node3:311:311 [1] NCCL INFO init.cc:1501 -> 2"],
     "NCCL's own WARN lines (NCCL_DEBUG=WARN) that /dev/shm is full, the log ends there")
k = "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3690, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.26.2"
case("nccl_unhandled_cuda_error_p2p", "custom_allreduce_no_p2p", k,
     sgl_head(tp=2) + sgl_crash("2026-11-03 10:02:14", 0, tb(DIST, [k, "ncclUnhandledCudaError: Call to CUDA function failed.", "Last error:",
                                                                   "Cuda failure 217 'peer access is not supported between these two devices'"])),
     "torch 2.6+ ProcessGroupNCCL.cpp path, ncclUnhandledCudaError whose last error is missing P2P")
k = "[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=112, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800478 milliseconds before timing out."
case("nccl_watchdog_torch20", "nccl_collective_timeout", k,
     sgl_head(tp=2) + sgl_weights(tp=2) + sgl_ready(tp=2) + [k,
      "[E ProcessGroupNCCL.cpp:475] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
      "[E ProcessGroupNCCL.cpp:481] To avoid data inconsistency, we are taking the entire process down.",
      "terminate called after throwing an instance of 'std::runtime_error'",
      "  what():  [Rank 1] NCCL watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=112, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800478 milliseconds before timing out."],
     "torch 2.0 watchdog timeout wording (no [rankN]: prefix, std::runtime_error)")
k = "[rank0]:[E1103 10:14:02.417263912 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2291, OpType=_ALLGATHER_BASE, NumelIn=2048, NumelOut=4096, Timeout(ms)=600000) ran for 600011 milliseconds before timing out."
case("nccl_watchdog_torch25_numel", "nccl_collective_timeout", k,
     vl_head() + ["(APIServer pid=7) INFO 11-03 10:04:00 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000", k,
      "[rank0]:[E1103 10:14:02.417411000 ProcessGroupNCCL.cpp:2168] [PG ID 2 PG GUID 3 Rank 0]  failure detected by watchdog at work sequence id: 2291 PG status: last enqueued work: 2291, last completed work: 2290",
      "[rank0]:[E1103 10:14:02.417420000 ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
      "[rank0]:[E1103 10:14:03.101002000 ProcessGroupNCCL.cpp:684] [Rank 0] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
      "terminate called after throwing an instance of 'c10::DistBackendError'",
      "  what():  [PG ID 2 PG GUID 3 Rank 0] Process group watchdog thread terminated with exception: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2291, OpType=_ALLGATHER_BASE, NumelIn=2048, NumelOut=4096, Timeout(ms)=600000) ran for 600011 milliseconds before timing out."],
     "torch 2.5+ watchdog timeout (NumelIn/NumelOut, PG ID prefix, c10::DistBackendError)")
k = "[rank1]:[E1103 10:20:00.000412000 ProcessGroupNCCL.cpp:1386] [PG ID 0 PG GUID 0(default_pg) Rank 1] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog, and could be triggered by another thread holding the GIL inside a CUDA api (for example, CudaEventDestroy), or other deadlock-prone behaviors.If you suspect the watchdog is not actually stuck and a longer timeout would help, you can either increase the timeout (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) to a larger value or disable the heartbeat monitor (TORCH_NCCL_ENABLE_MONITORING=0).If either of aforementioned helps, feel free to file an issue to PyTorch about the short timeout or false positive abort; otherwise, please attempt to debug the hang. "
case("nccl_watchdog_stuck_torch24", "nccl_collective_timeout", k,
     sgl_head(tp=2) + sgl_weights(tp=2) + sgl_ready(tp=2) + [k,
      "[rank1]:[F1103 10:20:00.000530000 ProcessGroupNCCL.cpp:1224] [PG ID 0 PG GUID 0(default_pg) Rank 1] [PG ID 0 PG GUID 0(default_pg) Rank 1] Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL watchdog hang."],
     "torch 2.4+: the heartbeat monitor finds the watchdog stuck and terminates the process")
k = "[rank0]:[E ProcessGroupNCCL.cpp:1182] [Rank 0] Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=1"
case("nccl_heartbeat_monitor_torch22", "nccl_collective_timeout", k,
     sgl_head(tp=2) + sgl_weights(tp=2) + sgl_ready(tp=2) + [k,
      "[rank0]:[F ProcessGroupNCCL.cpp:1016] [Rank 0] [Rank 0] ProcessGroupNCCL preparing to dump debug info."],
     "torch 2.2-2.3 heartbeat monitor wording")
k = "[rank3]:[E1103 10:31:10.554201000 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 3] Received a dump signal due to a collective timeout from rank 1 and we will try our best to dump the debug info. Last enqueued NCCL work: 118, last completed NCCL work: 117.This is most likely caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, the order of collectives is not same for all ranks or the scheduled collective, for some reason, didn't run. Additionally, this can be caused by GIL deadlock or other reasons such as network errors or bugs in the communications library (e.g. NCCL), etc. "
case("nccl_dump_signal_from_other_rank", "nccl_collective_timeout", k,
     sgl_head(tp=4) + sgl_weights(tp=4) + sgl_ready(tp=4) + [k,
      "[rank3]:[E1103 10:31:10.554390000 ProcessGroupNCCL.cpp:1306] [PG ID 0 PG GUID 0(default_pg) Rank 3] ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1"],
     "torch 2.6+: a rank told by another rank's timeout to dump, the log ends")
k = "  what():  CUDA error: an illegal memory access was encountered"
case("watchdog_illegal_access_torch20", "cuda_illegal_memory_access", k,
     sgl_head(tp=2) + sgl_weights(tp=2) + sgl_ready(tp=2) + [
      "[E ProcessGroupNCCL.cpp:475] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
      "terminate called after throwing an instance of 'c10::Error'", k] + CUDA_TAIL[:2] + ["",
      "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44 (most recent call first):",
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f3a1d2a4617 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
      "frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&) + 0x64 (0x7f3a1d25fa56 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)"],
     "torch 2.0: the watchdog's c10::Error abort with an illegal memory access, after 'Some NCCL operations have failed'")
k = "torch.distributed.DistNetworkError: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."
oomk = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 1 has a total capacity of 79.19 GiB of which 2.10 GiB is free. Including non-PyTorch memory, this process has 77.08 GiB memory in use. Of the allocated memory 74.95 GiB is allocated by PyTorch, and 1.40 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
case("nccl_remote_error_after_peer_oom", "forward_cuda_oom_activations", oomk,
     sgl_head(tp=2) + sgl_weights(tp=2) + sgl_ready(tp=2)
     + ["[2026-11-03 10:08:00 TP1] Scheduler hit an exception:"] + tb(SCHED, [oomk])
     + ["[2026-11-03 10:08:01 TP0] Scheduler hit an exception:"] + tb(SCHED[:3] + [(f"{SG}/distributed/parallel_state.py", 540, "all_reduce", "torch.distributed.all_reduce(input_, group=self.device_group)")],
        ["torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, remote process exited or there was a network error, NCCL version 2.26.2",
         "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.", "Last error:",
         "socketProgressOpt: Call to recv from 10.0.0.2<35002> failed : Connection reset by peer"])
     + ["[2026-11-03 10:08:02] Received sigquit from a child process. It usually means the child failed."],
     "rank 1 OOMs, rank 0 then fails with ncclRemoteError: the peer's OOM is the cause")
k = "RuntimeError: The client socket has timed out after 1800s while trying to connect to (10.0.0.1, 5000)."
case("dist_init_timeout_torch20_seconds", "multinode_dist_init_timeout", k,
     sgl_head(tp=2, extra=", dist_init_addr='10.0.0.1:5000', nnodes=2, node_rank=1")
     + ["[W socket.cpp:601] [c10d] The client socket has failed to connect to [10.0.0.1]:5000 (errno: 110 - Connection timed out)."]
     + sgl_crash("2026-11-03 10:32:09", 0, tb(INIT + [(f"{SG}/model_executor/model_runner.py", 702, "init_torch_distributed", "init_distributed_environment("),
                                                      (f"{PY}/torch/distributed/distributed_c10d.py", 932, "init_process_group", "store, rank, world_size = next(rendezvous_iterator)"),
                                                      (f"{PY}/torch/distributed/rendezvous.py", 246, "_tcp_rendezvous_handler", "store = _create_c10d_store(result.hostname, result.port, rank, world_size, timeout)")], [k])),
     "torch 2.0 client-socket timeout in seconds ('after 1800s'), not ms")
k = "[W1103 10:02:20.118000000 socket.cpp:755] [c10d] The client socket has failed to connect to [node-0.cluster.local]:5000 (errno: 111 - Connection refused)."
case("dist_init_connect_refused_warnings", "multinode_dist_init_timeout", k,
     sgl_head(tp=2, extra=", dist_init_addr='node-0.cluster.local:5000', nnodes=2, node_rank=1") + [k,
      "[W1103 10:02:25.120000000 socket.cpp:755] [c10d] The client socket has failed to connect to [node-0.cluster.local]:5000 (errno: 111 - Connection refused).",
      "[W1103 10:02:30.124000000 socket.cpp:755] [c10d] The client socket has failed to connect to [node-0.cluster.local]:5000 (errno: 111 - Connection refused)."],
     "only c10d's retry warnings (connection refused) before the log ends")

# ---------------------------------------------------------------- CUDA runtime errors
k = "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
case("illegal_access_accelerator_error", "cuda_illegal_memory_access", k,
     sgl_head() + sgl_weights() + sgl_ready() + sgl_crash("2026-11-03 10:10:00", 0, tb(SCHED, [k,
       "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information."] + CUDA_TAIL)),
     "torch 2.8+: CUDA errors raised as torch.AcceleratorError with the 'Search for `cudaError…`' line")
k = "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered"
case("illegal_access_triton_error", "cuda_illegal_memory_access", k,
     sgl_head() + sgl_weights() + sgl_ready() + sgl_crash("2026-11-03 10:10:00", 0, tb(SCHED + [(f"{PY}/triton/runtime/jit.py", 591, "run", "kernel.run(grid_0, grid_1, grid_2, stream, kernel.function, kernel.packed_metadata,"),
                                                                                          (f"{PY}/triton/backends/nvidia/driver.py", 529, "__call__", "self.launch(*args, **kwargs)")], [k])),
     "Triton's launcher reporting the CUDA fault")
k = "RuntimeError: CUDA error: unspecified launch failure"
case("unspecified_launch_failure_vllm", "cuda_illegal_memory_access", k,
     vl_head() + vl_err("Worker_TP0 pid=301", "11-03 10:12:00", ["WorkerProc hit an exception.", "Traceback (most recent call last):",
        f'  File "{VL}/v1/executor/multiproc_executor.py", line 592, in worker_busy_loop', "    output = func(*args, **kwargs)",
        f'  File "{VL}/v1/worker/gpu_model_runner.py", line 2412, in execute_model', "    model_output = self.model(", k] + CUDA_TAIL),
     "vLLM worker: 'unspecified launch failure' (a kernel fault)")
k = "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`"
case("cublas_execution_failed_gemm", "cuda_illegal_memory_access", k,
     sgl_head() + sgl_weights() + sgl_ready() + sgl_crash("2026-11-03 10:10:00", 0, tb(SCHED + [(f"{SG}/layers/linear.py", 1290, "forward", "output = self.quant_method.apply(self, input_, bias)")], [k])),
     "a GEMM kernel failed to execute (cuBLAS execution failure: a kernel fault)")
k = "RuntimeError: CUDA error: device-side assert triggered"
case("device_assert_index_torch2", "cuda_device_side_assert", k,
     sgl_head() + sgl_weights() + sgl_ready() + [
      "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [12,0,0], thread: [64,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
      "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [12,0,0], thread: [65,0,0] Assertion `srcIndex < srcSelectDimSize` failed."]
     + sgl_crash("2026-11-03 10:10:00", 0, tb(SCHED + [(f"{SG}/layers/vocab_parallel_embedding.py", 480, "forward", "output_parallel = self.quant_method.embedding(self, masked_input.long())")], [k] + CUDA_TAIL)),
     "an embedding index out of range: Indexing.cu assertion, then device-side assert")
k = "torch.AcceleratorError: CUDA error: device-side assert triggered"
case("device_assert_sampling_accelerator", "nan_logits_sampling_assert", k,
     sgl_head() + sgl_weights() + sgl_ready() + [
      "/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:112: _assert_async_cuda_kernel: block: [0,0,0], thread: [0,0,0] Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed."]
     + sgl_crash("2026-11-03 10:10:00", 0, tb(SAMPLE + [(f"{PY}/torch/_tensor.py", 1512, "multinomial", "return torch.multinomial(probs, num_samples=1)")],
        [k, "Search for `cudaErrorAssert' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information."] + CUDA_TAIL)),
     "torch 2.8+ AcceleratorError device-side assert from the multinomial's probability check")
k = "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device"
case("no_kernel_image_torch213_warning", "cuda_arch_no_kernel_image", k,
     sgl_head() + [f"{PY}/torch/cuda/__init__.py:435: UserWarning: ",
      "Found GPU0 Tesla P100-PCIE-16GB which is of compute capability (CC) 6.0.",
      "The following list shows the CCs this version of PyTorch was built for and the hardware CCs it supports:",
      "- 7.5 which supports hardware CC >=7.5,<9.0", "- 8.0 which supports hardware CC >=8.0,<9.0",
      "No published PyTorch CUDA builds for release 2.13.0+cu130 support this GPU. Visit https://pytorch.org/get-started/locally/ to find a compatible release.",
      "  warnings.warn("] + sgl_weights(avail=15.6) + sgl_crash("2026-11-03 10:02:20", 0, tb(LOAD, [k,
      "Search for `cudaErrorNoKernelImageForDevice' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information."] + CUDA_TAIL)),
     "torch 2.13's compute-capability warning, then no kernel image")
k = "Found GPU0 Tesla K80 which is of cuda capability 3.7."
case("gpu_too_old_warning_only", "cuda_arch_no_kernel_image", k,
     ["/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:173: UserWarning: ", "    " + k,
      "    PyTorch no longer supports this GPU because it is too old.", "    The minimum cuda capability supported by this library is 5.0.", "    ",
      "  warn(old_gpu_warn.format(d, name, major, minor, min_arch // 10, min_arch % 10))",
      "[2026-11-03 10:02:01] server_args=ServerArgs(model_path='Qwen/Qwen2.5-0.5B-Instruct', tp_size=1, port=30000, mem_fraction_static=0.88)",
      "[2026-11-03 10:02:09 TP0] Init torch distributed begin.", "Segmentation fault (core dumped)"],
     "torch 2.0-2.5's old-GPU warning (cuda capability 3.7), then a crash without a message")
k = "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain."
case("ptx_unsupported_toolchain", "cuda_driver_too_old", k,
     sgl_head() + sgl_weights() + sgl_crash("2026-11-03 10:02:30", 0, tb(LOAD, [k] + CUDA_TAIL)),
     "PTX built by a newer CUDA than the driver supports")
k = "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 803: system has unsupported display driver / cuda driver combination"
case("driver_mismatch_error_803", "cuda_driver_too_old", k,
     sgl_head() + sgl_crash("2026-11-03 10:02:09", 0, tb(INIT + [(f"{PY}/torch/cuda/__init__.py", 399, "set_device", "torch._C._cuda_setDevice(device)"),
                                                                (f"{PY}/torch/cuda/__init__.py", 319, "_lazy_init", "torch._C._cuda_init()")], [k])),
     "Error 803: the user-space driver library does not match the kernel driver / compat package")
k = "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 12020). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver. (Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:109.)"
case("driver_too_old_warning_then_no_gpus", "cuda_driver_too_old", k,
     vl_head() + [f"{PY}/torch/cuda/__init__.py:182: {k}", "  return torch._C._cuda_getDeviceCount() > 0",
      "(APIServer pid=7) Traceback (most recent call last):",
      f'(APIServer pid=7)   File "{VL}/platforms/cuda.py", line 112, in get_device_capability',
      "(APIServer pid=7)     major, minor = torch.cuda.get_device_capability(device_id)",
      "(APIServer pid=7) RuntimeError: No CUDA GPUs are available"],
     "torch's CUDA-initialization warning that the driver is too old, then 'No CUDA GPUs are available'")
k = "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized"
case("fabric_manager_error_802", "no_cuda_device", k,
     sgl_head(tp=8) + sgl_crash("2026-11-03 10:02:09", 0, tb(INIT + [(f"{PY}/torch/cuda/__init__.py", 319, "_lazy_init", "torch._C._cuda_init()")], [k])),
     "Error 802 on an NVSwitch box (fabric manager not running): no usable GPU")
k = "torch.AcceleratorError: CUDA error: invalid device ordinal"
case("invalid_device_ordinal_tp4", "tp_exceeds_visible_gpus", k,
     sgl_head(tp=4) + sgl_crash("2026-11-03 10:02:09", 3, tb(INIT + [(f"{SG}/model_executor/model_runner.py", 688, "init_torch_distributed", "torch.get_device_module(self.device).set_device(self.gpu_id)"),
                                                                  (f"{PY}/torch/cuda/__init__.py", 567, "set_device", "torch._C._cuda_setDevice(device)")],
        [k, "GPU device may be out of range, do you have enough GPUs?"] + CUDA_TAIL)),
     "torch 2.8+: invalid device ordinal with 'GPU device may be out of range' (tp 4 on fewer GPUs)")

# ---------------------------------------------------------------- CUDA libraries, ABI
k = "ValueError: libcublas.so.*[0-9] not found in the system path ['/app', '/usr/lib/python312.zip', '/usr/lib/python3.12', '/usr/lib/python3.12/lib-dynload', '/app/.venv/lib/python3.12/site-packages']"
case("torch_preload_cublas_not_found", "cuda_runtime_lib_missing", k,
     tb([("/app/.venv/bin/sglang", 5, "<module>", "from sglang.cli.main import main"),
         ("/app/.venv/lib/python3.12/site-packages/torch/__init__.py", 424, "<module>", "_load_global_deps()"),
         ("/app/.venv/lib/python3.12/site-packages/torch/__init__.py", 370, "_load_global_deps", "_preload_cuda_deps(lib_folder, lib_name)"),
         ("/app/.venv/lib/python3.12/site-packages/torch/__init__.py", 331, "_preload_cuda_deps", 'raise ValueError(f"{lib_name} not found in the system path {sys.path}")')], [k]),
     "torch's _preload_cuda_deps: the nvidia-cublas wheel is not installed")
k = "ImportError: /usr/local/lib/python3.11/dist-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12"
case("cusparse_nvjitlink_version", "dependency_version_mismatch", k,
     tb([("/usr/local/lib/python3.11/dist-packages/sglang/launch_server.py", 6, "<module>", "from sglang.srt.entrypoints.http_server import launch_server"),
         ("/usr/local/lib/python3.11/dist-packages/torch/__init__.py", 367, "<module>", "from torch._C import *  # noqa: F403")], [k]),
     "two nvidia-* wheels of different CUDA minors (cusparse needs a newer nvJitLink)")
k = "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
case("libcudnn_missing_import", "cuda_runtime_lib_missing", k,
     vl_head()[:1] + tb([(f"{VL}/entrypoints/openai/api_server.py", 15, "<module>", "import torch"),
                         ("/usr/local/lib/python3.12/dist-packages/torch/__init__.py", 404, "<module>", "from torch._C import *  # noqa: F403")], [k]),
     "a cuDNN library missing at torch import")

# ---------------------------------------------------------------- Triton
k = "triton.runtime.autotuner.OutOfResources: out of resource: shared memory, Required: 98304, Hardware limit: 65536. Reducing block sizes or `num_stages` may help."
case("triton2_out_of_resources_autotuner", "triton_shared_memory_exceeded", k,
     sgl_head() + sgl_weights() + sgl_ready() + sgl_crash("2026-11-03 10:10:00", 0, tb(SCHED + [(f"{PY}/triton/runtime/jit.py", 550, "run", "kernel = self.compile("),
                                                                                          (f"{PY}/triton/compiler/compiler.py", 226, "__getattribute__", "self._init_handles()")], [k])),
     "Triton 2.x: OutOfResources raised from triton.runtime.autotuner")
k = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 232448, Hardware limit: 101376. Reducing block sizes or `num_stages` may help."
case("triton3_out_of_resources_cut80", "triton_shared_memory_exceeded", k[:80],
     [f'  File "{PY}/triton/compiler/compiler.py", line 409, in _init_handles', "    raise OutOfResources(self.metadata.shared, max_shared, \"shared memory\")", k[:80]],
     "Triton 3.x OutOfResources, a tail cut at 80 columns")
k = "ptxas fatal   : Value 'sm_120a' is not defined for option 'gpu-name'"
case("triton_ptxas_unknown_gpu_name", "triton_kernel_unsupported_gpu_arch", k,
     sgl_head() + sgl_weights() + sgl_crash("2026-11-03 10:02:40", 0, tb(GRAPH + [(f"{PY}/triton/backends/nvidia/compiler.py", 404, "make_cubin", "raise PTXASError(f\"{error}\\n\""),],
      ["triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error", "`ptxas` stderr:", k, "",
       "Repro command: /usr/local/lib/python3.12/dist-packages/triton/backends/nvidia/bin/ptxas -lineinfo -v --gpu-name=sm_120a /tmp/tmpq1w2e3.ptx -o /tmp/tmpq1w2e3.ptx.o"])),
     "Triton 3.x PTXASError: the bundled ptxas does not know this GPU")
k = "ptxas /tmp/tmp4kx9.ptx, line 211; error   : Feature 'cvt.e4m3x2.f32' requires .target sm_89 or higher"
case("triton_ptxas_fp8_needs_sm89", "quant_unsupported_gpu_arch", k,
     sgl_head(model="neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", extra=", quantization='fp8'") + sgl_weights()
     + sgl_crash("2026-11-03 10:02:40", 0, tb(LOAD[:5] + [(f"{SG}/layers/quantization/fp8_kernel.py", 380, "per_token_group_quant_fp8", "_per_token_group_quant_fp8[(M,)]("),
                                                        (f"{PY}/triton/backends/nvidia/compiler.py", 404, "make_cubin", "raise PTXASError(f\"{error}\\n\"")],
      ["triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error", "`ptxas` stderr:", k])),
     "an FP8 conversion that needs sm_89 on an Ampere GPU (ptxas rejects it)")
k = "RuntimeError: Failed to find C compiler. Please specify via CC environment variable."
case("triton_no_c_compiler", "triton_jit_compile_failed", k,
     sgl_head() + sgl_weights() + sgl_ready()[:3] + sgl_crash("2026-11-03 10:03:10", 0, tb(GRAPH + [(f"{PY}/triton/backends/nvidia/driver.py", 72, "__init__", "mod = compile_module_from_src(Path(os.path.join(dirname, \"driver.c\")).read_text(), \"cuda_utils\")"),
                                                                                           (f"{PY}/triton/runtime/build.py", 32, "_build", "raise RuntimeError(\"Failed to find C compiler. Please specify via CC environment variable.\")")], [k])),
     "Triton 3.x: no C compiler in the image")

# ---------------------------------------------------------------- Python environment
k = "RuntimeError: The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use). The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use)."
case("port_in_use_torch20_store", "port_in_use", k,
     sgl_head() + sgl_crash("2026-11-03 10:02:10", 0, tb(INIT + [(f"{SG}/model_executor/model_runner.py", 702, "init_torch_distributed", "init_distributed_environment("),
                                                                (f"{PY}/torch/distributed/rendezvous.py", 176, "_create_c10d_store", "return TCPStore(")], [k])),
     "torch 2.0's TCPStore bind failure (errno: 98)")
k = "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29500, useIPv6: 0, code: -98, name: EADDRINUSE, message: address already in use"
case("port_in_use_torch24_distnetwork", "port_in_use", k,
     vl_head() + vl_err("Worker_TP0 pid=301", "11-03 10:02:12", ["WorkerProc failed to start.", "Traceback (most recent call last):",
        f'  File "{VL}/distributed/parallel_state.py", line 1109, in init_distributed_environment', "    torch.distributed.init_process_group(", k]),
     "torch 2.4+ DistNetworkError EADDRINUSE (a DistNetworkError that is not a rendezvous timeout)")
k = "zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:30001')"
case("port_in_use_zmq", "port_in_use", k,
     sgl_head() + tb([(f"{SG}/entrypoints/engine.py", 820, "_launch_subprocesses", "tokenizer_manager = TokenizerManager(server_args, port_args)"),
                      (f"{SG}/utils/common.py", 1590, "get_zmq_socket", "socket.bind(endpoint)"),
                      (f"{PY}/zmq/sugar/socket.py", 311, "bind", "super().bind(addr)")], [k]),
     "ZMQ's bind error")
k = "RuntimeError: received 0 items of ancdata"
case("too_many_open_files_ancdata", "too_many_open_files", k,
     sgl_head() + sgl_weights() + sgl_ready() + tb([(f"{SG}/managers/tokenizer_manager.py", 1402, "handle_loop", "recv_obj = await self.recv_from_detokenizer.recv_pyobj()"),
                                                    ("/usr/lib/python3.12/multiprocessing/reduction.py", 164, "recvfds", "raise RuntimeError('received %d items of ancdata' %")], [k]),
     "torch multiprocessing's fd passing fails: the open-file limit")
k = "AttributeError: _ARRAY_API not found"
case("numpy2_abi_array_api", "dependency_version_mismatch", k,
     ["", "A module that was compiled using NumPy 1.x cannot be run in", "NumPy 2.1.3 as it may crash. To support both 1.x and 2.x",
      "versions of NumPy, modules must be compiled with NumPy 2.0.", "Some module may need to rebuild instead e.g. with 'pybind11>=2.12'.", "",
      "If you are a user of the module, please upgrade to the latest version", "of the module or downgrade NumPy to 'numpy<2'.", ""]
     + tb([(f"{PY}/sglang/launch_server.py", 6, "<module>", "from sglang.srt.entrypoints.http_server import launch_server"),
           (f"{PY}/outlines/__init__.py", 5, "<module>", "import outlines.types")], [k]),
     "NumPy 2 installed under a module compiled for NumPy 1.x")
k = "ImportError: This modeling file requires the following packages that were not found in your environment: flash_attn. Run `pip install flash_attn`"
case("remote_code_requires_packages", "missing_optional_dependency", k,
     vl_head(model="microsoft/Phi-3-vision-128k-instruct") + ["(APIServer pid=7) ERROR 11-03 10:02:11 [registry.py:402] " + text for text in
      tb([(f"{PY}/transformers/dynamic_module_utils.py", 190, "check_imports", 'raise ImportError(')], [k])],
     "transformers' remote-code import check names packages that are not installed")
k = "importlib.metadata.PackageNotFoundError: No package metadata was found for bitsandbytes"
case("package_metadata_not_found", "missing_optional_dependency", k,
     sgl_head(extra=", quantization='bitsandbytes'") + sgl_weights() + sgl_crash("2026-11-03 10:02:15", 0, tb(LOAD[:5] + [(f"{SG}/model_loader/loader.py", 1320, "_get_quantized_weights_iterator", "bnb_version = importlib.metadata.version(\"bitsandbytes\")"),
                                                                                                                     ("/usr/lib/python3.12/importlib/metadata/__init__.py", 399, "from_name", "raise PackageNotFoundError(name)")], [k])),
     "importlib.metadata finds no installed distribution")
k = "AttributeError: module 'torch.library' has no attribute 'register_fake'. Did you mean: 'register_kernel'?"
case("attr_missing_did_you_mean", "dependency_version_mismatch", k,
     tb([(f"{PY}/sglang/launch_server.py", 6, "<module>", "from sglang.srt.entrypoints.http_server import launch_server"),
         (f"{PY}/flashinfer/__init__.py", 18, "<module>", "from .activation import gelu_and_mul"),
         (f"{PY}/flashinfer/utils.py", 252, "register_fake_op", "torch.library.register_fake(name)(fn)")], [k]),
     "Python 3.10+'s 'Did you mean' suffix on a symbol an older torch lacks")


# ---------------------------------------------------------------- second batch (labelled before logx read them)
k = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU 0 has a total capacity of 79.19 GiB of which 612.00 MiB is free. "
     "Including non-PyTorch memory, this process has 78.58 GiB memory in use. Of the allocated memory 76.90 GiB is allocated by PyTorch, and 1.02 GiB is reserved by PyTorch "
     "but unallocated. If reserved but unallocated memory is large try setting PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-alloc-conf)")
py313 = []
for f, ln, fn, code in SCHED:
    py313 += [f'  File "{f.replace("python3.12", "python3.13")}", line {ln}, in {fn}', f"    {code}", "    " + "~" * 8 + "^" * min(len(code) - 8, 30)]
case("oom_py313_carets_forward", "forward_cuda_oom_activations", k,
     sgl_head() + sgl_weights() + sgl_ready() + sgl_crash("2026-11-03 10:12:30", 0, ["Traceback (most recent call last):"] + py313 + [k]),
     "Python 3.13 traceback (caret lines under every frame), torch 2.9+ OOM in the forward pass")
k = "RuntimeError: CUDA driver error: out of memory"
case("oom_cuda_driver_error_weights", "weight_load_oom_model_too_large", k,
     sgl_head(model="meta-llama/Llama-3.1-70B-Instruct") + sgl_weights(avail=78.3) + sgl_crash("2026-11-03 10:02:55", 0, tb(LOAD, [k])),
     "torch's driver-API check (C10_CUDA_DRIVER_CHECK: 'CUDA driver error:') out of memory while loading weights")
k = "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero. (Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:109.)"
case("cuda_unknown_error_env", "no_cuda_device", k,
     sgl_head() + [f"{PY}/torch/cuda/__init__.py:182: {k}", "  return torch._C._cuda_getDeviceCount() > 0"]
     + sgl_crash("2026-11-03 10:02:09", 0, tb(INIT + [(f"{PY}/torch/cuda/__init__.py", 319, "_lazy_init", "torch._C._cuda_init()")], ["RuntimeError: No CUDA GPUs are available"])),
     "CUDA initialisation's 'CUDA unknown error' (devices set to zero), then no GPUs")
k = "torch.AcceleratorError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"
case("cuda_devices_busy_unavailable", "no_cuda_device", k,
     sgl_head() + sgl_crash("2026-11-03 10:02:09", 0, tb(INIT + [(f"{SG}/model_executor/model_runner.py", 688, "init_torch_distributed", "torch.get_device_module(self.device).set_device(self.gpu_id)")],
        [k, "Search for `cudaErrorDevicesUnavailable' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information."] + CUDA_TAIL)),
     "the GPU is in exclusive-process mode / held: no usable device")
k = "RuntimeError: HIP error: invalid device function"
case("rocm_hip_invalid_device_function", "cuda_arch_no_kernel_image", k,
     sgl_head(model="Qwen/Qwen2.5-7B-Instruct") + sgl_weights() + sgl_crash("2026-11-03 10:02:40", 0, tb(LOAD, [k,
        "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
        "For debugging consider passing AMD_SERIALIZE_KERNEL=3", "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions."])),
     "ROCm: the build has no code object for this gfx architecture ('invalid device function')")
k = "RuntimeError: CUDA error: invalid device function"
case("cuda_invalid_device_function", "cuda_arch_no_kernel_image", k,
     sgl_head() + sgl_weights() + sgl_crash("2026-11-03 10:02:40", 0, tb(LOAD, [k] + CUDA_TAIL)),
     "a kernel library built without this GPU's architecture ('invalid device function')")
k = "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
case("pynccl_unhandled_system_error", "nccl_init_system_error", k,
     vl_head() + vl_err("Worker_TP1 pid=311", "11-03 10:02:14", ["WorkerProc failed to start.", "Traceback (most recent call last):",
        f'  File "{VL}/distributed/device_communicators/pynccl.py", line 105, in __init__', "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(",
        f'  File "{VL}/distributed/device_communicators/pynccl_wrapper.py", line 366, in NCCL_CHECK', '    raise RuntimeError(f"NCCL error: {error_str}")', k]),
     "the servers' own NCCL wrapper (pynccl) wording, no torch wrapper")

(OUT / "labels.jsonl").write_text("".join(json.dumps(label) + "\n" for label in labels))
print(len(labels), "cases")
