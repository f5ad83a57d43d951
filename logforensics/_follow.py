"""Live sources for ``logx watch``: follow a growing file (``tail -F``) or a pipe.

Both are generators that yield ``RawLine``s as lines complete and a ``Tick`` whenever there is
nothing to read, so the consumer gets control back at least every ``poll`` seconds (to flush
a half-written traceback, poll a process, refresh a live view or enforce a timeout) without
threads and without a busy loop:

    for item in follow_file("server.log"):
        if isinstance(item, RawLine):
            ...            # a complete line (or a final one, see below)
        elif item.kind == "idle":
            ...            # nothing new for one poll interval

``follow_file`` has ``tail -F`` semantics:

* it starts at the beginning of the file (``from_end=True`` skips what is already there and
  starts at the next line boundary; line numbers still count the skipped lines);
* a file that does not exist yet is waited for (``Tick("waiting")`` every poll);
* **truncation** (``copytruncate``: the file shrinks below the read position) restarts at
  offset 0 of the same file (``Tick("truncated")``); as with ``tail -F``, a file truncated and
  rewritten past the read position within one poll interval cannot be told apart by its size;
* **rotation** (the path now names another inode: ``mv log log.1`` and a new ``log``) drains
  what is left in the old file, then opens the new one from its start (``Tick("rotated")``);
  while the path is missing (renamed, not yet recreated) the old file keeps being read.

Line numbers keep counting across truncation and rotation (the watcher sees one stream);
``RawLine.offset`` is the byte offset in the file currently read. A line cut by truncation or
rotation is emitted with ``eol=False``. Memory is bounded by ``LineSplitter``'s line cap: the
file is never read whole. A regular file is polled (every ``poll`` seconds while idle; a
regular file is always "readable" for ``select``); a pipe is waited on with ``select``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Callable, Iterator
from typing import BinaryIO

from ._clock import SYSTEM_CLOCK, Clock
from ._record import record
from ._sources import CHUNK_BYTES, MAX_LINE_BYTES, LineSplitter, RawLine, SourceError

POLL_SECONDS = 0.05
READ_BYTES = 256 * 1024  # per read while following: keeps the consumer responsive
COUNT_LIMIT = 1 << 30  # --from-end counts skipped lines up to this many bytes


@record(frozen=True, slots=True)
class Tick:
    """Control returned to the consumer when no line is ready.

    ``kind`` is one of ``idle`` (nothing new this poll; ``detail`` ``quiet`` when nothing has
    changed for ``partial_after`` seconds, by the clock or the file's mtime, ``still`` when that
    has lasted ``STILL_SECONDS``, ``partial`` while the source holds the start of a line whose
    newline has not come yet), ``waiting`` (the file does not exist
    yet), ``opened`` (the file was opened; ``detail`` says where reading starts),
    ``truncated``, ``rotated`` (``detail`` describes what happened) or ``eof`` (a stream
    ended; the generator returns after it)."""

    kind: str
    detail: str = ""


IDLE = Tick("idle")
QUIET = Tick("idle", "quiet")  # idle, and the writer has been quiet for ``partial_after`` s
# idle in the middle of a line: what is open (a traceback) is not complete until it is flushed
PARTIAL = Tick("idle", "partial")
# quiet for STILL_SECONDS: longer than a loaded machine pauses a writer between two lines
STILL_SECONDS = 2.0
STILL = Tick("idle", "still")
WAITING = Tick("waiting")
FollowItem = RawLine | Tick


def _idle_tick(quiet: bool, silent: float, pending: bool) -> Tick:
    """The tick for a poll that read nothing: how long the writer has been silent decides."""
    if quiet:
        return STILL if silent >= STILL_SECONDS else QUIET
    return PARTIAL if pending else IDLE


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _open_regular(path: str) -> tuple[int, os.stat_result] | None:
    """Open ``path`` read-only; None if it does not exist (yet). SourceError for anything
    that can never become a followable file. Non-blocking: opening a FIFO with no writer
    would otherwise block until one comes (and no timeout could end the wait); its reads
    are waited on with ``select``, which stays quiet until a writer writes or leaves."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise SourceError(f"{path}: is a directory, not a log file") from None
    except PermissionError:
        raise SourceError(f"{path}: permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise SourceError(f"{path}: cannot open ({exc.strerror or exc})") from None
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        os.close(fd)
        raise SourceError(f"{path}: is a directory, not a log file")
    return fd, st


def _count_lines(fd: int, end: int) -> int | None:
    """Newlines in the first ``end`` bytes, read in chunks (None when too big to count)."""
    if end > COUNT_LIMIT:
        return None
    count, pos = 0, 0
    while pos < end:
        chunk = os.pread(fd, min(CHUNK_BYTES, end - pos), pos)
        if not chunk:
            break
        count += chunk.count(b"\n")
        pos += len(chunk)
    return count


def _start_at(fd: int, pos: int, lines_before: Callable[[], int] | None = None) -> tuple[int, int, bool]:
    """Where reading starts when history is skipped: ``(position, lines_before,
    skip_first_fragment)``. When ``pos`` is not at a line boundary (the writer is mid-line),
    that line's tail is dropped so the first line yielded is a whole one. ``lines_before``:
    the lines before ``pos`` when the caller has counted them (not read again)."""
    if pos <= 0:
        return 0, 0, False
    last = os.pread(fd, 1, pos - 1)
    counted = lines_before() if lines_before is not None else _count_lines(fd, pos)
    return pos, counted if counted is not None else 0, last != b"\n"


def follow_file(path: str | os.PathLike, *, from_end: bool = False, start_offset: int = 0,
                poll: float = POLL_SECONDS, max_line: int = MAX_LINE_BYTES,
                partial_after: float | None = None, clock: Clock = SYSTEM_CLOCK,
                lines_before: Callable[[], int] | None = None) -> Iterator[FollowItem]:
    """Follow ``path`` forever (``tail -F``); see the module docstring. ``start_offset``
    starts the first file at that byte (e.g. where a ``logx run --append`` run began; ignored
    when beyond the file's end), ``from_end`` at its end; ``lines_before``, asked when the
    follower starts, gives the lines before ``start_offset`` when the caller has read them (a
    watch's back-log), else they are counted. ``partial_after``: a last line
    without newline is yielded (``eol=False``) once the file has not changed for that many
    seconds (its mtime counts, so a file written long ago gives it at once); its continuation,
    if the writer resumes, keeps its line number. Raises ``SourceError`` if the path is a
    directory or unreadable. ``clock``: what it sleeps and measures silence by. Close the
    generator to stop."""
    name = os.fspath(path)
    opened = _open_regular(name)
    while opened is None:
        yield WAITING
        clock.sleep(poll)
        opened = _open_regular(name)
    fd, st = opened
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
        # A named pipe or a device: no size, no rotation: read it like a stream.
        try:
            yield Tick("opened", "stream")
            yield from _follow_fd(fd, poll, max_line, partial_after, clock)
        finally:
            os.close(fd)
        return
    try:
        ident = _identity(st)
        skip_fragment = False
        pos, before = 0, 0
        if from_end or 0 < start_offset <= st.st_size:
            pos, before, skip_fragment = _start_at(fd, st.st_size if from_end else start_offset,
                                                   None if from_end else lines_before)
        splitter = LineSplitter(max_line, first_number=before + 1, offset=pos)
        yield Tick("opened", f"offset {pos}" if pos else "start")
        data_at = clock.monotonic()  # when bytes last arrived

        def fresh(number: int) -> LineSplitter:
            return LineSplitter(max_line, first_number=number + 1, offset=0)

        while True:
            try:
                chunk = os.pread(fd, READ_BYTES, pos)
            except OSError as exc:
                raise SourceError(f"{name}: read failed ({exc.strerror or exc})") from None
            if chunk:
                pos += len(chunk)
                data_at = clock.monotonic()
                if skip_fragment:
                    nl = chunk.find(b"\n")
                    if nl < 0:
                        continue
                    skip_fragment = False
                    splitter = LineSplitter(max_line, first_number=before + 2,
                                            offset=pos - len(chunk) + nl + 1)
                    chunk = chunk[nl + 1 :]
                yield from splitter.feed(chunk)
                continue
            # End of what is there: has the file been truncated or replaced?
            try:
                now = os.stat(name)
            except FileNotFoundError:
                now = None  # renamed away, not recreated yet: keep the old file
            except OSError:
                now = None
            if now is not None and _identity(now) != ident:
                reopened = _open_regular(name)
                if reopened is None:
                    yield IDLE
                    clock.sleep(poll)
                    continue
                # Drain the old file: the writer may have written more before switching.
                while True:
                    chunk = os.pread(fd, READ_BYTES, pos)
                    if not chunk:
                        break
                    pos += len(chunk)
                    if not skip_fragment:
                        yield from splitter.feed(chunk)
                yield from splitter.finish()
                os.close(fd)
                fd, st = reopened
                ident, pos, skip_fragment = _identity(st), 0, False
                splitter = fresh(splitter.number)
                yield Tick("rotated", f"{name} was replaced (new file); reading it from the start")
                continue
            st = os.fstat(fd)
            size = st.st_size
            if size < pos:
                yield from splitter.finish()
                splitter = fresh(splitter.number)
                pos, skip_fragment = 0, False
                yield Tick("truncated", f"{name} was truncated; reading it from the start")
                continue
            silent = max(clock.monotonic() - data_at, clock.time() - st.st_mtime) \
                if partial_after is not None else 0.0
            quiet = partial_after is not None and silent >= partial_after
            if quiet and splitter.has_pending and not skip_fragment:
                yield from splitter.flush_partial()
            yield _idle_tick(quiet, silent, splitter.has_pending and not skip_fragment)
            clock.sleep(poll)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def _follow_fd(fd: int, poll: float, max_line: int,
               partial_after: float | None = None, clock: Clock = SYSTEM_CLOCK) -> Iterator[FollowItem]:
    splitter = LineSplitter(max_line)
    data_at = clock.monotonic()
    while True:
        try:
            ready = clock.wait_readable(fd, poll)
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            continue
        if not ready:
            silent = clock.monotonic() - data_at
            quiet = partial_after is not None and silent >= partial_after
            if quiet and splitter.has_pending:
                yield from splitter.flush_partial()
            yield _idle_tick(quiet, silent, splitter.has_pending)
            continue
        try:
            chunk = os.read(fd, READ_BYTES)
        except BlockingIOError:
            yield IDLE
            continue
        except OSError as exc:
            raise SourceError(f"read failed ({exc.strerror or exc})") from None
        if not chunk:
            yield from splitter.finish()
            yield Tick("eof")
            return
        data_at = clock.monotonic()
        yield from splitter.feed(chunk)


def follow_stream(stream: BinaryIO | int | None = None, *, poll: float = POLL_SECONDS,
                  max_line: int = MAX_LINE_BYTES,
                  partial_after: float | None = None, clock: Clock = SYSTEM_CLOCK) -> Iterator[FollowItem]:
    """Follow a pipe (default: standard input) until EOF, which may never come. Lines are
    yielded as soon as their newline arrives; ``Tick("idle")`` every ``poll`` seconds of
    silence; ``Tick("eof")`` last, then the generator returns. A final line without a
    newline is yielded (``eol=False``) before the EOF tick, and with ``partial_after`` as
    soon as the pipe has been quiet that long (as ``follow_file``)."""
    if stream is None:
        stream = sys.stdin.buffer
    fd = stream if isinstance(stream, int) else stream.fileno()
    yield Tick("opened", "stream")
    yield from _follow_fd(fd, poll, max_line, partial_after, clock)
