"""The analysis: stream a log through every stage and build a ``Report``.

``Analyzer`` is incremental (``feed`` raw lines, ``report()`` at any time) so the same code
serves ``logx explain`` (a whole file) and ``logx watch`` (a growing one). ``explain()`` is the
one-call library entry point.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

from . import _serving_findings, _staleness
from ._catalog import Catalog, load_catalog
from ._dialects import DEFAULT, DETECT_LINES, Detection, Dialect, detect, given
from ._dialects.base import StatsMarks
from ._errors import RunNotFoundError, SourceError
from ._events import Event
from ._findings import Finding, Matcher, rank
from ._lines import decode, visible_text
from ._memory import memory_facts
from ._pipeline import EventStream, Source
from ._report import Report
from ._runs import PHASE_RANK, Run, RunTracker
from ._serving import layout, point
from ._sources import RawLine, SpecialLine, check_readable, iter_spans, read_chunks
from ._tracebacks import TracebackAssembler

ScanTemplates: type[_scan.Templates] | None
try:
    from . import _scan
    ScanTemplates = _scan.Templates
except ImportError:  # not built (no C compiler at install): the same scan runs in Python
    ScanTemplates = None


def run_facts(run: Run) -> dict[str, Any]:
    """Values for the catalog's ``{placeholders}``."""
    facts: dict[str, Any] = {k: v for k, v in run.args.items()
                             if isinstance(v, str | int | float | bool)}
    facts.update({
        "model": run.model or run.model_class,
        "server": run.dialect.label,
        "launch_example": run.dialect.launch_example,
        "server_version": run.server_version,
        "sglang_version": run.sglang_version,
        **run.flag_names(),
    })
    # the memory ledger's numbers and arithmetic ({kv_room_arithmetic}, {oom_requested_gib}, …)
    facts.update({k: v for k, v in memory_facts(run).items() if k not in facts})
    if run.dialect.memory_facts is not None:  # the dialect's own ({kv_room_arithmetic}, {vllm_kv_fix}, …)
        facts.update(run.dialect.memory_facts(run, facts))
    return facts


# fast-path line categories (``Analyzer.consume``); OTHER takes the full path
OTHER, DECODE, PREFILL, ACCESS, REQUEST, BLANK = 0, 1, 2, 3, 4, 5
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_ZEROS = repeat(OTHER)
TEMPLATE_MAX_BYTES = 1024  # longer lines are never statistics lines: full path, not learned
DETECT_BYTES = 1 << 16  # the dialect is detected from the first lines in this many bytes
TEMPLATE_MAX_COUNT = 20_000  # bound on the learned templates (memory stays flat)


def template_category(stream: EventStream, data: bytes) -> tuple[int, int]:
    """What the full path (``stream``'s prefix and rules) makes of ``data`` alone (no
    traceback open): ``(category, status)``. A fast-path category only for a line that
    becomes exactly one batch or access event and leaves no traceback open."""
    line = decode(RawLine(1, 0, data), stream.prefix)
    event = stream.tokenizer.tokenize(line)
    assembler = TracebackAssembler()
    consumed, done = assembler.feed(line, event.kind)
    if consumed or done or assembler.has_open:
        return OTHER, 0
    kind = event.kind
    if kind == "decode_batch":
        return DECODE, 0
    if kind == "prefill_batch":
        return PREFILL, 0
    if kind == "access_log":
        status = event.fields.get("status")
        return ACCESS, status if isinstance(status, int) else 0
    if kind == "request_log":
        return REQUEST, 0
    return OTHER, 0


def learn_template(stream: EventStream, data: bytes, template: bytes) -> int:
    """The fast-path category of every line whose digits-as-zeros form is ``template``.

    The full path treats every digit alike (``\\d``, never a literal digit: the rules' regexes
    are checked for that in the tests), so a line and its template get the same event kind.
    Both are run through the full path and must agree. An access line's template must end in
    the dialect's ``ok_end`` (``HTTP/x.x" 000 OK``) with one ``protocol`` (``HTTP/``) in it, so
    that its status is the one at its end: ``consume`` then checks, by counting ``" 200 OK\\n``
    at C speed, that every access line of a stretch is a 200 (other statuses take the full
    path)."""
    if len(data) > TEMPLATE_MAX_BYTES:
        return OTHER
    cat, _ = template_category(stream, template)
    if cat == OTHER or template_category(stream, data)[0] != cat:
        return OTHER
    stats = stream.dialect.stats
    ok_end = template.endswith(stats.ok_end.translate(_DIGITS))
    if cat == ACCESS:
        return ACCESS if ok_end and template.count(stats.protocol) == 1 else OTHER
    return OTHER if ok_end else cat


def _demote_non_200(block: bytes, tl: list, cats: list, a: int, b: int, pos: int, ok_end: bytes) -> None:
    """Send the access lines of lines ``a``..``b-1`` that do not end in ``ok_end`` (a 200,
    newline included) down the full path."""
    for j in range(a, b):
        size = len(tl[j])
        if cats[j] == ACCESS and not block.startswith(ok_end, pos + size - len(ok_end) + 1):
            cats[j] = OTHER
        pos += size + 1


StretchItem = tuple[int, int, bytes, int]  # a fast-path line: (number, offset, data, category)


class BulkStretch:
    """A stretch of statistics lines seen on the fast path: counts, and the lines that
    represent it (its first line, the first and last prefill and decode lines, the last
    access and request-log lines). Items are ``(number, offset, data, category)``. ``stats``:
    the dialect's marks of its statistics lines."""

    __slots__ = ("count", "batches", "requests", "first", "first_prefill", "last_prefill",
                 "first_decode", "last_decode", "last_access", "last_request", "last_number",
                 "stats", "ok_end")
    first: StretchItem | None
    first_prefill: StretchItem | None
    last_prefill: StretchItem | None
    first_decode: StretchItem | None
    last_decode: StretchItem | None
    last_access: StretchItem | None
    last_request: StretchItem | None

    def __init__(self, stats: StatsMarks) -> None:
        self.stats = stats
        self.ok_end = stats.ok_end + b"\n"
        self.reset()

    def reset(self) -> None:
        self.count = self.batches = self.requests = self.last_number = 0
        self.first = self.first_prefill = self.last_prefill = None
        self.first_decode = self.last_decode = self.last_access = self.last_request = None

    def add_request(self, number: int, offset: int, data: bytes) -> None:
        """One request-log line (``Receive: obj=…``): only extends the stretch."""
        self.count += 1
        self.last_number = number
        item = (number, offset, data, REQUEST)
        if self.first is None:
            self.first = item
        self.last_request = item

    def add(self, number: int, offset: int, data: bytes) -> None:
        """One line (``logx watch``'s per-line fast path: a byte test decides)."""
        self.count += 1
        self.last_number = number
        if not data:  # a blank line only extends the run
            return
        if self.stats.decode in data:
            cat = DECODE
        elif self.stats.prefill in data:
            cat = PREFILL
        else:
            cat = ACCESS
        item = (number, offset, data, cat)
        if self.first is None:
            self.first = item
        if cat == DECODE:
            self.batches += 1
            self.last_decode = item
            if self.first_decode is None:
                self.first_decode = item
        elif cat == PREFILL:
            self.batches += 1
            self.last_prefill = item
            if self.first_prefill is None:
                self.first_prefill = item
        else:
            self.requests += 1
            self.last_access = item

    def add_segment(self, block: bytes, tl: list, cats: list, a: int, b: int, start: int, end: int,
                    number: int, offset: int) -> bool:
        """Lines ``a``..``b-1`` of ``block`` (bytes ``start``..``end``), all of a fast-path
        category; ``tl`` holds their templates (same lengths as the lines). ``number`` and
        ``offset`` are those of the block's line 0. Returns False, changing nothing, when an
        access line among them is not a 200 (the caller then sends it down the full path)."""
        seg = cats[a:b]
        n_access = seg.count(ACCESS)
        if n_access and block.count(self.ok_end, start, end) != n_access:
            return False
        n_decode, n_prefill, n_request = seg.count(DECODE), seg.count(PREFILL), seg.count(REQUEST)
        self.count += b - a
        self.last_number = number + b
        if not (n_decode or n_prefill or n_access or n_request):
            return True  # blank lines only
        self.batches += n_decode + n_prefill
        self.requests += n_access

        def item(k: int, cat: int) -> StretchItem:
            j = a + k
            size = len(tl[j])
            # from the nearer end of the segment: firsts sit near its start, lasts near its end
            near_start = k < (b - a) // 2
            pos = start + sum(map(len, tl[a:j])) + k if near_start else end - sum(map(len, tl[j:b])) - (b - j)
            return (number + j + 1, offset + pos, block[pos : pos + size], cat)

        rev = seg[::-1]
        last = len(seg) - 1
        if self.first is None:
            k = min(seg.index(c) for c, n in ((DECODE, n_decode), (PREFILL, n_prefill),
                                                (ACCESS, n_access), (REQUEST, n_request)) if n)
            self.first = item(k, seg[k])
        if n_decode:
            if self.first_decode is None:
                self.first_decode = item(seg.index(DECODE), DECODE)
            self.last_decode = item(last - rev.index(DECODE), DECODE)
        if n_prefill:
            if self.first_prefill is None:
                self.first_prefill = item(seg.index(PREFILL), PREFILL)
            self.last_prefill = item(last - rev.index(PREFILL), PREFILL)
        if n_access:
            self.last_access = item(last - rev.index(ACCESS), ACCESS)
        if n_request:
            self.last_request = item(last - rev.index(REQUEST), REQUEST)
        return True

    def add_scanned(self, block: bytes, number: int, offset: int, scanned: tuple) -> None:
        """What ``Templates.scan`` consumed of ``block`` (``offset``: the block's; ``number``:
        that of the line before the first one scanned)."""
        _end, lines, decode, prefill, access, request, _buckets = scanned
        self.count += lines
        self.last_number = number + lines
        self.batches += decode[0] + prefill[0]
        self.requests += access[0]

        def item(index: int, at: int, cat: int) -> StretchItem:
            return (number + index + 1, offset + at, block[at : block.index(b"\n", at)], cat)

        if self.first is None:
            firsts = [(places[1], places[2], cat) for cat, places in
                      ((DECODE, decode), (PREFILL, prefill), (ACCESS, access), (REQUEST, request)) if places[0]]
            if firsts:  # else blank lines only
                self.first = item(*min(firsts))
        if decode[0]:
            if self.first_decode is None:
                self.first_decode = item(decode[1], decode[2], DECODE)
            self.last_decode = item(decode[3], decode[4], DECODE)
        if prefill[0]:
            if self.first_prefill is None:
                self.first_prefill = item(prefill[1], prefill[2], PREFILL)
            self.last_prefill = item(prefill[3], prefill[4], PREFILL)
        if access[0]:
            self.last_access = item(access[3], access[4], ACCESS)
        if request[0]:
            self.last_request = item(request[3], request[4], REQUEST)

    def representatives(self) -> list[StretchItem]:
        """The lines that go through the full pipeline, in file order, as
        ``(number, offset, data, category)``."""
        items = {i for i in (self.first, self.first_prefill, self.last_prefill, self.first_decode,
                             self.last_decode, self.last_access, self.last_request) if i}
        return sorted(items)


@dataclass
class Options:
    """What the caller knows beyond the log (used by the stale-log detector)."""

    run_index: int | None = None  # 1-based; None = the last run
    pid: int | None = None
    since: float | None = None  # epoch seconds the run of interest started
    silence: float = 120.0
    status: bool = False  # run the stale-log detector in explain(): it reads the host's processes
    # (/proc) and the file's mtime (paths; streams only with pid/since); the CLI asks for it
    dialect: str | None = None  # the server's dialect by name (None: detected from the first lines)


class Analyzer:
    """Streams raw lines through lines → events → tracebacks → runs → catalog hits."""

    def __init__(self, catalog: Catalog | None = None, *, dialect: Dialect | str | None = None,
                 native_scan: bool | None = None):
        """``dialect``: the server's (a name: ``--dialect``); ``None``: detected from the first
        lines (held back, at most ``DETECT_LINES``, until a line decides or the input pauses).
        ``native_scan``: use the C statistics scan (default: when it is built and
        ``LOGX_PURE_PYTHON`` is not set); the results are the same either way."""
        self.catalog = catalog or load_catalog()
        if native_scan is None:
            native_scan = not os.environ.get("LOGX_PURE_PYTHON")
        self._native_scan = native_scan and ScanTemplates is not None
        self.lines = 0
        self.bytes = 0
        self._held: list[RawLine] | None = []  # lines held for detection (None: settled)
        self._settle(given(dialect) if isinstance(dialect, str)
                     else Detection(dialect, "given") if dialect is not None else Detection(DEFAULT, "guess"))
        if dialect is not None:
            self._held = None
        # stale-log detector: the run of interest starts at this byte (a sidecar's log_offset)
        self.start_offset: int | None = None
        self.start_line: int | None = None
        self._split_done = False

    def _settle(self, detection: Detection) -> None:
        """Read with ``detection``'s dialect from here on (nothing has been read yet)."""
        self.detection = detection
        dialect = self.dialect = detection.dialect
        self.events = EventStream(dialect)
        self.tracker = RunTracker(dialect)
        self.matcher = Matcher(self.catalog.for_dialect(dialect.name))
        self._matchers = {dialect.name: self.matcher}  # a mixed file's other servers' own
        self._bulk = BulkStretch(dialect.stats)
        self._templates: dict[bytes, int] = {b"": BLANK}  # fast path: template -> category
        self._layouts: dict[bytes, tuple] = {}  # decode template -> where its figures are (serving.layout)
        self._request_heads: dict[bytes, int] = {}  # fast path: request-log head template -> category
        # the C scan's copies of the two tables above (None: the Python scan)
        self._scanner: _scan.Templates | None = None
        self._scan_heads: _scan.Templates | None = None
        if self._native_scan:
            self._scanner, self._scan_heads = self._new_scan_table(), self._new_scan_table()
            self._scanner.add(b"", BLANK)

    def _new_scan_table(self) -> _scan.Templates:
        assert ScanTemplates is not None  # only called with the C scan built
        stats = self.dialect.stats
        return ScanTemplates(ok_end=stats.ok_end, request_mark=stats.request_mark,
                             request_min_len=stats.request_min_len, request_window=stats.request_window)

    def _hold(self, raw: RawLine) -> list[Event]:
        """Hold ``raw`` back until the dialect is known; the held lines' events once it is."""
        held = self._held
        assert held is not None
        held.append(raw)
        self.lines, self.bytes = raw.number, raw.offset + len(raw.data) + raw.eol
        found = detect([visible_text(raw.data)])
        if found.confidence == "certain" or len(held) >= DETECT_LINES:
            return self.settle()
        return []

    def settle(self) -> list[Event]:
        """Decide the dialect from the lines held so far and feed them; their events."""
        held = self._held
        if held is None:
            return []
        self._held = None
        self._settle(detect(visible_text(raw.data) for raw in held))
        events: list[Event] = []
        for raw in held:
            events += self.feed(raw)
        return events

    def start_at(self, offset: int) -> None:
        """Force a run boundary at byte ``offset`` (``logx run --append``: the new run starts there)."""
        self.start_offset = offset if offset > 0 else None

    def feed(self, raw: RawLine) -> list[Event]:
        if self._held is not None:
            return self._hold(raw)
        if self.start_offset is not None and self.start_line is None \
                and raw.offset + len(raw.data) >= self.start_offset:
            self.start_line = raw.number
        self.lines = raw.number
        self.bytes = raw.offset + len(raw.data) + raw.eol
        out = self.events.feed(raw)
        for event in out:
            self._dispatch(event)
        return out

    def consume(self, chunks) -> None:
        """Read a whole input (an iterable of byte chunks) on the fast path.

        Most of a serving log is statistics: batch lines and successful HTTP access lines.
        While no traceback is open, such a line is only counted; the first and last lines of
        each stretch (and the first and last of each kind) go through the full pipeline, so
        phases, timestamps and the latest figures stay exact. Every other line takes the full
        path, exactly as ``feed`` would.

        A line is recognised by its *template*: its bytes with every digit made ``0``. Each
        new template is run once through the full path (``learn_template``); after that, lines
        of a known template are counted without per-line Python code: by the C scan
        (``logforensics._scan``) when it is built, else by classifying a whole block at C speed
        (``bytes.translate``, ``split``, a dict lookup per line through ``map``,
        ``list.count``)."""
        if self._held is not None:
            chunks = self._detect_from_first_chunk(iter(chunks))
        number, offset = self.lines, self.bytes
        consume_block = self._scan_block if self._scanner is not None else self._classify_block
        for span in iter_spans(chunks):
            if isinstance(span, SpecialLine):
                number += 1
                if self._bulk.count:
                    self.flush_bulk()
                self.feed(RawLine(number, offset, span.data, span.truncated, span.eol))
                offset += span.size
                continue
            buf, start, end = span
            number += consume_block(buf, start, end, number, offset)
            offset += end - start
        self.lines, self.bytes = number, offset

    def _detect_from_first_chunk(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """Settle the dialect from the first lines (at most ``DETECT_LINES`` of them in the
        first ``DETECT_BYTES``); the chunks, unchanged."""
        if self._held:
            self.settle()
            return chunks
        head: list[bytes] = []
        size = newlines = 0
        for chunk in chunks:
            head.append(chunk)
            size += len(chunk)
            newlines += chunk.count(b"\n")
            if newlines >= DETECT_LINES or size >= DETECT_BYTES:
                break
        lines = b"".join(head)[:DETECT_BYTES].split(b"\n", DETECT_LINES)[:DETECT_LINES]
        self._held = None
        self._settle(detect(visible_text(data) for data in lines))
        return chain(head, chunks)

    def _scan_block(self, block: bytes, start: int, end: int, number: int, offset: int) -> int:
        """``consume`` for the complete lines ``block[start:end]`` (``number``: the line number
        before them, ``offset``: their offset in the input) with the C scan, in place; returns
        their line count."""
        bulk = self._bulk
        assembler = self.events.assembler
        heads = self._scan_heads
        assert heads is not None  # chosen as consume only with the C scan
        offset -= start  # the input offset of block[0]
        pos, i = start, 0  # byte offset and index of the next line
        while pos < end:
            if not assembler.has_open:
                series = self.tracker.current.serving.series
                width = series.width
                scanner = self._scanner  # read each time: a full template table is rebuilt
                assert scanner is not None
                scanned = scanner.scan(block, pos, heads, end, width)
                series.add_buckets(scanned[6], width)
                if scanned[1]:
                    bulk.add_scanned(block, number + i, offset, scanned)
                    pos, i = scanned[0], i + scanned[1]
                    if pos == end:
                        break
            nl = block.index(b"\n", pos)
            data = block[pos:nl]
            if not assembler.has_open:
                t = data.translate(_DIGITS)
                if self._learn(t, data):
                    continue  # a new statistics template: scan again from this line
                if self._is_request_log(t, block, pos):
                    bulk.add_request(number + i + 1, offset + pos, data)
                    i, pos = i + 1, nl + 1
                    continue
            if bulk.count:
                self.flush_bulk()
            self.feed(RawLine(number + i + 1, offset + pos, data))
            i, pos = i + 1, nl + 1
        return i

    def _classify_block(self, buf: bytes, start: int, end: int, number: int, offset: int) -> int:
        """``consume`` for the complete lines ``buf[start:end]`` without the C scan: every line
        is classified at C speed by its template; returns their line count."""
        block = buf if start == 0 and end == len(buf) else buf[start:end]
        bulk = self._bulk
        assembler = self.events.assembler
        get = self._templates.get
        tl = block.translate(_DIGITS).split(b"\n")
        tl.pop()
        cats = list(map(get, tl, _ZEROS))
        n = len(cats)
        i = pos = 0
        while i < n:
            if not assembler.has_open:
                try:
                    j = cats.index(OTHER, i)
                except ValueError:
                    j = n
                if j > i:
                    end = len(block) if j == n else pos + sum(map(len, tl[i:j])) + (j - i)
                    if not bulk.add_segment(block, tl, cats, i, j, pos, end, number, offset):
                        _demote_non_200(block, tl, cats, i, j, pos, bulk.ok_end)
                        continue
                    self._series_of_segment(block, tl, cats, i, j, pos)
                    i, pos = j, end
                    if i == n:
                        break
                t = tl[i]
                data = block[pos : pos + len(t)]
                if self._learn(t, data):  # the block's later lines of this template count too
                    cats[i:] = map(get, tl[i:], _ZEROS)
                    continue
                if self._is_request_log(t, block, pos):
                    bulk.add_request(number + i + 1, offset + pos, data)
                    i += 1
                    pos += len(t) + 1
                    continue
            size = len(tl[i])
            if bulk.count:
                self.flush_bulk()
            self.feed(RawLine(number + i + 1, offset + pos, block[pos : pos + size]))
            i += 1
            pos += size + 1
        return n

    def _series_of_segment(self, block: bytes, tl: list, cats: list, a: int, b: int, pos: int) -> None:
        """Add the decode lines of lines ``a``..``b-1`` of ``block`` (the first at ``pos``) to
        the run's series, as the C scan does (the Python scan's share of ``serving.Series``)."""
        if DECODE not in cats[a:b]:
            return
        series = self.tracker.current.serving.series
        layouts = self._layouts
        for j in range(a, b):
            t = tl[j]
            if cats[j] == DECODE:
                spans = layouts.get(t)
                if spans is not None:
                    series.add(*point(block[pos : pos + len(t)], spans))
            pos += len(t) + 1

    def _learn(self, t: bytes, data: bytes) -> bool:
        """Learn the template ``t`` of the line ``data`` if it is new; True when it is a new
        statistics template (the line and its like are then counted, not fed)."""
        known = self._templates
        if len(t) > TEMPLATE_MAX_BYTES or t in known or not self._room_for_template():
            return False
        cat = known[t] = learn_template(self.events, data, t)
        if cat == DECODE:
            spans = layout(t, self.dialect.stats.series)
            if spans is not None:
                self._layouts[t] = spans
        if self._scanner is not None:
            self._scanner.add(t, cat, self._layouts.get(t, ()))
        return cat != OTHER

    def _is_request_log(self, t: bytes, block: bytes, pos: int) -> bool:
        """Whether the line at ``pos`` (template ``t``) is a ``--log-requests`` line, which the
        full path makes a ``request_log`` event whatever follows its head
        (``[…] Receive: obj=``): the head's template is checked once through the full path.
        A carriage return could make the terminal show another text: such lines are not."""
        stats = self.dialect.stats
        mark = stats.request_mark
        if len(t) <= stats.request_min_len or mark not in t[: stats.request_window]:
            return False
        head = t[: t.find(mark) + len(mark)]
        heads = self._request_heads
        cat = heads.get(head)
        if cat is None:
            if len(heads) >= TEMPLATE_MAX_COUNT:
                return False
            line = block[pos : pos + len(t)]
            cat = heads[head] = REQUEST if b"\r" not in line and (
                template_category(self.events, line)[0] == REQUEST
                == template_category(self.events, head + b"x)")[0]) else OTHER
            if self._scan_heads is not None:
                self._scan_heads.add(head, cat)
        return cat == REQUEST and b"\r" not in block[pos : pos + len(t)]

    def _room_for_template(self) -> bool:
        """Whether another template may be learned; when the table is full, the templates of
        full-path lines are forgotten first (statistics templates are the ones that pay)."""
        known = self._templates
        if len(known) < TEMPLATE_MAX_COUNT:
            return True
        kept = {t: c for t, c in known.items() if c != OTHER}
        known.clear()
        known.update(kept)
        if self._scanner is not None:
            self._scanner = self._new_scan_table()
            for t, c in kept.items():
                self._scanner.add(t, c, self._layouts.get(t, ()))
        return len(known) < TEMPLATE_MAX_COUNT // 2

    def feed_fast(self, raw: RawLine) -> list[Event]:
        """``feed`` for one line at a time (``logx watch``), with the statistics fast path:
        while no traceback is open, a batch-stats or HTTP-200 line is only counted; the
        stretch's representatives go through the full pipeline before the next other line
        (or at ``flush_bulk``). Returns the events produced, as ``feed`` does."""
        if self._held is not None:
            return self.feed(raw)
        data = raw.data
        stats = self.dialect.stats
        if raw.eol and not raw.truncated and not self.events.assembler.has_open and (
                not data or stats.decode in data or stats.prefill in data or stats.access_ok in data):
            if data and stats.decode in data:
                self.tracker.current.serving.series.add_line(data, stats.series)
            self._bulk.add(raw.number, raw.offset, data)
            self.lines, self.bytes = raw.number, raw.offset + len(data) + 1
            return []
        return self.flush_bulk() + self.feed(raw)

    def flush_bulk(self) -> list[Event]:
        """Feed the pending stretch of statistics lines' representatives and count the rest;
        returns the representatives' events (and those of lines held for detection)."""
        if self._held is not None:
            return self.settle()
        bulk = self._bulk
        if not bulk.count:
            return []
        items = bulk.representatives()
        lines, size = self.lines, self.bytes
        events: list[Event] = []
        self.tracker.replaying = True  # their decode lines are in the series already
        try:
            for number, offset, data, _ in items:
                events += self.feed(RawLine(number, offset, data))
        finally:
            self.tracker.replaying = False
        self.lines, self.bytes = lines, size
        run = self.tracker.current
        run.last_line = max(run.last_line, bulk.last_number)
        run.batches += bulk.batches - sum(1 for item in items if item[3] in (DECODE, PREFILL))
        run.requests += bulk.requests - sum(1 for item in items if item[3] == ACCESS)
        bulk.reset()
        return events

    def finish(self) -> list[Event]:
        settled = self.settle()
        if self._bulk.count:
            self.flush_bulk()
        out = self.events.finish()
        for event in out:
            self._dispatch(event)
        return settled + out

    def _dispatch(self, event: Event) -> None:
        if self.start_line is not None and not self._split_done and event.number >= self.start_line:
            self._split_done = True
            if self.runs and self.runs[-1].first_line < self.start_line:
                self.tracker._new_run(self.start_line)
        run = self.tracker.feed(event)
        self.matcher_for(run).on_event(event, run)

    def matcher_for(self, run: Run) -> Matcher:
        """The matcher of ``run``'s server: its catalog (a mixed file has one per server)."""
        found = self._matchers.get(run.dialect.name)
        if found is None:
            found = self._matchers[run.dialect.name] = Matcher(self.catalog.for_dialect(run.dialect.name))
        return found

    @property
    def runs(self) -> list[Run]:
        return self.tracker.runs

    def findings(self, run: Run) -> list[Finding]:
        facts = run_facts(run)
        return _serving_findings.findings(run, self.matcher_for(run).findings(run, facts), facts)

    def report(self, name: str, options: Options | None = None,
               findings_of: Callable[[Run], list[Finding]] | None = None) -> Report:
        """The report of what was read: the run ``options`` asks for and its findings
        (``findings_of(run)``, default ``findings``: ``logx watch`` adds what only it sees)."""
        options = options or Options()
        if self._held is not None:
            self.settle()
        runs = self.runs
        index = options.run_index if options.run_index is not None else len(runs)
        run = runs[index - 1] if runs and 1 <= index <= len(runs) else None
        if self.start_offset is not None and self.start_line is None and options.run_index is None:
            run = None  # the run of interest has not written a line yet: older runs are not it
        findings = rank((findings_of or self.findings)(run)) if run is not None else []
        primary = next((f for f in findings if f.is_problem), None)
        if run is not None and primary is not None and primary.phase in PHASE_RANK:
            read = run
            run = read.reached(primary.phase, primary.evidence[0].line if primary.evidence else read.last_line)
            runs = [run if r is read else r for r in runs]
        return Report(file=name, runs=runs, run=run, findings=findings,
                      lines=self.lines, bytes=self.bytes, detection=self.detection,
                      slow_patterns=list(self.matcher.guard.slow.values()))


def chunks_of(source: Source):
    """Byte chunks of a path (``-``: stdin), bytes or a binary stream."""
    if isinstance(source, bytes | bytearray):
        yield bytes(source)
        return
    if isinstance(source, str | os.PathLike):
        if os.fspath(source) == "-":
            yield from read_chunks(sys.stdin.buffer)
            return
        path = check_readable(source)
        try:
            with open(path, "rb") as fh:
                yield from read_chunks(fh)
        except OSError as exc:
            raise SourceError(f"{path}: read failed ({exc.strerror or exc})") from None
        return
    yield from read_chunks(source)  # type: ignore[arg-type]


def explain(source: Source, *, name: str | None = None, options: Options | None = None,
            catalog: Catalog | None = None) -> Report:
    """Read a whole log and explain it: the library's one-call entry point.

    ``source`` is a path, bytes, or a binary stream. Raises ``SourceError`` for a path that
    cannot be read and ``RunNotFoundError`` for a ``run_index`` outside the file's runs. Looks at
    the host's processes (the stale-log detector) only when ``options.status`` asks."""
    options = options or Options()
    analyzer = Analyzer(catalog, dialect=options.dialect)
    # stale-log detector: paths always; streams (no mtime) only when a pid/since is given
    path = os.fspath(source) if isinstance(source, str | os.PathLike) and os.fspath(source) != "-" else None
    context = _staleness.prepare(path, options) if options.status and (
        path is not None or options.pid is not None or options.since is not None) else None
    if context is not None:
        analyzer.start_at(context.offset)
    analyzer.consume(chunks_of(source))
    analyzer.finish()
    if options.run_index is not None and not 1 <= options.run_index <= max(1, len(analyzer.runs)):
        raise RunNotFoundError(f"run {options.run_index} does not exist: the log holds "
                         f"{len(analyzer.runs)} run(s)")
    if name is None:
        name = os.fspath(source) if isinstance(source, str | os.PathLike) else "<stream>"
    report = analyzer.report(name, options)
    if context is None and options.status and analyzer.bytes == 0:
        context = _staleness.prepare(None, options)  # an empty stream is EMPTY, as an empty file is
    if context is not None:
        report = _staleness.apply(report, _staleness.assess(path, report, options, context=context))
    return report


# — several files at once ———————————————————————————————————————————————————————————

_worker_catalog: Catalog | None = None


def _init_worker(catalog: Catalog | None) -> None:
    global _worker_catalog
    _worker_catalog = catalog


def _explain_in_worker(path: str, name: str | None, options: Options | None,
                       then: Callable[[Report], Any] | None = None) -> Any:
    try:
        report = explain(path, name=name, options=options, catalog=_worker_catalog)
    except (SourceError, RunNotFoundError) as exc:
        return exc
    return then(report) if then is not None else report


def explain_many(paths: list[str | os.PathLike], jobs: int | None = None, *, options: Options | None = None,
                 catalog: Catalog | None = None, names: list[str] | None = None,
                 then: Callable[[Report], Any] | None = None) -> list[Any]:
    """Explain several logs, ``jobs`` at a time in worker processes (default: one per CPU, at
    most one per file). Results come in the order of ``paths``; a file that cannot be read
    gives its ``SourceError`` (a ``--run`` it does not have, its ``RunNotFoundError``) in its slot
    instead of a report, so one bad file does not stop the others. ``then`` (a module-level
    function, so that it pickles) runs on each report in its worker and its result replaces the
    report: a worker can hand back a small summary along with it."""
    paths = list(paths)
    names = list(names) if names is not None else [os.fspath(p) for p in paths]
    catalog = catalog or load_catalog()
    jobs = min(len(paths), jobs or os.cpu_count() or 1)
    if jobs <= 1 or any(os.fspath(p) == "-" for p in paths):  # stdin stays in this process
        _init_worker(catalog)
        return [_explain_in_worker(os.fspath(p), n, options, then)
                for p, n in zip(paths, names, strict=True)]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(catalog,)) as pool:
        futures = [pool.submit(_explain_in_worker, os.fspath(p), n, options, then)
                   for p, n in zip(paths, names, strict=True)]
        return [f.result() for f in futures]
