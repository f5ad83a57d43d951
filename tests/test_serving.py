"""A run that serves badly: warnings with figures; healthy, bursty and quiet runs stay clean."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest
from conftest import FIXTURES
from rich.console import Console

from logforensics._analysis import Analyzer, Options, explain
from logforensics._catalog import FOUND_BY, load_catalog
from logforensics._dialects import DEFAULT
from logforensics._dialects import get as load_dialect
from logforensics._fastpath import ScanTemplates
from logforensics._render.report import serving_summary
from logforensics._serving import SERIES_BUCKETS, Series, _ratio, layout, point
from logforensics._sources import RawLine


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


def test_a_queue_that_only_grows_with_room_in_the_pool_says_how_many_more_can_run():
    found, report = findings("serving_queue_growing__capped_running_requests.log")
    f = found["serving_queue_growing"]
    assert f.severity == "warning" and report.verdict == "ready"
    assert "from 0 to 168 waiting requests" in f.explanation and "2026-07-02 09:01:00" in f.explanation
    # 128 running fill 40% of the 480000-token pool (the ledger): 128 × 0.85 / 0.40 = 272
    assert "--max-running-requests 272" in f.fix and "272 × 1500 = 408000 tokens, 85% of the pool" in f.fix


def test_throughput_falling_while_the_load_holds_names_the_batches_past_the_captured_graphs():
    found, _ = findings("serving_throughput_falling__batches_past_cuda_graph_max_bs.log")
    f = found["serving_throughput_falling"]
    assert f.severity == "warning" and "fell from 2269 to 1292 tok/s" in f.explanation
    assert "--cuda-graph-max-bs 142" in f.fix and "captured only up to batch size 64" in f.fix
    # the ledger: 0.90 GiB of graphs up to 64, 3.95 GiB free after them
    assert "0.90 × 142 / 64 − 0.90 = 1.10 GiB more, against 3.95 GiB free" in f.fix and "it fits" in f.fix


@pytest.mark.parametrize("name, failures, episodes", [
    ("health_check_flapping__detokenizer_timeouts.log", 8, 4),  # a line and a 503 per failed probe
    ("vllm/health_check_flapping__probe_503_under_load.log", 6, 3),  # access lines without a time
])
def test_a_flapping_health_check_counts_its_episodes(name, failures, episodes):
    found, _ = findings(name)
    f = found["health_check_flapping"]
    assert (f.facts["health_failures"], f.facts["health_episodes"]) == (failures, episodes)
    assert f.severity == "warning"


def test_one_stretch_of_health_failures_is_not_flapping():
    found, _ = findings("health_check_failed__busy_scheduler.log")
    assert "health_check_flapping" not in found


# the warnings the serving-statistics stage makes (patterns/builtin/serving.toml)
SERVING_WARNINGS = {load_catalog().found_by(stage).id for stage in FOUND_BY if stage.startswith("serving_")}


def test_healthy_bursty_and_quiet_runs_stay_clean():
    for name in ("none__short_burst_serving.log", "none__healthy_tp2_serving.log",
                 "none__healthy_tp1.log", "none__healthy_dp2_attention.log", "none__quiet_server_health_checks.log"):
        found, _ = findings(name)
        made = {k: f for k, f in found.items() if k in SERVING_WARNINGS and "figures" in f.facts}
        assert made == {}, name


def serving_log(seed: int = 7) -> bytes:
    """Two launches of a busy server: decode lines of many templates (figures of every width,
    times across a month's end), access lines, a warning every so often (it ends a counted
    stretch), a traceback while serving, and a line the fast path cannot template."""
    rng = random.Random(seed)
    out = []
    t = datetime(2026, 1, 31, 23, 0, 0)
    for _launch in range(2):
        out.append(f"[{t:%Y-%m-%d %H:%M:%S}] server_args=ServerArgs(model_path='m', tp_size=1, port=30000)")
        out.append(f"[{t:%Y-%m-%d %H:%M:%S}] The server is fired up and ready to roll!")
        for i in range(1500):
            t += timedelta(seconds=rng.choice((0, 1, 2, 3, 7)))
            stamp = f"[{t:%Y-%m-%d %H:%M:%S} TP0]"
            tps, queue = rng.random() * 10 ** rng.randrange(1, 5), rng.randrange(0, 10 ** rng.randrange(1, 4))
            out.append(f"{stamp} Decode batch, #running-req: {rng.randrange(200)}, #token: {rng.randrange(99999)}, "
                       f"token usage: {rng.random():.2f}, cuda graph: True, gen throughput (token/s): "
                       f"{tps:.2f}, #queue-req: {queue}")
            if i % 3 == 0:
                out.append(f'[{t:%Y-%m-%d %H:%M:%S}] INFO:     127.0.0.1:{rng.randrange(1, 65535)} - '
                           f'"POST /generate HTTP/1.1" 200 OK')
            if i % 97 == 0:
                out.append(f"{stamp} Prefill batch, #new-seq: 1, #new-token: {rng.randrange(9999)}, #cached-token: 0, "
                           f"token usage: 0.{rng.randrange(10, 99)}, #running-req: 3, #queue-req: 0")
                out.append(f"[{t:%Y-%m-%d %H:%M:%S}] WARNING: something else happened {i}")
            if i == 700:
                out += ["Traceback (most recent call last):", '  File "x.py", line 1, in f',
                        f"{stamp} Decode batch, #running-req: 1, #token: 1, token usage: 0.01, cuda graph: True, "
                        "gen throughput (token/s): 1.00, #queue-req: 1", "ValueError: boom"]
            if i == 900:  # too long for a template: the full path reads it
                out.append(f"{stamp} Decode batch, #running-req: 2, token usage: 0.50, gen throughput (token/s): "
                           f"9.00, #queue-req: 4, " + "x" * 1100)
        t += timedelta(hours=3)
    return ("\n".join(out) + "\n").encode()


def series_of(data: bytes, how: str) -> list:
    analyzer = Analyzer(native_scan=how == "c-scan")
    if how == "watch":
        offset = 0
        for number, line in enumerate(data.split(b"\n")[:-1], 1):
            analyzer.feed_fast(RawLine(number, offset, line))
            offset += len(line) + 1
        analyzer.flush_bulk()
    else:
        analyzer.consume([data[i:i + 65536] for i in range(0, len(data), 65536)])
    analyzer.finish()
    return [(run.serving.series.width, sorted(run.serving.series.buckets.items())) for run in analyzer.runs]


@pytest.mark.parametrize("how", ["c-scan", "python-scan", "watch"])
def test_the_series_sums_every_decode_line_the_same_whichever_path_read_it(how):
    if how == "c-scan" and ScanTemplates is None:
        pytest.skip("the C scan is not built here")
    data = serving_log()
    decode_lines = data.count(b"] Decode batch")
    # line by line through the full path: the reference
    analyzer = Analyzer()
    for number, line in enumerate(data.split(b"\n")[:-1], 1):
        analyzer.feed(RawLine(number, 0, line))
    analyzer.finish()
    expected = [(run.serving.series.width, sorted(run.serving.series.buckets.items())) for run in analyzer.runs]
    assert sum(agg[0] for _, buckets in expected for _, agg in buckets) == decode_lines
    assert series_of(data, how) == expected


def test_the_series_stays_bounded_and_merges_pairs_exactly():
    series, spans = Series(), layout(b"[2026-05-01 00:00:00] Decode batch, gen throughput (token/s): 10.00",
                                     DEFAULT.stats.series)
    assert spans is not None
    points = [(t, (t % 7 * 1000, -1, -1, -1)) for t in range(0, 200_000, 3)]
    for t, figures in points:
        series.add(t, figures)
    assert len(series.buckets) <= SERIES_BUCKETS and series.lines == len(points)
    shuffled = Series()
    for t, figures in random.Random(1).sample(points, len(points)):
        shuffled.add(t, figures)
    assert shuffled == series  # the order the lines came in does not matter
    assert series.totals()["gen_throughput"] == (sum(f[0] for _, f in points) / len(points) / 1000, 6.0)


def test_a_decode_line_is_read_where_its_template_prints_each_figure():
    line = (b"[2026-03-01 00:00:01 DP0 TP0] Decode batch, #running-req: 12, #token: 345, token usage: 0.95, "
            b"cuda graph: False, gen throughput (token/s): 456.789, #queue-req: 7")
    t, figures = point(line, layout(line, DEFAULT.stats.series))
    assert t == int((datetime(2026, 3, 1, 0, 0, 1) - datetime(1970, 1, 1)).total_seconds())
    assert figures == (456789, 7000, 950, 12000)
    vllm = load_dialect("vllm").stats
    line = (b"(APIServer pid=1) INFO 12-01 23:16:38 [loggers.py:335] Engine 000: Avg prompt throughput: 11.1 "
            b"tokens/s, Avg generation throughput: 6.3 tokens/s, Running: 1 reqs, Waiting: 4 reqs, "
            b"GPU KV cache usage: 87.5%, Prefix cache hit rate: 0.0%")
    assert point(line, layout(line, vllm.series))[1] == (6300, 4000, 87500, 1000)
    assert layout(b"Decode batch, gen throughput (token/s): 1.00", DEFAULT.stats.series) is None  # no time


def test_the_serving_summary_is_a_sparkline_row_per_figure_within_the_width():
    report = explain(FIXTURES / "decode_retraction_kv_pressure__retraction_storm.log")
    series = report.to_json()["runs"][-1]["serving"]["series"]
    assert series["bucket_seconds"] == 10 and series["decode_lines"] == 34
    # the fixture's first two decode lines (usage 0.55 and 0.59, 60 and 64 running) share a bucket
    assert series["buckets"][0] == {"offset_s": 0, "decode_lines": 2, "gen_throughput_mean": 2400.0,
                                    "gen_throughput_max": 2400.0, "queue_req_mean": 0.0, "queue_req_max": 0,
                                    "token_usage_mean": 0.57, "token_usage_max": 0.59,
                                    "running_req_mean": 62.0, "running_req_max": 64}
    console = Console(width=60, record=True, color_system=None)
    console.print(serving_summary(report.run, 60))
    text = console.export_text()
    assert all(len(line) <= 60 for line in text.splitlines())
    assert "queue" in text and "0 → 62 req (max 62)" in text and "█" in text
    quiet = explain(FIXTURES / "none__quiet_server_health_checks.log")
    assert quiet.run.serving.series.lines == 0 and serving_summary(quiet.run, 100) is None  # it never served


def test_new_token_ratio_is_read_from_the_retraction_line():
    assert _ratio("#retracted_reqs: 2, #new_token_ratio: 0.7000 -> 0.9500") == (0.7, 0.95)
    assert _ratio("#retracted_reqs: 2") is None
