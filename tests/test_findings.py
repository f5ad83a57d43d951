"""The findings engine: matching (including cut text), placeholders, merging, arbitration."""

from __future__ import annotations

from conftest import log_bytes, make_catalog

from logforensics._analysis import explain

SPEC = {
    "id": "spec_cause", "phase": "args", "priority": 90,
    "fix": "use {mamba_strategy_flag} extra_buffer (arch {arch})",
    "match": [{"exception": "ValueError",
               "message": r"Speculative decoding for (?P<arch>\w+) is not compatible with radix cache "
                          r"when using --mamba-scheduler-strategy no_buffer"}],
}
SIGQUIT = {"id": "child_sigquit", "severity": "info", "priority": 5,
           "match": [{"line": r"Received sigquit from a child process"}]}
GENERIC_ARGS = {"id": "args_generic", "phase": "args", "priority": 88,
                "match": [{"frame": r"server_args\.py"}]}


def findings(data: bytes, *tables):
    return explain(data, catalog=make_catalog(*tables)).findings


def test_cut_message_matches_as_a_prefix():
    data = log_bytes(
        '  File "/usr/lib/python3/dist-packages/sglang/srt/server_args.py", line 812, in check',
        "    raise ValueError(",
        "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with "
        "radix cache when using --mamba-scheduler...",
    )
    found = findings(data, SPEC)
    assert found[0].id == "spec_cause"
    assert found[0].traceback.message_truncated and found[0].traceback.head_missing
    assert "arch Qwen3_5ForConditionalGeneration" in found[0].fix
    assert found[0].confidence < 0.95


def test_partial_match_needs_enough_matched_text():
    data = log_bytes("ValueError: Specul...")
    assert findings(data, SPEC)[0].id == "unclassified_exception"


def test_full_message_match_and_version_aware_flag_from_args():
    data = log_bytes(
        "[2026-03-23 14:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3.5-35B-A3B', "
        "mamba_radix_cache_strategy='no_buffer', speculative_algorithm='EAGLE')",
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/server_args.py", line 10, in __post_init__',
        "    self.check()",
        "ValueError: Speculative decoding for Qwen3_5MoeForConditionalGeneration is not compatible with radix "
        "cache when using --mamba-scheduler-strategy no_buffer.To use radix cache …",
        "[2026-03-23 14:00:01] Received sigquit from a child process. It usually means the child failed.",
    )
    found = findings(data, SPEC, SIGQUIT, GENERIC_ARGS)
    # one traceback, one explanation: the generic args pattern does not repeat the specific one
    assert [f.id for f in found] == ["spec_cause", "child_sigquit"]
    assert "--mamba-radix-cache-strategy extra_buffer" in found[0].fix
    assert found[0].phase == "args"


def test_root_cause_outranks_symptom_and_report_says_memory_untouched():
    data = log_bytes(
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/server_args.py", line 10, in __post_init__',
        "ValueError: tp_size must be divisible by number of nodes",
        "[2026-03-23 14:00:01] Received sigquit from a child process. It usually means the child failed.",
    )
    report = explain(data, catalog=make_catalog(SIGQUIT, GENERIC_ARGS))
    assert report.primary.id == "args_generic"
    assert report.memory_untouched
    assert report.verdict == "failed" and report.exit_code == 1


def test_unclassified_exception_names_type_message_and_location():
    data = log_bytes(
        "[2026-03-23 14:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/managers/scheduler.py", line 99, in event_loop_normal',
        "    self.run()",
        "ZeroDivisionError: division by zero",
        "[2026-03-23 14:00:02] Received sigquit from a child process. It usually means the child failed.",
    )
    found = findings(data, SIGQUIT)
    first = found[0]
    assert first.id == "unclassified_exception" and first.severity == "error"
    assert "ZeroDivisionError" in first.title
    assert "scheduler.py:99 in event_loop_normal" in first.explanation
    assert "division by zero" in first.explanation
    assert first.phase == "serving"


def test_the_unexplained_traceback_finding_is_a_pattern_of_its_own():
    """``unclassified_exception`` is patterns/builtin/'s: a catalog's own pattern found by
    the same stage gives the text; a traceback cut before its type ranks lower, and one with
    no message either is a symptom."""
    mine = {"id": "unclassified_exception", "severity": "error", "priority": 12, "merge": "title",
            "title": "Unknown {exception_type}", "explanation": "{exception} at {raised_at}",
            "match": [{"found_by": "unexplained_traceback"}]}
    data = log_bytes(
        "Traceback (most recent call last):",
        '  File "/x/sglang/srt/managers/scheduler.py", line 99, in event_loop_normal',
        "ZeroDivisionError: division by zero",
    )
    first = findings(data, mine)[0]
    assert (first.title, first.explanation, first.priority) == (
        "Unknown ZeroDivisionError", "ZeroDivisionError at /x/sglang/srt/managers/scheduler.py:99 in "
        "event_loop_normal", 12)
    cut = findings(log_bytes('  File "/x/sglang/srt/managers/scheduler.py", line 99, in event_loop_normal',
                             "    self.run()"))
    assert [(f.id, f.priority, f.role) for f in cut] == [("unclassified_exception", 5, "symptom")]


def test_same_cause_on_several_ranks_merges_and_first_rank_leads():
    tb = ["[2026-03-23 14:00:0{s} TP{r}] Scheduler hit an exception: Traceback (most recent call last):",
          '  File "/x/sglang/srt/model_executor/model_runner.py", line 5, in init',
          "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"]
    lines = [t.format(s=1, r=1) for t in tb] + [t.format(s=2, r=0) for t in tb]
    nccl = {"id": "nccl_init", "priority": 70,
            "match": [{"exception": "RuntimeError", "message": "NCCL error: unhandled system error"}]}
    found = findings(log_bytes(*lines), nccl)
    assert len(found) == 1
    assert found[0].occurrences == 2 and found[0].streams == ["TP1", "TP0"]
    assert found[0].evidence[0].line == 1


def test_lower_priority_timeouts_yield_to_first_real_error():
    real = {"id": "prefill_oom", "priority": 65,
            "match": [{"exception": "RuntimeError", "message": "Prefill out of memory"}]}
    timeout = {"id": "nccl_timeout", "priority": 20,
               "match": [{"line": r"Watchdog caught collective operation timeout"}]}
    data = log_bytes(
        "[2026-03-23 14:00:00 TP1] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)",
        "[2026-03-23 14:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/scheduler.py", line 5, in event_loop_normal',
        "RuntimeError: Prefill out of memory. Try to lower your batch size.",
    )
    assert [f.id for f in findings(data, real, timeout)] == ["prefill_oom", "nccl_timeout"]


def test_unknown_placeholder_renders_as_name():
    cause = {"id": "c", "fix": "raise {nothing_known}", "match": [{"line": "boom"}]}
    assert findings(log_bytes("boom"), cause)[0].fix == "raise <nothing_known>"


def test_condition_killed_from_outside():
    cond = {"id": "died", "match": [{"condition": "killed_from_outside"}]}
    data = log_bytes(
        "[2026-03-23 14:00:05 TP0] Load weight begin. avail mem=78.50 GB",
        "Killed",
    )
    found = findings(data, cond)
    assert found[0].id == "died" and found[0].evidence[0].text == "Killed"


def test_an_event_pattern_reads_the_parsed_fields_of_the_dialects_rule():
    """``event``/``at_least``: the fields the dialect's rule read from the line fill the title
    (the release's form parsed once, by the rule); a figure below the bound is no finding."""
    big = {"id": "graphs", "title": "took {mem_usage_gb} GB",
           "match": [{"event": "cuda_graph_end", "at_least": {"mem_usage_gb": 4}}]}
    found = findings(log_bytes(
        "[2026-03-23 14:00:05 TP0] Capture cuda graph end. Time elapsed: 3.10 s. mem usage=1.20 GB. avail mem=9.07 GB.",
        "[2026-03-23 14:00:09 TP0] Capture cuda graph end. Time elapsed: 33.1 s. mem usage=7.85 GB. avail mem=4.07 GB.",
    ), big)
    assert [(f.id, f.title, [e.line for e in f.evidence]) for f in found] == [("graphs", "took 7.85 GB", [2])]


def test_unknown_exception_the_server_survived_is_a_warning():
    data = log_bytes(
        "[2026-03-23 14:00:50] The server is fired up and ready to roll!",
        "[2026-03-23 14:01:00] ERROR:    Exception in ASGI application",
        "Traceback (most recent call last):",
        '  File "/x/site-packages/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi',
        "    result = await app(self.scope, self.receive, self.send)",
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
        "[2026-03-23 14:01:02 TP0] Decode batch, #running-req: 7, #token: 40, token usage: 0.12, cuda graph: True, "
        "gen throughput (token/s): 80.79, #queue-req: 2",
    )
    report = explain(data, catalog=make_catalog(SIGQUIT))
    assert report.findings[0].id == "unclassified_exception"
    assert report.findings[0].severity == "warning"
    assert "kept serving" in report.findings[0].explanation
    assert report.verdict == "ready" and report.exit_code == 0


def test_an_aside_reporting_an_unknown_value_is_dropped():
    from logforensics._findings import fill

    assert fill("lower `--x` (now {x}) or `--y` (now {y}).", {"y": 4}) == "lower `--x` or `--y` (now 4)."


CAUSE_LINE = {"id": "cause_line", "severity": "error", "priority": 20, "match": [{"line": r"CUresult error"}]}
SIGQUIT_SYMPTOM = {"id": "sigquit", "severity": "error", "priority": 60, "role": "symptom",
                   "match": [{"line": r"Received sigquit from a child process"}]}
CAUSE_THEN_SIGQUIT = log_bytes("[torch_memory_saver.cpp] CUresult error  result=2 func=cu_mem_create",
                               "[2026-03-23 14:00:01] Received sigquit from a child process.")


def test_a_cause_outranks_a_symptom_of_higher_priority():
    """Role before priority: a plain error line that names the cause comes before the launcher's
    sigquit even when the symptom's priority is higher; alone, the symptom is still primary."""
    cause, symptom, data = CAUSE_LINE, SIGQUIT_SYMPTOM, CAUSE_THEN_SIGQUIT
    assert [f.id for f in findings(data, cause, symptom)] == ["cause_line", "sigquit"]
    assert [f.id for f in findings(data, {**cause, "role": "symptom"}, symptom)] == ["sigquit", "cause_line"]
    alone = log_bytes("[2026-03-23 14:00:01] Received sigquit from a child process.")
    assert [f.id for f in findings(alone, cause, symptom)] == ["sigquit"]


def test_the_json_of_a_finding_says_its_role():
    """A reader of ``--json`` tells the root cause from what follows it without the catalog."""
    found = findings(CAUSE_THEN_SIGQUIT, CAUSE_LINE, SIGQUIT_SYMPTOM)
    assert [(f.to_dict()["id"], f.to_dict()["role"]) for f in found] == \
        [("cause_line", "cause"), ("sigquit", "symptom")]


def test_a_hard_wrapped_message_is_one_message():
    data = log_bytes(
        "ValueError: Speculative decoding for Qwen3_5MoeForConditionalGeneration is not compatible",
        "with radix cache when using --mamba-scheduler-strategy no_buffer. To use radix cache with",
        "speculative decoding, please use --mamba-scheduler-strategy extra_buffer.",
    )
    found = findings(data, SPEC)
    assert found[0].id == "spec_cause"
    assert "arch Qwen3_5MoeForConditionalGeneration" in found[0].fix


def test_a_serving_warning_printed_before_ready_is_dropped():
    jit = {"id": "jit", "severity": "warning", "phase": "serving",
           "match": [{"line": r"flashinfer\.jit: Loading JIT ops"}]}
    before = log_bytes("2026-03-23 14:00:00,100 - INFO - flashinfer.jit: Loading JIT ops: decode",
                       "[2026-03-23 14:00:05] The server is fired up and ready to roll!")
    after = log_bytes("[2026-03-23 14:00:05] The server is fired up and ready to roll!",
                      "2026-03-23 14:00:09,100 - INFO - flashinfer.jit: Loading JIT ops: prefill")
    assert [f.id for f in findings(before, jit)] == []
    assert [f.id for f in findings(after, jit)] == ["jit"]


# — ranks of one log: the first cause in time, as for the nodes of a deployment ————————————

EARLY = {"id": "early_cause", "priority": 20, "match": [{"line": r"CUresult error"}]}
LATE = {"id": "late_cause", "priority": 60, "match": [{"line": r"unexpected tensor shape"}]}
TIMEOUT = {"id": "rank_timeout", "priority": 90, "role": "symptom",
           "match": [{"line": r"Watchdog caught collective operation timeout"}]}


def ranks_log(early_at: str, late_at: str, *, early_rank: str = "TP3", late_rank: str = "TP0") -> bytes:
    return log_bytes(
        "[2026-03-23 14:00:00] server_args=ServerArgs(model_path='m', tp_size=4)",
        "[rank1]:[E323 14:00:30.000000001 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 600043 milliseconds",
        f"[2026-03-23 {early_at} {early_rank}] CUresult error result=2 func=cu_mem_create",
        f"[2026-03-23 {late_at} {late_rank}] Scheduler error: unexpected tensor shape",
    )


def test_the_first_ranks_error_outranks_a_later_more_specific_error_of_another_rank():
    found = findings(ranks_log("14:01:00", "14:02:00"), EARLY, LATE, TIMEOUT)
    assert [f.id for f in found] == ["early_cause", "late_cause", "rank_timeout"]
    assert found[0].at == "2026-03-23 14:01:00" and found[0].streams == ["TP3"]


def test_errors_of_two_ranks_within_the_clock_tolerance_are_ordered_by_priority():
    found = findings(ranks_log("14:01:00", "14:01:05"), EARLY, LATE, TIMEOUT)
    assert [f.id for f in found] == ["late_cause", "early_cause", "rank_timeout"]


def test_one_ranks_errors_are_ordered_by_priority_whatever_their_time():
    """Only different processes are ordered by time: one rank's lead is its most specific error."""
    found = findings(ranks_log("14:01:00", "14:05:00", late_rank="TP3"), EARLY, LATE, TIMEOUT)
    assert [f.id for f in found] == ["late_cause", "early_cause", "rank_timeout"]


def test_an_earlier_timeout_of_another_rank_never_outranks_an_error():
    found = findings(ranks_log("14:01:00", "14:02:00"), LATE, TIMEOUT)
    assert [f.id for f in found] == ["late_cause", "rank_timeout"]


def test_caret_lines_are_never_evidence():
    """CPython 3.11+'s ``^^^^``/``~~~^^^`` markers point at the line above: alone they prove
    nothing, so neither a traceback's evidence (a paste may even start on one) nor the run's
    tail (a process death's evidence) cites them."""
    data = log_bytes(
        "           ^^^^^^^^^^^^^^^^^^^^^",
        '  File "/opt/caretcase/worker.py", line 12, in step',
        '    value = table["k"]',
        "            ~~~~~^^^^^",
        "KeyError: 'k'",
    )
    found = findings(data)
    assert found and found[0].id == "unclassified_exception"
    texts = [e.text for f in found for e in f.evidence]
    assert texts and not any(set(t.strip()) <= {"^", "~"} for t in texts), texts
    report = explain(data)
    assert report.run is not None and all(set(t.strip()) - {"^", "~"} for _, t in report.run.tail)


def test_a_crash_announced_with_nothing_after_is_an_error():
    """"Scheduler hit an exception:" as the last line of a cut log is an error finding (exit
    1), a symptom any cause outranks; followed by its traceback it is nothing of its own."""
    marker = "[2026-03-23 14:00:05 TP1] Scheduler hit an exception:"
    report = explain(log_bytes("[2026-03-23 14:00:00 TP1] Load weight begin. avail mem=78.50 GB", marker))
    assert report.primary is not None and report.primary.id == "crash_marker_without_traceback"
    assert report.exit_code == 1 and report.primary.evidence[0].text == marker
    followed = explain(log_bytes(
        marker, "Traceback (most recent call last):",
        '  File "/opt/markercase/worker.py", line 3, in step', "    go()",
        "RuntimeError: markercase 41c2"))
    assert "crash_marker_without_traceback" not in [f.id for f in followed.findings]
    assert followed.primary is not None and followed.primary.id == "unclassified_exception"


def test_the_same_traceback_on_every_rank_is_cited_once():
    """Eight ranks print one traceback: the first rank's is the evidence, the others are
    named (``same_on``; the text says "the same traceback on TP1–TP7"), not cited again."""
    import io

    from rich.console import Console

    from logforensics._render.report import render

    lines = []
    for rank in range(8):
        lines += [f"[2026-03-23 14:00:0{rank} TP{rank}] Scheduler hit an exception: Traceback (most recent call last):",
                  '  File "/opt/rankcase/worker.py", line 9, in step', "    boom()",
                  "RuntimeError: rankcase 5e1d failed"]
    report = explain(log_bytes(*lines))
    f = report.primary
    assert f is not None and f.occurrences == 8
    assert {e.line for e in f.evidence} <= {1, 2, 3, 4}  # TP0's lines only
    assert f.same_on == [f"TP{r}" for r in range(1, 8)]
    assert f.to_dict()["same_on"] == f.same_on
    buffer = io.StringIO()
    render(report, Console(file=buffer, width=100, color_system=None))
    assert "the same traceback on TP1–TP7" in buffer.getvalue()
    other = explain(log_bytes(*lines[:4], *[t.replace("5e1d failed", "5e1d failed on TP1") for t in lines[4:8]]))
    assert other.primary is not None and other.primary.same_on == []  # another message: cited



def test_every_confidence_is_read_from_the_one_table(monkeypatch):
    from logforensics._findings import CONFIDENCE

    for key, value in (("line", 0.41), ("traceback_message", 0.42), ("unclassified", 0.43)):
        monkeypatch.setitem(CONFIDENCE, key, value)
    line = findings(log_bytes("[2026-01-01 10:00:00] Received sigquit from a child process"), SIGQUIT)
    assert [f.confidence for f in line] == [0.41]
    raised = log_bytes("Traceback (most recent call last):", '  File "/x/server_args.py", line 1, in check',
                       "ValueError: Speculative decoding for Qwen3 is not compatible with radix cache when "
                       "using --mamba-scheduler-strategy no_buffer")
    assert [f.confidence for f in findings(raised, SPEC)] == [0.42]
    unknown = log_bytes("Traceback (most recent call last):", '  File "/x/y.py", line 1, in f',
                        "ZeroDivisionError: division by zero")
    assert [(f.id, f.confidence) for f in findings(unknown)] == [("unclassified_exception", 0.43)]


KEY_CHAIN = {"id": "unknown_model_type", "priority": 90,
             "match": [{"exception": "KeyError", "frame": r"configuration_auto\.py"}]}


def test_evidence_of_a_chain_shows_the_cause_the_pattern_did_not_match():
    """The pattern matches the inner KeyError; the final ValueError explains it, so the
    evidence cites the ValueError's line as well."""
    data = log_bytes(
        "Traceback (most recent call last):",
        '  File "/venv/transformers/models/auto/configuration_auto.py", line 428, in from_pretrained',
        '    config_class = CONFIG_MAPPING[config_dict["model_type"]]',
        "KeyError: 'frobnicator'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        *[f'  File "/venv/sglang/srt/step{i}.py", line {i}, in step{i}\n    step{i + 1}()' for i in range(6)],
        '  File "/venv/transformers/models/auto/configuration_auto.py", line 430, in from_pretrained',
        "    raise ValueError(",
        "ValueError: The checkpoint you are trying to load has model type `frobnicator` but Transformers "
        "does not recognize this architecture.",
    )
    top = findings(data, KEY_CHAIN)[0]
    shown = [e.text for e in top.evidence]
    assert top.id == "unknown_model_type"
    assert "KeyError: 'frobnicator'" in shown
    assert any(t.startswith("ValueError: The checkpoint") for t in shown)
    assert len(shown) <= 8


# — plain error lines matched to SGLang's failure sites ——————————————————————————————

PD_ERROR = "[2026-11-02 10:00:05 TP0] Failed to get prefill server info: 503, Service Unavailable"
SIGQUIT_LINE = "[2026-11-02 10:00:06] Received sigquit from a child process. It usually means the child failed."


def test_a_plain_error_line_is_matched_to_the_site_that_printed_it():
    data = log_bytes("[2026-11-02 10:00:00] server_args=ServerArgs(model_path='m', disaggregation_mode='decode')",
                     PD_ERROR, SIGQUIT_LINE)
    top = findings(data, SIGQUIT)[0]
    assert top.id == "pd_kv_transfer_failed" and top.severity == "error"
    assert [e.line for e in top.evidence] == [2]
    assert top.facts["site"]["function"] == "CommonKVManager.try_ensure_parallel_info"


def test_an_error_line_in_a_run_that_kept_serving_or_went_on_is_not_a_cause():
    decode = ("[2026-11-02 10:00:07 TP0] Decode batch, #running-req: 1, #token: 90, token usage: 0.00, "
              "gen throughput (token/s): 9.0, #queue-req: 0")
    served = findings(log_bytes(PD_ERROR, decode, SIGQUIT_LINE), SIGQUIT)
    assert all(f.id != "pd_kv_transfer_failed" for f in served)
    went_on = findings(log_bytes(PD_ERROR, *[f"[2026-11-02 10:00:06] step {i}" for i in range(30)]))
    assert all(f.id != "pd_kv_transfer_failed" for f in went_on)
    at_the_end = findings(log_bytes(*[f"[2026-11-02 10:00:04] step {i}" for i in range(5)], PD_ERROR))
    assert at_the_end[0].id == "pd_kv_transfer_failed"



def raised_in(path: str, function: str) -> bytes:
    return log_bytes("Traceback (most recent call last):",
                     f'  File "/usr/local/lib/python3.11/dist-packages/{path}", line 165, in {function}',
                     '    architectures = config_dict.get("architectures") or []',
                     "AttributeError: 'list' object has no attribute 'get'")


def test_an_exception_sglang_raised_without_a_site_is_named_by_its_module():
    top = findings(raised_in("sglang/srt/utils/hf_transformers/config.py", "_load_config"))[0]
    assert top.id == "model_config_invalid" and top.confidence < 0.5
    assert "model configuration" in top.title and "_load_config" in top.title


def test_an_exception_raised_outside_sglang_stays_unclassified():
    top = findings(raised_in("torch/nn/modules/module.py", "__getattr__"))[0]
    assert top.id == "unclassified_exception" and top.facts["package"] == "torch"


def test_evidence_of_a_long_message_keeps_its_later_failure_lines():
    """NCCL's message says what failed after "Last error:", several lines down."""
    nccl = {"id": "nccl_system", "priority": 80, "match": [{"message": r"unhandled system error"}]}
    data = log_bytes(
        "Traceback (most recent call last):",
        '  File "/venv/torch/distributed/distributed_c10d.py", line 10, in barrier',
        "    work = group.barrier(opts=opts)",
        "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:81, unhandled system error",
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
        "Last error:",
        "Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)")
    shown = [e.text for e in findings(data, nccl)[0].evidence]
    assert "Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)" in shown



def test_a_pattern_matches_the_cut_first_line_of_a_long_message():
    arch = {"id": "unsupported_arch", "priority": 80,
            "match": [{"message": r"'(?P<arch>\w+)' is not a registered model in the Transformers library"}]}
    frame = '  File "/usr/local/lib/python3.11/dist-packages/sglang/srt/model_loader/utils.py", line 90, in resolve'
    data = "".join(line[:80] + "\n" for line in [
        "Traceback (most recent call last):", frame, frame, frame,
        "ValueError: Cannot find model module. 'FrobnicatorForCausalLM' is not a registered model in the "
        "Transformers library (only relevant if the model is meant to be in Transformers)",
        "", "and 'AutoModel' is not present in the model config's 'auto_map'."]).encode()
    assert findings(data, arch)[0].id == "unsupported_arch"


def test_an_error_line_cut_before_the_paste_showed_its_width_matches_partially():
    """The first line of a short terminal paste is cut as the later ones are, read before they
    showed the width: at the end it is read again as cut; a paste with no second line that wide
    keeps it whole."""
    bf16 = {"id": "bf16_gpu", "priority": 80,
            "match": [{"line": r"Bfloat16 is only supported on GPUs with compute capability of at least 8\.0"}]}
    first = "ERROR 03-02 10:20:31 [engine.py:412] Bfloat16 is only supported on GPUs with compute capability of at l"
    frame = '  File "/opt/venv/lib/python3.12/site-packages/vllm/engine/multiprocessing/engine.py", line 123, in run'
    assert len(first) == len(frame) == 103
    assert findings(log_bytes(first, "Traceback (most recent call last):", frame, "x" * 60), bf16)[0].id == "bf16_gpu"
    assert all(f.id != "bf16_gpu" for f in findings(log_bytes(first, "Traceback (most recent call last):"), bf16))


SURVIVABLE_LINE = {"id": "pool_pressure", "severity": "error", "survivable": True, "phase": "serving",
                   "match": [{"line": "pool is full"}]}
BATCH = ("[2026-03-23 14:02:{:02d} TP0] Decode batch. #running-req: 2, #token: 100, token usage: 0.99, "
         "gen throughput (token/s): 10.00, #queue-req: 0")
READY = ["[2026-03-23 14:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
         "[2026-03-23 14:01:00] The server is fired up and ready to roll!"]


def test_a_survivable_line_the_server_served_after_is_a_warning():
    """Served again after its last sighting: the run went on (a warning that says so)."""
    lines = READY + [BATCH.format(1), "[2026-03-23 14:02:02 TP0] pool is full", BATCH.format(3)]
    f = next(f for f in explain(log_bytes(*lines), catalog=make_catalog(SURVIVABLE_LINE)).findings
             if f.id == "pool_pressure")
    assert f.severity == "warning" and "kept serving after it" in f.explanation


def test_a_log_that_ends_in_a_survivable_line_is_a_problem():
    """Its last sighting ends the log (served before, not after): the run is left degraded."""
    lines = READY + [BATCH.format(1), "[2026-03-23 14:02:02 TP0] pool is full", BATCH.format(3),
                     "[2026-03-23 14:02:04 TP0] pool is full"]
    report = explain(log_bytes(*lines), catalog=make_catalog(SURVIVABLE_LINE))
    assert report.primary is not None and report.primary.id == "pool_pressure" and report.exit_code == 1


def test_lines_of_one_shape_are_each_matched_by_their_own_text():
    """The candidate patterns of a line are kept per shape (digits as zeros): a later line of
    that shape with other digits is matched by its own text, not by what the first one held."""
    http = {"id": "http_two", "severity": "warning", "match": [{"line": r"HTTP/2\.0 503 from (?P<host>\w+)"}]}
    loud = {"id": "loud", "severity": "warning", "match": [{"line": r"(?i)disk quota exceeded on (?P<disk>\w+)"}]}
    lines = [f"[2026-01-01 10:00:0{n}] HTTP/{v} 503 from node{n}"
             for n, v in ((1, "1.1"), (2, "2.0"), (3, "1.1"))]
    lines += ["[2026-01-01 10:00:04] DISK QUOTA EXCEEDED ON sda1", "[2026-01-01 10:00:05] Disk quota exceeded on sdb2",
              "[2026-01-01 10:00:06] DISK QUOTA EXCEEDED ON sda7"]
    found = {f.id: f for f in findings(log_bytes(*lines), http, loud)}
    assert [e.line for e in found["http_two"].evidence] == [2]  # the first line of its shape was 1.1
    assert [e.line for e in found["loud"].evidence][:2] == [4, 5]
