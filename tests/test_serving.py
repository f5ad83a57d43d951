"""A run that serves badly: warnings with figures; healthy, bursty and quiet runs stay clean."""

from __future__ import annotations

from conftest import FIXTURES

from logforensics.analysis import Options, explain
from logforensics.serving import FINDING_IDS, ServingStats, _ratio


def findings(name: str):
    report = explain(FIXTURES / name, options=Options(status=False))
    return {f.id: f for f in report.findings}, report


def test_a_retraction_storm_is_kv_pressure_with_figures_and_a_checked_fix():
    found, report = findings("decode_retraction_kv_pressure__retraction_storm.log")
    f = found["decode_retraction_kv_pressure"]
    assert f.severity == "warning" and report.verdict != "failed"
    assert "8 times (31 requests in all)" in f.explanation
    assert "0.70 -> 1.00" in f.explanation
    # 120000 tokens (the ledger) filled by 108 running requests: 80% of them is 86
    assert "--max-running-requests 86" in f.fix and "120000 KV tokens" in f.fix
    assert list(found).count("decode_retraction_kv_pressure") == 1  # enriched, not repeated


def test_a_jit_stall_gives_its_length_and_when():
    found, _ = findings("flashinfer_jit_first_request_latency__first_request_stall.log")
    f = found["flashinfer_jit_first_request_latency"]
    assert f.severity == "warning" and "75 s later" in f.explanation
    assert [e.line for e in f.evidence] == [20, 22]


def test_a_5xx_burst():
    found, _ = findings("http_5xx_burst__overloaded_503s.log")
    f = found["http_5xx_burst"]
    assert "14 of 34 requests (41%)" in f.explanation and f.severity == "warning"


def test_healthy_bursty_and_quiet_runs_stay_clean():
    for name in ("none__short_burst_serving.log", "none__healthy_tp2_serving.log",
                 "none__healthy_tp1.log", "none__healthy_dp2_attention.log"):
        found, _ = findings(name)
        made = {k: f for k, f in found.items() if k in FINDING_IDS and "figures" in f.facts}
        assert made == {}, name


def test_samples_stay_bounded():
    stats = ServingStats()
    for i in range(10_000):
        stats.on_event("decode_batch", {"gen_throughput": float(i), "queue_req": i}, i + 1, None, "")
    assert len(stats.decode_samples) < 256 and stats.max_queue >= 9000


def test_new_token_ratio_is_read_from_the_retraction_line():
    assert _ratio("#retracted_reqs: 2, #new_token_ratio: 0.7000 -> 0.9500") == (0.7, 0.95)
    assert _ratio("#retracted_reqs: 2") is None
