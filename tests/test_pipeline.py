"""Stages 1–4 wired together: ``parse()`` on every kind of source, ``EventStream``, and the
properties the whole pipeline must keep (never raise, chunking-independent, no line lost or
reported twice)."""

from __future__ import annotations

import io
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logforensics._analysis import Options, explain
from logforensics._events import Event
from logforensics._pipeline import EventStream, parse, raw_lines, traceback_event
from logforensics._sources import RawLine, iter_bytes, iter_stream, split_chunks

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

LOG = (
    b"[2026-03-23 14:01:30] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2)\n"
    b"[2026-03-23 14:01:35 TP0] Load weight begin. avail mem=78.50 GB\n"
    b"[2026-03-23 14:01:38 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    b'  File "/sgl/scheduler.py", line 2546, in run_scheduler_process\n'
    b"    raise ValueError(msg)\n"
    b"ValueError: HiRadixCache only supports MHA, MLA, and NSA (DSA) models\n"
    b"\n"
    b"[2026-03-23 14:01:38] Received sigquit from a child process. It usually means the child failed.\n"
    b"Killed"
)
LOG_KINDS = [("server_args", 1), ("weight_load_begin", 2), ("traceback", 3), ("sigquit_child", 8), ("killed", 9)]


def kinds(events) -> list[tuple[str, int]]:
    return [(e.kind, e.number) for e in events]


def signature(events: list[Event]) -> list[tuple]:
    """Everything a consumer can see of an event stream."""
    out = []
    for e in events:
        ln = e.line
        item: tuple = (e.kind, e.number, ln.offset, ln.text, ln.message, ln.ts, ln.tag, ln.wrapper, ln.level,
                       ln.truncated, ln.eol, repr(sorted(e.fields.items())))
        tb = e.traceback
        if tb is not None:
            item += (tb.first_line, tb.last_line, tb.stream, tb.context, tuple(tb.missing), tb.ends_input,
                     tuple(tb.lines), tb.lines_elided,
                     tuple((x.type, x.message, x.chain, x.native, x.frames_elided,
                            tuple((f.file, f.line, f.function, f.source) for f in x.frames))
                           for x in tb.exceptions))
        out.append(item)
    return out


# — sources accepted by parse() —


def test_parse_path_bytes_stream_and_raw_lines(tmp_path, monkeypatch):
    path = tmp_path / "server.log"
    path.write_bytes(LOG)
    want = signature(list(parse(LOG)))
    assert kinds(parse(LOG)) == LOG_KINDS
    assert signature(list(parse(path))) == want
    assert signature(list(parse(str(path)))) == want
    assert signature(list(parse(bytearray(LOG)))) == want
    assert signature(list(parse(io.BytesIO(LOG)))) == want
    assert signature(list(parse(list(iter_bytes(LOG))))) == want
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=io.BytesIO(LOG)))
    assert signature(list(parse("-"))) == want


def test_parse_empty_and_blank():
    assert list(parse(b"")) == []
    assert kinds(parse(b"\n\n")) == [("line", 1), ("line", 2)]


def test_raw_lines_dispatch():
    assert [r.number for r in raw_lines(b"a\nb")] == [1, 2]
    given_lines = [RawLine(5, 0, b"x")]
    assert list(raw_lines(given_lines)) == given_lines


def test_traceback_event_is_anchored_at_its_first_line():
    tb_event = [e for e in parse(LOG) if e.kind == "traceback"][0]
    tb = tb_event.traceback
    assert tb_event.number == tb.first_line == 3
    assert (tb_event.line.tag, tb_event.line.ts) == ("TP0", "2026-03-23 14:01:38")
    assert tb_event.line.text.startswith("[2026-03-23 14:01:38 TP0] Scheduler hit an exception")
    again = traceback_event(tb)
    assert (again.kind, again.number, again.traceback) == ("traceback", 3, tb)


def test_event_stream_matches_parse_line_by_line():
    stream = EventStream()
    out: list[Event] = []
    for raw in iter_bytes(LOG):
        out += stream.feed(raw)
    out += stream.finish()
    assert signature(out) == signature(list(parse(LOG)))
    assert stream.finish() == []  # nothing left open


def test_binary_garbage_gets_events_not_exceptions(tmp_path):
    data = bytes(range(256)) * 64 + b"\x00" * 5000 + b"\xff\xfe" * 3000
    path = tmp_path / "garbage.bin"
    path.write_bytes(data)
    events = list(parse(path))
    assert events and all(isinstance(e, Event) for e in events)


# — properties —

FRAGMENTS = [
    "[2026-03-23 14:01:38 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "[2026-03-23 14:01:38 TP1] Scheduler hit an exception: Traceback (most recent call last):",
    "Traceback (most recent call last):",
    '  File "/sgl/a.py", line 1, in f',
    '  File "/sgl/b.py", line 22, in g',
    "    raise ValueError(x)",
    "    ^^^^^^^^^^^^^^^^^^^",
    "  ...",
    "ValueError: bad value",
    "RuntimeError: Prefill out of memory. Try to lower your batch size.",
    "Try to allocate 8192 tokens.",
    "ValueError: cut mid-sente...",
    "",
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
    "  + Exception Group Traceback (most recent call last):",
    "  | ExceptionGroup: many (2 sub-exceptions)",
    "  +-+---------------- 1 ----------------",
    "    | TypeError: 2",
    "    +------------------------------------",
    "terminate called after throwing an instance of 'c10::Error'",
    "  what():  CUDA error: an illegal memory access was encountered",
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96",
    "[2026-03-23 14:01:38 TP0] Load weight begin. avail mem=78.50 GB",
    "[2026-03-23 14:01:39] Received sigquit from a child process. It usually means the child failed.",
    "[2026-03-23 14:01:39] INFO:     Started server process [123]",
    "sglang  | [2026-03-23 14:01:38 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    'sglang  |   File "/c.py", line 3, in h',
    "other   | ValueError: y",
    "(SGLangEngine pid=1) [2026-03-23 14:01:38 TP1] Decode batch, #running-req: 1, #token: 40, cuda graph: True",
    '(SGLangEngine pid=2)   File "/d.py", line 4, in k',
    "[rank1]:[W623 15:37:01.823833318 socket.cpp:460] [c10d] waitForInput: timed out",
    "Killed",
    "server_args={'model_path': 'x', 'tp_size': 2}",
    "Capturing batches (bs=1 avail_mem=38.07 GB):  50%|##  | 1/2\rCapturing batches (bs=1 avail_mem=38.07 GB): 100%",
    "\x1b[1;33m'--x' is deprecated and will be removed in a future release. Use '--y' instead.\x1b[0m",
]

structured = st.tuples(
    st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=12), max_size=40),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
).map(lambda t: (t[1].join(t[0]) + (t[1] if t[2] else "")).encode("utf-8", "surrogatepass"))

garbage = st.binary(max_size=400) | st.lists(
    st.sampled_from([f.encode() for f in FRAGMENTS]) | st.binary(max_size=20), max_size=30
).map(b"\n".join)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(garbage | structured)
def test_arbitrary_bytes_never_raise(data):
    events = list(parse(data))
    n_lines = len(list(iter_bytes(data)))
    assert all(1 <= e.number <= n_lines for e in events)
    assert all(isinstance(e.kind, str) and e.kind for e in events)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(data=structured | garbage, points=st.lists(st.integers(min_value=0, max_value=5000), max_size=10),
       max_line=st.sampled_from([16, 64, 1 << 20]))
def test_chunking_never_changes_the_events(data, points, max_line):
    bounds = [0, *sorted(p % (len(data) + 1) for p in points), len(data)]
    chunks = [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    whole = signature(list(parse(iter_bytes(data, max_line))))
    assert signature(list(parse(split_chunks(chunks, max_line)))) == whole
    if max_line == 1 << 20:
        step = max(1, (points or [7])[0] % 13 + 1)

        class Pipe:
            pos = 0

            def read1(self, size=-1):
                chunk = data[self.pos : self.pos + step]
                self.pos += len(chunk)
                return chunk

            read = read1

        assert signature(list(parse(iter_stream(Pipe())))) == whole
        assert signature(list(parse(Pipe()))) == whole


@settings(max_examples=200, deadline=None, derandomize=True)
@given(structured)
def test_every_line_is_reported_exactly_once(data):
    """A line is either its own event or evidence inside exactly one traceback."""
    n_lines = len(list(iter_bytes(data)))
    seen: list[int] = []
    for e in parse(data):
        if e.kind == "traceback":
            tb = e.traceback
            assert tb.lines_elided == 0  # inputs here are far below the evidence cap
            assert tb.lines and tb.lines[0][0] == tb.first_line == e.number and tb.last_line == tb.lines[-1][0]
            seen += [n for n, _ in tb.lines]
        else:
            seen.append(e.number)
    assert sorted(seen) == list(range(1, n_lines + 1))


@pytest.mark.parametrize("max_line", [10, 1 << 20])
def test_truncated_and_unterminated_flags_reach_the_events(max_line):
    events = list(parse(iter_bytes(b"[2026-03-23 14:01:38 TP0] Load weight begin. avail mem=78.50 GB\nlast", max_line)))
    assert [(e.line.truncated, e.line.eol) for e in events] == [(max_line == 10, True), (False, False)]



@pytest.mark.parametrize("shape", ["one_after_the_other", "interleaved"])
def test_a_mixed_file_keeps_each_lines_dialect(shape):
    """A journal holding an SGLang server's healthy start-up and a vLLM server's failure (one
    after the other, or interleaved line by line) reads each line with its own server's prefix
    and events: two runs, one per server, and the vLLM run gets the diagnosis its log alone gets."""
    sglang = (FIXTURES / "none__healthy_tp1.log").read_text().splitlines()
    vllm_log = FIXTURES / "vllm" / "max_model_len_exceeds_kv_capacity__v1_013_qwen3_32b.log"
    vllm = vllm_log.read_text().splitlines()
    if shape == "interleaved":
        lines = [x for pair in zip(sglang, vllm, strict=False) for x in pair]
        lines += sglang[len(vllm):] + vllm[len(sglang):]
    else:
        lines = sglang + vllm
    data = ("\n".join(lines) + "\n").encode()
    runs = {r.dialect.name: r for r in explain(data).runs}
    assert sorted(runs) == ["sglang", "vllm"]
    assert runs["sglang"].ready and runs["sglang"].args.get("model_path") == "Qwen/Qwen3-8B"
    assert runs["vllm"].server_version == "0.13.0" and runs["vllm"].args.get("max_model_len") == 131072
    vllm_report = explain(data, options=Options(run_index=runs["vllm"].index))
    assert vllm_report.findings[0].id == explain(vllm_log).findings[0].id == "max_model_len_exceeds_kv_capacity"
    sglang_report = explain(data, options=Options(run_index=runs["sglang"].index))
    assert not any(f.is_problem for f in sglang_report.findings)


def test_a_first_line_grep_s_or_srun_s_is_held_until_the_next_decides():
    """"1: (Ray) File …" is grep's line 1 or srun's task 1: its events come with the next line's,
    read as grep's when that line's number grows, as srun's when it does not."""
    grep = EventStream()
    assert grep.feed(RawLine(1, 0, b"1: (SGLangEngine pid=9) ValueError: x")) == []
    events = grep.feed(RawLine(2, 40, b"2:[2026-03-23 14:01:38] Received sigquit from a child process."))
    events += grep.finish()
    assert [(e.kind, e.number) for e in events] == [("sigquit_child", 2), ("traceback", 1)]
    assert events[1].traceback.wrapper == "SGLangEngine pid=9"
    srun = EventStream()
    assert srun.feed(RawLine(1, 0, b"1: [2026-03-23 14:01:38 TP1] Load weight begin. avail mem=78.50 GB")) == []
    events = srun.feed(RawLine(2, 60, b"0: [2026-03-23 14:01:38 TP0] Load weight begin. avail mem=78.50 GB"))
    assert [(e.kind, e.line.wrapper) for e in events] == [("weight_load_begin", "task 1"),
                                                          ("weight_load_begin", "task 0")]
    alone = EventStream()
    assert alone.feed(RawLine(1, 0, b"1: [2026-03-23 14:01:38 TP1] Load weight begin. avail mem=78.50 GB")) == []
    assert [e.line.wrapper for e in alone.finish()] == ["task 1"]
