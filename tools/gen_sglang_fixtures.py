#!/usr/bin/env python3
"""Generate real SGLang start-up failure logs with the installed SGLang release.

    python tools/gen_sglang_fixtures.py --python /path/to/venv/bin/python OUT_DIR [--only NAME]

SGLang starts on a CPU far enough to run its argument, model-config and tokenizer checks, so
these logs carry the exact messages and tracebacks of the release installed beside
``--python`` (install it in its own venv, never logx's: ``pip install torch==2.13.0 sglang``).
Each case launches ``python -m sglang.launch_server`` on a tiny model folder made here (or a
broken copy of it), with ``HF_HUB_OFFLINE=1``, and keeps what the launch printed. OUT_DIR gets
``<case>.log`` per case and a ``labels.jsonl`` in the field corpus's format, so that
``python bench/accuracy.py OUT_DIR`` scores logx on them; ``OUT_DIR-cut`` gets each log as
users paste it (``<case>__tail5``, ``__headless``, ``__cut80``: see ``cut_variants``).

Nothing here is downloaded at run time and nothing runs on a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64,
    "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
    "num_hidden_layers": 2, "vocab_size": 256, "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "torch_dtype": "bfloat16",
    "tie_word_embeddings": True, "eos_token_id": 251, "bos_token_id": 251,
}

# (case, root cause logx should name, how the model folder is broken or None, extra flags).
CASES = [
    # the command line parser
    ("argparse_invalid_choice", "argparse_error", None, ["--attention-backend", "no_such_backend"]),
    ("argparse_unknown_flag", "argparse_error", None, ["--no-such-flag", "1"]),
    ("argparse_bad_int", "argparse_error", None, ["--tp-size", "two"]),
    ("port_not_integer", "argparse_error", None, ["--port", "http"]),
    ("argparse_bad_float", "argparse_error", None, ["--mem-fraction-static", "most"]),
    ("argparse_dtype_choice", "argparse_error", None, ["--dtype", "float7"]),
    ("argparse_quantization_choice", "argparse_error", None, ["--quantization", "int3"]),
    ("argparse_removed_flag", "argparse_error", None, ["--disable-piecewise-cuda-graph"]),
    ("argparse_ambiguous_abbrev", "argparse_error", None, ["--cuda-graph-max-bs", "8"]),
    ("argparse_missing_value", "argparse_error", None, ["--context-length"]),
    # the model folder and its config.json
    ("model_path_missing", "model_path_not_found", "missing", []),
    ("config_json_corrupt", "model_config_invalid", "corrupt_config", []),
    ("config_json_missing", "model_config_invalid", "no_config", []),
    ("config_json_empty", "model_config_invalid", "empty_config", []),
    ("config_json_not_object", "model_config_invalid", "list_config", []),
    ("unknown_architecture", "unsupported_architecture", "unknown_arch", []),
    ("unknown_model_type", "unknown_model_type_transformers", "unknown_model_type", []),
    ("remote_code_model_type", "trust_remote_code_required", "remote_code", []),
    ("config_no_model_type", "model_config_invalid", "no_model_type", []),
    ("config_rope_scaling_invalid", "model_config_invalid", "bad_rope_scaling", []),
    ("config_quant_method_unknown", "model_config_invalid", "unknown_quant_method", []),
    ("quantization_mismatch_awq_on_gptq", "quantization_method_mismatch", "gptq_checkpoint",
     ["--quantization", "awq"]),
    ("context_length_over_model", "context_length_exceeds_model", None, ["--context-length", "100000"]),
    ("json_model_override_args_invalid", "server_args_invalid", None, ["--json-model-override-args", "{bad"]),
    # the tokenizer
    ("tokenizer_json_corrupt", "tokenizer_load_failed", "corrupt_tokenizer", []),
    ("tokenizer_path_missing", "model_path_not_found", None, ["--tokenizer-path", "/models/no_tokenizer_here"]),
    ("chat_template_missing_file", "server_args_invalid", None, ["--chat-template", "/models/none.jinja"]),
    # argument checks: parallel topology, caches, speculative decoding, LoRA, ports, devices
    ("dp_attention_dp_exceeds_tp", "server_args_invalid", None,
     ["--enable-dp-attention", "--tp-size", "2", "--dp-size", "4"]),
    ("chunked_prefill_not_page_multiple", "server_args_chunked_prefill_page_size", None,
     ["--page-size", "64", "--chunked-prefill-size", "1000"]),
    ("nnodes_without_dist_init_addr", "server_args_invalid", None, ["--nnodes", "2"]),
    ("node_rank_out_of_range", "server_args_invalid", None,
     ["--nnodes", "2", "--node-rank", "5", "--dist-init-addr", "127.0.0.1:29999"]),
    # accepted: six ranks start and load (still starting when the timeout stops it): no failure
    ("tp3_pp2_still_starting", "none", None, ["--tp-size", "3", "--pp-size", "2"]),
    ("speculative_draft_missing", "model_path_not_found", None,
     ["--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "/models/no_draft_here"]),
    ("speculative_ngram_with_dp_attention", "server_args_invalid", None,
     ["--speculative-algorithm", "NGRAM", "--enable-dp-attention", "--dp-size", "2", "--tp-size", "2"]),
    ("mamba_extra_buffer_on_dense_model", "server_args_invalid", None,
     ["--mamba-radix-cache-strategy", "extra_buffer"]),
    ("lora_enabled_without_rank", "server_args_invalid", None, ["--enable-lora"]),
    # accepted: the launch goes on to build the model, whose rotary embedding on a CPU needs vLLM's ops
    ("rotary_embedding_needs_vllm_ops", "missing_optional_dependency", None, ["--mem-fraction-static", "1.5"]),
    ("page_size_zero", "server_args_invalid", None, ["--page-size", "0"]),
    ("disaggregation_backend_choice", "argparse_error", None,
     ["--disaggregation-mode", "prefill", "--disaggregation-transfer-backend", "none"]),
    ("hicache_with_radix_disabled", "server_args_invalid", None,
     ["--enable-hierarchical-cache", "--disable-radix-cache"]),
    ("config_file_missing", "server_args_invalid", None, ["--config", "/models/no_such_config.yaml"]),
    ("device_cuda_without_gpu", "no_cuda_device", None, ["--device", "cuda"]),
    # — checks no pattern was written for (added after the catalog was tuned on the cases above;
    # labelled from SGLang's own log before logx read them: README, "Accuracy") —
    # argument checks of check_server_args and the resolution hooks
    ("retraction_priority_without_scheduling", "server_args_invalid", None, ["--retraction-policy", "priority"]),
    ("cuda_graph_padding_with_torch_compile", "server_args_invalid", None,
     ["--disable-cuda-graph-padding", "--enable-torch-compile"]),
    ("served_model_name_colon", "server_args_invalid", None, ["--served-model-name", "qwen:tiny"]),
    ("tokenizer_worker_num_zero", "server_args_invalid", None, ["--tokenizer-worker-num", "0"]),
    ("priority_scheduling_policy_lpm", "server_args_invalid", None,
     ["--enable-priority-scheduling", "--schedule-policy", "lpm"]),
    ("kv_canary_sweep_without_canary", "server_args_invalid", None, ["--kv-canary-sweep-interval", "5"]),
    ("grpc_port_same_as_port", "server_args_invalid", None, ["--grpc-port", "30000", "--port", "30000"]),
    ("export_metrics_without_dir", "server_args_invalid", None, ["--export-metrics-to-file"]),
    ("gc_threshold_too_many", "server_args_invalid", None, ["--gc-threshold", "1", "2", "3", "4"]),
    ("base_gpu_id_negative", "server_args_invalid", None, ["--base-gpu-id", "-1"]),
    ("instanttensor_on_cpu", "server_args_invalid", None, ["--load-format", "instanttensor"]),
    ("buckets_rule_unknown", "server_args_invalid", None, ["--prompt-tokens-buckets", "zigzag"]),
    # parallel layouts
    ("tp_not_divisible_by_nnodes", "server_args_invalid", None,
     ["--tp-size", "3", "--nnodes", "2", "--dist-init-addr", "127.0.0.1:29999"]),
    ("dp_replicas_multi_node", "server_args_invalid", None,
     ["--dp-size", "2", "--tp-size", "2", "--nnodes", "2", "--dist-init-addr", "127.0.0.1:29999"]),
    ("moe_dense_tp_size_invalid", "server_args_invalid", None, ["--moe-dense-tp-size", "2", "--tp-size", "4"]),
    ("ep_size_exceeds_tp", "server_args_invalid", None, ["--ep-size", "4", "--tp-size", "2"]),
    ("attn_dp_size_not_dividing_tp", "server_args_invalid", None, ["--attn-dp-size", "3", "--tp-size", "2"]),
    # JSON-valued flags
    ("preferred_sampling_params_not_json", "argparse_error", None, ["--preferred-sampling-params", "{bad"]),
    ("model_loader_extra_config_not_json", "server_args_invalid", None, ["--model-loader-extra-config", "{bad"]),
    # LoRA, speculative decoding, quantization, attention
    ("lora_backend_choice", "argparse_error", None, ["--enable-lora", "--lora-backend", "cutlass"]),
    ("speculative_unknown_algorithm", "server_args_invalid", None, ["--speculative-algorithm", "MEDUSA"]),
    # renamed, removed and deprecated flags
    ("removed_mamba_scheduler_strategy", "argparse_error", None, ["--mamba-scheduler-strategy", "extra_buffer"]),
    ("removed_stream_output", "argparse_error", None, ["--stream-output"]),
    # accepted with a warning that names the new flags: the launch goes on to the model build, as above
    ("deprecated_disable_cuda_graph", "missing_optional_dependency", None, ["--disable-cuda-graph"]),
    ("deprecated_monokernel_backend", "server_args_invalid", None, ["--monokernel-backend", "amd"]),
    # config.json
    ("config_unknown_dtype", "model_config_invalid", "unknown_dtype", []),
    ("config_rope_linear_no_factor", "model_config_invalid", "rope_no_factor", []),
    ("config_quant_no_method", "model_config_invalid", "quant_no_method", []),
    ("config_no_architectures", "model_config_invalid", "no_architectures", []),
    # the tokenizer
    ("tokenizer_config_corrupt", "tokenizer_load_failed", "corrupt_tokenizer_config", []),
]

# What a case means on a release whose checks differ from the newest one's, set from what its log
# says before logx scored it (an older release lacks a flag, accepts a combination, or stops later).
RELEASE_CAUSES: dict[str, dict[str, str]] = {
    "0.5.2": {
        # --cuda-graph-max-bs is no abbreviation yet, --mem-fraction-static 1.5 passes, a missing
        # draft model is not checked first: the launch gets to weight loading, and the tiny
        # folder has none ("Cannot find any model weights")
        "argparse_ambiguous_abbrev": "model_path_not_found",
        "rotary_embedding_needs_vllm_ops": "model_path_not_found",
        "speculative_draft_missing": "model_path_not_found",
        # flags and choices that came later are unrecognized
        "speculative_ngram_with_dp_attention": "argparse_error",
        "mamba_extra_buffer_on_dense_model": "argparse_error",
        "config_file_missing": "argparse_error",
    },
    "0.5.9": {
        # --cuda-graph-max-bs is no abbreviation yet and a missing draft model is not checked
        # first: the model build's rotary embedding needs vLLM's ops on a CPU, as on 0.5.23
        "argparse_ambiguous_abbrev": "missing_optional_dependency",
        "speculative_draft_missing": "missing_optional_dependency",
        # flags that came later are unrecognized
        "mamba_extra_buffer_on_dense_model": "argparse_error",
        # on a CPU each TP rank takes a NUMA node: tp 3 needs more of them than the machine has
        "tp3_pp2_still_starting": "tp_exceeds_visible_gpus",
    },
}

# config.json edits per broken folder (None: the key is removed)
CONFIG_EDITS: dict[str, dict] = {
    "unknown_arch": {"architectures": ["FrobnicatorForCausalLM"]},
    "unknown_model_type": {"model_type": "frobnicator", "architectures": ["FrobnicatorForCausalLM"]},
    "remote_code": {"model_type": "frobnicator", "architectures": ["FrobnicatorForCausalLM"],
                    "auto_map": {"AutoConfig": "configuration_frobnicator.FrobnicatorConfig",
                                 "AutoModelForCausalLM": "modeling_frobnicator.FrobnicatorForCausalLM"}},
    "no_model_type": {"model_type": None},
    "bad_rope_scaling": {"rope_scaling": {"rope_type": "frobnicated", "factor": 2.0}},
    "unknown_quant_method": {"quantization_config": {"quant_method": "frobquant", "bits": 3}},
    "gptq_checkpoint": {"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128,
                                                "desc_act": False, "sym": True}},
    "unknown_dtype": {"torch_dtype": "float7"},
    "rope_no_factor": {"rope_scaling": {"rope_type": "linear"}},
    "quant_no_method": {"quantization_config": {"bits": 4, "group_size": 128}},
    "no_architectures": {"architectures": None},
}
# config.json's whole text per broken folder (from the valid config's JSON text)
CONFIG_TEXT = {
    "corrupt_config": lambda text: text[: len(text) // 2],
    "empty_config": lambda text: "",
    "list_config": lambda text: "[" + text + "]",
}


def model_folder(root: Path, broken: str | None) -> Path:
    """A tiny model folder (config + a word-level tokenizer), broken as the case asks."""
    folder = root / (broken or "ok")
    if broken == "missing":
        return folder  # never created
    folder.mkdir(parents=True, exist_ok=True)
    config = dict(CONFIG)
    for key, value in CONFIG_EDITS.get(broken or "", {}).items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    text = json.dumps(config)
    if broken != "no_config":
        (folder / "config.json").write_text(CONFIG_TEXT.get(broken or "", lambda t: t)(text))
    vocab = {f"t{i}": i for i in range(250)} | {"<unk>": 250, "<|endoftext|>": 251}
    tokenizer = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
                 "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None, "decoder": None,
                 "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}}
    tok = json.dumps(tokenizer)
    (folder / "tokenizer.json").write_text(tok[: len(tok) // 3] if broken == "corrupt_tokenizer" else tok)
    tokenizer_config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
                        "unk_token": "<unk>", "model_max_length": 2048}
    text = json.dumps(tokenizer_config)
    (folder / "tokenizer_config.json").write_text(text[: len(text) // 2] if broken == "corrupt_tokenizer_config"
                                                  else text)
    return folder


KEY_LINE = re.compile(r"^(?:[\w.]+(?:Error|Exception)\b.*|[\w .-]+: error: .*)$")


def key_line(text: str) -> str:
    """The line that shows the cause: the last exception line or argparse error."""
    return next((line for line in reversed(text.splitlines()) if KEY_LINE.match(line)), "")


CUT_WIDTH = 80  # a terminal's width: a paste copied from it has every line cut there
TAIL_LINES = 5


def cut_variants(text: str) -> dict[str, str]:
    """The shapes a user's paste of ``text`` takes: its last lines only (``tail -5``), a
    headless tail that starts inside the traceback, every line cut at the screen's width."""
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")),
                  len(lines) // 2)
    return {"tail5": "\n".join(lines[-TAIL_LINES:]) + "\n",
            "headless": "\n".join(lines[min(header + 3, len(lines) - TAIL_LINES):]) + "\n",
            "cut80": "".join(line[:CUT_WIDTH] + "\n" for line in lines)}


CUDA_ERROR_NO_DEVICE = 100


def libcuda_stub(python: str, folder: Path) -> Path | None:
    """A ``libcuda.so.1`` in ``folder`` whose every call answers "no CUDA device", for a release
    whose sgl-kernel (a CUDA build, imported at start-up up to about 0.5.5) links the driver
    library this machine lacks: the release then starts as on a host with a driver and no GPU.
    Its functions are the driver calls sgl-kernel's libraries import. None when sgl-kernel is
    not installed or does not link it."""
    where = subprocess.run([python, "-c", "import importlib.util as u; s = u.find_spec('sgl_kernel'); "
                            "print(s.submodule_search_locations[0] if s else '')"],
                           capture_output=True, text=True, check=True).stdout.strip()
    libs = list(Path(where).rglob("*.so")) if where else []  # also per-architecture folders (sm100/)
    names = set()
    for lib in libs:
        undefined = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True,
                                   text=True, check=True).stdout
        names |= {m for m in re.findall(r"\b(cu[A-Z]\w*)\b", undefined)}
    if not names:
        return None
    source = ['static const char *no_device = "no CUDA-capable device is detected";',
              "int cuGetErrorString(int e, const char **s) { *s = no_device; return 0; }"]
    source += [f"int {n}(void) {{ return {CUDA_ERROR_NO_DEVICE}; }}" for n in sorted(names - {"cuGetErrorString"})]
    (folder / "libcuda_stub.c").write_text("\n".join(source) + "\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(folder / "libcuda.so.1"),
                    str(folder / "libcuda_stub.c")], check=True)
    return folder


def launch(python: str, model: Path, flags: list[str], timeout: float, libs: Path | None = None) -> str:
    """What ``launch_server`` printed (stdout and stderr, as ``> log 2>&1`` keeps them)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "NO_COLOR": "1"}
    if libs is not None:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(libs), env.get("LD_LIBRARY_PATH")]))
    cmd = [python, "-m", "sglang.launch_server", "--model-path", str(model), "--device", "cpu", *flags]
    # its own process group: on a timeout the scheduler children it started go with it
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            cwd=tempfile.gettempdir(), start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:  # got past the checks: keep what it printed
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    return out.decode("utf-8", "replace")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--python", required=True, help="the python of a venv with SGLang installed")
    ap.add_argument("--only", action="append", help="run only these cases")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    probe = ("import importlib.metadata as m, sysconfig; p = sysconfig.get_paths(); "
             "print(m.version('sglang'), p['purelib'], p['stdlib'])")
    version, purelib, stdlib = subprocess.run([a.python, "-c", probe], capture_output=True, text=True,
                                              check=True).stdout.split()
    # the paths a Docker image of SGLang shows, not this machine's
    paths = [(purelib, "/usr/local/lib/python3.11/dist-packages"), (stdlib, "/usr/lib/python3.11")]
    # torch's C++ warnings print a path less its first folder (sgl/lib/python3.11/site-packages/...)
    paths += [(here.split("/", 2)[2], there.split("/", 2)[2]) for here, there in paths]
    cut_dir = a.out.with_name(a.out.name + "-cut")  # the same logs as users paste them
    for folder in (a.out, cut_dir):
        folder.mkdir(parents=True, exist_ok=True)
    cases = [c for c in CASES if not a.only or c[0] in a.only]
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as libs:
        driver = libcuda_stub(a.python, Path(libs))

        def one(case):
            text = launch(a.python, model_folder(Path(tmp), case[2]), case[3], a.timeout, driver)
            for here, there in [(tmp, "/models"), *paths]:
                text = text.replace(here, there)
            print(f"{case[0]}: {len(text.splitlines())} lines", file=sys.stderr)
            return write_case(case, text, version, a.out, cut_dir)

        with ThreadPoolExecutor(a.jobs) as pool:
            done = list(pool.map(one, cases))
    for folder, rows in [(a.out, [r for r, _ in done]), (cut_dir, [r for _, cut in done for r in cut])]:
        write_labels(folder / "labels.jsonl", rows, keep=bool(a.only))
    return 0


def write_case(case: tuple, text: str, version: str, out: Path, cut_dir: Path) -> tuple[dict, list[dict]]:
    """The case's log (and its cut variants) written; its label row and its variants' rows."""
    name, cause, broken, flags = case
    cause = RELEASE_CAUSES.get(version, {}).get(name, cause)
    (out / f"{name}.log").write_text(text)
    row = {"id": name, "server": "sglang", "version": version, "root_cause": cause,
           "summary": f"generated: launch_server {' '.join(flags)} ({broken or 'valid'} model folder)"}
    cut = []
    for shape, variant in cut_variants(text).items():
        (cut_dir / f"{name}__{shape}.log").write_text(variant)
        cut.append({**row, "id": f"{name}__{shape}", "key_line": key_line(variant) if cause != "none" else "",
                    "summary": f"{row['summary']}, {shape}"})
    return {**row, "key_line": key_line(text) if cause != "none" else ""}, cut


def write_labels(path: Path, rows: list[dict], keep: bool) -> None:
    """``rows`` as ``path``; with ``keep`` (an ``--only`` run) the other cases' rows stay, all
    in the order of CASES (a cut variant after its case's earlier variants)."""
    old = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if keep and path.exists() else []
    by_id = {r["id"]: r for r in old} | {r["id"]: r for r in rows}
    order = {name: i for i, (name, *_rest) in enumerate(CASES)}
    shapes = list(cut_variants("").keys())

    def rank(row_id: str) -> tuple[int, int]:
        name, _, shape = row_id.partition("__")
        return order.get(name, len(order)), shapes.index(shape) + 1 if shape in shapes else 0

    with open(path, "w") as fh:
        fh.writelines(json.dumps(by_id[i]) + "\n" for i in sorted(by_id, key=rank))


if __name__ == "__main__":
    sys.exit(main())
