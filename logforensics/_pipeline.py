"""Stages 1–4 wired together: raw lines → decoded lines → events (tracebacks included).

``parse()`` is the library's entry point for anything that wants the event stream; the
analysis (runs, findings, report) consumes it in ``analysis.py``.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from typing import BinaryIO

from ._dialects import DEFAULT, DETECT_LINES, DIALECTS, Dialect, detect
from ._events import Event, Tokenizer
from ._lines import GrepNumbers, LogLine, PasteWidth, decode, visible_text
from ._sources import RawLine, iter_bytes, iter_file, iter_stream
from ._tracebacks import Traceback, TracebackAssembler

Source = str | os.PathLike | bytes | BinaryIO | Iterable[RawLine]


def traceback_event(tb: Traceback) -> Event:
    """Wrap a completed traceback as an event anchored at its first line."""
    first = tb.lines[0][1] if tb.lines else ""
    line = LogLine(tb.first_line, -1, first, first, ts=tb.ts, tag=tb.tag, wrapper=tb.wrapper)
    return Event("traceback", line, {}, tb)


class EventStream:
    """Incremental parser: ``feed(raw)`` returns the events that line produced (the line's
    own event unless a traceback took it, plus any traceback it completed); ``finish()``
    flushes tracebacks still open. Used by ``parse`` and by the live follower. ``dialect``:
    the server whose prefix and event table read the lines. A first line that may be grep's
    line N or srun's task N ("3: x", ``GrepNumbers.undecided``) is held until the next line
    decides: its events come with that line's.

    A mixed file (a shared journal, a framework that starts both servers) keeps each line's
    dialect: once a line shows another server's marker (``Dialect.markers``), a line that
    lacks ``dialect``'s prefix but carries that server's is read by that server's prefix and
    event table, and a line with no server prefix (a traceback's, a progress bar's) by the
    dialect of the last prefixed line of its process. Such events carry their dialect's name
    in ``Event.dialect``; the others leave it ``None`` (``dialect``)."""

    def __init__(self, dialect: Dialect = DEFAULT) -> None:
        self.dialect = dialect
        self.prefix = dialect.prefix
        self.tokenizer = Tokenizer(dialect.rules)
        self.assembler = TracebackAssembler(repeated_prefix=dialect.prefix.repeated)
        self._others = tuple(d for d in DIALECTS.values() if d is not dialect)
        self._present: list[Dialect] = []  # other servers whose marker a line showed
        self._tokenizers: dict[str, Tokenizer] = {dialect.name: self.tokenizer}
        self._wrapper_dialect: dict[str, Dialect] = {}  # process -> dialect of its last prefixed line
        self._stream_dialect: dict[str, Dialect] = {}  # traceback stream -> its dialect
        self._width = PasteWidth()
        self.grep = GrepNumbers()
        self._held: RawLine | None = None  # a first line grep's or srun's, until the next decides

    @property
    def mixed(self) -> int:
        """How many other servers have shown their marker so far: until one has, every line
        is this server's."""
        return len(self._present)

    def certain_alone(self, line: LogLine) -> bool:
        """Whether ``line`` (``read_alone``) is this server's whatever was read before it: it
        has this server's prefix, or no other server has shown up and it shows none's marker
        (a line that does makes that server present)."""
        return line.ts is not None or not (self._present or any(
            rx.search(line.text) for other in self._others for rx in other.markers))

    def read_alone(self, data: bytes) -> LogLine:
        """``data`` decoded as this stream would decode it, without it counting as read (a
        template of the statistics fast path)."""
        return decode(RawLine(1, 0, data), self.prefix, self.grep, alone=True)

    def feed(self, raw: RawLine) -> list[Event]:
        if self.grep.on is None:
            held = self._held
            if held is not None:  # the line that decides whether the held one is grep's
                self._held = None
                self.grep.settle(visible_text(held.data), visible_text(raw.data))
                return self._feed(held) + self._feed(raw)
            if self.grep.undecided(visible_text(raw.data)):
                self._held = raw
                return []
        return self._feed(raw)

    def _feed(self, raw: RawLine) -> list[Event]:
        line = decode(raw, self.prefix, self.grep)
        if self._width.at_width(line.text):
            line.at_width = True
        dialect = self.dialect
        if line.ts is None:
            if self._others:
                dialect, line = self._own_dialect(raw, line)
        elif self._present:
            self._wrapper_dialect[line.wrapper] = dialect
        tokenizer = self.tokenizer if dialect is self.dialect else self._tokenizers[dialect.name]
        event = tokenizer.tokenize(line)
        if dialect is not self.dialect:
            event.dialect = dialect.name
        repeated = dialect.prefix.repeated
        if event.kind == "request_log":
            # A request log quotes user content (a prompt may quote a traceback): to the
            # traceback assembler it is only the start of a new record.
            consumed, done = self.assembler.feed(line.without_message(), event.kind, repeated)
        else:
            consumed, done = self.assembler.feed(line, event.kind, repeated)
        if self._present:
            self._stream_dialect[line.stream] = dialect
        out = [self._traceback_event(tb) for tb in done]
        if not consumed:
            out.append(event)
        return out

    def _own_dialect(self, raw: RawLine, line: LogLine) -> tuple[Dialect, LogLine]:
        """The dialect of a line without this log's server prefix, and the line as it reads it."""
        for other in self._others:
            if other not in self._present and any(rx.search(line.text) for rx in other.markers):
                self._present.append(other)
                self._tokenizers[other.name] = Tokenizer(other.rules)
        if not self._present:
            return self.dialect, line
        msg = line.message
        for other in self._present:
            if msg[:1] in other.prefix.first and other.prefix.pattern.match(msg):
                own = decode(raw, other.prefix, self.grep, alone=True)
                self._wrapper_dialect[own.wrapper] = other
                return other, own
        return self._wrapper_dialect.get(line.wrapper, self.dialect), line

    def _traceback_event(self, tb: Traceback) -> Event:
        event = traceback_event(tb)
        dialect = self._stream_dialect.get(tb.stream)
        if dialect is not None and dialect is not self.dialect:
            event.dialect = dialect.name
        return event

    def cut_width(self) -> int:
        """The width the input turned out to be cut at (``PasteWidth.final``; 0: none)."""
        return self._width.final()

    def finish(self) -> list[Event]:
        held, self._held = self._held, None
        out = self._feed(held) if held is not None else []
        return out + [self._traceback_event(tb) for tb in self.assembler.flush()]


def raw_lines(source: Source) -> Iterator[RawLine]:
    """Raw lines of any supported source: a path (``-`` for stdin), bytes, a binary stream,
    or an iterable of ``RawLine`` already cut."""
    if isinstance(source, bytes | bytearray):
        return iter_bytes(bytes(source))
    if isinstance(source, str | os.PathLike):
        return iter_file(source)
    if isinstance(source, io.IOBase) or hasattr(source, "read"):
        return iter_stream(source)  # type: ignore[arg-type]
    return iter(source)


def parse(source: Source, dialect: Dialect | None = None) -> Iterator[Event]:
    """Yield the events of a log: one per line that is not part of a traceback (kind
    ``"line"`` when no rule knows it) and one ``"traceback"`` event per traceback, emitted
    when the traceback is complete. ``dialect``: the server's (default: detected from the
    first lines). Never raises on content; ``SourceError`` for a path that cannot be read."""
    lines = raw_lines(source)
    if dialect is None:
        head = list(islice(lines, DETECT_LINES))
        dialect = detect(visible_text(raw.data) for raw in head).dialect
        lines = chain(head, lines)
    stream = EventStream(dialect)
    for raw in lines:
        yield from stream.feed(raw)
    yield from stream.finish()
