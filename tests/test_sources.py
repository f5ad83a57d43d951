"""Stage 1 — sources: numbered raw lines with exact byte offsets from a file, a stream or bytes.

Every source goes through ``LineSplitter``, so the expectations are checked against a tiny
reference model (``reference_split``) and must not depend on how the bytes were chunked.
"""

from __future__ import annotations

import io
import os
import sys
import tracemalloc
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logforensics import _sources as sources
from logforensics._pipeline import parse
from logforensics._sources import (
    MAX_LINE_BYTES,
    LineSplitter,
    RawLine,
    SourceError,
    SpecialLine,
    check_readable,
    iter_bytes,
    iter_file,
    iter_spans,
    iter_stream,
    read_chunks,
    split_chunks,
)

SAMPLE = b"first\nsecond line\r\n\nfourth"
SAMPLE_LINES = [
    (1, 0, b"first", False, True),
    (2, 6, b"second line\r", False, True),  # the CR stays in the raw bytes; lines.py drops it
    (3, 19, b"", False, True),
    (4, 20, b"fourth", False, False),  # no newline at the end: still a line, eol=False
]


def tuples(lines) -> list[tuple[int, int, bytes, bool, bool]]:
    return [(r.number, r.offset, r.data, r.truncated, r.eol) for r in lines]


def reference_split(data: bytes, max_line: int) -> list[tuple[int, int, bytes, bool, bool]]:
    """What the splitter must produce, computed the obvious (whole-input) way."""
    out = []
    parts = data.split(b"\n")
    pos = 0
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if last and not part:
            break
        out.append((len(out) + 1, pos, part[:max_line], len(part) > max_line, not last))
        pos += len(part) + 1
    return out


def lines_from_spans(spans) -> list[tuple[int, int, bytes, bool, bool]]:
    """Number the output of ``iter_spans`` the way its consumer (analysis.py) does."""
    out, number, offset = [], 0, 0
    for span in spans:
        if isinstance(span, SpecialLine):
            number += 1
            out.append((number, offset, span.data, span.truncated, span.eol))
            offset += span.size
            continue
        buf, start, end = span
        block = buf[start:end]
        assert block.endswith(b"\n"), block
        for data in block.split(b"\n")[:-1]:
            number += 1
            out.append((number, offset, data, False, True))
            offset += len(data) + 1
    return out


def cut(data: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *sorted(p % (len(data) + 1) for p in points), len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


class PipeLike:
    """A stdin/pipe stand-in: ``read1`` hands out whatever arrived, a few bytes at a time."""

    def __init__(self, data: bytes, step: int):
        self.data, self.step, self.pos = data, step, 0
        self.calls = 0

    def read1(self, size: int = -1) -> bytes:
        self.calls += 1
        n = min(self.step, size if size > 0 else self.step)
        chunk = self.data[self.pos : self.pos + n]
        self.pos += len(chunk)
        return chunk


class ReadOnly:
    """A stream with ``read`` only (no ``read1``)."""

    def __init__(self, data: bytes):
        self._buf = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        return self._buf.read(min(size, 5))


class EndlessLine:
    """Produces one enormous line lazily (never held in memory), then ``\\nnext\\n``."""

    def __init__(self, total: int, chunk: int = 1 << 20):
        self.left, self.chunk, self.tail = total, chunk, b"\nnext\n"

    def read1(self, size: int = -1) -> bytes:
        if self.left > 0:
            n = min(self.chunk, self.left, size if size > 0 else self.chunk)
            self.left -= n
            return b"x" * n
        tail, self.tail = self.tail, b""
        return tail


# — the three kinds of source —


def test_bytes_numbers_offsets_and_final_line_without_newline():
    assert tuples(iter_bytes(SAMPLE)) == SAMPLE_LINES


def test_file_gives_the_same_lines(tmp_path):
    path = tmp_path / "server.log"
    path.write_bytes(SAMPLE)
    assert tuples(iter_file(path)) == SAMPLE_LINES
    assert tuples(iter_file(str(path))) == SAMPLE_LINES


def test_stream_bytesio():
    assert tuples(iter_stream(io.BytesIO(SAMPLE))) == SAMPLE_LINES


@pytest.mark.parametrize("step", [1, 2, 3, 7, 1000])
def test_pipe_like_stream_delivering_small_reads(step):
    pipe = PipeLike(SAMPLE, step)
    assert tuples(iter_stream(pipe)) == SAMPLE_LINES
    assert pipe.calls >= len(SAMPLE) // step  # it really was read piece by piece


def test_stream_without_read1_falls_back_to_read():
    assert tuples(iter_stream(ReadOnly(SAMPLE))) == SAMPLE_LINES


def test_dash_means_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=io.BytesIO(SAMPLE)))
    assert tuples(iter_file("-")) == SAMPLE_LINES


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"", []),
        (b"\n", [(1, 0, b"", False, True)]),
        (b"\n\n", [(1, 0, b"", False, True), (2, 1, b"", False, True)]),
        (b"a\n", [(1, 0, b"a", False, True)]),  # a trailing newline adds no empty line
        (b"a", [(1, 0, b"a", False, False)]),
        (b"a\nb", [(1, 0, b"a", False, True), (2, 2, b"b", False, False)]),
        ("é\n€x".encode(), [(1, 0, "é".encode(), False, True), (2, 3, "€x".encode(), False, False)]),
    ],
)
def test_edge_inputs(data, expected):
    assert tuples(iter_bytes(data)) == expected


def test_offsets_are_exact_byte_positions(tmp_path):
    data = "ascii\n\u00e9t\u00e9 \u20ac\n\r\n\x00\x01\n".encode() + b"\xfe\xfflast"
    path = tmp_path / "mixed.log"
    path.write_bytes(data)
    lines = list(iter_file(path))
    for raw in lines:
        assert data[raw.offset : raw.offset + len(raw.data)] == raw.data
        if raw.eol:
            assert data[raw.offset + len(raw.data) : raw.offset + len(raw.data) + 1] == b"\n"
    assert [r.number for r in lines] == list(range(1, len(lines) + 1))
    assert lines[-1].eol is False and lines[-1].data == b"\xfe\xfflast"


# — the line-length cap —


@pytest.mark.parametrize(
    "data, max_line, expected",
    [
        (b"0123456789\nab\nxyz", 4,
         [(1, 0, b"0123", True, True), (2, 11, b"ab", False, True), (3, 14, b"xyz", False, False)]),
        (b"abcd\nabcde\n", 4, [(1, 0, b"abcd", False, True), (2, 5, b"abcd", True, True)]),  # == cap is kept
        (b"abcdefgh", 3, [(1, 0, b"abc", True, False)]),  # cut and unterminated
        (b"\nabcdefgh\n\n", 2, [(1, 0, b"", False, True), (2, 1, b"ab", True, True), (3, 10, b"", False, True)]),
    ],
)
def test_long_lines_are_kept_truncated_and_flagged(data, max_line, expected):
    assert tuples(iter_bytes(data, max_line=max_line)) == expected
    assert reference_split(data, max_line) == expected


@pytest.mark.parametrize("max_line", [1, 3, 4, 50])
def test_chunking_never_changes_the_result_exhaustive(max_line):
    data = b"0123456789\nab\n\nxyz\r\nlonger line here\ntail-without-newline"
    want = reference_split(data, max_line)
    for size in range(1, len(data) + 1):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert tuples(split_chunks(chunks, max_line)) == want, size
        assert tuples(iter_stream(PipeLike(data, size), max_line)) == want, size
        assert lines_from_spans(iter_spans(chunks, max_line)) == want, size


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    data=st.lists(st.sampled_from([b"\n", b"\r\n", b"\r", b"a", b"bc", b"\xff", b"\x00", "\u20ac".encode(), b"x" * 9]),
                  max_size=60).map(b"".join) | st.binary(max_size=200),
    points=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
    max_line=st.sampled_from([1, 2, 5, 8, 64, MAX_LINE_BYTES]),
)
def test_chunking_never_changes_the_result_property(data, points, max_line):
    want = reference_split(data, max_line)
    assert tuples(split_chunks([data], max_line)) == want
    assert tuples(split_chunks(cut(data, points), max_line)) == want
    assert lines_from_spans(iter_spans(cut(data, points), max_line)) == want


def test_a_real_3_mib_line_against_the_1_mib_default(tmp_path):
    assert MAX_LINE_BYTES == 1 << 20
    big = 3 << 20
    path = tmp_path / "huge.log"
    with open(path, "wb") as fh:
        fh.write(b"head\n")
        fh.write(b"y" * big)
        fh.write(b"\nnext\n")
    lines = list(iter_file(path))
    assert [(r.number, r.offset, r.truncated, r.eol) for r in lines] == [
        (1, 0, False, True), (2, 5, True, True), (3, 5 + big + 1, False, True)]
    assert len(lines[1].data) == MAX_LINE_BYTES and set(lines[1].data) == {ord("y")}
    assert lines[2].data == b"next"
    # and through the whole pipeline: the huge line is flagged on its LogLine
    events = list(parse(path))
    assert [e.number for e in events] == [1, 2, 3]
    assert events[1].line.truncated and not events[0].line.truncated


def test_a_huge_line_is_never_loaded_whole():
    total = 48 << 20  # 48 MiB in one line, produced lazily by the stream
    tracemalloc.start()
    try:
        lines = []
        for raw in iter_stream(EndlessLine(total)):
            lines.append((raw.number, raw.offset, len(raw.data), raw.truncated))
            del raw
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == [(1, 0, MAX_LINE_BYTES, True), (2, total + 1, 4, False)]
    assert peak < 8 << 20, f"peak {peak / 2**20:.1f} MiB for a {total >> 20} MiB line"


def test_the_block_reader_never_loads_a_huge_line_whole():
    total = 48 << 20
    tracemalloc.start()
    try:
        lines = lines_from_spans(iter_spans(read_chunks(EndlessLine(total, chunk=1 << 18))))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(n, o, len(d), t, e) for n, o, d, t, e in lines] == [
        (1, 0, MAX_LINE_BYTES, True, True), (2, total + 1, 4, False, True)]
    assert peak < 8 << 20, f"peak {peak / 2**20:.1f} MiB for a {total >> 20} MiB line"


# — LineSplitter, as used by the follower —


def test_splitter_feed_finish_and_continuation_numbers():
    sp = LineSplitter(max_line=100, first_number=10, offset=1000)
    assert tuples(sp.feed(b"ab")) == []
    assert sp.has_pending
    assert tuples(sp.feed(b"c\nd")) == [(10, 1000, b"abc", False, True)]
    assert tuples(sp.feed(b"e\n")) == [(11, 1004, b"de", False, True)]
    assert not sp.has_pending
    assert tuples(sp.feed(b"tail")) == []
    assert tuples(sp.finish()) == [(12, 1007, b"tail", False, False)]
    assert sp.finish() == []
    assert sp.position == 1011


def test_rawline_defaults():
    raw = RawLine(1, 0, b"x")
    assert raw.truncated is False and raw.eol is True


# — unreadable inputs: SourceError with a one-line message —


def _one_line_error(exc: pytest.ExceptionInfo, *words: str) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and msg.strip() == msg and msg
    for word in words:
        assert word in msg, msg
    return msg


def test_missing_file(tmp_path):
    path = tmp_path / "nope.log"
    with pytest.raises(SourceError) as exc:
        list(iter_file(path))
    _one_line_error(exc, str(path), "no such file")
    with pytest.raises(SourceError):
        list(parse(path))
    with pytest.raises(SourceError):
        list(parse(str(path)))


def test_directory(tmp_path):
    with pytest.raises(SourceError) as exc:
        list(iter_file(tmp_path))
    _one_line_error(exc, str(tmp_path), "directory")
    with pytest.raises(SourceError):
        check_readable(tmp_path)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="running as root: permissions cannot be denied")
def test_permission_denied(tmp_path):
    path = tmp_path / "secret.log"
    path.write_bytes(b"x\n")
    path.chmod(0)
    try:
        with pytest.raises(SourceError) as exc:
            list(iter_file(path))
        _one_line_error(exc, str(path), "permission denied")
    finally:
        path.chmod(0o600)


def test_open_failure_is_a_source_error(tmp_path, monkeypatch):
    """Works as root too: the open itself is made to fail like EACCES would."""
    path = tmp_path / "server.log"
    path.write_bytes(b"x\n")

    def deny(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(sources, "open", deny, raising=False)
    with pytest.raises(SourceError) as exc:
        list(iter_file(path))
    _one_line_error(exc, str(path), "Permission denied")


def test_character_device_is_readable():
    if not os.path.exists("/dev/null"):
        pytest.skip("no /dev/null")
    assert list(iter_file("/dev/null")) == []


def test_a_partial_line_flushed_early_keeps_its_number_when_it_continues():
    """``flush_partial`` (a follower's writer went quiet mid-line): the cut line comes out
    without its newline, and its continuation under the same number; line numbers after it
    are the ones a whole-file read gives."""
    s = LineSplitter()
    assert s.feed(b"one\ntw") == [RawLine(1, 0, b"one")]
    assert s.flush_partial() == [RawLine(2, 4, b"tw", eol=False)]
    assert s.feed(b"o\nthree\n") == [RawLine(2, 6, b"o"), RawLine(3, 8, b"three")]
    assert s.flush_partial() == []
    s.feed(b"four")
    assert s.flush_partial() == [RawLine(4, 14, b"four", eol=False)]
    assert s.feed(b"\n") == []  # only the newline was missing
    assert s.feed(b"five\n") == [RawLine(5, 19, b"five")]


def test_expand_inputs_directories_and_quoted_globs(tmp_path):
    from logforensics._sources import expand_inputs

    for name in ("node1.log", "node0.log", "node0.log.logx.json"):
        (tmp_path / name).write_text("x\n")
    (tmp_path / "sub").mkdir()
    empty = tmp_path / "sub"
    names = [str(tmp_path / "node0.log"), str(tmp_path / "node1.log")]
    assert expand_inputs([str(tmp_path)]) == names  # sorted, sidecar and subdirectory skipped
    assert expand_inputs([str(tmp_path / "node*.log")]) == names
    assert expand_inputs(["-", str(empty), "missing*.log"]) == ["-", str(empty), "missing*.log"]
