"""follow.py against real files and pipes written by a separate writer process: appends with
pauses, lines split across writes, copytruncate, rename + recreate, a file that appears late,
--from-end, and a pipe that ends with a line without newline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import WRITER

from logforensics._follow import IDLE, PARTIAL, QUIET, STILL, Tick, follow_file, follow_stream
from logforensics._sources import RawLine, SourceError


@pytest.fixture
def writer(popen):
    """Start the scripted ``WRITER`` on ``path`` (``-``: its stdout) with ``steps``."""

    def start(path, steps, **kw) -> subprocess.Popen:
        kw.setdefault("stderr", subprocess.DEVNULL)  # the writer reports its write times there
        return popen([sys.executable, "-c", WRITER, str(path), json.dumps(steps)], **kw)

    return start


def collect(gen, done, timeout: float = 4.0):
    """Pull from a follower until ``done(lines, ticks)`` or the deadline; always closes it."""
    lines: list[RawLine] = []
    ticks: list[Tick] = []
    deadline = time.monotonic() + timeout
    try:
        for item in gen:
            if isinstance(item, RawLine):
                lines.append(item)
            else:
                ticks.append(item)
            if done(lines, ticks) or time.monotonic() > deadline:
                break
    finally:
        gen.close()
    return lines, ticks


def texts(lines: list[RawLine]) -> list[str]:
    return [raw.data.decode() for raw in lines]


def want(n: int):
    return lambda lines, ticks: len(lines) >= n


def test_appended_lines_arrive_in_order_with_idle_ticks(tmp_path, writer):
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    steps = []
    for i in range(1, 6):
        steps += [["w", f"line {i}\n"], ["sleep", 0.08]]
    writer(log, steps)
    lines, ticks = collect(follow_file(log, poll=0.02), want(5))
    assert texts(lines) == [f"line {i}" for i in range(1, 6)]
    assert [raw.number for raw in lines] == [1, 2, 3, 4, 5]
    assert lines[1].offset == len(b"line 1\n")
    assert IDLE in ticks  # the pauses gave control back instead of blocking


def test_a_line_written_in_pieces_is_one_line(tmp_path, writer):
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    writer(log, [["w", "[2026-03-23 14:01:38] Load weight "], ["sleep", 0.2],
                 ["w", "begin. avail mem=78.00 GB\nnext\n"]])
    lines, _ = collect(follow_file(log, poll=0.02), want(2))
    assert texts(lines) == ["[2026-03-23 14:01:38] Load weight begin. avail mem=78.00 GB", "next"]
    assert all(raw.eol for raw in lines)


def test_waits_for_a_file_that_does_not_exist_yet(tmp_path, writer):
    log = tmp_path / "later.log"
    writer(log, [["sleep", 0.3], ["w", "first\nsecond\n"]])  # "ab" creates the file late
    lines, ticks = collect(follow_file(log, poll=0.02), want(2))
    assert texts(lines) == ["first", "second"]
    assert Tick("waiting") in ticks
    assert ticks.index(Tick("waiting")) < len(ticks)


def test_copytruncate_restarts_at_the_beginning(tmp_path, writer):
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    old = [f"old line {i} {'x' * 40}\n" for i in range(1, 5)]
    writer(log, [["w", "".join(old)], ["sleep", 0.3], ["truncate"], ["sleep", 0.3],
                 ["w", "new 1\n"], ["sleep", 0.05], ["w", "new 2\n"]])
    lines, ticks = collect(follow_file(log, poll=0.02), want(6))
    assert texts(lines) == [t.rstrip("\n") for t in old] + ["new 1", "new 2"]
    assert [raw.number for raw in lines] == [1, 2, 3, 4, 5, 6]  # one stream of lines
    assert lines[4].offset == 0 and lines[5].offset == len(b"new 1\n")
    assert any(t.kind == "truncated" for t in ticks)


def test_rotation_drains_the_old_file_then_follows_the_new_one(tmp_path, writer):
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    writer(log, [["w", "a1\n"], ["sleep", 0.2], ["w", "a2\na3\n"], ["rotate"],
                 ["w", "b1\n"], ["sleep", 0.1], ["w", "b2\n"]])
    lines, ticks = collect(follow_file(log, poll=0.02), want(5))
    assert texts(lines) == ["a1", "a2", "a3", "b1", "b2"]
    assert [raw.number for raw in lines] == [1, 2, 3, 4, 5]
    assert lines[3].offset == 0
    assert any(t.kind == "rotated" for t in ticks)
    assert (tmp_path / "server.log.1").read_text() == "a1\na2\na3\n"


def test_rotation_with_a_gap_before_the_new_file_appears(tmp_path, writer):
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    writer(log, [["w", "a1\n"], ["sleep", 0.15], ["rotate_gap", 0.3], ["w", "b1\n"]])
    lines, ticks = collect(follow_file(log, poll=0.02), want(2))
    assert texts(lines) == ["a1", "b1"]
    assert any(t.kind == "rotated" for t in ticks)


def test_from_end_skips_history_and_keeps_line_numbers(tmp_path, writer):
    log = tmp_path / "server.log"
    log.write_bytes(b"old 1\nold 2\nold 3 half written")  # the writer is mid-line
    writer(log, [["sleep", 0.2], ["w", " and finished\nnew 1\n"]])
    lines, _ = collect(follow_file(log, from_end=True, poll=0.02), want(1))
    assert texts(lines) == ["new 1"]
    assert lines[0].number == 4  # old 1..3 counted, not shown
    assert lines[0].offset == len(b"old 1\nold 2\nold 3 half written and finished\n")


def test_start_offset_begins_at_a_later_run(tmp_path):
    log = tmp_path / "server.log"
    first = b"run 1 a\nrun 1 b\n"
    log.write_bytes(first + b"run 2 a\n")
    lines, _ = collect(follow_file(log, start_offset=len(first), poll=0.02), want(1))
    assert texts(lines) == ["run 2 a"] and lines[0].number == 3


def test_lines_the_caller_has_read_are_not_counted_again(tmp_path):
    """A watch's back-log, read with the block scan, gives its line count: the follower
    numbers on from it (asked when it starts) instead of reading the file again."""
    log = tmp_path / "server.log"
    first = b"run 1 a\nrun 1 b\n"
    log.write_bytes(first + b"run 2 a\n")
    asked = []
    lines, _ = collect(follow_file(log, start_offset=len(first), poll=0.02,
                                   lines_before=lambda: asked.append(1) or 41), want(1))
    assert texts(lines) == ["run 2 a"] and lines[0].number == 42 and asked == [1]


def test_long_lines_are_capped_not_buffered_whole(tmp_path, writer):
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    writer(log, [["w", "y" * 5000], ["sleep", 0.1], ["w", "y" * 5000 + "\nshort\n"]])
    lines, _ = collect(follow_file(log, poll=0.02, max_line=1000), want(2))
    assert lines[0].truncated and len(lines[0].data) == 1000
    assert texts(lines[1:]) == ["short"]


def test_directory_is_a_source_error(tmp_path):
    with pytest.raises(SourceError, match="directory"):
        next(follow_file(tmp_path))


def test_pipe_lines_arrive_live_then_eof(writer):
    p = writer("-", [["w", "one\n"], ["sleep", 0.3], ["w", "two\nthree without newline"]],
               stdout=subprocess.PIPE)
    items = list(follow_stream(p.stdout, poll=0.02))
    lines = [item for item in items if isinstance(item, RawLine)]
    assert texts(lines) == ["one", "two", "three without newline"]
    assert lines[-1].eol is False and lines[0].eol is True
    between = items[items.index(lines[0]) + 1 : items.index(lines[1])]
    assert IDLE in between  # "one" came during the writer's pause, not held back until EOF
    assert items[-1] == Tick("eof")


def test_pipe_that_stays_open_keeps_ticking(writer):
    p = writer("-", [["w", "only line\n"], ["sleep", 30]], stdout=subprocess.PIPE)
    lines, ticks = collect(follow_stream(p.stdout, poll=0.02),
                           lambda ls, ts: bool(ls) and ts.count(IDLE) >= 5, timeout=3)
    assert texts(lines) == ["only line"]
    assert ticks.count(IDLE) >= 5 and Tick("eof") not in ticks


def test_fifo_path_is_read_as_a_stream(tmp_path, writer):
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    writer(fifo, [["w", "via fifo\n"]])
    lines, ticks = collect(follow_file(fifo, poll=0.02), lambda ls, ts: Tick("eof") in ts)
    assert texts(lines) == ["via fifo"]


def test_a_line_still_arriving_is_partial_until_the_writer_is_quiet(tmp_path):
    """While the start of a line waits for its newline the idle ticks say ``partial`` (what is
    open, a traceback, is not whole yet); once the writer is quiet the line is flushed."""
    log = tmp_path / "server.log"
    log.write_bytes(b"whole\nhalf a li")
    lines, ticks = collect(follow_file(log, poll=0.01, partial_after=60),
                           lambda ls, ts: ts.count(PARTIAL) >= 3)
    assert texts(lines) == ["whole"] and ticks.count(PARTIAL) >= 3 and IDLE not in ticks


def test_a_file_last_written_long_ago_is_still_at_once(tmp_path):
    """Quiet by the file's mtime: an old file's last line is flushed at the first poll, and the
    tick says ``still`` (a live writer pausing under load is ``quiet`` first)."""
    log = tmp_path / "server.log"
    log.write_bytes(b"whole\nlast line without newline")
    old = time.time() - 600
    os.utime(log, (old, old))
    lines, ticks = collect(follow_file(log, poll=0.01, partial_after=0.5),
                           lambda ls, ts: STILL in ts)
    assert texts(lines) == ["whole", "last line without newline"] and lines[-1].eol is False
    assert STILL in ticks and QUIET not in ticks and PARTIAL not in ticks
