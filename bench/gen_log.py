#!/usr/bin/env python3
"""Generate a large, realistic SGLang server log for benchmarking logx.

    python bench/gen_log.py OUT.log --size 300MB [--seed 1] [--ranks 8] [--runs 3]

Standard library only. The output is several server runs appended to one file (as happens
when a launcher's stderr is redirected with ``>>`` across restarts):

* run 1 - SGLang 0.5.12 style (``server_args=ServerArgs(...)``, ``Capture cuda graph ...``),
  plain TP (``[ts TPk]``, TP0 logs the stats); ends with a graceful SIGTERM shutdown;
* middle runs - same style; each ends with a "Decode out of memory" scheduler crash printed
  by up to 3 TP ranks (the tracebacks in the middle of the file);
* last run - 0.5.20 style (``server_args={...}`` dict dump, new CUDA-graph capture lines),
  DP attention (``[ts DPk TPk]``, every DP rank logs stats); ends with the same crash on
  one DP rank.  Expected root cause: ``decode_out_of_memory``.

``--shape`` changes the serving part to the other shapes users' logs have (see SHAPES):
every TP rank printing, DP attention with EP prefixes, randomised widths and client addresses,
frequent warnings, and docker compose / kubectl line prefixes.

Output is deterministic for a given (size, seed, ranks, runs, shape).  Speed comes from
pre-rendering pools of message bodies (a random walk of scheduler state) and emitting
one second of log at a time with ``str.join`` over pool slices, in multi-MB writes.
"""

from __future__ import annotations

import argparse
import calendar
import os
import random
import re
import sys
import time

EXPECTED_ROOT_CAUSE = "decode_out_of_memory"
EXPECTED_ROOT_CAUSES = {"vllm": "forward_cuda_oom_activations"}  # other shapes: the one above

OLD, NEW = "0.5.12", "0.5.20"
SGL = "/sgl-workspace/sglang/python/sglang"
TORCH = "/usr/local/lib/python3.12/dist-packages/torch"

# (model, arch, layers, kv heads, head dim, weight GiB, quant string, context) by min ranks
MODELS = [
    (8, "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "Qwen3MoeForCausalLM", 94, 4, 128, 235.0,
     "quant=fp8, fmt=e4m3, ", 262144),
    (2, "Qwen/Qwen3-32B", "Qwen3ForCausalLM", 64, 8, 128, 61.0, "", 40960),
    (1, "Qwen/Qwen3-8B", "Qwen3ForCausalLM", 36, 8, 128, 15.3, "", 40960),
]
TOTAL_GPU_GB = 79.19  # H100 80GB as seen by torch, GiB

POOL_BITS = 15  # 32768 pre-rendered scheduler events per run
ACCESS_BITS = 13
COUNT_BITS = 12

SHAPES = {
    "default": "TP, TP0 prints the stats; last run DP attention (the README's benchmark log)",
    "tp8-all": "every TP rank prints its own Prefill/Decode stats (--enable-metrics-for-all-schedulers)",
    "dp-ep": "DP attention with expert parallelism in every run: [ts DP3 TP3 EP3] prefixes",
    "wide": "randomised client addresses and ports, counts of every width, "
            "a retraction warning every ~2,000 lines",
    "warnings": "a known warning, a health check or a 4xx/5xx access line every ~50 lines",
    "docker": "every line behind a docker compose prefix ('sglang-1  | ')",
    "kubectl": "every line behind a kubectl --timestamps RFC 3339 prefix",
    "vllm": "a vLLM 0.13 V1-engine log instead: (APIServer pid=N) access and statistics lines, "
            "worker/engine-core start-up, runs ending in a CUDA OOM in a forward pass",
}

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.I)


def parse_size(text: str) -> int:
    """'300MB', '1GB', '50M', '512k', '1.5GiB', '123456' -> bytes (binary units)."""
    m = _SIZE_RE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (try 300MB, 1GB, 50M)")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    n = int(float(m.group(1)) * mult)
    if n <= 0:
        raise argparse.ArgumentTypeError("size must be positive")
    return n


class Out:
    """Buffered writer; counts bytes (chars; the log is ASCII except tqdm bars)."""

    def __init__(self, path: str, block: int = 8 << 20, prefix=None):
        self.f = open(path, "w", encoding="utf-8", newline="\n")  # noqa: SIM115 (closed in close())
        self.prefix = prefix  # () -> str put before every line (a container runtime's), or None
        self.buf: list[str] = []
        self.pending = 0
        self.block = block
        self.written = 0
        self.lines = 0

    def add(self, chunk: str) -> None:
        if self.prefix is not None:  # chunks always hold whole lines
            pfx = self.prefix()
            chunk = pfx + chunk[:-1].replace("\n", "\n" + pfx) + "\n"
        self.buf.append(chunk)
        n = len(chunk)
        self.pending += n
        self.written += n
        if self.pending >= self.block:
            self.flush()

    def add_lines(self, lines: list[str]) -> None:
        if lines:
            self.add("\n".join(lines) + "\n")

    def flush(self) -> None:
        if self.buf:
            data = "".join(self.buf)
            self.lines += data.count("\n")
            self.f.write(data)
            self.buf = []
            self.pending = 0

    def close(self) -> None:
        self.flush()
        self.f.close()


class Clock:
    """Epoch seconds with a cached '%Y-%m-%d %H:%M:%S' rendering; never goes backwards."""

    def __init__(self, t: int):
        self.t = t
        self._last = -1
        self._s = ""

    def advance(self, dt: int) -> None:
        self.t += max(0, dt)

    def ts(self, t: int | None = None) -> str:
        t = self.t if t is None else t
        if t != self._last:
            self._last = t
            self._s = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
        return self._s


# --------------------------------------------------------------------------- run plan


class Run:
    def __init__(self, idx: int, n_runs: int, ranks: int, rng: random.Random, shape: str = "default"):
        self.idx = idx
        self.last = idx == n_runs - 1
        self.version = NEW if self.last else OLD
        self.ranks = ranks
        self.shape = shape
        self.dp = ranks > 1 and (self.last or shape == "dp-ep")
        self.ending = "crash" if (self.last or idx > 0) else "sigterm"
        self.pid = rng.randrange(1200, 4_000_000)
        self.port = 30000
        if ranks == 1:
            self.suffixes = [""]
        elif self.dp and shape == "dp-ep":
            self.suffixes = [f" DP{k} TP{k} EP{k}" for k in range(ranks)]
        elif self.dp:
            self.suffixes = [f" DP{k} TP{k}" for k in range(ranks)]
        else:
            self.suffixes = [f" TP{k}" for k in range(ranks)]
        # ranks whose scheduler logs Prefill/Decode stats
        self.stats = list(range(ranks)) if (self.dp or shape == "tp8-all") else [0]
        # memory sizing (per rank)
        (_, self.model, self.arch, layers, n_kv, head_dim, wgb, self.quant,
         self.context_len) = next(m for m in MODELS if ranks >= m[0])
        kv_heads = n_kv if (self.dp or ranks == 1) else max(1, n_kv // ranks)
        self.cell = layers * kv_heads * head_dim * 2  # bytes per token for K (same for V)
        self.weights_gb = wgb / ranks + (1.7 if self.dp else 0.0)
        self.mfs = 0.85 if idx % 2 == 0 else 0.88
        self.max_running = 256 if self.dp else 2048
        self.cuda_graph_max_bs = 256 if self.dp else 512
        self.max_tokens = 0  # set by startup()
        self.random_seed = rng.randrange(1, 1 << 30)

    def server_args_items(self) -> list[tuple[str, object]]:
        r = self.ranks
        return [
            ("model_path", self.model), ("tokenizer_path", self.model), ("tokenizer_mode", "auto"),
            ("tokenizer_worker_num", 1), ("skip_tokenizer_init", False), ("load_format", "auto"),
            ("model_loader_extra_config", "{}"), ("trust_remote_code", False),
            ("context_length", None), ("is_embedding", False), ("enable_multimodal", None),
            ("revision", None), ("model_impl", "auto"), ("host", "0.0.0.0"),
            ("port", self.port), ("skip_server_warmup", False), ("warmups", None),
            ("nccl_port", None), ("dtype", "auto"), ("quantization", None),
            ("quantization_param_path", None), ("kv_cache_dtype", "auto"),
            ("mem_fraction_static", self.mfs), ("max_running_requests", self.max_running),
            ("max_queued_requests", None), ("max_total_tokens", None),
            ("chunked_prefill_size", 8192), ("max_prefill_tokens", 16384),
            ("schedule_policy", "fcfs"), ("schedule_conservativeness", 1.0),
            ("page_size", 1), ("device", "cuda"), ("tp_size", r), ("pp_size", 1),
            ("stream_interval", 1), ("stream_output", False), ("random_seed", self.random_seed),
            ("watchdog_timeout", 300), ("download_dir", None), ("sleep_on_idle", False),
            ("log_level", "info"), ("log_level_http", None), ("log_requests", False),
            ("show_time_cost", False), ("enable_metrics", True), ("decode_log_interval", 40),
            ("api_key", None), ("served_model_name", self.model), ("chat_template", None),
            ("reasoning_parser", None), ("tool_call_parser", "qwen25"),
            ("dp_size", r if self.dp else 1), ("load_balance_method", "round_robin"),
            ("dist_init_addr", None), ("nnodes", 1), ("node_rank", 0),
            ("attention_backend", "fa3"), ("sampling_backend", "flashinfer"),
            ("grammar_backend", "xgrammar"), ("disable_radix_cache", False),
            ("cuda_graph_max_bs", self.cuda_graph_max_bs), ("cuda_graph_bs", None),
            ("disable_cuda_graph", False), ("disable_overlap_schedule", False),
            ("enable_dp_attention", self.dp), ("enable_dp_lm_head", False),
            ("ep_size", 1), ("moe_a2a_backend", "none"), ("enable_torch_compile", False),
            ("torch_compile_max_bs", 32), ("triton_attention_num_kv_splits", 8),
            ("num_continuous_decode_steps", 1), ("allow_auto_truncate", False),
            ("enable_custom_logit_processor", False), ("enable_hierarchical_cache", False),
            ("hicache_ratio", 2.0), ("speculative_algorithm", None),
            ("disaggregation_mode", "null"),
        ]

    def server_args_line(self) -> str:
        items = self.server_args_items()
        if self.version == OLD:
            body = ", ".join(f"{k}={v!r}" for k, v in items)
            return f"server_args=ServerArgs({body})"
        return f"server_args={dict(items)!r}"


# --------------------------------------------------------------------------- startup


def startup(out: Out, clock: Clock, run: Run, rng: random.Random) -> None:
    t0 = clock.t
    lines: list[str] = [
        f"{SGL}/launch_server.py:11: UserWarning: 'python -m sglang.launch_server' is still "
        "supported, but 'sglang serve' is the recommended entrypoint.",
        "  warnings.warn(",
        f"[{clock.ts(t0)}] {run.server_args_line()}",
    ]
    ev: list[tuple[int, int, str]] = []  # (time, seq, full line)
    seq = 0

    def emit(t: int, k: int | None, msg: str) -> None:
        nonlocal seq
        seq += 1
        pfx = "" if k is None else run.suffixes[k]
        ev.append((t, seq, f"[{clock.ts(t)}{pfx}] {msg}"))

    def raw(t: int, text: str) -> None:
        nonlocal seq
        seq += 1
        ev.append((t, seq, text))

    shards = 24 if run.ranks > 1 else 48
    per_rank_tokens = []
    done = []
    ready_rank = []
    for k in range(run.ranks):
        t = t0 + 2 + rng.randrange(0, 3)
        emit(t, k, "Init torch distributed begin.")
        t += rng.randrange(1, 4)
        emit(t, k, f"Init torch distributed ends. elapsed={rng.uniform(1.2, 4.5):.2f} s, "
                   f"mem usage={rng.uniform(0.55, 0.95):.2f} GB")
        avail0 = round(TOTAL_GPU_GB - 0.6 - rng.uniform(0.0, 0.25), 2)
        t += 1
        emit(t, k, f"Load weight begin. avail mem={avail0:.2f} GB")
        load_s = rng.uniform(35.0, 95.0)
        if k == 0:
            for i in range(0, shards + 1, shards // 4):
                el = int(load_s * i / shards)
                rem = int(load_s - el)
                pct = 100 * i // shards
                rate = "?it/s" if i == 0 else f"{i / max(el, 1):5.2f}it/s"
                eta = "?" if i == 0 else f"{rem // 60:02d}:{rem % 60:02d}"
                raw(t + el, f"Loading safetensors checkpoint shards: {pct:3d}% Completed | "
                            f"{i}/{shards} [{el // 60:02d}:{el % 60:02d}<{eta}, {rate}]")
        t += int(load_s) + 1
        wgb = run.weights_gb + rng.uniform(-0.02, 0.02)
        avail1 = avail0 - wgb
        ver_el = f"elapsed={load_s:.2f} s, "
        emit(t, k, f"Load weight end. {ver_el}type={run.arch}, {run.quant}"
                   f"avail mem={avail1:.2f} GB, mem usage={wgb:.2f} GB.")
        kv_budget = avail1 - TOTAL_GPU_GB * (1 - run.mfs)
        tokens = int(kv_budget / 2 * (1 << 30) / run.cell)
        per_rank_tokens.append(tokens)
        done.append((t, avail1, kv_budget))
    # pool sizing is a collective: every rank waits for the slowest loader and the profiled
    # token count is all-reduced (min) across the TP group, DP attention included
    tp_min = min(per_rank_tokens)
    t_kv = max(d[0] for d in done)
    cap_base = rng.uniform(14.0, 40.0)
    for k in range(run.ranks):
        _, avail1, _ = done[k]
        t = t_kv + rng.randrange(0, 2)
        tokens = tp_min
        kgb = tokens * run.cell / (1 << 30)
        t += 1
        dtype = "" if run.version == OLD else "dtype: torch.bfloat16, "
        emit(t, k, f"KV Cache is allocated. {dtype}#tokens: {tokens}, "
                   f"K size: {kgb:.2f} GB, V size: {kgb:.2f} GB")
        avail2 = avail1 - 2 * kgb
        emit(t, k, f"Memory pool end. avail mem={avail2:.2f} GB")
        t += 1
        avail3 = avail2 - rng.uniform(0.3, 0.7)
        bs = [1, 2, 4, 8] + list(range(12, 33, 4)) + list(range(40, run.cuda_graph_max_bs + 1, 8))
        if run.version == OLD:
            emit(t, k, f"Capture cuda graph begin. This can take up to several minutes. "
                       f"avail mem={avail3:.2f} GB")
        else:
            emit(t, k, f"Capture target decode CUDA graph begin. backend=full, "
                       f"num_tokens_per_req=1, bs={bs!r}, avail mem={avail3:.2f} GB")
        cap_s = cap_base + rng.uniform(0.0, 1.5)
        if k == 0:
            n = len(bs)
            for i in (0, n // 3, 2 * n // 3):
                el = int(cap_s * i / n)
                b = bs[n - 1 - i]
                bar = "\u2588" * (10 * i // n) + " " * (10 - 10 * i // n)
                eta = ("?, ?it/s" if i == 0
                       else f"00:{int(cap_s) - el:02d}, {i / max(el, 1):5.2f}it/s")
                raw(t + el, f"Capturing batches (bs={b} avail_mem={avail3 - 0.02 * i:.2f} GB): "
                            f"{100 * i // n:3d}%|{bar}| {i}/{n} [00:{el:02d}<{eta}]")
        t += int(cap_s) + 1
        cg_mem = rng.uniform(1.1, 2.3)
        avail4 = avail3 - cg_mem
        if run.version == OLD:
            emit(t, k, f"Capture cuda graph end. Time elapsed: {cap_s:.2f} s. "
                       f"mem usage={cg_mem:.2f} GB. avail mem={avail4:.2f} GB.")
        else:
            emit(t, k, f"Capture target decode CUDA graph end. elapsed={cap_s:.2f} s, "
                       f"mem usage={cg_mem:.2f} GB, avail mem={avail4:.2f} GB.")
        ready_rank.append((t, avail4, tokens))
    t_ready = max(r[0] for r in ready_rank) + 1
    run.max_tokens = ready_rank[0][2]
    emit(t_ready, 0, f"max_total_num_tokens={run.max_tokens}, chunked_prefill_size=8192, "
                     f"max_prefill_tokens=16384, max_running_requests={run.max_running}, "
                     f"context_len={run.context_len}, available_gpu_mem={ready_rank[0][1]:.2f} GB")
    ev.sort(key=lambda e: (e[0], e[1]))
    lines.extend(e[2] for e in ev)
    t = t_ready + 1
    ts = clock.ts(t)
    lines += [
        f"[{ts}] INFO:     Started server process [{run.pid}]",
        f"[{ts}] INFO:     Waiting for application startup.",
        f"[{ts}] INFO:     Application startup complete.",
        f"[{ts}] INFO:     Uvicorn running on http://0.0.0.0:{run.port} (Press CTRL+C to quit)",
    ]
    t += 1
    ts = clock.ts(t)
    warm = run.suffixes[0]
    lines += [
        f"[{ts}] INFO:     127.0.0.1:{rng.randrange(40000, 60000)} - "
        '"GET /model_info HTTP/1.1" 200 OK',
        f"[{ts}{warm}] Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, "
        "cuda graph: False, input throughput (token/s): 0.00",
    ]
    t += rng.randrange(1, 3)
    ts = clock.ts(t)
    lines += [
        f"[{ts}] INFO:     127.0.0.1:{rng.randrange(40000, 60000)} - "
        '"POST /generate HTTP/1.1" 200 OK',
        f"[{ts}] The server is fired up and ready to roll!",
    ]
    clock.t = t
    out.add_lines(lines)


# --------------------------------------------------------------------------- bulk pools


def build_warning_pool(rng: random.Random) -> list[str]:
    """Frequent non-statistics lines a busy server prints: health checks, client errors,
    known warnings (bodies only)."""
    out = []
    for _ in range(256):
        ip, port = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}", rng.randrange(1024, 65536)
        out.append(rng.choice([
            f'INFO:     {ip}:{port} - "GET /health HTTP/1.1" 200 OK',
            f'INFO:     {ip}:{port} - "GET /health_generate HTTP/1.1" 200 OK',
            f'INFO:     {ip}:{port} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request',
            f'INFO:     {ip}:{port} - "GET /v1/nonexistent HTTP/1.1" 404 Not Found',
            f'INFO:     {ip}:{port} - "POST /v1/completions HTTP/1.1" 503 Service Unavailable',
            "WARNING:  Invalid HTTP request received.",
            f"The input (len={rng.randrange(33000, 200000)}) is longer than the model's context length (32768).",
            f"Abort request {rng.getrandbits(128):032x}: the client disconnected.",
        ]))
    return out


def build_event_pool(run: Run, rng: random.Random) -> list[str]:
    """Pre-render a coherent random walk of Prefill/Decode stat lines (bodies only)."""
    n = 1 << POOL_BITS
    maxr = run.max_running
    mt = run.max_tokens
    cgb = run.cuda_graph_max_bs
    running = max(1, maxr // 6)
    queue = 0
    avg_len = 1500.0
    cap = min(maxr, mt * 0.65 / 2400.0)  # steady state stays well below a full KV pool
    out: list[str] = []
    rnd = rng.random
    ri = rng.randrange
    for i in range(n):
        # slow load oscillation (busy / quiet periods)
        phase = (i % 4096) / 4096.0
        target = cap * (0.2 + 0.8 * (1 - abs(2 * phase - 1)))
        avg_len += (rnd() - 0.5) * 60
        avg_len = min(2400.0, max(700.0, avg_len))
        if rnd() < 0.33:
            ns = 1 + int(rnd() ** 3 * 7)
            new_tok = min(16384, sum(ri(40, 2600) for _ in range(ns)))
            cached = 0 if rnd() < 0.3 else ns * ri(64, 4096)
            room = maxr - running
            if room < ns:
                queue = min(queue + ns, 512)
                ns = max(1, room) if room > 0 else 1
            elif queue and rnd() < 0.5:
                queue = max(0, queue - ns)
            used = int(running * avg_len) + new_tok
            usage = min(0.85, used / mt)
            thr = new_tok * rng.uniform(3.0, 14.0)
            out.append(
                f"Prefill batch, #new-seq: {ns}, #new-token: {new_tok}, #cached-token: {cached}, "
                f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queue}, "
                f"#pending-token: 0, cuda graph: False, input throughput (token/s): {thr:.2f}"
            )
            running = min(maxr, running + ns)
        else:
            drift = (target - running) * 0.05 + (rnd() - 0.5) * max(2.0, running * 0.1)
            running = int(min(maxr, max(1, running + drift)))
            if queue and running < maxr * 0.9:
                queue = max(0, queue - ri(0, 3))
            tok = int(running * avg_len * rng.uniform(0.9, 1.1))
            usage = min(0.85, tok / mt)
            per_req = rng.uniform(22.0, 48.0) * (1.0 if running <= cgb else 0.7)
            gen = running * per_req * (0.55 + 0.45 / (1 + running / 128))
            out.append(
                f"Decode batch, #running-req: {running}, #token: {tok}, token usage: {usage:.2f}, "
                f"cuda graph: {running <= cgb}, gen throughput (token/s): {gen:.2f}, "
                f"#queue-req: {queue}"
            )
    return out


def build_access_pool(rng: random.Random, wide: bool = False) -> list[str]:
    clients = ["127.0.0.1"] * 14 + ["10.0.3.17", "10.0.3.18", "10.0.7.42"]
    if wide:  # a public endpoint: clients from everywhere, every address width
        clients = [f"{rng.randrange(1, 224)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
                   for _ in range(4096)]
    paths = (
        [("POST", "/v1/chat/completions")] * 80
        + [("POST", "/v1/completions")] * 10
        + [("POST", "/generate")] * 4
        + [("GET", "/health")] * 3
        + [("GET", "/metrics")] * 2
        + [("GET", "/v1/models")]
    )
    out = []
    for _ in range(1 << ACCESS_BITS):
        m, p = rng.choice(paths)
        port = rng.randrange(1024, 65536) if wide else rng.randrange(32768, 61000)
        out.append(f'INFO:     {rng.choice(clients)}:{port} - '
                   f'"{m} {p} HTTP/1.1" 200 OK')
    return out


WORDS = ["the", "model", "server", "please", "write", "a", "short", "python", "function", "that", "returns",
         "memory", "usage", "of", "each", "GPU", "explain", "why", "my", "batch", "size", "matters", "for",
         "throughput", "and", "latency", "under", "load", "with", "examples", "Traceback", "error:", "CUDA"]


def build_request_pool(rng: random.Random, n: int = 512) -> list[tuple[str, str]]:
    """``--log-requests`` lines (tokenizer manager, no rank tag): (Receive body, Finish body).
    Prompts are long (hundreds of bytes to a few KB), as with ``--log-requests-level 1``."""
    out = []
    for _ in range(n):
        rid = f"{rng.getrandbits(128):032x}"
        prompt = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(20, 400)))
        answer = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(10, 200)))
        params = (f"{{'max_new_tokens': {rng.choice((128, 256, 512, 1024))}, 'temperature': "
                  f"{rng.choice((0.0, 0.6, 0.7, 1.0))}, 'top_p': 0.95}}")
        obj = (f"GenerateReqInput(validation_time={rng.uniform(1e-5, 1e-3):.6f}, "
               f"received_time={rng.uniform(1.7e9, 1.8e9):.6f}, rid='{rid}', text={prompt!r}, "
               f"input_ids=None, sampling_params={params}, return_logprob=False, stream=False, "
               f"log_metrics=True, modalities=[], lora_path=None, custom_logit_processor=None)")
        prompt_tokens, completion_tokens = rng.randrange(20, 4000), rng.randrange(10, 1024)
        out_text = (f"{{'text': {answer!r}, 'meta_info': {{'id': '{rid}', 'finish_reason': "
                    f"{{'type': 'stop', 'matched': 151645}}, 'prompt_tokens': {prompt_tokens}, "
                    f"'completion_tokens': {completion_tokens}, 'cached_tokens': {rng.randrange(0, prompt_tokens)}, "
                    f"'e2e_latency': {rng.uniform(0.2, 30.0):.4f}}}}}")
        out.append((f"Receive: obj={obj}", f"Finish: obj={obj}, out={out_text}"))
    return out


def build_counts(rng: random.Random, weights: list[int]) -> list[int]:
    vals = [v for v, w in enumerate(weights) for _ in range(w)]
    return [rng.choice(vals) for _ in range(1 << COUNT_BITS)]


def retract_msg(run: Run, rng: random.Random, hot: bool = False) -> str:
    n = rng.randrange(1, 4) if hot else 1
    gained = n * rng.randrange(600, 6000)
    msg = ("KV cache pool is full. Retract requests. "
           f"#retracted_reqs: {n}, #new_tokens_gained: {gained}")
    if run.version != OLD:
        a = rng.uniform(0.3, 0.7)
        msg += f", #new_token_ratio: {a:.4f} -> {min(1.0, a + 0.2):.4f}"
    return msg


def bulk(out: Out, clock: Clock, run: Run, rng: random.Random, stop_at: int,
         log_requests: bool = False) -> None:
    """Emit steady-state serving until out.written >= stop_at."""
    pool = build_event_pool(run, rng)
    L = len(pool)
    stat_counts = build_counts(rng, [3, 6, 4, 1])  # stat lines per stats-rank per second
    acc_counts = build_counts(rng, [2, 4, 5, 4, 3, 2, 1, 1])  # access lines per second
    pool2 = pool + pool[:8]  # slices never wrap
    acc = build_access_pool(rng, wide=run.shape == "wide")
    warns = build_warning_pool(rng) if run.shape == "warnings" else []
    # lines per second on average: stat lines per stats rank + access lines
    per_sec = len(run.stats) * 1.5 + 2.9
    # one warning line per this many lines (frequent in "warnings", ~every 2,000 in "wide")
    warn_p = per_sec / 50 if warns else 0.0
    reqs = build_request_pool(rng) if log_requests else []
    ri = 0
    AM = (1 << ACCESS_BITS) - 1
    CM = (1 << COUNT_BITS) - 1
    suf = [run.suffixes[k] for k in run.stats]
    cursors = [rng.randrange(L) for _ in suf]
    nstat = len(suf)
    ci = rng.randrange(1 << COUNT_BITS)
    ai = rng.randrange(1 << ACCESS_BITS)
    aci = rng.randrange(1 << COUNT_BITS)
    rnd = rng.random
    # ~1 retraction warning per this many seconds (rank-wide)
    retract_every = per_sec / 2000.0 / len(run.stats) if run.shape == "wide" else 1.0 / 20000.0
    t = clock.t
    fmt = clock.ts
    add = out.add
    while out.written < stop_at:
        t += 1
        if rnd() < 0.002:  # quiet gap
            t += rng.randrange(2, 40)
        ts = fmt(t)
        parts = []
        for j in range(nstat):
            k = stat_counts[ci & CM]
            ci += 1
            if k:
                c = cursors[j]
                pfx = "[" + ts + suf[j] + "] "
                parts.append(pfx + ("\n" + pfx).join(pool2[c:c + k]))
                c += k
                cursors[j] = c - L if c >= L else c
        na = acc_counts[aci & CM]
        aci += 1
        if na:
            apfx = "[" + ts + "] "
            s = ai & AM
            chunk = acc[s:s + na]
            if len(chunk) < na:
                chunk = chunk + acc[: na - len(chunk)]
            if reqs:  # each request: Receive when it arrives, Finish before its access line
                for _ in range(na):
                    rcv, fin = reqs[ri % len(reqs)]
                    ri += 1
                    parts.append(apfx + rcv)
                    parts.append(apfx + fin)
            parts.append(apfx + ("\n" + apfx).join(chunk))
            ai += na
        if rnd() < retract_every * nstat:
            j = rng.randrange(nstat)
            parts.append("[" + ts + suf[j] + "] " + retract_msg(run, rng))
        if warns and rnd() < warn_p:
            parts.append("[" + ts + "] " + warns[ri % len(warns)])
            ri += 1
        if parts:
            clock.t = t  # a prefixing writer stamps lines with the clock
            add("\n".join(parts) + "\n")
    clock.t = t


# --------------------------------------------------------------------------- endings


def sigterm_shutdown(out: Out, clock: Clock, run: Run) -> None:
    clock.advance(3)
    ts = clock.ts()
    lines = [
        f"[{ts}] SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
    ]
    clock.advance(2)
    ts = clock.ts()
    lines += [
        f"[{ts}] Gracefully exiting... Remaining number of requests 0. "
        "Remaining requests remaining_rids=[].",
        f"[{ts}] INFO:     Shutting down",
        f"[{ts}] INFO:     Waiting for application shutdown.",
        f"[{ts}] INFO:     Application shutdown complete.",
        f"[{ts}] INFO:     Finished server process [{run.pid}]",
    ]
    out.add_lines(lines)


def oom_traceback(run: Run, rng: random.Random, need: int) -> list[str]:
    v_old = run.version == OLD
    ln = (lambda a, b: a) if v_old else (lambda a, b: b)
    loop = "event_loop_overlap"
    frames = [
        (f"{SGL}/srt/managers/scheduler.py", ln(2871, 3342), "run_scheduler_process",
         "scheduler.run_event_loop()", ""),
        (f"{SGL}/srt/managers/scheduler.py", ln(1032, 1187), "run_event_loop",
         "dispatch_event_loop(self)", ""),
        (f"{SGL}/srt/managers/scheduler.py", ln(2839, 3301), "dispatch_event_loop",
         f"scheduler.{loop}()", ""),
        (f"{TORCH}/utils/_contextlib.py", 120, "decorate_context",
         "return func(*args, **kwargs)", "           ^^^^^^^^^^^^^^^^^^^^^"),
        (f"{SGL}/srt/managers/scheduler.py", ln(1098, 1233), loop,
         "batch = self.get_next_batch_to_run()", "            ^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
        (f"{SGL}/srt/managers/scheduler.py", ln(1802, 2016), "get_next_batch_to_run",
         "self.running_batch = self.update_running_batch(self.running_batch)",
         "                     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
        (f"{SGL}/srt/managers/scheduler.py", ln(2093, 2310), "update_running_batch",
         "batch.prepare_for_decode()", ""),
        (f"{SGL}/srt/managers/schedule_batch.py", ln(1718, 1904), "prepare_for_decode",
         "self.out_cache_loc = alloc_for_decode(self, token_per_req=1)",
         "                     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
        (f"{SGL}/srt/mem_cache/common.py", ln(455, 512), "alloc_for_decode",
         "out_cache_loc = alloc_token_slots(batch.tree_cache, bs * token_per_req)",
         "                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
        (f"{SGL}/srt/mem_cache/common.py", ln(338, 393), "alloc_token_slots",
         "raise RuntimeError(error_msg)", ""),
    ]
    lines = []
    for path, no, fn, code, caret in frames:
        lines.append(f'  File "{path}", line {no}, in {fn}')
        lines.append(f"    {code}")
        if caret:  # 3.11+ style: carets under the call expression
            off = code.index("= ") + 2 if "= " in code else (7 if code.startswith("return ") else 0)
            lines.append(" " * (4 + off) + "^" * (len(code) - off))
    lines += oom_message(need, exc=True)
    lines.append("")
    return lines


def oom_message(need: int, exc: bool) -> list[str]:
    head = "RuntimeError: " if exc else ""
    return [
        f"{head}Decode out of memory. Try to lower your batch size.",
        f"Try to allocate {need} tokens.",
        "Avaliable tokens: 0",
        "self.token_to_kv_pool_allocator.available_size()=0",
        "self.tree_cache.evictable_size()=0",
    ]


def crash(out: Out, clock: Clock, run: Run, rng: random.Random) -> None:
    """KV pressure ramp on one rank, then 'Decode out of memory' and the process-tree kill."""
    k_bad = rng.choice(run.stats)
    suf = run.suffixes[k_bad]
    mt = run.max_tokens
    maxr = run.max_running
    running = int(min(maxr, mt * 0.65 / 2400.0) * 1.1)  # just above the steady-state peak
    usage = 0.86
    queue = rng.randrange(5, 30)
    t = clock.t
    lines: list[str] = []
    ramp = 45
    for i in range(ramp):
        t += 1
        ts = clock.ts(t)
        usage = min(0.99, usage + rng.uniform(0.001, 0.006))
        running = min(maxr, running + rng.randrange(0, 3))
        queue += rng.randrange(0, 6)
        tok = int(usage * mt) + rng.randrange(0, max(1, int(mt * 0.004)))
        gen = running * rng.uniform(14.0, 24.0)
        lines.append(f"[{ts}{suf}] Decode batch, #running-req: {running}, #token: {tok}, "
                     f"token usage: {usage:.2f}, cuda graph: {running <= run.cuda_graph_max_bs}, "
                     f"gen throughput (token/s): {gen:.2f}, #queue-req: {queue}")
        if i % 9 == 4:
            lines.append(f"[{ts}{suf}] " + retract_msg(run, rng, hot=True))
            running = max(1, running - rng.randrange(1, 4))
        for j in run.stats:
            if j != k_bad and rng.random() < 0.5:
                lines.append(f"[{ts}{run.suffixes[j]}] Decode batch, #running-req: "
                             f"{rng.randrange(20, 90)}, #token: {int(mt * rng.uniform(0.2, 0.5))}, "
                             f"token usage: {rng.uniform(0.2, 0.5):.2f}, cuda graph: True, "
                             f"gen throughput (token/s): {rng.uniform(900, 2400):.2f}, "
                             f"#queue-req: 0")
        for _ in range(rng.randrange(0, 4)):
            lines.append(f'[{ts}] INFO:     127.0.0.1:{rng.randrange(32768, 61000)} - '
                         '"POST /v1/chat/completions HTTP/1.1" 200 OK')
    t += 1
    ts = clock.ts(t)
    need = running  # one new KV slot per running request
    # TP-only: every TP rank runs the same schedule, several print before the kill lands
    crashing = [k_bad] if run.dp else sorted(rng.sample(range(run.ranks), min(3, run.ranks)))
    for k in crashing:
        s = run.suffixes[k]
        msg = oom_message(need, exc=False)
        lines.append(f"[{ts}{s}] {msg[0]}")
        lines.extend(msg[1:])
    for k in crashing:
        s = run.suffixes[k]
        lines.append(f"[{ts}{s}] Scheduler hit an exception: Traceback (most recent call last):")
        lines.extend(oom_traceback(run, rng, need))
    lines.append(f"[{ts}] SIGQUIT received. signum=None, frame=None. "
                 "It usually means one child failed.")
    if run.version != OLD:
        lines.append(f"[{ts}] kill_process_tree called: parent_pid={run.pid}, "
                     f"include_parent=True, pid={run.pid}")
    clock.t = t
    out.add_lines(lines)


# --------------------------------------------------------------------------- vLLM (--shape vllm)
#
# A vLLM 0.13 V1-engine serving log (shared/reference/vllm-log-format.md): every line a child
# process writes carries its stdout decoration, "(APIServer pid=N) ", "(EngineCore_DP0 pid=N) " or
# "(Worker_TPk pid=N) " (0.13 decorates the stream, so tracebacks, tqdm bars and uvicorn's own
# lines carry it too); vLLM records then read "LEVEL MM-DD HH:MM:SS [file:line] msg" (no year).
# The file:line values are 0.13's call sites where the reference gives them (vllm-source.json);
# the others, and the frames of the tracebacks, are plausible stand-ins of the same shape.

VLLM_VERSION = "0.13.0"
VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"
VLLM_STATS_INTERVAL = 10  # VLLM_LOG_STATS_INTERVAL's default (seconds)
VLLM_ROUTES = [("/openapi.json", "HEAD, GET"), ("/docs", "HEAD, GET"), ("/docs/oauth2-redirect", "HEAD, GET"),
               ("/redoc", "HEAD, GET"), ("/health", "GET"), ("/load", "GET"), ("/ping", "POST"),
               ("/ping", "GET"), ("/tokenize", "POST"), ("/detokenize", "POST"), ("/v1/models", "GET"),
               ("/version", "GET"), ("/v1/chat/completions", "POST"), ("/v1/completions", "POST"),
               ("/v1/embeddings", "POST"), ("/metrics", "GET")]


class VllmRun:
    """What a vLLM launch adds to the run plan: its processes and its memory sizing."""

    def __init__(self, run: Run, rng: random.Random):
        self.tp = run.ranks
        self.api = f"(APIServer pid={run.pid}) "
        self.engine_pid = run.pid + rng.randrange(60, 400)
        self.engine = f"(EngineCore_DP0 pid={self.engine_pid}) "
        if self.tp == 1:  # UniProcExecutor: the worker lives in the engine core process
            self.workers = [self.engine]
        else:
            base = self.engine_pid + rng.randrange(40, 200)
            self.workers = [f"(Worker_TP{k} pid={base + 3 * k + rng.randrange(3)}) " for k in range(self.tp)]
        self.util = 0.90 if run.idx % 2 == 0 else 0.92
        self.max_num_seqs = 256
        self.max_model_len = run.context_len
        self.port = 8000
        self.kv_tokens = 0  # set by vllm_startup()


def vrec(pfx: str, level: str, ts: str, site: str, msg: str) -> str:
    """One vLLM record line: process decoration, level, 'MM-DD HH:MM:SS', [file:line]."""
    return f"{pfx}{level} {ts} [{site}] {msg}"


def vts(clock: Clock, t: int) -> str:
    return clock.ts(t)[5:]  # '%m-%d %H:%M:%S', vLLM's _DATE_FORMAT


def vllm_non_default_args(run: Run, v: VllmRun) -> str:
    items: list[tuple[str, object]] = [("model_tag", run.model), ("host", "0.0.0.0"), ("port", v.port),
                                       ("model", run.model)]
    if v.tp > 1:
        items.append(("tensor_parallel_size", v.tp))
    items += [("max_model_len", v.max_model_len), ("gpu_memory_utilization", v.util),
              ("max_num_seqs", v.max_num_seqs), ("enable_prefix_caching", True),
              ("served_model_name", [run.model.split("/")[-1]])]
    return "non-default args: " + repr(dict(items))


def vllm_engine_config(run: Run, v: VllmRun, seed: int) -> str:
    quant = "fp8" if "FP8" in run.model else "None"
    name = run.model.split("/")[-1]
    return (
        f"Initializing a V1 LLM engine (v{VLLM_VERSION}) with config: model='{run.model}', speculative_config=None, "
        f"tokenizer='{run.model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
        f"tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={v.max_model_len}, "
        f"download_dir=None, load_format=auto, tensor_parallel_size={v.tp}, pipeline_parallel_size=1, "
        f"data_parallel_size=1, disable_custom_all_reduce=False, quantization={quant}, enforce_eager=False, "
        "kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig("
        "backend='auto', disable_fallback=False, disable_any_whitespace=False, disable_additional_properties=False, "
        "reasoning_parser=''), observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, "
        f"otlp_traces_endpoint=None, collect_detailed_traces=None), seed={seed}, served_model_name={name}, "
        "enable_prefix_caching=True, enable_chunked_prefill=True, pooler_config=None, compilation_config="
        "{'level': None, 'mode': <CompilationMode.VLLM_COMPILE: 3>, 'debug_dump_path': None, 'cache_dir': '', "
        "'backend': 'inductor', 'custom_ops': ['none'], 'splitting_ops': ['vllm::unified_attention', "
        "'vllm::unified_attention_with_output', 'vllm::mamba_mixer2', 'vllm::linear_attention'], "
        "'use_inductor_graph_partition': False, 'pass_config': {}, 'max_cudagraph_capture_size': 512, "
        "'local_cache_dir': None}"
    )


def vllm_startup(out: Out, clock: Clock, run: Run, rng: random.Random) -> VllmRun:
    """From the API server's banner to uvicorn's 'Application startup complete.'"""
    v = VllmRun(run, rng)
    api, eng = v.api, v.engine
    t = clock.t
    ts = vts(clock, t)
    lines = [
        vrec(api, "INFO", ts, "api_server.py:1351", f"vLLM API server version {VLLM_VERSION}"),
        vrec(api, "INFO", ts, "utils.py:253", vllm_non_default_args(run, v)),
    ]
    t += rng.randrange(3, 9)
    ts = vts(clock, t)
    lines += [
        vrec(api, "INFO", ts, "model.py:514", f"Resolved architecture: {run.arch}"),
        vrec(api, "INFO", ts, "model.py:1661", f"Using max model len {v.max_model_len}"),
        vrec(api, "INFO", ts, "scheduler.py:230", "Chunked prefill is enabled with max_num_batched_tokens=8192."),
    ]
    t += rng.randrange(4, 10)
    ts = vts(clock, t)
    lines.append(vrec(eng, "INFO", ts, "core.py:93", vllm_engine_config(run, v, run.random_seed % 1000)))
    if v.tp > 1:
        lines.append(vrec(eng, "WARNING", ts, "multiproc_executor.py:882",
                          "Reducing Torch parallelism from 104 threads to 1 to avoid unnecessary CPU contention. "
                          "Set OMP_NUM_THREADS in the external environment to tune this value as needed."))
    t += rng.randrange(5, 12)
    ts = vts(clock, t)
    for k, w in enumerate(v.workers):
        lines.append(vrec(w, "INFO", ts, "parallel_state.py:1208",
                          f"rank {k} in world size {v.tp} is assigned as DP rank 0, PP rank 0, PCP rank 0, "
                          f"TP rank {k}, EP rank {k}"))
    t += 1
    ts = vts(clock, t)
    for w in v.workers:
        lines.append(vrec(w, "INFO", ts, "gpu_model_runner.py:3562", f"Starting to load model {run.model}..."))
    lines.append(vrec(v.workers[0], "INFO", ts, "cuda.py:411",
                      "Using FLASH_ATTN attention backend out of potential backends: "
                      "['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION']"))
    # weights: TP0's tqdm bar (decorated like every other write of the child), every rank's end
    shards = 48 if v.tp > 1 else 5
    load_s = rng.uniform(30.0, 90.0)
    for i in range(0, shards + 1, max(1, shards // 4)):
        el = int(load_s * i / shards)
        rem = int(load_s - el)
        rate = "?it/s" if i == 0 else f"{i / max(el, 1):5.2f}it/s"
        eta = "?" if i == 0 else f"{rem // 60:02d}:{rem % 60:02d}"
        lines.append(f"{v.workers[0]}Loading safetensors checkpoint shards: {100 * i // shards:3d}% Completed | "
                     f"{i}/{shards} [{el // 60:02d}:{el % 60:02d}<{eta}, {rate}]")
    lines.append(v.workers[0])  # the empty decorated line tqdm leaves behind
    t += int(load_s) + 1
    ts = vts(clock, t)
    weights_gib = []
    for w in v.workers:
        took = load_s + rng.uniform(-1.5, 1.5)
        gib = run.weights_gb + rng.uniform(-0.01, 0.01)
        weights_gib.append(gib)
        lines.append(vrec(w, "INFO", ts, "default_loader.py:308", f"Loading weights took {took:.2f} seconds"))
        lines.append(vrec(w, "INFO", ts, "gpu_model_runner.py:3659",
                          f"Model loading took {gib:.4f} GiB memory and {took + rng.uniform(1.0, 3.0):.6f} seconds"))
    # torch.compile, then the profiling pass sizes the KV cache inside the utilization budget
    cache = f"{rng.getrandbits(40):010x}"
    dyn = rng.uniform(6.0, 14.0)
    comp = dyn + rng.uniform(10.0, 40.0)
    t += 2
    ts = vts(clock, t)
    for k, w in enumerate(v.workers):
        lines.append(vrec(w, "INFO", ts, "backends.py:643",
                          f"Using cache directory: /root/.cache/vllm/torch_compile_cache/{cache}/rank_{k}_0/backbone "
                          "for vLLM's torch.compile"))
    t += int(dyn)
    ts = vts(clock, t)
    for w in v.workers:
        lines.append(vrec(w, "INFO", ts, "backends.py:703", f"Dynamo bytecode transform time: {dyn:.2f} s"))
    t += int(comp - dyn) + 1
    ts = vts(clock, t)
    kv_gib = []
    for k, w in enumerate(v.workers):
        lines.append(vrec(w, "INFO", ts, "monitor.py:34", f"torch.compile takes {comp + rng.uniform(0, 0.5):.2f} s "
                                                         "in total"))
        peak = rng.uniform(2.2, 3.6) + 0.4
        kv = TOTAL_GPU_GB * v.util - weights_gib[k] - peak
        kv_gib.append(kv)
        lines.append(vrec(w, "INFO", ts, "gpu_worker.py:375", f"Available KV cache memory: {kv:.2f} GiB"))
    block = 16
    v.kv_tokens = int(min(kv_gib) * (1 << 30) / (2 * run.cell)) // block * block
    t += 1
    ts = vts(clock, t)
    lines += [
        vrec(eng, "INFO", ts, "kv_cache_utils.py:1291", f"GPU KV cache size: {v.kv_tokens:,} tokens"),
        vrec(eng, "INFO", ts, "kv_cache_utils.py:1296",
             f"Maximum concurrency for {v.max_model_len:,} tokens per request: {v.kv_tokens / v.max_model_len:.2f}x"),
    ]
    # CUDA graphs: TP0's two bars, every rank's end line
    cap_s = rng.uniform(8.0, 25.0)
    for kind, n in (("mixed prefill-decode, PIECEWISE", 67), ("decode, FULL", 35)):
        for i in (0, n // 2, n):
            el = int(cap_s / 2 * i / n)
            bar = "\u2588" * (10 * i // n) + " " * (10 - 10 * i // n)
            eta = "?, ?it/s" if i == 0 else f"00:{int(cap_s / 2) - el:02d}, {i / max(el, 1):5.2f}it/s"
            lines.append(f"{v.workers[0]}Capturing CUDA graphs ({kind}): {100 * i // n:3d}%|{bar}| {i}/{n} "
                         f"[00:{el:02d}<{eta}]")
    t += int(cap_s) + 1
    ts = vts(clock, t)
    for w in v.workers:
        lines.append(vrec(w, "INFO", ts, "gpu_model_runner.py:4587",
                          f"Graph capturing finished in {int(cap_s + rng.uniform(0, 1.5))} secs, "
                          f"took {rng.uniform(0.6, 1.9):.2f} GiB"))
    lines.append(vrec(eng, "INFO", ts, "core.py:259", "init engine (profile, create kv cache, warmup model) took "
                                                      f"{t - clock.t - 14 + rng.uniform(0, 1):.2f} seconds"))
    t += rng.randrange(1, 4)
    ts = vts(clock, t)
    lines += [
        vrec(api, "INFO", ts, "api_server.py:1099", "Supported tasks: ['generate']"),
        vrec(api, "WARNING", ts, "model.py:1550",
             "Default sampling parameters have been overridden by the model's Hugging Face generation config "
             "recommended from the model creator. If this is not intended, please relaunch vLLM instance with "
             "`--generation-config vllm`."),
        vrec(api, "INFO", ts, "api_server.py:1425", f"Starting vLLM API server 0 on http://0.0.0.0:{v.port}"),
        vrec(api, "INFO", ts, "launcher.py:38", "Available routes are:"),
    ]
    lines += [vrec(api, "INFO", ts, "launcher.py:46", f"Route: {p}, Methods: {m}") for p, m in VLLM_ROUTES]
    lines += [
        f"{api}INFO:     Started server process [{run.pid}]",
        f"{api}INFO:     Waiting for application startup.",
        f"{api}INFO:     Application startup complete.",
    ]
    clock.t = t
    out.add_lines(lines)
    return v


def vllm_stats_line(v: VllmRun, prompt: float, gen: float, running: int, waiting: int, usage: float,
                    hit: float) -> str:
    """The body of 0.13's periodic statistics record (loggers.py)."""
    return (f"Engine 000: Avg prompt throughput: {prompt:.1f} tokens/s, Avg generation throughput: {gen:.1f} "
            f"tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, GPU KV cache usage: {usage:.1f}%, "
            f"Prefix cache hit rate: {hit:.1f}%")


def build_vllm_stats_pool(v: VllmRun, rng: random.Random, n: int = 1 << 12) -> list[str]:
    """A random walk of the engine's state, one statistics line per interval (bodies only)."""
    maxr = v.max_num_seqs
    cap = min(maxr, int(v.kv_tokens * 0.7 / 5000))  # the steady state stays well below a full cache
    running = max(1, cap // 3)
    avg_len = 5000.0  # tokens a running request holds (prompt and output so far)
    hit = rng.uniform(25.0, 55.0)
    out = []
    for i in range(n):
        phase = (i % 512) / 512.0
        target = cap * (0.15 + 0.85 * (1 - abs(2 * phase - 1)))
        running = int(min(maxr, max(0, running + (target - running) * 0.2 + rng.uniform(-6, 6))))
        waiting = 0 if rng.random() < 0.85 else rng.randrange(1, 24)
        avg_len = min(9000.0, max(1500.0, avg_len + rng.uniform(-150, 150)))
        usage = min(85.0, 100.0 * running * avg_len / max(1, v.kv_tokens))
        gen = running * rng.uniform(18.0, 34.0)
        prompt = running * rng.uniform(40.0, 160.0) if running else 0.0
        hit = min(80.0, max(5.0, hit + rng.uniform(-0.3, 0.3)))
        out.append(vllm_stats_line(v, prompt, gen, running, waiting, usage, hit))
    return out


def build_vllm_warning_pool(v: VllmRun, rng: random.Random) -> list[str]:
    """The occasional non-statistics lines of a busy vLLM server (whole lines but the time)."""
    api = v.api
    out = []
    for _ in range(64):
        ip, port = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}", rng.randrange(32768, 61000)
        out.append(rng.choice([
            ("", f'{api}INFO:     {ip}:{port} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request'),
            ("", f'{api}INFO:     {ip}:{port} - "GET /v1/nonexistent HTTP/1.1" 404 Not Found'),
            ("WARNING", "protocol.py:93|The following fields were present in the request but ignored: "
                        f"{{'{rng.choice(['top_k_sampling', 'repetition', 'stream_opts', 'cache_prompt'])}'}}"),
            ("WARNING", "serving_chat.py:231|Using supplied chat template: None"),
        ]))
    return out


def build_vllm_request_pool(rng: random.Random, n: int = 512) -> list[tuple[str, str]]:
    """``--enable-log-requests`` lines of vLLM 0.13 (v1, entrypoints/logger.py:47 and
    v1/engine/async_llm.py:353): (Received body, Added body), each request id a uuid4 hex."""
    out = []
    for _ in range(n):
        rid = f"chatcmpl-{rng.getrandbits(128):032x}"
        params = (f"SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
                  f"temperature={rng.choice((0.0, 0.6, 0.7, 1.0))}, top_p={rng.choice((0.8, 0.95, 1.0))}, top_k=0, "
                  f"min_p=0.0, seed=None, stop=[], stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, "
                  f"ignore_eos=False, max_tokens={rng.choice((128, 256, 512, 1024, 4000))}, min_tokens=0, "
                  "logprobs=None, prompt_logprobs=None, skip_special_tokens=True, spaces_between_special_tokens=True, "
                  "truncate_prompt_tokens=None, structured_outputs=None, extra_args=None)")
        out.append((f"logger.py:47|Received request {rid}: params: {params}, lora_request: None.",
                    f"async_llm.py:353|Added request {rid}."))
    return out


def vllm_bulk(out: Out, clock: Clock, run: Run, v: VllmRun, rng: random.Random, stop_at: int,
              log_requests: bool = False) -> None:
    """Serving: uvicorn access lines every second, the statistics line every interval (and
    each request's Received/Added lines with ``log_requests``)."""
    stats = build_vllm_stats_pool(v, rng)
    reqs = build_vllm_request_pool(rng) if log_requests else []
    ri = 0
    SM = len(stats) - 1
    acc = [f"{v.api}{line}" for line in build_access_pool(rng)]
    AM = (1 << ACCESS_BITS) - 1
    acc2 = acc + acc[:16]  # slices never wrap
    acc_counts = build_counts(rng, [1, 2, 4, 5, 6, 5, 4, 3, 2, 1, 1])  # access lines per second
    CM = (1 << COUNT_BITS) - 1
    warns = build_vllm_warning_pool(v, rng)
    stat_pfx = f"{v.api}INFO "
    site = " [loggers.py:236] "
    si = rng.randrange(len(stats))
    ai = rng.randrange(1 << ACCESS_BITS)
    aci = rng.randrange(1 << COUNT_BITS)
    rnd = rng.random
    t = clock.t
    next_stat = t + VLLM_STATS_INTERVAL
    add = out.add
    while out.written < stop_at:
        t += 1
        if rnd() < 0.002:  # quiet gap: no requests, no statistics
            t += rng.randrange(2, 40)
            next_stat = t + VLLM_STATS_INTERVAL
        parts = []
        na = acc_counts[aci & CM]
        aci += 1
        if na:
            s = ai & AM
            for _ in range(na if reqs else 0):  # each request: Received and Added as it arrives
                for where, msg in (body.split("|", 1) for body in reqs[ri % len(reqs)]):
                    parts.append(vrec(v.api, "INFO", vts(clock, t), where, msg))
                ri += 1
            parts.append("\n".join(acc2[s:s + na]))
            ai += na
        if rnd() < 0.003:
            level, body = warns[ai & 63]
            if level:
                where, msg = body.split("|", 1)
                parts.append(vrec(v.api, level, vts(clock, t), where, msg))
            else:
                parts.append(body)
        if t >= next_stat:
            parts.append(stat_pfx + vts(clock, t) + site + stats[si & SM])
            si += 1
            next_stat = t + VLLM_STATS_INTERVAL
        if parts:
            add("\n".join(parts) + "\n")
    clock.t = t


def vllm_shutdown(out: Out, clock: Clock, run: Run, v: VllmRun) -> None:
    """An operator's Ctrl-C / SIGTERM: uvicorn drains, the CLI says goodbye."""
    clock.advance(3)
    ts = vts(clock, clock.t)
    api = v.api
    out.add_lines([
        f"{api}INFO:     Shutting down",
        f"{api}INFO:     Waiting for application shutdown.",
        f"{api}INFO:     Application shutdown complete.",
        vrec(api, "INFO", ts, "launcher.py:110", "Shutting down FastAPI HTTP server."),
        f"{api}INFO:     Finished server process [{run.pid}]",
        vrec(api, "INFO", ts, "serve.py:158", "Shutting down."),
    ])


def vllm_frames(frames: list[tuple[str, int, str, str]]) -> list[str]:
    out = []
    for path, no, fn, code in frames:
        out.append(f'  File "{path}", line {no}, in {fn}')
        out.append(f"    {code}")
        off = code.index("= ") + 2 if "= " in code else (7 if code.startswith("return ") else 0)
        if "(" in code and off:  # 3.12 carets under a call that is not the whole line
            out.append(" " * (4 + off) + "^" * (len(code.rstrip("(")) - off))
    return out


def vllm_oom_text(rng: random.Random, gpu: int, pid: int) -> str:
    alloc = rng.choice((896.0, 1.25, 1.88, 2.50, 3.12))
    unit = "MiB" if alloc > 100 else "GiB"
    free = rng.uniform(0.2, 0.9)
    used = TOTAL_GPU_GB - free
    return (f"CUDA out of memory. Tried to allocate {alloc:.2f} {unit}. GPU {gpu} has a total capacity of "
            f"{TOTAL_GPU_GB:.2f} GiB of which {free * 1024:.2f} MiB is free. Process {pid} has {used:.2f} GiB memory "
            f"in use. Of the allocated memory {used - 1.6:.2f} GiB is allocated by PyTorch, with "
            f"{rng.uniform(0.6, 1.9):.2f} GiB allocated in private pools (e.g., CUDA Graphs), and "
            f"{rng.uniform(60, 400):.2f} MiB is reserved by PyTorch but unallocated. If reserved but unallocated "
            "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
            "See documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


def vllm_crash(out: Out, clock: Clock, run: Run, v: VllmRun, rng: random.Random) -> None:
    """KV pressure, then a forward pass's CUDA OOM: the worker's traceback, the engine core's
    fatal error, the API server's EngineDeadError, failed requests, uvicorn going down."""
    api, eng = v.api, v.engine
    t = clock.t
    lines: list[str] = []
    running, waiting, usage = int(v.max_num_seqs * 0.8), rng.randrange(2, 12), 86.0
    for _ in range(8):  # the last intervals: the cache fills and requests queue up
        for _ in range(VLLM_STATS_INTERVAL):
            t += 1
            for _ in range(rng.randrange(0, 3)):
                lines.append(f'{api}INFO:     127.0.0.1:{rng.randrange(32768, 61000)} - '
                             '"POST /v1/chat/completions HTTP/1.1" 200 OK')
        usage = min(99.9, usage + rng.uniform(0.8, 2.2))
        running = min(v.max_num_seqs, running + rng.randrange(2, 12))
        waiting += rng.randrange(3, 20)
        lines.append(vrec(api, "INFO", vts(clock, t), "loggers.py:236",
                          vllm_stats_line(v, running * rng.uniform(200.0, 400.0), running * rng.uniform(9.0, 15.0),
                                          running, waiting, usage, rng.uniform(20.0, 50.0))))
    t += rng.randrange(1, 5)
    ts = vts(clock, t)
    pkg = VLLM
    torch = "/usr/local/lib/python3.12/dist-packages/torch"
    model_file = "qwen3_moe" if "Moe" in run.arch else "qwen3"
    forward = [
        (f"{pkg}/v1/worker/gpu_worker.py", 599, "execute_model",
         "output = self.model_runner.execute_model(scheduler_output, intermediate_tensors)"),
        (f"{torch}/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
        (f"{pkg}/v1/worker/gpu_model_runner.py", 2868, "execute_model", "model_output = self._model_forward("),
        (f"{pkg}/v1/worker/gpu_model_runner.py", 2580, "_model_forward", "return self.model("),
        (f"{pkg}/compilation/cuda_graph.py", 126, "__call__", "return self.runnable(*args, **kwargs)"),
        (f"{torch}/nn/modules/module.py", 1775, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
        (f"{torch}/nn/modules/module.py", 1786, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{pkg}/model_executor/models/{model_file}.py", 707, "forward",
         "hidden_states = self.model(input_ids, positions, intermediate_tensors,"),
        (f"{torch}/nn/modules/module.py", 1786, "_call_impl", "return forward_call(*args, **kwargs)"),
    ] + ([(f"{pkg}/model_executor/layers/fused_moe/fused_moe.py", 1626, "fused_experts_impl",
           "intermediate_cache1 = torch.empty((M, topk_ids.size(1), N),")] if "Moe" in run.arch else
         [(f"{pkg}/model_executor/layers/linear.py", 565, "forward",
           "output_parallel = self.quant_method.apply(self, input_, bias)")])
    engine_head = [
        (f"{pkg}/v1/engine/core.py", 859, "run_engine_core", "engine_core.run_busy_loop()"),
        (f"{pkg}/v1/engine/core.py", 886, "run_busy_loop", "self._process_engine_step()"),
        (f"{pkg}/v1/engine/core.py", 919, "_process_engine_step", "outputs, model_executed = self.step_fn()"),
        (f"{pkg}/v1/engine/core.py", 392, "step_with_batch_queue",
         "model_output = self.execute_model_with_error_logging("),
        (f"{pkg}/v1/engine/core.py", 303, "execute_model_with_error_logging", "raise err"),
        (f"{pkg}/v1/engine/core.py", 294, "execute_model_with_error_logging", "return model_fn(scheduler_output)"),
    ]
    fatal = "[core.py:868] "
    epfx = f"{eng}ERROR {ts} {fatal}"
    if v.tp == 1:  # the forward runs in the engine core process itself
        oom = vllm_oom_text(rng, 0, v.engine_pid)
        body = (["EngineCore encountered a fatal error.", "Traceback (most recent call last):"]
                + vllm_frames(engine_head + [
                    (f"{pkg}/v1/executor/uniproc_executor.py", 75, "collective_rpc",
                     "answer = run_method(self.driver_worker, method, args, kwargs)"),
                    (f"{pkg}/v1/serial_utils.py", 479, "run_method", "return func(*args, **kwargs)")] + forward)
                + [f"torch.OutOfMemoryError: {oom}"])
        lines += [epfx + b for b in body]
    else:  # a worker runs out; the engine core's RPC re-raises its error
        bad = sorted(rng.sample(range(v.tp), min(2, v.tp)))
        first = ""
        for k in bad:
            w = v.workers[k]
            oom = vllm_oom_text(rng, k, int(w.rsplit("=", 1)[1].rstrip(") ")))
            first = first or oom
            wpfx = f"{w}ERROR {ts} [multiproc_executor.py:824] "
            body = (["WorkerProc hit an exception.", "Traceback (most recent call last):"]
                    + vllm_frames([(f"{pkg}/v1/executor/multiproc_executor.py", 819, "worker_busy_loop",
                                    "output = func(*args, **kwargs)")] + forward)
                    + [f"torch.OutOfMemoryError: {oom}"])
            lines += [wpfx + b for b in body]
        body = (["EngineCore encountered a fatal error.", "Traceback (most recent call last):"]
                + vllm_frames(engine_head + [
                    (f"{pkg}/v1/executor/multiproc_executor.py", 358, "collective_rpc", "result = get_response(w)"),
                    (f"{pkg}/v1/executor/multiproc_executor.py", 284, "get_response", "raise RuntimeError(")])
                + [f"RuntimeError: Worker failed with error '{first}', please check the stack trace above for the "
                   "root cause"])
        lines += [epfx + b for b in body]
    apfx = f"{api}ERROR {ts} [async_llm.py:538] "
    body = (["AsyncLLM output_handler failed.", "Traceback (most recent call last):"]
            + vllm_frames([(f"{pkg}/v1/engine/async_llm.py", 494, "output_handler",
                            "outputs = await engine_core.get_output_async()"),
                           (f"{pkg}/v1/engine/core_client.py", 895, "get_output_async",
                            "raise self._format_exception(outputs) from None")])
            + ["vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) "
               "for the root cause."])
    lines += [apfx + b for b in body]
    for _ in range(rng.randrange(3, 9)):
        lines.append(f'{api}INFO:     127.0.0.1:{rng.randrange(32768, 61000)} - '
                     '"POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error')
    t += 1
    ts = vts(clock, t)
    lines += [
        f"{api}INFO:     Shutting down",
        f"{api}INFO:     Waiting for application shutdown.",
        f"{api}INFO:     Application shutdown complete.",
        f"{api}INFO:     Finished server process [{run.pid}]",
    ]
    clock.t = t
    out.add_lines(lines)


# --------------------------------------------------------------------------- main


def line_prefix(shape: str, clock: Clock, rng: random.Random):
    """What a container runtime puts before each line, or None."""
    if shape == "docker":
        return lambda: "sglang-1  | "
    if shape == "kubectl":
        return lambda: (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(clock.t))
                        + f".{rng.randrange(10**9):09d}Z ")
    return None


def generate(path: str, size: int, seed: int, ranks: int, n_runs: int,
             log_requests: bool = False, shape: str = "default") -> dict:
    rng = random.Random(seed)
    start = calendar.timegm((2026, 9, 7, 8, 0, 0, 0, 0, 0)) + rng.randrange(0, 86400 * 20)
    clock = Clock(start)
    out = Out(path, prefix=line_prefix(shape, clock, random.Random(seed + 1)))
    weights = [1.0] * n_runs
    cum = 0.0
    tail_reserve = 6000 + 2500 * min(ranks, 8)
    if shape == "vllm":  # two workers' tracebacks, the engine core's and the API server's
        tail_reserve = 18000 + 7000 * (ranks > 1)
    endings = []
    for i in range(n_runs):
        run = Run(i, n_runs, ranks, random.Random(rng.randrange(1 << 62)), shape)
        rr = random.Random(rng.randrange(1 << 62))
        cum += weights[i] / sum(weights)
        stop_at = int(size * cum) - (tail_reserve if run.ending == "crash" else 800)
        if shape == "vllm":
            v = vllm_startup(out, clock, run, rr)
            vllm_bulk(out, clock, run, v, rr, stop_at, log_requests)
            if run.ending == "crash":
                vllm_crash(out, clock, run, v, rr)
            else:
                vllm_shutdown(out, clock, run, v)
        else:
            startup(out, clock, run, rr)
            bulk(out, clock, run, rr, stop_at, log_requests)
            if run.ending == "crash":
                crash(out, clock, run, rr)
            else:
                sigterm_shutdown(out, clock, run)
        endings.append(run.ending)
        if i < n_runs - 1:  # operator restarts after a while
            clock.advance(rng.randrange(90, 3600))
    out.close()
    return {"bytes": os.path.getsize(path), "lines": out.lines, "runs": n_runs, "endings": endings}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="output log path")
    ap.add_argument("--size", type=parse_size, default=parse_size("300MB"),
                    help="target size, e.g. 50M, 300MB, 1GB (binary units; default 300MB)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ranks", type=int, default=8, help="TP/DP ranks per run (default 8)")
    ap.add_argument("--runs", type=int, default=3, help="server runs appended (default 3)")
    ap.add_argument("--log-requests", action="store_true",
                    help="also write the request lines of --log-requests (SGLang's Receive/Finish; "
                         "vLLM's Received/Added with --shape vllm)")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="default",
                    help="; ".join(f"{k}: {v}" for k, v in SHAPES.items()))
    a = ap.parse_args(argv)
    if a.ranks < 1 or a.runs < 1:
        ap.error("--ranks and --runs must be >= 1")
    t0 = time.perf_counter()
    info = generate(a.out, a.size, a.seed, a.ranks, a.runs, a.log_requests, a.shape)
    dt = time.perf_counter() - t0
    print(f"wrote {a.out}: {info['bytes']} bytes, {info['lines']} lines, "
          f"{info['runs']} runs ({', '.join(info['endings'])}) in {dt:.1f} s", file=sys.stderr)
    print(f"expected_root_cause={EXPECTED_ROOT_CAUSES.get(a.shape, EXPECTED_ROOT_CAUSE)}")
    print(f"lines={info['lines']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
