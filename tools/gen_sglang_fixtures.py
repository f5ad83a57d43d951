#!/usr/bin/env python3
"""Generate real SGLang start-up failure logs with the installed SGLang release.

    python tools/gen_sglang_fixtures.py --python /path/to/venv/bin/python OUT_DIR [--only NAME]

SGLang starts on a CPU far enough to run its argument, model-config and tokenizer checks, so
these logs carry the exact messages and tracebacks of the release installed beside
``--python`` (install it in its own venv, never logx's: ``pip install torch==2.13.0 sglang``).
Each case launches ``python -m sglang.launch_server`` on a tiny model folder made here (or a
broken copy of it), with ``HF_HUB_OFFLINE=1``, and keeps what the launch printed. OUT_DIR gets
``<case>.log`` per case and a ``labels.jsonl`` in the field corpus's format, so that
``python bench/accuracy.py OUT_DIR`` scores logx on them.

Nothing here is downloaded at run time and nothing runs on a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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

# (case, root cause logx should name, how the model folder is broken or None, extra flags)
CASES = [
    ("argparse_invalid_choice", "argparse_error", None, ["--attention-backend", "no_such_backend"]),
    ("argparse_unknown_flag", "argparse_error", None, ["--no-such-flag", "1"]),
    ("argparse_bad_int", "argparse_error", None, ["--tp-size", "two"]),
    ("model_path_missing", "model_path_not_found", "missing", []),
    ("config_json_corrupt", "model_config_invalid", "corrupt_config", []),
    ("unknown_architecture", "unsupported_architecture", "unknown_arch", []),
    ("unknown_model_type", "unknown_model_type_transformers", "unknown_model_type", []),
    ("tokenizer_json_corrupt", "tokenizer_load_failed", "corrupt_tokenizer", []),
    ("dp_attention_dp_exceeds_tp", "server_args_invalid", None,
     ["--enable-dp-attention", "--tp-size", "2", "--dp-size", "4"]),
    ("chunked_prefill_not_page_multiple", "server_args_chunked_prefill_page_size", None,
     ["--page-size", "64", "--chunked-prefill-size", "1000"]),
    ("context_length_over_model", "context_length_exceeds_model", None, ["--context-length", "100000"]),
    ("port_not_integer", "argparse_error", None, ["--port", "http"]),
]


def model_folder(root: Path, broken: str | None) -> Path:
    """A tiny model folder (config + a word-level tokenizer), broken as the case asks."""
    folder = root / (broken or "ok")
    if broken == "missing":
        return folder  # never created
    folder.mkdir(parents=True, exist_ok=True)
    config = dict(CONFIG)
    if broken == "unknown_arch":
        config["architectures"] = ["FrobnicatorForCausalLM"]
    if broken == "unknown_model_type":
        config["model_type"] = "frobnicator"
        config["architectures"] = ["FrobnicatorForCausalLM"]
    text = json.dumps(config)
    (folder / "config.json").write_text(text[: len(text) // 2] if broken == "corrupt_config" else text)
    vocab = {f"t{i}": i for i in range(250)} | {"<unk>": 250, "<|endoftext|>": 251}
    tokenizer = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
                 "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None, "decoder": None,
                 "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}}
    tok = json.dumps(tokenizer)
    (folder / "tokenizer.json").write_text(tok[: len(tok) // 3] if broken == "corrupt_tokenizer" else tok)
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>", "unk_token": "<unk>",
         "model_max_length": 2048}))
    return folder


KEY_LINE = re.compile(r"^(?:[\w.]+(?:Error|Exception)\b.*|[\w .-]+: error: .*)$")


def key_line(text: str) -> str:
    """The line that shows the cause: the last exception line or argparse error."""
    return next((line for line in reversed(text.splitlines()) if KEY_LINE.match(line)), "")


def launch(python: str, model: Path, flags: list[str], timeout: float) -> str:
    """What ``launch_server`` printed (stdout and stderr, as ``> log 2>&1`` keeps them)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "NO_COLOR": "1"}
    cmd = [python, "-m", "sglang.launch_server", "--model-path", str(model), "--device", "cpu", *flags]
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=timeout,
                              cwd=tempfile.gettempdir())
        return done.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as exc:  # got past the checks: keep what it printed
        out = exc.stdout or b""
        return out.decode("utf-8", "replace") if isinstance(out, bytes) else out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--python", required=True, help="the python of a venv with SGLang installed")
    ap.add_argument("--only", action="append", help="run only these cases")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    probe = ("import importlib.metadata as m, sysconfig; p = sysconfig.get_paths(); "
             "print(m.version('sglang'), p['purelib'], p['stdlib'])")
    version, purelib, stdlib = subprocess.run([a.python, "-c", probe], capture_output=True, text=True,
                                              check=True).stdout.split()
    # the paths a Docker image of SGLang shows, not this machine's
    paths = [(purelib, "/usr/local/lib/python3.11/dist-packages"), (stdlib, "/usr/lib/python3.11")]
    a.out.mkdir(parents=True, exist_ok=True)
    cases = [c for c in CASES if not a.only or c[0] in a.only]
    with tempfile.TemporaryDirectory() as tmp:
        def one(case):
            name, cause, broken, flags = case
            text = launch(a.python, model_folder(Path(tmp), broken), flags, a.timeout)
            for here, there in [(tmp, "/models"), *paths]:
                text = text.replace(here, there)
            (a.out / f"{name}.log").write_text(text)
            print(f"{name}: {len(text.splitlines())} lines", file=sys.stderr)
            return {"id": name, "server": "sglang", "version": version, "root_cause": cause,
                    "key_line": key_line(text),
                    "summary": f"generated: launch_server {' '.join(flags)} ({broken or 'valid'} model folder)"}

        with ThreadPoolExecutor(a.jobs) as pool:
            rows = list(pool.map(one, cases))
    with open(a.out / "labels.jsonl", "w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
