"""Run segmentation and phase tracking."""

from __future__ import annotations

from conftest import log_bytes

from logforensics._dialects.sglang import DIALECT as SGLANG
from logforensics._pipeline import parse
from logforensics._runs import RunTracker, phase_from_frames
from logforensics._tracebacks import Frame, Traceback

ARGS = "[2026-03-23 14:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2, mem_fraction_static=0.88)"


def runs_of(data: bytes):
    tracker = RunTracker()
    for event in parse(data):
        tracker.feed(event)
    return tracker.runs


def test_one_launch_one_run_with_phases():
    runs = runs_of(log_bytes(
        ARGS,
        "[2026-03-23 14:00:05 TP0] Load weight begin. avail mem=78.50 GB",
        "[2026-03-23 14:00:30 TP0] Load weight end. type=Qwen3ForCausalLM, avail mem=63.40 GB, mem usage=15.10 GB.",
        "[2026-03-23 14:00:31 TP0] KV Cache is allocated. #tokens: 412345, K size: 25.17 GB, V size: 25.17 GB",
        "[2026-03-23 14:00:50] The server is fired up and ready to roll!",
    ))
    assert len(runs) == 1
    run = runs[0]
    assert run.phase == "ready"
    assert run.args["tp_size"] == 2 and run.model == "Qwen/Qwen3-8B"
    assert run.model_class == "Qwen3ForCausalLM"
    assert run.phase_lines["weights"] == 2
    assert run.started_at == "2026-03-23 14:00:00" and run.ended_at == "2026-03-23 14:00:50"


def test_second_server_args_dump_starts_a_new_run():
    runs = runs_of(log_bytes(
        ARGS, "[2026-03-23 14:00:50] The server is fired up and ready to roll!",
        ARGS.replace("14:00:00", "15:00:00"), "[2026-03-23 15:00:05 TP0] Load weight begin. avail mem=78.50 GB",
    ))
    assert [r.first_line for r in runs] == [1, 3]
    assert runs[0].phase == "ready" and runs[1].phase == "weights"


def test_timestamp_jump_backwards_starts_a_new_run():
    runs = runs_of(log_bytes(
        "[2026-03-23 14:00:05 TP0] Load weight begin. avail mem=78.50 GB",
        "[2026-03-23 14:30:05 TP0] Decode batch, #running-req: 1, #token: 40, token usage: 0.00, "
        "cuda graph: True, gen throughput (token/s): 80.79, #queue-req: 0",
        "[2026-03-22 09:00:00 TP0] Load weight begin. avail mem=78.50 GB",
    ))
    assert len(runs) == 2 and runs[1].first_line == 3


def test_startup_after_ready_without_dump_is_a_restart():
    runs = runs_of(log_bytes(
        "[2026-03-23 14:00:05 TP0] Load weight begin. avail mem=78.50 GB",
        "[2026-03-23 14:00:50] The server is fired up and ready to roll!",
        "[2026-03-23 16:00:05 TP0] Load weight begin. avail mem=78.50 GB",
    ))
    assert len(runs) == 2


def test_serving_stats_and_endings_are_kept():
    runs = runs_of(log_bytes(
        ARGS,
        "[2026-03-23 14:00:50] The server is fired up and ready to roll!",
        "[2026-03-23 14:01:00 TP0] Decode batch, #running-req: 7, #token: 40, token usage: 0.12, "
        "cuda graph: True, gen throughput (token/s): 80.79, #queue-req: 2",
        '[2026-03-23 14:01:01] INFO:     127.0.0.1:5000 - "POST /generate HTTP/1.1" 500 Internal Server Error',
        "[2026-03-23 14:01:02] SIGTERM received. signum=15 frame=None. Draining requests and shutting down...",
    ))
    run = runs[0]
    assert run.phase == "serving" and run.batches == 1
    assert run.last_decode["running_req"] == 7 and run.last_decode["token_usage"] == 0.12
    assert run.requests == 1 and run.http_errors == 1
    assert [e.kind for e in run.endings] == ["sigterm"]


def test_phase_from_frames_reads_where_a_traceback_was_raised():
    def tb(*locs):
        t = Traceback(stream="", tag="", wrapper="", first_line=1)
        t.exceptions[0:0] = []
        from logforensics._tracebacks import ExceptionInfo

        t.exceptions = [ExceptionInfo(type="X", frames=[Frame(f, 1, fn) for f, fn in locs])]
        return t

    assert phase_from_frames(tb(("/x/sglang/srt/server_args.py", "__post_init__")), SGLANG) == "args"
    assert phase_from_frames(tb(("/x/scheduler.py", "__init__"),
                                ("/x/model_executor/cuda_graph_runner.py", "capture")), SGLANG) == "cuda_graph"
    assert phase_from_frames(tb(("/x/scheduler.py", "event_loop_normal"),
                                ("/x/mem_cache/memory_pool.py", "alloc")), SGLANG) == "kv_alloc"
    assert phase_from_frames(tb(("/x/a.py", "<module>"), ("/x/b.py", "<module>"),
                                ("/x/c.py", "<module>")), SGLANG) == "import"


def test_a_backward_jump_alone_does_not_split_a_pasted_excerpt():
    runs = runs_of(log_bytes(
        "[2025-08-02 19:24:30 TP3] Watchdog timeout (self.watchdog_timeout=300)",
        "redacted ...",
        "[2025-08-02 06:06:21 TP2] Pyspy failed to dump PID 171.",
    ))
    assert len(runs) == 1


def test_same_rank_starting_again_is_a_relaunch_even_if_never_ready():
    runs = runs_of(log_bytes(
        "[2026-03-23 14:00:05 TP0] Load weight begin. avail mem=78.50 GB",
        "[2026-03-23 14:00:06 TP1] Load weight begin. avail mem=78.50 GB",
        "Killed",
        "[2026-03-23 14:10:05 TP0] Load weight begin. avail mem=78.50 GB",
    ))
    assert [r.first_line for r in runs] == [1, 4]


def test_reached_is_a_copy_that_leaves_the_run_read_as_it_was():
    run = runs_of(log_bytes(ARGS, "[2026-03-23 14:00:05 TP0] Load weight begin. avail mem=78.50 GB"))[0]
    told = run.reached("kv_alloc", 3)
    assert told.phase == "kv_alloc" and told.phase_lines["kv_alloc"] == 3 and told.model == run.model
    assert run.phase == "weights" and "kv_alloc" not in run.phase_lines
    assert run.reached("weights", 9) is run  # nothing new to tell: the same run


def test_a_run_knows_the_weight_loads_of_earlier_runs_of_its_model():
    """``loaded_before`` is a fact of the runs stage (the earlier runs of the same log), read
    by the findings, never written back by them."""
    other = ARGS.replace("Qwen/Qwen3-8B", "Qwen/Qwen3-32B")
    load_end = ("[2026-03-23 14:00:30 TP0] Load weight end. type=Qwen3ForCausalLM, avail mem=63.40 GB, "
                "mem usage=15.10 GB.")
    runs = runs_of(log_bytes(
        ARGS, "[2026-03-23 14:00:05 TP0] Load weight begin. avail mem=78.50 GB", load_end,
        "[2026-03-23 14:00:50] The server is fired up and ready to roll!",
        other.replace("14:00:00", "14:10:00"), load_end.replace("14:00:30", "14:10:30"),
        "[2026-03-23 14:10:50] The server is fired up and ready to roll!",
        ARGS.replace("14:00:00", "14:20:00"),
    ))
    assert [r.model for r in runs] == ["Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "Qwen/Qwen3-8B"]
    assert runs[0].loaded_before == [] and runs[1].loaded_before == []  # another model's
    assert runs[2].loaded_before == [(3, load_end)]
