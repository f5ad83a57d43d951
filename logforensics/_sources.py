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
from pathlib import Path
from typing import BinaryIO, NamedTuple

from ._errors import SourceError
from ._record import record

CHUNK_BYTES = 1 << 18  # smaller than MAX_LINE_BYTES: see iter_spans
MAX_LINE_BYTES = 1 << 20


class RawLine(NamedTuple):
    """One physical line as bytes (newline dropped), before decoding. ``number`` is 1-based,
    ``offset`` is the byte offset of the line's first byte in the source. (Built per line:
    a tuple is the cheapest to make.)"""

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
        self._continues = False  # the pending bytes continue a line already emitted cut

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
            if self._continues:  # the rest of a line emitted early (``flush_partial``)
                self._continues = False
                if data:
                    out.append(RawLine(self.number, self.line_start, data, truncated))
            else:
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
            self._continues = False
            return []
        if not self._continues:
            self.number += 1
        self._continues = False
        line = RawLine(self.number, self.line_start, bytes(self._pending), self._overflow, False)
        self._pending.clear()
        self._overflow = False
        self.line_start = self.position
        return [line]

    def flush_partial(self) -> list[RawLine]:
        """Emit the pending line without its newline now (``eol`` False), for a follower whose
        writer went quiet mid-line: a crashing process often dies before the newline. Bytes
        that later continue that line come out under the same line number."""
        lines = self.finish()
        self._continues = bool(lines)
        return lines


def split_chunks(chunks: Iterable[bytes], max_line: int = MAX_LINE_BYTES) -> Iterator[RawLine]:
    """Cut an iterable of byte chunks into ``RawLine``s."""
    splitter = LineSplitter(max_line)
    for chunk in chunks:
        if chunk:
            yield from splitter.feed(chunk)
    yield from splitter.finish()


@record(slots=True, eq=False)
class SpecialLine:  # not a tuple: a Span is one
    """A line ``iter_spans`` hands over on its own: cut at the cap (``truncated``) or the
    last line without newline (``eol`` False). ``size`` counts the bytes it really took in the
    source, newline included, so offsets stay exact."""

    data: bytes
    size: int
    truncated: bool
    eol: bool


Span = tuple[bytes, int, int]  # (buf, start, end): buf[start:end] is complete lines


def iter_spans(chunks: Iterable[bytes], max_line: int = MAX_LINE_BYTES) -> Iterator[Span | SpecialLine]:
    """The fast form of ``split_chunks`` for whole-file reading: yields spans ``(buf, start,
    end)`` whose bytes ``buf[start:end]`` are complete lines (each ending in a newline), for the
    consumer to scan in place (a chunk is not copied), and a ``SpecialLine`` for the rare line
    that needs a flag. A line longer than ``max_line`` is never held whole: its first
    ``max_line`` bytes are kept and the rest only counted."""
    pending = b""  # the start of a line that continues in the next chunk
    long_head: bytes | None = None  # first max_line bytes of an overlong line
    long_size = 0  # bytes of that line seen so far
    for chunk in chunks:
        if not chunk:
            continue
        start = 0
        if long_head is not None:
            nl = chunk.find(b"\n")
            if nl < 0:
                long_size += len(chunk)
                continue
            yield SpecialLine(long_head, long_size + nl + 1, True, True)
            long_head = None
            start = nl + 1
        last = chunk.rfind(b"\n", start)
        if last < 0:
            pending += chunk[start:] if start else chunk
        else:
            if pending:  # the line begun in an earlier chunk ends here
                nl = chunk.find(b"\n", start)
                line = pending + chunk[start : nl + 1]
                yield from _spans_with_long_lines(line, 0, len(line), max_line)
                start = nl + 1
            if start <= last:
                yield from _spans_with_long_lines(chunk, start, last + 1, max_line)
            pending = chunk[last + 1 :]
        if len(pending) > max_line:
            long_head, long_size, pending = pending[:max_line], len(pending), b""
    if long_head is not None:
        yield SpecialLine(long_head, long_size, True, False)
    elif pending:
        yield SpecialLine(pending, len(pending), False, False)


def _spans_with_long_lines(buf: bytes, start: int, end: int, max_line: int) -> Iterator[Span | SpecialLine]:
    """Split the complete lines ``buf[start:end]``, which may hold lines longer than the cap,
    into spans of normal lines and ``SpecialLine``s."""
    if end - start <= max_line:  # no line in it can be over the cap
        yield buf, start, end
        return
    while start < end:
        nl = buf.find(b"\n", start, end)
        if nl - start > max_line:
            yield SpecialLine(buf[start : start + max_line], nl - start + 1, True, True)
            start = nl + 1
            continue
        # a run of normal lines up to the next overlong one
        run_end = nl + 1
        while run_end < end:
            nxt = buf.find(b"\n", run_end, end)
            if nxt - run_end > max_line:
                break
            run_end = nxt + 1
        yield buf, start, run_end
        start = run_end


def read_chunks(stream: BinaryIO, size: int = CHUNK_BYTES, limit: int | None = None) -> Iterator[bytes]:
    """Yield chunks from a binary stream until EOF (or ``limit`` bytes). Uses ``read1`` where
    it exists so a pipe's data is delivered as soon as it arrives, not when ``size`` bytes have
    accumulated."""
    read = getattr(stream, "read1", None) or stream.read
    left = limit
    while left is None or left > 0:
        try:
            chunk = read(size if left is None else min(size, left))
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            continue
        if not chunk:
            return
        if left is not None:
            left -= len(chunk)
        yield chunk


def expand_inputs(args: list[str]) -> list[str]:
    """The files named on a command line: a directory stands for the regular files in it
    (sorted, not recursive, ``logx run`` sidecars skipped) and a quoted glob for its matches.
    Anything else is kept as given, for ``check_readable`` to judge. A directory without files
    is kept too, so that it is reported."""
    import glob

    out: list[str] = []
    for arg in args:
        if arg != "-" and os.path.isdir(arg):
            files = sorted(os.path.join(arg, n) for n in os.listdir(arg)
                           if not n.endswith(".logx.json") and os.path.isfile(os.path.join(arg, n)))
            out.extend(files or [arg])
        elif not os.path.exists(arg) and glob.has_magic(arg):
            out.extend(sorted(glob.glob(arg)) or [arg])
        else:
            out.append(arg)
    return out


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
