"""Stage 1 — sources: turn a file, a stream or bytes into numbered raw lines.

Nothing here ever reads a whole file: lines are cut from fixed-size chunks, and a line longer
than ``MAX_LINE_BYTES`` is kept truncated (and flagged) while the rest of it is skipped, so a
50 MB single line costs no more memory than the cap.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

CHUNK_BYTES = 1 << 18  # smaller than MAX_LINE_BYTES: see iter_blocks
MAX_LINE_BYTES = 1 << 20


class SourceError(Exception):
    """Input that cannot be read at all (missing, a directory, permission denied…).

    The message is one line meant for the user; the CLI prints it and exits with code 2.
    """


@dataclass(slots=True)
class RawLine:
    """One physical line as bytes (newline dropped), before decoding. ``number`` is 1-based,
    ``offset`` is the byte offset of the line's first byte in the source."""

    number: int
    offset: int
    data: bytes
    truncated: bool = False  # cut at the line-length cap
    eol: bool = True  # False for a final line the source ended without a newline


class LineSplitter:
    """Incremental splitter: ``feed(chunk)`` returns the lines completed by that chunk,
    ``finish()`` the last line if it had no newline. Used by every source, including the
    follower, so that chunk boundaries never change the result."""

    def __init__(self, max_line: int = MAX_LINE_BYTES, first_number: int = 1, offset: int = 0):
        self.max_line = max_line
        self.number = first_number - 1
        self.line_start = offset  # absolute offset of the pending line
        self.position = offset  # absolute offset of the next byte to be fed
        self._pending = bytearray()
        self._overflow = False

    def _append(self, piece: bytes) -> None:
        if self._overflow:
            return
        room = self.max_line - len(self._pending)
        if len(piece) > room:
            self._pending += piece[:room]
            self._overflow = True
        else:
            self._pending += piece

    def feed(self, chunk: bytes) -> list[RawLine]:
        out: list[RawLine] = []
        start = 0
        base = self.position
        find = chunk.find
        while True:
            nl = find(b"\n", start)
            if nl < 0:
                if start < len(chunk):
                    self._append(chunk[start:])
                break
            if self._pending or self._overflow:
                self._append(chunk[start:nl])
                data, truncated = bytes(self._pending), self._overflow
                self._pending.clear()
                self._overflow = False
            elif nl - start > self.max_line:
                data, truncated = chunk[start : start + self.max_line], True
            else:
                data, truncated = chunk[start:nl], False
            self.number += 1
            out.append(RawLine(self.number, self.line_start, data, truncated))
            start = nl + 1
            self.line_start = base + start
        self.position = base + len(chunk)
        return out

    @property
    def has_pending(self) -> bool:
        return bool(self._pending) or self._overflow

    def finish(self) -> list[RawLine]:
        """Emit the final line that had no newline (if any)."""
        if not self.has_pending:
            return []
        self.number += 1
        line = RawLine(self.number, self.line_start, bytes(self._pending), self._overflow, False)
        self._pending.clear()
        self._overflow = False
        self.line_start = self.position
        return [line]


def split_chunks(chunks: Iterable[bytes], max_line: int = MAX_LINE_BYTES) -> Iterator[RawLine]:
    """Cut an iterable of byte chunks into ``RawLine``s."""
    splitter = LineSplitter(max_line)
    for chunk in chunks:
        if chunk:
            yield from splitter.feed(chunk)
    yield from splitter.finish()


@dataclass(slots=True)
class SpecialLine:
    """A line ``iter_blocks`` hands over on its own: cut at the cap (``truncated``) or the
    last line without newline (``eol`` False). ``size`` counts the bytes it really took in the
    source, newline included, so offsets stay exact."""

    data: bytes
    size: int
    truncated: bool
    eol: bool


def iter_blocks(chunks: Iterable[bytes], max_line: int = MAX_LINE_BYTES) -> Iterator[bytes | SpecialLine]:
    """The fast form of ``split_chunks`` for whole-file reading: yields blocks of complete
    lines (each ending in a newline) for the consumer to split at C speed, and a
    ``SpecialLine`` for the rare line that needs a flag. A line longer than ``max_line`` is
    never held whole: its first ``max_line`` bytes are kept and the rest only counted."""
    pending = b""
    long_head: bytes | None = None  # first max_line bytes of an overlong line
    long_size = 0  # bytes of that line seen so far
    for chunk in chunks:
        if not chunk:
            continue
        if long_head is not None:
            nl = chunk.find(b"\n")
            if nl < 0:
                long_size += len(chunk)
                continue
            yield SpecialLine(long_head, long_size + nl + 1, True, True)
            long_head = None
            chunk = chunk[nl + 1 :]
        last = chunk.rfind(b"\n")
        if last < 0:
            block, pending = b"", pending + chunk
        else:  # the block is copied once: pending and the chunk's complete lines joined
            block = b"".join((pending, memoryview(chunk)[: last + 1])) if last + 1 < len(chunk) or pending \
                else chunk
            pending = chunk[last + 1 :]
        if block:
            if len(block) > max_line:
                yield from _blocks_with_long_lines(block, max_line)
            else:
                yield block
        if len(pending) > max_line:
            long_head, long_size, pending = pending[:max_line], len(pending), b""
    if long_head is not None:
        yield SpecialLine(long_head, long_size, True, False)
    elif pending:
        yield SpecialLine(pending, len(pending), False, False)


def _blocks_with_long_lines(block: bytes, max_line: int) -> Iterator[bytes | SpecialLine]:
    """Split a block that may hold lines longer than the cap into normal runs and
    ``SpecialLine``s."""
    start = 0
    while start < len(block):
        nl = block.find(b"\n", start)
        if nl - start > max_line:
            yield SpecialLine(block[start : start + max_line], nl - start + 1, True, True)
            start = nl + 1
            continue
        # a run of normal lines up to the next overlong one
        run_end = nl + 1
        while run_end < len(block):
            nxt = block.find(b"\n", run_end)
            if nxt - run_end > max_line:
                break
            run_end = nxt + 1
        yield block[start:run_end]
        start = run_end


def read_chunks(stream: BinaryIO, size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Yield chunks from a binary stream until EOF. Uses ``read1`` where it exists so a pipe's
    data is delivered as soon as it arrives, not when ``size`` bytes have accumulated."""
    read = getattr(stream, "read1", None) or stream.read
    while True:
        try:
            chunk = read(size)
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            continue
        if not chunk:
            return
        yield chunk


def check_readable(path: str | os.PathLike) -> Path:
    """Validate that ``path`` is a readable regular file (or FIFO), raising ``SourceError``
    with a one-line reason otherwise."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise SourceError(f"{p}: no such file") from None
    except PermissionError:
        raise SourceError(f"{p}: permission denied") from None
    except OSError as exc:
        raise SourceError(f"{p}: cannot stat ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise SourceError(f"{p}: is a directory, not a log file")
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode)):
        raise SourceError(f"{p}: not a regular file")
    if not os.access(p, os.R_OK):
        raise SourceError(f"{p}: permission denied")
    return p


def iter_file(path: str | os.PathLike, max_line: int = MAX_LINE_BYTES) -> Iterator[RawLine]:
    """Raw lines of a file, read in chunks. ``-`` means standard input."""
    if str(path) == "-":
        yield from iter_stream(sys.stdin.buffer, max_line)
        return
    p = check_readable(path)
    try:
        fh = open(p, "rb")  # noqa: SIM115 - closed in finally; generator owns it
    except OSError as exc:
        raise SourceError(f"{p}: cannot open ({exc.strerror or exc})") from None
    try:
        try:
            yield from split_chunks(read_chunks(fh), max_line)
        except OSError as exc:
            raise SourceError(f"{p}: read failed ({exc.strerror or exc})") from None
    finally:
        fh.close()


def iter_stream(stream: BinaryIO, max_line: int = MAX_LINE_BYTES) -> Iterator[RawLine]:
    """Raw lines of an open binary stream (a pipe, stdin, a ``BytesIO``)."""
    yield from split_chunks(read_chunks(stream), max_line)


def iter_bytes(data: bytes, max_line: int = MAX_LINE_BYTES) -> Iterator[RawLine]:
    """Raw lines of an in-memory byte string (tests, pasted text)."""
    yield from split_chunks([data], max_line)
