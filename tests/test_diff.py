"""logx diff: the facts of two runs, ranked by likely effect."""

from __future__ import annotations

import io
import json

from conftest import FIXTURES, REPO
from rich.console import Console
from typer.testing import CliRunner

from logforensics._cli import UsageError, app
from logforensics._diff import SCHEMA, diff_logs
from logforensics._render.diff import render_diff

PAIRS = FIXTURES / "diff"


def pair(name: str) -> list[str]:
    return [str((PAIRS / f"{name}__{side}.log").relative_to(REPO)) for side in ("baseline", "candidate")]


def keys(comparison) -> list[str]:
    return [f"{d.section}.{d.key}" for d in comparison.causes if d.score > 0]


def test_an_upgrade_that_shrank_the_kv_pool_and_changed_the_attention_backend():
    c = diff_logs([str(PAIRS / "upgrade_attention_backend_kv_pool__baseline.log"),
                   str(PAIRS / "upgrade_attention_backend_kv_pool__candidate.log")])
    assert keys(c)[:2] == ["memory.kv_tokens", "backends.attention_backend"]
    kv = c.causes[0]
    assert (kv.base, kv.cand) == (480000, 288000) and "40% fewer tokens" in kv.reason
    assert "flags.port" not in keys(c)  # same port; and noise flags never rank
    assert c.outcomes[0].key == "mean_gen_throughput"


def test_a_lower_cuda_graph_max_bs_ranks_first():
    c = diff_logs([str(PAIRS / "cuda_graph_max_bs_lowered__baseline.log"),
                   str(PAIRS / "cuda_graph_max_bs_lowered__candidate.log")])
    first = c.causes[0]
    assert (first.section, first.key, first.base, first.cand) == ("cuda_graph", "max_bs", 256, 32)
    assert "larger than 32 run without CUDA graphs" in first.reason
    assert "flags.cuda_graph_max_bs" not in keys(c)  # shown once, as the capture fact
    kv = next(d for d in c.causes if d.key == "kv_tokens")
    assert kv.score < first.score and "about the same" in kv.reason


def test_two_runs_of_one_file():
    c = diff_logs([str(PAIRS / "two_runs_one_file.log")])
    assert (c.base.run, c.cand.run, c.cand.runs_in_file) == (1, 2, 2)
    assert c.causes[0].key == "max_bs"
    assert diff_logs([str(PAIRS / "two_runs_one_file.log")], base_run=2, run=1).causes[0].cand == 256


def test_the_same_log_has_no_difference_and_all_shows_equal_facts():
    path = str(PAIRS / "two_runs_one_file.log")
    same = diff_logs([path, path])
    assert same.differences == []
    every = diff_logs([path, path], everything=True)
    assert every.differences and {d.kind for d in every.differences} == {"same"}


def test_json_schema():
    runner = CliRunner()
    result = runner.invoke(app, ["diff", "--json", *pair("upgrade_attention_backend_kv_pool")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["schema"] == SCHEMA
    assert data["baseline"]["facts"]["memory"]["kv_tokens"] == 480000
    assert data["differences"][0]["key"] == "kv_tokens" and data["differences"][0]["kind"] == "cause"
    assert "A/B run" in data["note"]
    assert {"server", "model", "backends", "memory"} <= set(data["common_sections"])


def test_usage_errors():
    runner = CliRunner()
    one_run = str(FIXTURES / "none__healthy_tp1.log")
    for args in ([one_run], [one_run, one_run, one_run], [one_run, "--base-run", "1", "--run", "1"]):
        assert isinstance(runner.invoke(app, ["diff", *args]).exception, UsageError)  # main(): exit 2


def text_of(comparison) -> str:
    buffer = io.StringIO()
    render_diff(comparison, Console(file=buffer, width=120, color_system=None, force_terminal=False))
    return buffer.getvalue()


def test_diff_text_snapshots(snapshot):
    for name in ("upgrade_attention_backend_kv_pool", "cuda_graph_max_bs_lowered", "mamba_ratio_default_changed"):
        assert text_of(diff_logs(pair(name))) == snapshot(name=name)


def test_a_flag_is_listed_when_the_log_shows_no_fact_it_sets(tmp_path):
    def log(name: str, bs: int):
        path = tmp_path / name
        path.write_text(f"[2026-05-01 10:00:00] server_args=ServerArgs(model_path='m', cuda_graph_max_bs={bs}, "
                        "port=30000)\n[2026-05-01 10:00:05 TP0] Load weight begin. avail mem=78.50 GB\n")
        return str(path)

    c = diff_logs([log("a.log", 256), log("b.log", 32)])
    assert [(d.key, d.base, d.cand) for d in c.causes if d.score > 0] == [("cuda_graph_max_bs", 256, 32)]


def test_sglang_against_vllm_compares_the_facts_both_have():
    """Across dialects the serving figures are in one unit: vLLM's KV usage percentage is a
    fraction of the pool, as SGLang's token usage is."""
    c = diff_logs([str(FIXTURES / "none__healthy_tp2_serving.log"),
                   str(FIXTURES / "vllm" / "health_check_flapping__probe_503_under_load.log")])
    by_key = {f"{d.section}.{d.key}": d for d in c.differences}
    assert (by_key["server.name"].base, by_key["server.name"].cand) == ("sglang", "vllm")
    assert by_key["serving.max_token_usage"].cand == 0.125  # "KV cache usage: 12.5%"
    # every statistics line: 10 × 48, 9 × 49, 9 × 50 tok/s is 1371 / 28
    assert by_key["serving.mean_gen_throughput"].cand == 48.96
    assert "serving" in c.to_json()["common_sections"]


def test_an_upgrade_that_changed_a_default_says_which_release_changed_it():
    """0.5.3.post2 -> 0.5.4: nobody set --mamba-full-memory-ratio; 0.5.3.post3 raised its default
    0.2 -> 0.9 (the release index), so the Mamba state pool grew and the KV pool shrank."""
    c = diff_logs(pair("mamba_ratio_default_changed"))
    assert keys(c)[:2] == ["memory.kv_tokens", "flags.mamba_full_memory_ratio"]
    d = c.causes[1]
    assert "SGLang 0.5.3.post3 changed mamba_full_memory_ratio's default from 0.2 to 0.9" in d.reason
