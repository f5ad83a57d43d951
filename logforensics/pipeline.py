"""Stages 1–4 wired together: raw lines → decoded lines → events (tracebacks included).

``parse()`` is the library's entry point for anything that wants the event stream; the
analysis (runs, findings, report) consumes it in ``analysis.py``.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator
from dataclasses import replace
from itertools import chain, islice
from typing import BinaryIO

from .dialects import DEFAULT, DETECT_LINES, Dialect, detect
from .events import Event, Tokenizer
from .lines import LogLine, decode, visible_text
from .sources import RawLine, iter_bytes, iter_file, iter_stream
from .tracebacks import Traceback, TracebackAssembler

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
    the server whose prefix and event table read the lines."""

    def __init__(self, dialect: Dialect = DEFAULT) -> None:
        self.dialect = dialect
        self.prefix = dialect.prefix
        self.tokenizer = Tokenizer(dialect.rules)
        self.assembler = TracebackAssembler(repeated_prefix=dialect.prefix.repeated)

    def feed(self, raw: RawLine) -> list[Event]:
        line = decode(raw, self.prefix)
        event = self.tokenizer.tokenize(line)
        if event.kind == "request_log":
            # A request log quotes user content (a prompt may quote a traceback): to the
            # traceback assembler it is only the start of a new record.
            consumed, done = self.assembler.feed(replace(line, message=""), event.kind)
        else:
            consumed, done = self.assembler.feed(line, event.kind)
        out = [traceback_event(tb) for tb in done]
        if not consumed:
            out.append(event)
        return out

    def finish(self) -> list[Event]:
        return [traceback_event(tb) for tb in self.assembler.flush()]


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
