"""Stage 4 — tracebacks: assembly per process stream, chains, groups, C++ aborts, and every kind
of truncation a terminal produces. The group and chain texts are real CPython 3.11 output."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logforensics._events import Event
from logforensics._pipeline import EventStream, parse
from logforensics._sources import RawLine, iter_bytes
from logforensics._tracebacks import (
    MAX_EVIDENCE_LINES,
    MAX_FRAMES_KEPT,
    Traceback,
    classify_exception_line,
)


def events(text: str | bytes, max_line: int | None = None) -> list[Event]:
    data = text.encode() if isinstance(text, str) else text
    return list(parse(iter_bytes(data, max_line) if max_line else data))


def tracebacks(text: str | bytes, **kw) -> list[Traceback]:
    return [e.traceback for e in events(text, **kw) if e.kind == "traceback"]


def only(text: str | bytes, **kw) -> Traceback:
    tbs = tracebacks(text, **kw)
    assert len(tbs) == 1, [(t.exc_type, t.first_line) for t in tbs]
    return tbs[0]


def others(text: str) -> list[tuple[str, int]]:
    return [(e.kind, e.number) for e in events(text) if e.kind != "traceback"]


def lines_of(tb: Traceback) -> list[int]:
    return [n for n, _ in tb.lines]


SCHEDULER = """\
[2026-03-23 14:01:38 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/managers/scheduler.py", line 2546, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank)
                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/sgl/managers/scheduler.py", line 312, in __init__
    self.tree_cache = HiRadixCache(
                      ^^^^^^^^^^^^^
  File "/sgl/mem_cache/hiradix_cache.py", line 98, in __init__
    raise ValueError(
ValueError: HiRadixCache only supports MHA, MLA, and NSA (DSA) models

[2026-03-23 14:01:38] Received sigquit from a child process. It usually means the child failed.
"""

CAUSE = """\
Traceback (most recent call last):
  File "/srv/app.py", line 19, in g
    f({})
  File "/srv/app.py", line 16, in f
    return d["k"]
           ~^^^^^
KeyError: 'k'

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/srv/app.py", line 23, in <module>
    g()
  File "/srv/app.py", line 21, in g
    raise RuntimeError("lookup failed") from e
RuntimeError: lookup failed
"""

CONTEXT = CAUSE.replace("The above exception was the direct cause of the following exception",
                        "During handling of the above exception, another exception occurred")

GROUP = """\
  + Exception Group Traceback (most recent call last):
  |   File "/srv/app.py", line 11, in <module>
  |     main()
  |   File "/srv/app.py", line 9, in main
  |     raise ExceptionGroup("many", [e1b, TypeError(2)])
  | ExceptionGroup: many (2 sub-exceptions)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/srv/app.py", line 6, in main
    |     a()
    |   File "/srv/app.py", line 3, in a
    |     raise ValueError(1)
    | ValueError: 1
    +---------------- 2 ----------------
    | TypeError: 2
    +------------------------------------
[2026-03-23 14:01:39] next record
"""

NATIVE = """\
terminate called after throwing an instance of 'c10::Error'
  what():  CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1

Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f8416d6c1b6 in /torch/lib/libc10.so)
frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&) + 0x64 (0x7f in x)

[2026-03-23 14:01:40] Received sigquit from a child process. It usually means the child failed.
"""


# — header, fragments, carets —


def test_header_on_a_prefixed_line():
    tb = only(SCHEDULER)
    assert (tb.stream, tb.tag, tb.wrapper, tb.ts) == ("TP0", "TP0", "", "2026-03-23 14:01:38")
    assert tb.context == "Scheduler hit an exception"
    assert (tb.exc_type, tb.message) == ("ValueError", "HiRadixCache only supports MHA, MLA, and NSA (DSA) models")
    assert [(f.file, f.line, f.function) for f in tb.frames] == [
        ("/sgl/managers/scheduler.py", 2546, "run_scheduler_process"),
        ("/sgl/managers/scheduler.py", 312, "__init__"),
        ("/sgl/mem_cache/hiradix_cache.py", 98, "__init__")]
    assert tb.raising_frame.location == "/sgl/mem_cache/hiradix_cache.py:__init__"
    assert tb.missing == [] and not tb.ends_input
    assert (tb.first_line, tb.last_line) == (1, 11)
    # the header line is the traceback's, not a separate event; the sigquit line follows on its own
    assert others(SCHEDULER) == [("sigquit_child", 12)]


def test_caret_lines_are_not_source():
    tb = only(SCHEDULER)
    assert [f.source for f in tb.frames] == [
        "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank)",
        "self.tree_cache = HiRadixCache(", "raise ValueError("]
    tb = only(CAUSE)
    assert tb.exceptions[0].frames[-1].source == 'return d["k"]'  # "~^^^^^" is a 3.11 caret line
    assert not tb.frames_cut


def test_headless_tail_fragment():
    tail5 = "".join(SCHEDULER.splitlines(keepends=True)[6:11])  # what `tail -5` showed
    tb = only(tail5)
    assert tb.head_missing and tb.exc_type == "ValueError"
    assert tb.message == "HiRadixCache only supports MHA, MLA, and NSA (DSA) models"
    assert [f.function for f in tb.frames] == ["__init__"]
    assert not tb.message_missing and not tb.message_truncated


@pytest.mark.parametrize("start", [2, 3])  # a source line / a caret line
def test_headless_fragment_starting_inside_a_frame(start):
    text = "".join(SCHEDULER.splitlines(keepends=True)[start:])
    tb = only(text)
    assert tb.head_missing and tb.frames_cut
    assert tb.exc_type == "ValueError" and len(tb.frames) == 2


@pytest.mark.parametrize("head, context", [
    ("Scheduler hit an exception: ", "Scheduler hit an exception"),
    ("Initialization failed. warmup error: ", "Initialization failed. warmup error"),
    ("", ""),
])
def test_header_on_an_unprefixed_line(head, context):
    """Same record without the SGLang prefix (custom logging config, or a paste cut inside the
    timestamp): the header is still the header."""
    text = head + ('Traceback (most recent call last):\n  File "/a.py", line 1, in f\n    raise ValueError(1)\n'
                   "ValueError: 1\n")
    evs = events(text)
    assert [(e.kind, e.number) for e in evs] == [("traceback", 1)]
    tb = evs[0].traceback
    assert not tb.head_missing and tb.context == context and tb.exc_type == "ValueError"


def test_single_exception_line_and_repr_form():
    tb = only("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 80.04 GiB.\n")
    assert (tb.exc_type, tb.final.short_type) == ("torch.OutOfMemoryError", "OutOfMemoryError")
    assert tb.head_missing and tb.frames_cut and tb.frames == []
    tb = only("ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are "
              "('fp8e4b15', 'fp8e5')\")\n")
    assert tb.exc_type == "ValueError" and tb.message.startswith("type fp8e4nv not supported")


# — truncation —

SPEC = ("ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix "
        "cache when using --mamba-scheduler")
FRAMES = 'Traceback (most recent call last):\n  File "/sgl/server_args.py", line 1, in check\n    raise ValueError(m)\n'


def test_message_cut_mid_sentence_at_end_of_input():
    tb = only(FRAMES + SPEC)  # no newline: the paste stopped mid-line
    assert tb.exc_type == "ValueError" and tb.message == SPEC.split(": ", 1)[1]
    assert tb.message_truncated and tb.ends_input and "message_truncated" in tb.missing


@pytest.mark.parametrize("ellipsis", ["...", "\u2026"])
def test_message_ending_in_ellipsis(ellipsis):
    tb = only(FRAMES + SPEC + ellipsis + "\n[2026-03-23 14:01:38] next\n")
    assert tb.message_truncated and not tb.ends_input
    assert tb.message.startswith("Speculative decoding for Qwen3_5ForConditionalGeneration")


def test_complete_message_at_end_of_input():
    tb = only(FRAMES + "ValueError: bad value.\n")
    assert tb.ends_input and not tb.message_truncated and tb.missing == []


def test_message_cut_at_the_line_cap_before_the_next_record():
    """The source cut the exception line at its length cap: the message is truncated even though
    more input follows."""
    long = "ValueError: " + "a very long message " * 20
    text = FRAMES + long + "\n[2026-03-23 14:01:38 TP0] Load weight begin. avail mem=1.00 GB\n"
    tb = only(text, max_line=100)
    assert tb.exc_type == "ValueError"
    assert tb.message_truncated


def test_frames_cut_in_the_middle():
    tb = only('Traceback (most recent call last):\n  File "/a.py", line 1, in f\n    g()\n  ...\n'
              '  File "/c.py", line 3, in h\n    raise OSError("x")\nOSError: x\n')
    assert tb.frames_cut and tb.exc_type == "OSError" and [f.file for f in tb.frames] == ["/a.py", "/c.py"]
    # a source line whose "File …" line was cut away
    tb = only('Traceback (most recent call last):\n  File "/a.py", line 1, in f\n    g()\n    h()\n'
              '  File "/c.py", line 3, in h\n    raise OSError("x")\nOSError: x\n')
    assert tb.frames_cut and tb.exc_type == "OSError"


def test_end_of_input_inside_a_frame_line():
    text = SCHEDULER.splitlines(keepends=True)[:7]
    text[-1] = text[-1][:20]  # `  File "/sgl/manage` and the input ends
    tb = only("".join(text))
    assert tb.exc_type is None and tb.message_missing and tb.ends_input
    assert len(tb.frames) == 2 and lines_of(tb) == list(range(1, 8))


def test_end_of_input_mid_traceback_is_emitted_by_finish():
    stream = EventStream()
    out = []
    for n, data in enumerate(SCHEDULER.encode().splitlines()[:5], 1):
        out += stream.feed(RawLine(n, 0, data))
    assert out == []
    done = stream.finish()
    assert [e.kind for e in done] == ["traceback"]
    tb = done[0].traceback
    assert tb.message_missing and tb.ends_input and tb.exc_type is None and len(tb.frames) == 2


# — chains and groups —


@pytest.mark.parametrize("text, chain", [(CAUSE, "cause"), (CONTEXT, "context")])
def test_chained_exceptions_final(text, chain):
    tb = only(text)
    assert (tb.exc_type, tb.message) == ("RuntimeError", "lookup failed")
    assert [f.function for f in tb.frames] == ["<module>", "g"]
    assert tb.missing == [] and lines_of(tb) == list(range(1, 17))
    assert [e.type for e in tb.exceptions if e.type] == ["KeyError", "RuntimeError"]
    assert tb.exceptions[-1].chain == chain


@pytest.mark.parametrize("text, chain", [(CAUSE, "cause"), (CONTEXT, "context")])
def test_chained_exceptions_list_has_one_entry_per_exception(text, chain):
    tb = only(text)
    assert [(e.type, e.message, e.chain) for e in tb.exceptions] == [
        ("KeyError", "'k'", None), ("RuntimeError", "lookup failed", chain)]


WRAPPED = """\
Traceback (most recent call last):
  File "/srv/hub.py", line 7, in fetch
    raise HTTPError("404 Client Error: Not Found for url: https://hub/x")
HTTPError: 404 Client Error: Not Found for url: https://hub/x

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/srv/load.py", line 3, in load
    raise OSError(f"{e}") from e
OSError: 404 Client Error: Not Found for url: https://hub/x
"""


@pytest.mark.parametrize("text, cause", [
    (CAUSE, "RuntimeError"),  # the outer exception says what failed: it is the cause
    (CONTEXT, "RuntimeError"),
    (WRAPPED, "HTTPError"),  # the outer one repeats the inner message: a wrapper
    (WRAPPED.replace('OSError: 404 Client Error: Not Found for url: https://hub/x', 'OSError'), "HTTPError"),
    (WRAPPED.replace("OSError: 404", "OSError: model load failed: 404"), "HTTPError"),
])
def test_the_cause_of_a_chain_is_the_final_exception_unless_it_wraps(text, cause):
    tb = only(text)
    assert tb.cause.type == cause
    assert tb.exc_type == tb.exceptions[-1].type  # the final exception is still the one raised


def test_a_short_inner_message_is_not_proof_of_wrapping():
    tb = only(CAUSE.replace('RuntimeError("lookup failed")', 'RuntimeError("k")')
               .replace("RuntimeError: lookup failed", "RuntimeError: bad key 'k'"))
    assert tb.cause.type == "RuntimeError"


CUT_AT_80 = "".join(line[:80] + "\n" for line in """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.11/dist-packages/sglang/srt/server_args.py", line 277, in resolve_once
    run_resolution_pipeline(self)
  File "/usr/local/lib/python3.11/dist-packages/sglang/srt/utils/hf_transformers/config.py", line 165, in load
    architectures = config_dict.get("architectures") or []
                    ^^^^^^^^^^^^^^^
OSError: It looks like the config file at '/models/some_model/config.json' is not a valid JSON file.
[2026-11-02 10:00:06] next record
""".splitlines())


def test_frames_and_message_cut_at_the_screen_width():
    """A paste copied from an 80-column terminal: frame lines cut inside the path still are
    frames, and an exception line as wide as the widest lines is a cut message."""
    tb = only(CUT_AT_80)
    assert [f.file for f in tb.frames] == ["/usr/local/lib/python3.11/dist-packages/sglang/srt/server_args.py",
                                           "/usr/local/lib/python3.11/dist-packages/sglang/srt/utils/hf_transformers"]
    assert [f.line for f in tb.frames] == [None, None]  # ", line 277" is past column 80
    assert tb.frames[1].source == 'architectures = config_dict.get("architectures") or []'
    assert tb.message_truncated and tb.missing == ["message_truncated"]


def test_the_first_line_of_a_long_message_cut_at_the_screen_width():
    """A message of several lines whose first line is as wide as the paste: that line is a
    prefix (``head_cut``); the message goes on below it."""
    text = CUT_AT_80.replace("[2026-11-02 10:00:06] next record\n", "You can update the library.\n")
    tb = only(text)
    assert tb.cause.head_cut and tb.message.endswith("You can update the library.")
    assert not tb.message_truncated


def test_a_short_exception_line_in_a_cut_paste_is_complete():
    tb = only(CUT_AT_80.replace("OSError: It looks like the config file at '/models/some_model/config.json' is "
                                "not a valid JSON file."[:80], "OSError: bad config"))
    assert tb.message == "bad config" and not tb.message_truncated


@pytest.mark.parametrize("last, cut", [
    ("ValueError: --x extra_buffer needs mamba state, got Qwen2ForCausalLM.", False),  # a sentence's end
    ("ValueError: --x extra_buffer needs mamba state, got Qwen2", True),  # the paste may stop mid-message
])
def test_a_message_at_the_end_of_input_may_be_cut_unless_it_ends_a_sentence(last, cut):
    tb = only(f'Traceback (most recent call last):\n  File "/a.py", line 1, in f\n    g()\n{last}\n')
    assert tb.ends_input and tb.may_be_cut is cut


def test_two_unchained_tracebacks_are_two_tracebacks():
    """Without a chain marker, a new "Traceback" header after a finished exception starts a new
    traceback: Python always prints the marker for a chain."""
    one = 'Traceback (most recent call last):\n  File "/a.py", line 1, in f\n    raise ValueError("a")\nValueError: a\n'
    two = 'Traceback (most recent call last):\n  File "/b.py", line 2, in g\n    raise KeyError("b")\nKeyError: \'b\'\n'
    tbs = tracebacks(one + two)
    assert [(t.exc_type, t.first_line, t.last_line) for t in tbs] == [("ValueError", 1, 4), ("KeyError", 5, 8)]


def test_exception_group_is_one_traceback():
    evs = events(GROUP)
    assert [(e.kind, e.number) for e in evs] == [("traceback", 1), ("line", 17)]
    tb = evs[0].traceback
    assert lines_of(tb) == list(range(1, 17))
    assert "ExceptionGroup" in [e.type for e in tb.exceptions]


def test_exception_group_sub_exceptions_are_separate():
    tb = only(GROUP)
    found = {e.type: e.message for e in tb.exceptions if e.type}
    assert found == {"ExceptionGroup": "many (2 sub-exceptions)", "ValueError": "1", "TypeError": "2"}


def test_exception_group_header_on_a_prefixed_line():
    text = "[2026-03-23 14:01:38 TP0] Scheduler hit an exception: " + GROUP.lstrip()
    tb = only(text)
    assert tb.stream == "TP0" and not tb.head_missing
    assert tb.context == "Scheduler hit an exception"


# — messages —


def test_multi_line_message():
    text = (FRAMES + "RuntimeError: Prefill out of memory. Try to lower your batch size.\n"
            "Try to allocate 8192 tokens.\n"
            "Available full tokens: 8070656 (full_available_size=7936 + full_evictable_size_=8062720)\n"
            "Available mamba: 760 (available_size=57 + component_evictable_size_=703)\n\n"
            "[2026-09-21 06:38:26] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n")
    tb = only(text)
    assert tb.message.splitlines() == [
        "Prefill out of memory. Try to lower your batch size.", "Try to allocate 8192 tokens.",
        "Available full tokens: 8070656 (full_available_size=7936 + full_evictable_size_=8062720)",
        "Available mamba: 760 (available_size=57 + component_evictable_size_=703)"]
    assert others(text) == [("sigquit_running", 9)]


def test_message_of_capture_failure_keeps_its_hint():
    text = ('sglang  |   File "/sgl/cuda_graph_runner.py", line 393, in __init__\n'
            "sglang  |     raise Exception(\nsglang  | Exception: Capture cuda graph failed: \n"
            "sglang  | Possible solutions:\n"
            "sglang  | 1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
            "sglang  | \nsglang  | [2025-10-04 02:29:36 DP7 TP7] Scheduler hit an exception:\n")
    tb = only(text)
    assert tb.exc_type == "Exception" and tb.wrapper == "sglang" and tb.head_missing
    assert [m.rstrip() for m in tb.message.splitlines()] == ["Capture cuda graph failed:", "Possible solutions:",
                                       "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)"]
    assert others(text) == [("component_exception", 7)]


# — C++ aborts —


def test_cpp_terminate_what_and_frames():
    evs = events(NATIVE)
    assert [e.kind for e in evs] == ["traceback", "sigquit_child"]
    tb = evs[0].traceback
    assert (tb.exc_type, tb.final.native) == ("c10::Error", True)
    assert tb.message.startswith("CUDA error: an illegal memory access was encountered")
    assert lines_of(tb) == list(range(1, 10))


def test_cpp_terminate_is_one_exception_with_its_head():
    tb = only(NATIVE)
    assert [(e.type, e.native) for e in tb.exceptions] == [("c10::Error", True)]
    assert not tb.head_missing  # "terminate called after throwing…" is the head of a C++ abort


def test_cpp_what_fragment_without_head():
    text = "".join(NATIVE.splitlines(keepends=True)[1:])
    tb = only(text)
    assert tb.head_missing and tb.final.native
    assert tb.message.startswith("CUDA error: an illegal memory access was encountered")


# — streams: interleaving and flushing —


def _rank_record(tag: str, func: str, exc: str, second: str = "12") -> str:
    return (f"[2026-03-23 14:01:38 {tag}] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "/sgl/{tag}.py", line 1, in {func}\n    {func}()\n'
            f'  File "/sgl/{tag}_inner.py", line 2, in {func}_inner\n    raise {exc}\n{exc}\n\n')


def test_interleaved_rank_records_are_assembled_separately():
    text = (_rank_record("TP0", "zero", "RuntimeError: NCCL error: unhandled system error")
            + _rank_record("TP1", "one", "ValueError: one")
            + _rank_record("TP0", "again", "RuntimeError: second")
            + "[2026-03-23 14:01:39] Received sigquit from a child process. It usually means the child failed.\n")
    tbs = tracebacks(text)
    assert [(t.stream, t.exc_type, t.first_line) for t in tbs] == [
        ("TP0", "RuntimeError", 1), ("TP1", "ValueError", 8), ("TP0", "RuntimeError", 15)]
    for tb in tbs:
        assert {f.file.split("/")[-1].split("_")[0].removesuffix(".py") for f in tb.frames} == {tb.tag}
        assert tb.missing == []


@pytest.mark.parametrize("wrappers", [("sglang  | ", "other   | "),
                                      ("(SGLangEngine pid=1) ", "(SGLangEngine pid=2) ")])
def test_line_level_interleaving_across_wrappers(wrappers):
    a, b = wrappers
    rows = [
        (a, "[2026-03-23 14:01:38 TP0] Scheduler hit an exception: Traceback (most recent call last):"),
        (b, "[2026-03-23 14:01:38 TP1] Scheduler hit an exception: Traceback (most recent call last):"),
        (a, '  File "/a.py", line 1, in f0'), (b, '  File "/b.py", line 2, in f1'),
        (a, '    raise ValueError("zero")'), (b, '    raise RuntimeError("one")'),
        (a, "ValueError: zero"), (b, "RuntimeError: one"),
        (a, "[2026-03-23 14:01:39 TP0] Received sigquit from a child process. It usually means the child failed."),
    ]
    tbs = sorted(tracebacks("".join(w + t + "\n" for w, t in rows)), key=lambda t: t.first_line)
    assert [(t.exc_type, t.message, lines_of(t)) for t in tbs] == [
        ("ValueError", "zero", [1, 3, 5, 7]), ("RuntimeError", "one", [2, 4, 6, 8])]
    assert [[f.file for f in t.frames] for t in tbs] == [["/a.py"], ["/b.py"]]
    assert tbs[0].wrapper != tbs[1].wrapper


def _feed_all(text: str) -> list[list[tuple[str, int]]]:
    stream = EventStream()
    out = [[(e.kind, e.number) for e in stream.feed(RawLine(n, 0, data))]
           for n, data in enumerate(text.encode().splitlines(), 1)]
    out.append([(e.kind, e.number) for e in stream.finish()])
    return out


def test_flushed_by_the_next_prefixed_line_of_the_same_process():
    text = ("[2026-03-23 14:01:38 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/a.py", line 1, in f\n    raise ValueError("x")\nValueError: x\n'
            "and a second message line\n"
            "[2026-03-23 14:01:39 TP0] Load weight begin. avail mem=1.00 GB\n"
            "[2026-03-23 14:01:39 TP0] Memory pool end. avail mem=1.00 GB\n")
    assert _feed_all(text) == [[], [], [], [], [], [("traceback", 1), ("weight_load_begin", 6)],
                               [("memory_pool_end", 7)], []]


def test_flushed_by_another_process_once_its_message_is_read():
    text = ("[2026-03-23 14:01:38 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/a.py", line 1, in f\n    raise ValueError("x")\nValueError: x\n'
            "[2026-03-23 14:01:39] Received sigquit from a child process. It usually means the child failed.\n")
    assert _feed_all(text)[4] == [("traceback", 1), ("sigquit_child", 5)]


def test_flushed_by_an_ending_line():
    text = FRAMES + "AssertionError: res=<Response [502]>, res.text=''\n\nKilled\n"
    assert _feed_all(text)[5] == [("traceback", 1), ("killed", 6)]


def test_warmup_failure_context():
    text = ("[2024-12-13 01:47:34] Initialization failed. warmup error: Traceback (most recent call last):\n"
            '  File "/sglang/srt/server.py", line 621, in _wait_and_warmup\n'
            '    assert res.status_code == 200, f"{res=}, {res.text=}"\n'
            "AssertionError: res=<Response [502]>, res.text=''\n\nKilled\n")
    tb = only(text)
    assert tb.context == "Initialization failed. warmup error" and tb.exc_type == "AssertionError"
    assert others(text) == [("killed", 6)]


def test_pending_snapshot_does_not_consume():
    stream = EventStream()
    for n, data in enumerate(SCHEDULER.encode().splitlines()[:10], 1):
        assert stream.feed(RawLine(n, 0, data)) == []
    snap = stream.assembler.pending()
    assert [t.exc_type for t in snap] == ["ValueError"]
    rest = stream.feed(RawLine(11, 0, b"")) + stream.feed(RawLine(12, 0, SCHEDULER.encode().splitlines()[11]))
    assert [e.kind for e in rest] == ["traceback", "sigquit_child"]
    assert rest[0].traceback.missing == [] and not rest[0].traceback.ends_input


# — bounded memory —


def test_100k_frame_traceback_keeps_bounded_memory():
    n_frames = 100_000
    stream = EventStream()
    out = stream.feed(RawLine(1, 0, b"[2026-03-23 14:01:38 TP0] Scheduler hit an exception: "
                                    b"Traceback (most recent call last):"))
    number = 1
    for i in range(n_frames):
        number += 1
        out += stream.feed(RawLine(number, 0, f'  File "/m/mod{i}.py", line {i}, in f{i}'.encode()))
        number += 1
        out += stream.feed(RawLine(number, 0, f"    f{i + 1}()".encode()))
    number += 1
    out += stream.feed(RawLine(number, 0, b"RecursionError: maximum recursion depth exceeded"))
    number += 1
    out += stream.feed(RawLine(number, 0, b"[2026-03-23 14:01:39] Received sigquit from a child process."))
    assert [e.kind for e in out] == ["traceback", "sigquit_child"]
    tb = out[0].traceback
    exc = tb.final
    assert exc.type == "RecursionError"
    assert len(exc.frames) == 2 * MAX_FRAMES_KEPT
    assert exc.frames_elided == n_frames - 2 * MAX_FRAMES_KEPT
    assert [f.file for f in exc.frames[:2]] == ["/m/mod0.py", "/m/mod1.py"]
    assert exc.frames[-1].file == f"/m/mod{n_frames - 1}.py" and exc.frames[-1].source == f"f{n_frames}()"
    assert exc.frames[MAX_FRAMES_KEPT].file == f"/m/mod{n_frames - MAX_FRAMES_KEPT}.py"
    assert len(tb.lines) == 2 * MAX_EVIDENCE_LINES and tb.lines_elided == number - 1 - 2 * MAX_EVIDENCE_LINES
    assert tb.lines[0][0] == 1 and tb.lines[-1][0] == number - 1
    assert (tb.first_line, tb.last_line) == (1, number - 1)
    assert len(pickle.dumps(tb)) < 64 * 1024  # what is retained does not grow with the input


# — consumed lines are not reported twice —


@pytest.mark.parametrize("text", [SCHEDULER, CAUSE, GROUP, NATIVE])
def test_every_line_is_reported_exactly_once(text):
    evs = events(text)
    seen: list[int] = []
    for e in evs:
        seen += lines_of(e.traceback) if e.kind == "traceback" else [e.number]
    assert sorted(seen) == list(range(1, len(text.splitlines()) + 1))


# — the exception-line classifier —


@pytest.mark.parametrize(
    "text, strict, expected",
    [
        ("ValueError: bad", True, ("ValueError", "bad")),
        ("torch.OutOfMemoryError: CUDA out of memory.", True, ("torch.OutOfMemoryError", "CUDA out of memory.")),
        ("KeyboardInterrupt", True, ("KeyboardInterrupt", "")),
        ("Hello", True, None),  # a bare word is not an exception unless named like one
        ("Hello", False, None),
        ("Note: this is not an exception", False, ("Note", "this is not an exception")),  # after frames: lenient
        ("KeyboardInterrupt", False, ("KeyboardInterrupt", "")),
        ("StopIteration", False, ("StopIteration", "")),
        ("subprocess.CalledProcessError: Command 'x' returned 1.", True,
         ("subprocess.CalledProcessError", "Command 'x' returned 1.")),
        ("Note: this is not an exception", True, None),
        ("  ValueError: indented", False, None),
        ("", False, None),
        ('RuntimeError("boom")', True, ("RuntimeError", "boom")),
    ],
)
def test_classify_exception_line(text, strict, expected):
    assert classify_exception_line(text, strict) == expected


# — a traceback survives any cut of its head —

HEAD_CUT_CASES = {
    "scheduler": (SCHEDULER, "ValueError"),
    "cause": (CAUSE, "RuntimeError"),
    "context": (CONTEXT, "RuntimeError"),
    "docker": ("".join("sglang            | " + ln for ln in SCHEDULER.splitlines(keepends=True)), "ValueError"),
    "ray": ("".join("(SGLangEngine pid=23902) " + ln for ln in SCHEDULER.splitlines(keepends=True)), "ValueError"),
}


def _exception_line_index(text: str, exc_type: str) -> int:
    return max(i for i, ln in enumerate(text.splitlines()) if exc_type + ":" in ln)


@pytest.mark.parametrize("name", list(HEAD_CUT_CASES))
def test_every_head_cut_keeps_the_exception_type(name):
    text, exc_type = HEAD_CUT_CASES[name]
    lines = text.splitlines(keepends=True)
    for k in range(_exception_line_index(text, exc_type) + 1):
        types = [t.exc_type for t in tracebacks("".join(lines[k:]))]
        assert exc_type in types, (k, lines[k], types)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(name=st.sampled_from(list(HEAD_CUT_CASES)), data=st.data())
def test_any_byte_cut_of_the_head_keeps_the_exception_type(name, data):
    """Like `tail -c N`: the first kept line may start anywhere, even inside a word or a wrapper."""
    text, exc_type = HEAD_CUT_CASES[name]
    raw = text.encode()
    line_start = sum(len(ln) for ln in text.encode().splitlines(keepends=True)[: _exception_line_index(text, exc_type)])
    cut_at = data.draw(st.integers(min_value=0, max_value=line_start), label="cut")
    tbs = tracebacks(raw[cut_at:])
    assert exc_type in [t.exc_type for t in tbs]
    tb = next(t for t in tbs if t.exc_type == exc_type)
    assert tb.message in {"HiRadixCache only supports MHA, MLA, and NSA (DSA) models", "lookup failed"}


def test_hostile_lines_are_linear_time():
    """Long runs of spaces or dashes where a traceback part is expected must not backtrack:
    a run 16 times longer costs about 16 times the CPU time (256 if quadratic; bound 64)."""
    import time

    from logforensics._pipeline import parse

    def cpu(data: bytes) -> float:
        best = float("inf")
        for _ in range(3):  # best of 3 of this thread's CPU time: load elsewhere does not count
            start = time.thread_time()
            list(parse(data))
            best = min(best, time.thread_time() - start)
        return best

    shapes = [
        lambda n: b'  File "a.py", line 1, in ' + b" " * n + b"x",
        lambda n: b"  +" + b"-" * n + b"x",
        lambda n: b"(SGLangEngine pid=1) msg" + b" " * n + b"x [repeated 2x across cluster]",
    ]
    for shape in shapes:
        small, large = (cpu(b"Traceback (most recent call last):\n" + shape(n) + b"\nValueError: boom\n")
                        for n in (12_500, 200_000))
        assert large < 64 * small + 0.005, (shape(10), small, large)


def test_a_markdown_fence_ends_a_pasted_traceback():
    """A log pasted into an issue ends with its code fence and the reporter's words: neither
    is part of the exception's message."""
    tb = only("```\nTraceback (most recent call last):\n  File \"/a.py\", line 1, in f\n"
              "KeyError: 'invalid tool call parser: zz'\n```\n\nAny idea what is wrong?\n")
    assert (tb.exc_type, tb.message) == ("KeyError", "'invalid tool call parser: zz'")


def test_a_headless_traceback_logged_line_by_line_keeps_its_frames():
    """Every line of a traceback logged line by line carries the record's prefix; a paste that
    lost the header still reads the frames, the exception and its chain as one traceback."""
    text = "".join(f"[2026-02-26 15:56:59] ERROR: {body}\n" for body in (
        "                   ~~~~~~~~~~~~~~^^^^^^^^^^",
        '  File "/usr/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py", '
        "line 1048, in __getitem__",
        "    raise KeyError(key)",
        "KeyError: 'glm_moe_dsa'",
        "",
        "During handling of the above exception, another exception occurred:"))
    tb = only(text)
    assert tb.exc_type == "KeyError" and tb.frames[-1].function == "__getitem__"
    assert tb.head_missing


def test_a_frame_line_hard_wrapped_at_the_paste_width_stays_in_the_traceback():
    """A paste broken at its width puts the rest of a long frame line on the next line
    ("rained", "_"): the traceback goes on, its exception is still the one at its end, and the
    rest is joined back to the frame (its function is the one the frame line named)."""
    head = '  File "/usr/local/lib/python3.11/site-packages/transformers/models/auto/configuration_auto.py", '
    text = ("Traceback (most recent call last):\n"
            f"{head}line 1170, in from_pret\nrained\n"
            "    config_class = CONFIG_MAPPING[config_dict['model_type']]\n"
            f"{head}line 872, in __getitem_\n_\n"
            "    raise KeyError(key)\n"
            "KeyError: 'mineru2_qwen'\n")
    tb = only(text)
    assert tb.exc_type == "KeyError" and len(tb.frames) == 2
    assert [f.function for f in tb.frames] == ["from_pretrained", "__getitem__"]
    assert tb.frames[0].source == "config_class = CONFIG_MAPPING[config_dict['model_type']]"


def test_a_hard_wrap_inside_a_frame_s_path_or_its_source_is_joined_back():
    """A paste hard-wrapped at its width (several lines end there): the rest of a frame line
    wrapped inside its path, or of a source line, completes that line."""
    site = "/usr/local/lib/python3.11/site-packages/vllm/entrypoints"
    frames = [(f'  File "{site}/cli/serve.py", line 156, in cmd', "    uvloop.run(run_server(args))"),
              (f'  File "{site}/launchers/launcher.py", line 370, in setup_server',
               "    validate_api_server_args(args)"),
              (f'  File "{site}/common/cli_args.py", line 620, in validate_api_server_args',
               "    raise KeyError(f'invalid tool call parser: {args.tool_call_parser} (chose from {parsers})')")]
    width = 64
    before = [f"(APIServer pid=7) INFO 03-23 14:01:3{i} [utils.py:233] non-default args: {{'model': 'm{i}', "
              "'enable_auto_tool_choice': True}" for i in range(3)]  # the paste's width shows
    wrapped = [line[i : i + width] for line in [*before, "Traceback (most recent call last):",
                                                *(line for pair in frames for line in pair)]
               for i in range(0, len(line), width)]
    text = "\n".join([*wrapped, "KeyError: 'invalid tool call parser: zz'"])
    tb = only(text + "\n")
    assert [(f.file.rsplit("/", 1)[-1], f.line, f.function) for f in tb.frames] == [
        ("serve.py", 156, "cmd"), ("launcher.py", 370, "setup_server"),
        ("cli_args.py", 620, "validate_api_server_args")]
    assert [f.source for f in tb.frames] == [pair[1].strip() for pair in frames]


def test_a_frame_line_wrapped_before_the_paste_s_width_shows_is_completed_by_its_rest():
    """The first wide frame line of a paste (its width not shown yet) that stopped short, and a
    next line that completes it ('.py", line 1360, in from_pretrained', spaces and all): one
    frame, the traceback goes on."""
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/dist-packages/transformers/models/auto/configuration_auto\n'
            '.py", line 1360, in from_pretrained\n'
            "    config_class = CONFIG_MAPPING[config_dict['model_type']]\n"
            "KeyError: 'qwen4_moe'\n")
    tb = only(text)
    assert [(f.file.rsplit("/", 1)[-1], f.line, f.function) for f in tb.frames] == [
        ("configuration_auto.py", 1360, "from_pretrained")]
    assert tb.exc_type == "KeyError" and not tb.head_missing


def test_a_plain_line_after_the_widest_frame_still_ends_the_traceback():
    """Only a fragment without spaces is taken for the rest of a wrapped line: a prompt printed
    between a frame and its source is not swallowed."""
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.10/dist-packages/transformers/dynamic_module_utils.py", line 598, in '
            "resolve_trust_remote_code\n"
            "The repository for x contains custom code which must be executed to correctly load the model.\n")
    assert only(text).frames[-1].function == "resolve_trust_remote_code"
    assert ("line", 3) in others(text)
