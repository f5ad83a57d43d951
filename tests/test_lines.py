"""Stage 2 — lines: decoding (never an exception), terminal clean-up, and prefix splitting.

Prefix shapes come from shared/reference/sglang-log-format.md §1 and the field corpus.
"""

from __future__ import annotations

import importlib.util
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logforensics._dialects import DEFAULT
from logforensics._lines import GrepNumbers, LogLine, PasteWidth, parse_timestamp, visible_text, without_wrappers
from logforensics._lines import decode as decode_with
from logforensics._scoring import load_labels, score_labels
from logforensics._sources import RawLine


def line(data: bytes | str, number: int = 1, offset: int = 0, **raw) -> LogLine:
    if isinstance(data, str):
        data = data.encode()
    return decode(RawLine(number, offset, data, **raw))


def decode(raw: RawLine) -> LogLine:
    """Lines of the default dialect (SGLang's prefix)."""
    return decode_with(raw, DEFAULT.prefix)


def fields(ll: LogLine) -> tuple:
    return ll.ts, ll.tag, ll.wrapper, ll.level, ll.message


TS = "2026-03-23 14:01:38"

# (raw line, ts, tag, wrapper, level, message)
PREFIXES = [
    # SGLang scheduler prefixes
    (f"[{TS} TP0] Load weight begin. avail mem=78.50 GB", TS, "TP0", "", None,
     "Load weight begin. avail mem=78.50 GB"),
    (f"[{TS}] The server is fired up and ready to roll!", TS, "", "", None,
     "The server is fired up and ready to roll!"),
    (f"[{TS}.123 TP0] x", f"{TS}.123", "TP0", "", None, "x"),
    (f"[{TS} DP1 TP3 EP3] Decode batch, #running-req: 1", TS, "DP1 TP3 EP3", "", None,
     "Decode batch, #running-req: 1"),
    (f"[{TS} PP0 TP1] x", TS, "PP0 TP1", "", None, "x"),
    (f"[{TS} DP0 ATTN_CP1 TP2] x", TS, "DP0 ATTN_CP1 TP2", "", None, "x"),
    (f"[{TS} MOE_DP0 TP2 EP2] x", TS, "MOE_DP0 TP2 EP2", "", None, "x"),
    (f"[{TS}.123 PP0 ATTN_CP1 MOE_DP0 TP5 EP5] x", f"{TS}.123", "PP0 ATTN_CP1 MOE_DP0 TP5 EP5", "", None, "x"),
    # tags in any order (0.4.10–0.5.5 put PP last; be robust to anything)
    (f"[{TS} DP0 TP1 EP1 PP0] x", TS, "DP0 TP1 EP1 PP0", "", None, "x"),
    (f"[{TS} EP3 TP3 DP1] x", TS, "EP3 TP3 DP1", "", None, "x"),
    # short timestamp, lost leading bracket (a cut paste, corpus 041)
    ("[03-23 14:01:38 TP0] x", "03-23 14:01:38", "TP0", "", None, "x"),
    ("2025-09-13 09:09:15 TP0] Decode batch. #running-req: 4", "2025-09-13 09:09:15", "TP0", "", None,
     "Decode batch. #running-req: 4"),
    # encoder disaggregation
    (f"[{TS} encode_server] x", TS, "encode_server", "", None, "x"),
    # uvicorn, with and without the SGLang timestamp
    ("INFO:     Started server process [123]", None, "", "", "INFO", "Started server process [123]"),
    (f"[{TS}] INFO:     Started server process [123]", TS, "", "", "INFO", "Started server process [123]"),
    (f'[{TS}] INFO:     127.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK', TS, "", "", "INFO",
     '127.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK'),
    (f"[{TS}] WARNING:  Invalid HTTP request received.", TS, "", "", "WARNING", "Invalid HTTP request received."),
    # Python logging default format
    ("2025-03-27 21:33:31,320 - INFO - flashinfer.jit: Prebuilt kernels not found, using JIT backend",
     "2025-03-27 21:33:31.320", "", "", "INFO", "flashinfer.jit: Prebuilt kernels not found, using JIT backend"),
    # torch / c10 logging (month not zero-padded; older builds print no time at all)
    ("[rank1]:[W623 15:37:01.823833318 socket.cpp:460] [c10d] waitForInput: poll for socket returned 0",
     None, "rank1", "", "WARNING", "[c10d] waitForInput: poll for socket returned 0"),
    ("[rank0]:[E1023 08:00:01.000000001 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective timeout",
     None, "rank0", "", "ERROR", "[Rank 0] Watchdog caught collective timeout"),
    ("[rank1]:[W CudaIPCTypes.cpp:16] Producer process has been terminated before all shared CUDA tensors released.",
     None, "rank1", "", "WARNING", "Producer process has been terminated before all shared CUDA tensors released."),
    # docker compose wrappers
    ("sglang            | [2025-06-21 00:34:02 TP1] Scheduler hit an exception: Traceback (most recent call last):",
     "2025-06-21 00:34:02", "TP1", "sglang", None, "Scheduler hit an exception: Traceback (most recent call last):"),
    ("vllm-1  | INFO:     Started server process [7]", None, "", "vllm-1", "INFO", "Started server process [7]"),
    ('deepseek-v32-exp  |   File "/sgl/model_runner.py", line 431, in initialize', None, "", "deepseek-v32-exp", None,
     '  File "/sgl/model_runner.py", line 431, in initialize'),
    ("sglang            | ", None, "", "sglang", None, ""),
    # Ray
    ("(SGLangEngine pid=123) [2026-01-04 01:42:54 TP0] Registering 0 cuda graph addresses", "2026-01-04 01:42:54",
     "TP0", "SGLangEngine pid=123", None, "Registering 0 cuda graph addresses"),
    ("(SchedulerActor pid=123, ip=10.0.0.1) [2026-10-30 12:00:00 TP1] x", "2026-10-30 12:00:00", "TP1",
     "SchedulerActor pid=123", None, "x"),
    ("(raylet) [2026-01-04 01:42:54] worker died", "2026-01-04 01:42:54", "", "raylet", None, "worker died"),
    (' (SGLangEngine pid=12589)   File "/sgl/sampler.py", line 161, in forward', None, "", "SGLangEngine pid=12589",
     None, '  File "/sgl/sampler.py", line 161, in forward'),
    ("(SGLangEngine pid=23902) [2026-01-04 01:42:55 TP1] Scheduler hit an exception: Traceback (most recent call "
     "last): [repeated 2x across cluster]", "2026-01-04 01:42:55", "TP1", "SGLangEngine pid=23902", None,
     "Scheduler hit an exception: Traceback (most recent call last):"),
    ("(SGLangEngine pid=23902)     subprocess.run( [repeated 2x across cluster]", None, "", "SGLangEngine pid=23902",
     None, "    subprocess.run("),
    # syslog / journald
    (f"Mar 23 14:01:38 host python[123]: [{TS} TP0] x", TS, "TP0", "host python[123]", None, "x"),
    ("Mar  3 14:01:38 gpu-node-7 sglang[42]: Killed", None, "", "gpu-node-7 sglang[42]", None, "Killed"),
    ("2026-03-23T14:01:38.123+00:00 host python3[9]: hello", None, "", "host python3[9]", None, "hello"),
    ("Mar 23 14:01:38 gpu1 python[4242]: 50%|#####     | 1/2 [00:01<00:01, 1.00it/s]", None, "",
     "gpu1 python[4242]", None, "50%|#####     | 1/2 [00:01<00:01, 1.00it/s]"),
    # kubectl logs --timestamps: a container runtime's stamp, never a syslog host and program
    ("2026-03-23T14:01:38.123456789Z launch_server.py: error: unrecognized arguments: --x", None, "", "", None,
     "launch_server.py: error: unrecognized arguments: --x"),
    ("2026-03-23T14:01:38.123456789Z ImportError: /x/common_ops.abi3.so: undefined symbol: _ZN3c10", None, "", "",
     None, "ImportError: /x/common_ops.abi3.so: undefined symbol: _ZN3c10"),
    ("2026-03-23T14:01:38.123456789Z vllm serve: error: argument --dtype: invalid choice", None, "", "", None,
     "vllm serve: error: argument --dtype: invalid choice"),
    # moreutils ts (its default format): a bare stamp, then the line
    (f"Mar 23 14:01:38 [{TS} TP0] Load weight begin. avail mem=78.50 GB", TS, "TP0", "", None,
     "Load weight begin. avail mem=78.50 GB"),
    ("Mar 23 14:01:38 ValueError: Speculative decoding is not compatible", None, "", "", None,
     "ValueError: Speculative decoding is not compatible"),
    ("Mar 23 14:01:38 vllm serve: error: argument --dtype: invalid choice", None, "", "", None,
     "vllm serve: error: argument --dtype: invalid choice"),
    # wrappers nest: Ray inside docker compose, docker behind kubectl's stamp, ts in front of Ray
    ("sglang-1  | (SGLangEngine pid=23902) [2026-01-04 01:42:55 TP1] Scheduler hit an exception:",
     "2026-01-04 01:42:55", "TP1", "sglang-1 > SGLangEngine pid=23902", None, "Scheduler hit an exception:"),
    ("2026-03-23T14:01:38.1Z sglang-1  | Killed", None, "", "sglang-1", None, "Killed"),
    ("Mar 23 14:01:38 (EngineCore_DP0 pid=357) x", None, "", "EngineCore_DP0 pid=357", None, "x"),
    # multi-node launchers: srun --label, pdsh, mpirun --tag-output, kubectl logs --prefix; cat -n
    (f"0: [{TS} TP0] x", TS, "TP0", "task 0", None, "x"),
    (f" 3: [{TS} TP3] x", TS, "TP3", "task 3", None, "x"),
    ('12:   File "/a.py", line 1, in f', None, "", "task 12", None, '  File "/a.py", line 1, in f'),
    (f"gpu-node-3: [{TS} TP0] x", TS, "TP0", "gpu-node-3", None, "x"),
    ("10.0.0.7: Killed", None, "", "10.0.0.7", None, "Killed"),
    (f"[1,0]<stdout>:[{TS} TP0] x", TS, "TP0", "1,0", None, "x"),
    (f"[pod/sglang-0/server] [{TS} TP0] x", TS, "TP0", "pod/sglang-0", None, "x"),
    (f"    12\t[{TS} TP0] x", TS, "TP0", "", None, "x"),
    # ... and what only looks like one
    ("ValueError: bad value", None, "", "", None, "ValueError: bad value"),
    ("Qwen3: loading", None, "", "", None, "Qwen3: loading"),
    ("14:01:38 something", None, "", "", None, "14:01:38 something"),
    # nothing to split
    ("Traceback (most recent call last):", None, "", "", None, "Traceback (most recent call last):"),
    ('  File "/a.py", line 1, in f', None, "", "", None, '  File "/a.py", line 1, in f'),
    ("Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]", None, "", "", None,
     "Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]"),
    ("", None, "", "", None, ""),
]


@pytest.mark.parametrize("raw, ts, tag, wrapper, level, message", PREFIXES,
                         ids=[p[0][:50] or "empty" for p in PREFIXES])
def test_prefixes(raw, ts, tag, wrapper, level, message):
    ll = line(raw)
    assert fields(ll) == (ts, tag, wrapper, level, message)
    assert ll.text == raw.replace(" [repeated 2x across cluster]", "") or ll.text == raw


def test_text_keeps_the_wrapper_for_evidence():
    ll = line("sglang            | [2025-06-21 00:34:02 TP1] x")
    assert ll.text == "sglang            | [2025-06-21 00:34:02 TP1] x"
    assert ll.stream == "sglang|TP1"
    assert line("[2025-06-21 00:34:02 TP1] x").stream == "TP1"
    assert line("[2025-06-21 00:34:02] x").stream == ""


def test_number_offset_and_source_flags_are_carried():
    ll = line(b"[2026-03-23 14:01:38 TP0] abc", number=7, offset=1234, truncated=True, eol=False)
    assert (ll.number, ll.offset, ll.truncated, ll.eol) == (7, 1234, True, False)


def test_timestamps():
    assert line(f"[{TS}.123 TP0] x").time == datetime(2026, 3, 23, 14, 1, 38, 123000)
    assert line(f"[{TS}] x").time == datetime(2026, 3, 23, 14, 1, 38)
    assert line("2025-03-27 21:33:31,320 - INFO - x: y").time == datetime(2025, 3, 27, 21, 33, 31, 320000)
    assert parse_timestamp("03-23 14:01:38", default_year=2025) == datetime(2025, 3, 23, 14, 1, 38)
    assert parse_timestamp("13-45 99:99:99", default_year=2025) is None  # matched the shape, not a date
    assert parse_timestamp(None) is None and line("no stamp").time is None


# — decoding and terminal clean-up —


def test_invalid_utf8_is_replaced():
    ll = line(b"[2026-03-23 14:01:38 TP0] bad \xff\xfe bytes \xc3")
    assert ll.message == "bad \ufffd\ufffd bytes \ufffd"
    assert ll.tag == "TP0"


def test_nul_bytes_are_tolerated():
    assert line(b"abc\x00\x00def").text == "abcdef"
    # copytruncate leaves NUL padding in front of the next record: the prefix still splits
    ll = line(b"\x00\x00\x00\x00[2026-03-23 14:01:38 TP0] Memory pool end. avail mem=12.34 GB")
    assert fields(ll) == (TS, "TP0", "", None, "Memory pool end. avail mem=12.34 GB")


def test_crlf():
    ll = line(b"[2026-03-23 14:01:38 TP0] Memory pool end. avail mem=12.34 GB\r")
    assert ll.message == "Memory pool end. avail mem=12.34 GB"
    assert not ll.text.endswith("\r")


def test_lone_cr_progress_bar_keeps_the_last_visible_segment():
    bar = ("Capturing batches (bs=1 avail_mem=38.07 GB):  50%|\u2588\u2588\u2588\u2588\u2588     | 18/36 "
           "[00:02<00:02,  7.54it/s]\rCapturing batches (bs=1 avail_mem=38.07 GB): 100%|\u2588\u2588\u2588\u2588"
           "\u2588\u2588\u2588\u2588\u2588\u2588| 36/36 [00:04<00:00,  7.54it/s]")
    ll = line(bar + "\r")
    assert ll.text == bar.rsplit("\r", 1)[1]
    assert ll.message.startswith("Capturing batches (bs=1 avail_mem=38.07 GB): 100%|")
    assert "50%" not in ll.text


@pytest.mark.parametrize(
    "data, text",
    [
        (b"a\rb\rc", "c"),
        (b"a\rb\r   \r", "b"),  # a blank redraw does not hide the last real segment
        (b"abc\r", "abc"),
        (b"\r\r", ""),
        (b"\x1b[A\x1b[2Kloading 10%\rloading 20%", "loading 20%"),
    ],
)
def test_carriage_returns(data, text):
    assert line(data).text == text


def test_ansi_colour_is_stripped():
    warn = "'--mamba-scheduler-strategy' is deprecated and will be removed in a future release. " \
           "Use '--mamba-radix-cache-strategy' instead."
    ll = line(f"[{TS}] \x1b[1;33m{warn}\x1b[0m")
    assert (ll.ts, ll.message) == (TS, warn)
    assert "\x1b" not in ll.text
    assert line(f"\x1b[1;33m{warn}\x1b[0m").message == warn
    # uvicorn colours its level prefix when stderr is a TTY
    ll = line(f"[{TS}] \x1b[32mINFO\x1b[0m:     Started server process [123]")
    assert (ll.level, ll.message) == ("INFO", "Started server process [123]")


def test_visible_text_is_what_a_terminal_shows():
    assert visible_text(b"\x1b[31mred\x1b[0m plain") == "red plain"
    assert visible_text(b"x\xff") == "x\ufffd"


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.binary(max_size=300) | st.lists(st.sampled_from(
    [b"[", b"]", b"2026-03-23 14:01:38", b" TP0", b" DP1", b"(", b")", b"SGLangEngine pid=1", b"|", b": ",
     b"INFO:", b"\r", b"\x1b[1;33m", b"\x1b", b"\x00", b"\xff", b" ", b"Mar 23 14:01:38 h p[1]: ", b"[rank1]:[W623 ",
     b"x"]), max_size=30).map(b"".join))
def test_decode_never_raises(data):
    ll = decode(RawLine(1, 0, data))
    assert isinstance(ll.text, str) and isinstance(ll.message, str)
    assert "\r" not in ll.text and "\x00" not in ll.text
    assert ll.message in ll.text or ll.message.strip() in ll.text


def test_container_runtime_timestamps_are_stripped():
    from logforensics._sources import RawLine

    raw = b"2026-03-23T14:01:38.123456789Z [2026-03-23 14:01:38 TP1] Load weight begin. avail mem=1.00 GB"
    line = decode(RawLine(1, 0, raw))
    assert (line.ts, line.tag, line.message) == ("2026-03-23 14:01:38", "TP1", "Load weight begin. avail mem=1.00 GB")
    tb = decode(RawLine(2, 0, b'2026-03-23T14:01:39.000000001Z   File "/x.py", line 3, in f'))
    assert tb.message == '  File "/x.py", line 3, in f' and tb.ts is None


def test_glog_timestamp_gets_the_year_and_whole_seconds():
    from logforensics._lines import glog_timestamp

    assert glog_timestamp("[rank3]:[E1120 14:15:30.000000123 ProcessGroupNCCL.cpp:632] x", 2026) == \
        "2026-11-20 14:15:30"
    assert glog_timestamp("(SGLangEngine pid=1) [rank1]:[W623 15:37:01.823 socket.cpp:460] x", 2025) == \
        "2025-06-23 15:37:01"
    assert glog_timestamp("W0215 12:25:06.525000 14707 torch/x.py:504] x", 2026) == "2026-02-15 12:25:06"
    assert glog_timestamp("Error 1320 12:00:00 is not a stamp", 2026) is None
    assert glog_timestamp("[2026-01-01 10:00:00] plain", 2026) is None


def test_a_torch_stamp_gets_a_year_only_from_a_log_that_prints_one():
    """vLLM prints ``mm-dd``: its torch stamps stay year-less rather than take today's year."""
    from logforensics._lines import glog_timestamp, printed_year

    line = "[rank3]:[E1120 14:15:33.000000456 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught"
    assert (printed_year("2026-11-20 14:00:02"), printed_year("11-20 14:00:02")) == (2026, None)
    assert glog_timestamp(line, 2026) == "2026-11-20 14:15:33"
    assert glog_timestamp(line, printed_year("11-20 14:00:02")) == "11-20 14:15:33"


GENERATED = Path(__file__).resolve().parent.parent / "fixtures" / "generated"
WRAPPER_SHAPES = ("docker", "kubectl", "journald", "ts", "ray", "srun", "pdsh", "mpirun", "kprefix", "catn",
                  "grepn", "grepfiles", "crlf", "ansi", "markdown")


@pytest.mark.parametrize("release", ["sglang-0.5.23", "vllm-0.34.0"])
def test_a_log_through_any_wrapper_gets_the_answer_of_the_plain_log(release, tmp_path):
    """Logs the real releases printed, rewritten as docker compose, kubectl, journald, ts,
    Ray, srun, pdsh, mpirun, kubectl --prefix, cat -n, grep -n (over one file or several), a
    Windows editor, a colour terminal and a Markdown paste would hand them over
    (bench/robustness.py): every one is answered as its plain log is."""
    robustness = _bench_module("robustness")
    directory = GENERATED / release
    plain = {o.label.id: o.answer for o in score_labels(load_labels(directory)).outcomes}
    for shape in WRAPPER_SHAPES:
        out = tmp_path / shape
        out.mkdir()
        score = score_labels(robustness.reshape(directory, shape, out))
        changed = {o.label.id: (plain[o.label.id], o.answer) for o in score.outcomes
                   if o.answer != plain[o.label.id]}
        assert changed == {}, shape


def _bench_module(name: str):
    spec = importlib.util.spec_from_file_location(name, GENERATED.parent.parent / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_wrappers_gives_the_servers_own_line():
    assert without_wrappers("sglang-1  | (EngineCore_DP0 pid=357) ERROR x") == "ERROR x"
    assert without_wrappers("Mar 23 14:01:38 gpu1 python3[9]: hello") == "hello"
    text = "[2026-03-23 14:01:38 TP0] x"
    assert without_wrappers(text) is text


def test_paste_width_is_the_length_several_different_lines_share():
    """A terminal's paste has its long lines cut at one width: the third different line at the
    longest length (>= 60 columns) is read as possibly cut; repeats and short lines are not."""
    width = PasteWidth()
    a, b, c = ("a" * 99 + "1", "b" * 99 + "2", "c" * 99 + "3")
    assert [width.at_width(t) for t in (a, a, a, "short", b)] == [False] * 5
    assert width.at_width(c) and width.at_width(a)
    assert not width.at_width("x" * 99)
    narrow = PasteWidth()
    assert not any(narrow.at_width(t) for t in ("x" * 50, "y" * 50, "z" * 50, "w" * 50))


def test_paste_width_read_at_the_end_needs_two_different_lines():
    """At the end of a short paste, two different lines at the widest length say it was cut
    there; one line, or one line repeated, does not."""
    width = PasteWidth()
    a, b = "a" * 99 + "1", "b" * 99 + "2"
    for text in (a, a, "short"):
        width.at_width(text)
    assert width.final() == 0
    width.at_width(b)
    assert width.final() == 100
    width.at_width("c" * 101)
    assert width.final() == 0


def _grep_read(texts: list[str]) -> list[tuple[str, str]]:
    """Each line's own text behind grep's number and the file grep names, one paste."""
    grep = GrepNumbers()
    out = []
    for text in texts:
        start, file = grep.read(text)
        out.append((text[start:], file))
    return out


def test_grep_n_numbers_are_a_wrapper_of_the_whole_paste():
    """grep -n's "12:" (a match) and "12-" (context) stand before every line of its paste, "--"
    between groups; the numbers grow, so the line behind them is the server's."""
    paste = ["12-[2026-03-23 14:01:38 TP0] Memory pool end.", "13:Traceback (most recent call last):",
             '14-  File "/sgl/scheduler.py", line 3, in run', "--", "40:ValueError: bad", "41-", ""]
    assert _grep_read(paste) == [("[2026-03-23 14:01:38 TP0] Memory pool end.", ""),
                                 ("Traceback (most recent call last):", ""),
                                 ('  File "/sgl/scheduler.py", line 3, in run', ""), ("--", ""),
                                 ("ValueError: bad", ""), ("", ""), ("", "")]


def test_grep_n_over_several_files_names_each_file():
    """``grep -n`` over several files (or ``-r``): "file:12:" and "file-12-", each file's numbers
    growing on their own; a file's name may hold dashes and digits."""
    paste = ["logs/node-0.log:7:[2026-03-23 14:01:38 TP0] x", "logs/node-0.log-8-  File y",
             "logs/node-1.log:3:[2026-03-23 14:01:38 TP1] x"]
    assert _grep_read(paste) == [("[2026-03-23 14:01:38 TP0] x", "logs/node-0.log"),
                                 ("  File y", "logs/node-0.log"), ("[2026-03-23 14:01:38 TP1] x", "logs/node-1.log")]


@pytest.mark.parametrize(("log", "kept"), [
    (["12:34:56 launcher started", "12:34:57 up"], ["12:34:56 launcher started", "12:34:57 up"]),  # a clock
    (["2024-05-01 10:00:00,123 - INFO - x"], ["2024-05-01 10:00:00,123 - INFO - x"]),  # a date
    (["3:Traceback (most recent call last):", "3:ValueError: x"],  # a number that does not grow
     ["Traceback (most recent call last):", "3:ValueError: x"]),
    (["[2026-03-23 14:01:38] a", "b", "c", "d", "5:e"], ["[2026-03-23 14:01:38] a", "b", "c", "d", "5:e"]),
    (["1:a", "2:b", "plain", "4:d"], ["a", "b", "plain", "4:d"]),  # a line without one ends it
    (["[2026-04-14 15:32:10] x", "/tmp/tmpq2/cuda_utils.c:5:10: fatal error: Python.h: No such file"],
     ["[2026-04-14 15:32:10] x", "/tmp/tmpq2/cuda_utils.c:5:10: fatal error: Python.h: No such file"]),
])
def test_digits_a_log_line_starts_with_are_not_grep_s(log, kept):
    """The whole paste decides: a clock's or a date's first field, a number that does not grow, a
    paste whose first lines carry none, or a line without one after them, is the log's own text."""
    assert [text for text, _ in _grep_read(log)] == kept


def test_grep_n_after_a_prompt_or_a_fence():
    """A few lines before grep's first one (the command, a Markdown fence) do not decide."""
    assert _grep_read(["$ grep -n Error server.log", "```", "12:ValueError: x"])[2] == ("ValueError: x", "")


def test_an_srun_label_or_grep_s_number_is_decided_by_the_next_line():
    """"3: x" is srun's task 3 or grep's line 3 of " x": the next line's number decides."""
    srun = GrepNumbers()
    assert srun.undecided("3: [2026-03-23 14:01:38 TP0] x")
    srun.settle("3: [2026-03-23 14:01:38 TP0] x", "3: [2026-03-23 14:01:38 TP0] y")
    assert srun.on is False and srun.read("3: y") == (0, "")
    grep = GrepNumbers()
    grep.settle("3: (SGLangEngine pid=9)   File x", "4: (SGLangEngine pid=9)     y()")
    assert grep.read("3: (SGLangEngine pid=9)   File x") == (2, "")
    assert not GrepNumbers().undecided("12:34:56 a") and not GrepNumbers().undecided("3:x")
    gcc = GrepNumbers()  # a compiler's "file:line:column:" is no grep paste's first line
    assert gcc.undecided("/tmp/x/cuda_utils.c:5:10: fatal error: Python.h: No such file or directory")
    gcc.settle("/tmp/x/cuda_utils.c:5:10: fatal error: Python.h: No such file", "    5 | #include <Python.h>")
    assert gcc.on is False


def test_a_template_is_read_as_grep_s_paste_is_without_adding_to_it():
    grep = GrepNumbers()
    assert grep.peek("000:[2026-03-23 14:01:38 TP0] Decode batch") == (4, "")  # before the decision
    assert grep.read("5:a") == (2, "") and grep.peek("000:b") == (4, "") and grep.read("6:c") == (2, "")


def test_detection_reads_the_server_s_line_behind_grep_s_numbers():
    grep = GrepNumbers()
    assert without_wrappers("7:sglang-1  | hello", grep) == "hello"
    assert without_wrappers("12:34:56 hello", GrepNumbers()) == "12:34:56 hello"
