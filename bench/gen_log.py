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
    endings = []
    for i in range(n_runs):
        run = Run(i, n_runs, ranks, random.Random(rng.randrange(1 << 62)), shape)
        rr = random.Random(rng.randrange(1 << 62))
        startup(out, clock, run, rr)
        cum += weights[i] / sum(weights)
        stop_at = int(size * cum) - (tail_reserve if run.ending == "crash" else 800)
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
                    help="also write the Receive/Finish request lines of --log-requests")
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
    print(f"expected_root_cause={EXPECTED_ROOT_CAUSE}")
    print(f"lines={info['lines']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
