"""The statistics fast path: a serving log's batch and access lines counted, not parsed.

Most of a serving log is statistics: batch lines and successful HTTP access lines. While no
traceback is open, such a line is only counted; the first and last lines of each stretch (and
the first and last of each kind) go through the full pipeline, so phases, timestamps and the
latest figures stay exact. Every other line takes the full path, exactly as ``Analyzer.feed``
would. ``FastPath`` holds the learned templates and the pending stretch; the ``Analyzer`` owns
the stages and hands it its ``feed`` and ``flush_bulk``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import Any

from ._dialects import Dialect
from ._events import Event
from ._matching import digits_as_zeros, shape_holds, shape_literals
from ._pipeline import EventStream
from ._runs import Run, RunTracker
from ._serving import HEALTH_PATHS, JIT_WORDS, layout, point
from ._sources import RawLine, SpecialLine, iter_spans
from ._tracebacks import TracebackAssembler, is_record_start

ScanTemplates: type[_scan.Templates] | None
try:
    from . import _scan
    ScanTemplates = _scan.Templates
except ImportError:  # not built (no C compiler at install): the same scan runs in Python
    ScanTemplates = None

# fast-path line categories (``FastPath.consume``); OTHER takes the full path
OTHER, DECODE, PREFILL, ACCESS, REQUEST, BLANK, NOTE, WARN, SERVER_ERROR, ERROR_LINE = range(10)
CATEGORIES = 10
# the event kinds whose lines only count (``FastPath._inert`` checks each template): a plain
# message, a warning, a plain line that reports a failure (ERROR_LINE: only while a serving
# line follows it, see ``SERVING``)
NOTE_KINDS = {"line": NOTE, "warning": WARN, "error_line": ERROR_LINE}
# the categories whose first line in a stretch is read too (a run's first batch, started_at …);
# every category's last line is read
FIRSTS = (DECODE, PREFILL, NOTE, WARN, SERVER_ERROR, ERROR_LINE)
# the categories a C scan reports, in the order of its places
SCANNED = (DECODE, PREFILL, ACCESS, REQUEST, NOTE, WARN, SERVER_ERROR, ERROR_LINE)
# the serving lines (``Run.last_serving_line``): an error line is counted only before one, since
# the findings read the error lines after a run's last serving line (a plain error line may
# name the cause of a run that then failed); those are read whole, in their turn
SERVING = (DECODE, PREFILL, ACCESS)
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_ZEROS = repeat(OTHER)
TEMPLATE_MAX_BYTES = 1024  # longer lines are never statistics lines: full path, not learned
TEMPLATE_MAX_COUNT = 20_000  # bound on the learned templates (memory stays flat)
DEFERRED_MAX = 1024  # lines a stretch holds to read in their turn (memory stays flat)
# wrapper classes (a template's wrapper, digits as zeros) a stretch keeps a last line of (the C
# scan's WRAPPERS); the lines of a template past them are read whole
WRAPPER_CLASSES = 16
# kinds read against the run's counts so far (the serving statistics' health-check episodes):
# never deferred past the stretch's uncounted lines
ORDERED_KINDS = frozenset({"health_check_failed"})
STATUS_DIGITS = b"000"  # an HTTP status in a template


def template_event(stream: EventStream, data: bytes) -> Event | None:
    """The one event the full path (``stream``'s prefix and rules) makes of ``data`` alone,
    or None when the line touches the traceback assembler (opens, continues or ends one) or
    its server depends on the lines before it (``EventStream.certain_alone``: a mixed file)."""
    line = stream.read_alone(data)
    if not stream.certain_alone(line):
        return None
    event = stream.tokenizer.tokenize(line)
    assembler = TracebackAssembler()
    consumed, done = assembler.feed(line, event.kind)
    if consumed or done or assembler.has_open:
        return None
    return event


def template_category(stream: EventStream, data: bytes) -> int:
    """The fast-path category of the event ``data`` alone makes (``template_event``), before
    the checks a template must pass: OTHER for every kind but a batch, access, request-log or
    note kind."""
    event = template_event(stream, data)
    return OTHER if event is None else event_category(event)


def event_category(event: Event) -> int:
    """``template_category`` of a line's one event."""
    kind = event.kind
    if kind == "decode_batch":
        return DECODE
    if kind == "prefill_batch":
        return PREFILL
    if kind == "access_log":
        return ACCESS
    if kind == "request_log":
        return REQUEST
    return NOTE_KINDS.get(kind, OTHER)


StretchItem = tuple[int, int, bytes, int]  # a fast-path line: (number, offset, data, category)


class BulkStretch:
    """A stretch of statistics lines seen on the fast path: counts per category, and the
    lines that represent it (its first line, the first line of each of ``FIRSTS``, the last
    line of every category and of every wrapper class: a headless line after the stretch
    belongs to the stream of its wrapper's last line). Items are ``(number, offset, data,
    category)``."""

    __slots__ = ("count", "counts", "deferred", "first", "firsts", "lasts", "last_number", "wrapper_lasts")
    first: StretchItem | None
    firsts: list[StretchItem | None]
    lasts: list[StretchItem | None]

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.count = self.last_number = 0
        self.counts = [0] * CATEGORIES
        self.first = None
        self.firsts = [None] * CATEGORIES
        self.lasts = [None] * CATEGORIES
        self.wrapper_lasts: dict[int, StretchItem] = {}  # wrapper class -> its last line
        self.deferred: list[StretchItem] = []  # other lines, read in their turn at the flush

    def _place(self, item: StretchItem, wrapper: int | None = None) -> None:
        cat = item[3]
        self.counts[cat] += 1
        if self.first is None:
            self.first = item
        if cat in FIRSTS and self.firsts[cat] is None:
            self.firsts[cat] = item
        self.lasts[cat] = item
        if wrapper is not None:
            self.wrapper_lasts[wrapper] = item

    def defer(self, number: int, offset: int, data: bytes) -> None:
        """One line that is not counted but need not end the stretch (``FastPath._deferrable``):
        it is read at the flush, in its turn among the representatives."""
        self.count += 1
        self.last_number = number
        self.deferred.append((number, offset, data, OTHER))

    def add_request(self, number: int, offset: int, data: bytes, wrapper: int) -> None:
        """One request-log line (``Receive: obj=…``) of the wrapper class ``wrapper``: only
        extends the stretch."""
        self.count += 1
        self.last_number = number
        self._place((number, offset, data, REQUEST), wrapper)

    def add(self, number: int, offset: int, data: bytes, cat: int, wrapper: int | None) -> None:
        """One line of category ``cat`` and wrapper class ``wrapper`` (``FastPath.take``, a
        line at a time)."""
        self.count += 1
        self.last_number = number
        if cat != BLANK:  # a blank line only extends the stretch
            self._place((number, offset, data, cat), wrapper)

    def add_segment(self, block: bytes, tl: list, cats: list, a: int, b: int, start: int, end: int,
                    number: int, offset: int, wrappers: dict[bytes, int]) -> None:
        """Lines ``a``..``b-1`` of ``block`` (bytes ``start``..``end``), all of a fast-path
        category; ``tl`` holds their templates (same lengths as the lines), ``wrappers`` their
        wrapper classes. ``number`` and ``offset`` are those of the block's line 0."""
        seg = cats[a:b]
        self.count += b - a
        self.last_number = number + b

        def item(k: int, cat: int) -> StretchItem:
            j = a + k
            size = len(tl[j])
            # from the nearer end of the segment: firsts sit near its start, lasts near its end
            near_start = k < (b - a) // 2
            pos = start + sum(map(len, tl[a:j])) + k if near_start else end - sum(map(len, tl[j:b])) - (b - j)
            return (number + j + 1, offset + pos, block[pos : pos + size], cat)

        present = [(seg.index(cat), cat) for cat in SCANNED if cat in seg]
        if not present:
            return  # blank lines only
        rev = seg[::-1]
        last = len(seg) - 1
        if self.first is None:
            self.first = item(*min(present))
        for k, cat in present:
            self.counts[cat] += seg.count(cat)
            if cat in FIRSTS and self.firsts[cat] is None:
                self.firsts[cat] = item(k, cat)
            self.lasts[cat] = item(last - rev.index(cat), cat)
        classes = list(map(wrappers.get, tl[b - 1 : a - 1 if a else None : -1]))  # last line first
        for w in {c for c in classes if c is not None}:
            k = last - classes.index(w)
            self.wrapper_lasts[w] = item(k, seg[k])

    def add_scanned(self, block: bytes, number: int, offset: int, scanned: tuple) -> None:
        """What ``Templates.scan`` consumed of ``block`` (``offset``: the block's; ``number``:
        that of the line before the first one scanned)."""
        lines = scanned[1]
        self.count += lines
        self.last_number = number + lines

        def item(index: int, at: int, cat: int) -> StretchItem:
            return (number + index + 1, offset + at, block[at : block.index(b"\n", at)], cat)

        present = [(cat, places) for cat, places in zip(SCANNED, scanned[2:-2], strict=True) if places[0]]
        if not present:
            return  # blank lines only
        for w, index, at, cat in scanned[-2]:
            self.wrapper_lasts[w] = item(index, at, cat)
        if self.first is None:
            self.first = item(*min((places[1], places[2], cat) for cat, places in present))
        for cat, places in present:
            self.counts[cat] += places[0]
            if cat in FIRSTS and self.firsts[cat] is None:
                self.firsts[cat] = item(places[1], places[2], cat)
            self.lasts[cat] = item(places[3], places[4], cat)

    def representatives(self) -> list[StretchItem]:
        """The lines that go through the full pipeline, in file order, as
        ``(number, offset, data, category)``."""
        items = {i for i in (self.first, *self.firsts, *self.lasts) if i}
        return sorted(items.union(self.wrapper_lasts.values(), self.deferred))


class FastPath:
    """The fast path of one dialect's ``EventStream`` and ``RunTracker``: the learned templates
    (``template -> category``, and the C scan's copies), the decode templates' layouts, the
    request-log heads and the pending ``BulkStretch``. ``feed``/``flush``: the analyzer's
    ``feed`` (a line down the full path) and ``flush_bulk`` (the stretch's representatives);
    ``line_specs``: the catalog's line patterns for this dialect (a line one of them may match
    is never only counted)."""

    def __init__(self, dialect: Dialect, events: EventStream, tracker: RunTracker, *,
                 feed: Callable[[RawLine], list[Event]], flush: Callable[[], list[Event]],
                 line_specs: Sequence[tuple[Any, Any]], native: bool) -> None:
        self.dialect, self.events, self.tracker = dialect, events, tracker
        self.feed, self.flush = feed, flush
        self.line_specs = line_specs
        self._literals: list[tuple[tuple[bytes, ...], bool] | None] | None = None  # of line_specs, on first use
        self.bulk = BulkStretch()
        self.templates: dict[bytes, int] = {b"": BLANK}  # template -> category
        self.layouts: dict[bytes, tuple] = {}  # decode template -> where its figures are (serving.layout)
        # access template -> (where its status is, whether its path is a health check's)
        self.statuses: dict[bytes, tuple[int, bool]] = {}
        self.deferrable: set[bytes] = set()  # OTHER templates whose lines need not end a stretch
        self.request_heads: dict[bytes, int] = {}  # request-log head template -> category
        # statistics template (and request head) -> its wrapper class (``_wrapper_class``)
        self.wrappers: dict[bytes, int] = {}
        self.wrapper_classes: dict[str, int] = {}  # a template's wrapper -> its class
        # the C scan's copies of the two tables above (None: the Python scan)
        self.scanner: _scan.Templates | None = None
        self.scan_heads: _scan.Templates | None = None
        if native and ScanTemplates is not None:
            self.scanner, self.scan_heads = self._new_scan_table(), self._new_scan_table()
            self.scanner.add(b"", BLANK)
        self.mixed = 0  # the other servers present when the templates were learned (``_relearn``)

    def _new_scan_table(self) -> _scan.Templates:
        assert ScanTemplates is not None  # only called with the C scan built
        stats = self.dialect.stats
        return ScanTemplates(request_mark=stats.request_mark, request_min_len=stats.request_min_len,
                             request_window=stats.request_window)

    def _add_to_scan(self, table: _scan.Templates, t: bytes, cat: int) -> None:
        status_at, health = self.statuses.get(t, (-1, False))
        table.add(t, cat, self.layouts.get(t, ()), status_at, health, self.wrappers.get(t, 0))

    def consume(self, chunks: Iterable[bytes], number: int, offset: int) -> tuple[int, int]:
        """Read ``chunks`` (after line ``number``, at byte ``offset``) on the fast path; the
        line number and offset reached.

        A line is recognised by its *template*: its bytes with every digit made ``0``. Each
        new template is run once through the full path (``learn_template``); after that, lines
        of a known template are counted without per-line Python code: by the C scan
        (``logforensics._scan``) when it is built, else by classifying a whole block at C speed
        (``bytes.translate``, ``split``, a dict lookup per line through ``map``,
        ``list.count``)."""
        consume_block = self._scan_block if self.scanner is not None else self._classify_block
        for span in iter_spans(chunks):
            if isinstance(span, SpecialLine):
                number += 1
                if self.bulk.count:
                    self.flush()
                self.feed(RawLine(number, offset, span.data, span.truncated, span.eol))
                offset += span.size
                continue
            buf, start, end = span
            number += consume_block(buf, start, end, number, offset)
            offset += end - start
        return number, offset

    def _scan_block(self, block: bytes, start: int, end: int, number: int, offset: int) -> int:
        """``consume`` for the complete lines ``block[start:end]`` (``number``: the line number
        before them, ``offset``: their offset in the input) with the C scan, in place; returns
        their line count."""
        bulk = self.bulk
        assembler = self.events.assembler
        heads = self.scan_heads
        assert heads is not None  # chosen as consume only with the C scan
        offset -= start  # the input offset of block[0]
        pos, i = start, 0  # byte offset and index of the next line
        while pos < end:
            if self.events.mixed != self.mixed:
                self._relearn()
            if not assembler.has_open and self._timed():
                series = self._own_run().serving.series
                width = series.width
                scanner = self.scanner  # read each time: a full template table is rebuilt
                assert scanner is not None
                scanned = scanner.scan(block, pos, heads, end, width)
                series.add_buckets(scanned[-1], width)
                if scanned[1]:
                    bulk.add_scanned(block, number + i, offset, scanned)
                    pos, i = scanned[0], i + scanned[1]
                    if pos == end:
                        break
            nl = block.index(b"\n", pos)
            data = block[pos:nl]
            if not assembler.has_open and self._timed():
                t = data.translate(_DIGITS)
                if self._is_request_log(t, block, pos):  # (its head first: such lines are never learned)
                    bulk.add_request(number + i + 1, offset + pos, data, self._head_wrapper(t))
                    i, pos = i + 1, nl + 1
                    continue
                if self._learn(t, data):
                    continue  # a new statistics template: scan again from this line
                if bulk.count and t in self.deferrable and len(bulk.deferred) < DEFERRED_MAX:
                    bulk.defer(number + i + 1, offset + pos, data)
                    i, pos = i + 1, nl + 1
                    continue
            if bulk.count:
                self.flush()
            self.feed(RawLine(number + i + 1, offset + pos, data))
            i, pos = i + 1, nl + 1
        return i

    def _classify_block(self, buf: bytes, start: int, end: int, number: int, offset: int) -> int:
        """``consume`` for the complete lines ``buf[start:end]`` without the C scan: every line
        is classified at C speed by its template; returns their line count."""
        block = buf if start == 0 and end == len(buf) else buf[start:end]
        bulk = self.bulk
        assembler = self.events.assembler
        get = self.templates.get
        tl = block.translate(_DIGITS).split(b"\n")
        tl.pop()
        cats = list(map(get, tl, _ZEROS))
        n = len(cats)
        i = pos = 0
        while i < n:
            if self.events.mixed != self.mixed:
                self._relearn()
                cats[i:] = map(get, tl[i:], _ZEROS)
            if not assembler.has_open and self._timed():
                try:
                    j = cats.index(OTHER, i)
                except ValueError:
                    j = n
                if j > i:
                    end = len(block) if j == n else pos + sum(map(len, tl[i:j])) + (j - i)
                    if ACCESS in cats[i:j] and self._read_statuses(block, tl, cats, i, j, pos):
                        continue  # a 5xx answer to a health check in it: the segment ends before
                    if ERROR_LINE in cats[i:j] and self._hold_errors(cats, i, j):
                        continue  # an error line no serving line follows: the segment ends before
                    bulk.add_segment(block, tl, cats, i, j, pos, end, number, offset, self.wrappers)
                    self._series_of_segment(block, tl, cats, i, j, pos)
                    i, pos = j, end
                    if i == n:
                        break
                t = tl[i]
                data = block[pos : pos + len(t)]
                if self._is_request_log(t, block, pos):  # (its head first: such lines are never learned)
                    bulk.add_request(number + i + 1, offset + pos, data, self._head_wrapper(t))
                    i += 1
                    pos += len(t) + 1
                    continue
                if self._learn(t, data):  # the block's later lines of this template count too
                    cats[i:] = map(get, tl[i:], _ZEROS)
                    continue
                if bulk.count and t in self.deferrable and len(bulk.deferred) < DEFERRED_MAX:
                    bulk.defer(number + i + 1, offset + pos, data)
                    i += 1
                    pos += len(t) + 1
                    continue
            size = len(tl[i])
            if bulk.count:
                self.flush()
            self.feed(RawLine(number + i + 1, offset + pos, block[pos : pos + size]))
            i += 1
            pos += size + 1
        return n

    def _timed(self) -> bool:
        """Whether the run this server's lines go to has printed its start time: until it
        has, every line is read (the first line with a time, whatever its kind, is the run's
        start; the first line of this server in a mixed file starts its run)."""
        run = self.tracker.own
        return run is not None and run.started_at is not None

    def _own_run(self) -> Run:
        """The run this server's statistics lines count in (``_timed``: there is one)."""
        run = self.tracker.own
        assert run is not None
        return run

    def _series_of_segment(self, block: bytes, tl: list, cats: list, a: int, b: int, pos: int) -> None:
        """Add the decode lines of lines ``a``..``b-1`` of ``block`` (the first at ``pos``) to
        the run's series, as the C scan does (the Python scan's share of ``serving.Series``)."""
        if DECODE not in cats[a:b]:
            return
        series = self._own_run().serving.series
        layouts = self.layouts
        for j in range(a, b):
            t = tl[j]
            if cats[j] == DECODE:
                spans = layouts.get(t)
                if spans is not None:
                    series.add(*point(block[pos : pos + len(t)], spans))
            pos += len(t) + 1

    def _learn_template(self, data: bytes, template: bytes) -> int:
        """The fast-path category of every line whose digits-as-zeros form is ``template``.

        The full path treats every digit alike (``\\d``, never a literal digit: the rules' regexes
        are checked for that in the tests), so a line and its template get the same event kind:
        a line of any other kind is read alone (its template is OTHER, perhaps deferrable); a
        statistics line and its template are both run through the full path and must agree. An
        access template must hold one ``protocol`` (``HTTP/``) and its status right after the dialect's ``status_mark``
        there (``" 000``), so the scan reads each line's status at that place: ACCESS below 500,
        SERVER_ERROR from 500, the full path for a 5xx answer to a health check. A note (a
        plain message, a warning, a plain line that reports a failure) must pass ``_inert``; an
        error line is counted only where a serving line follows it (``SERVING``)."""
        if len(data) > TEMPLATE_MAX_BYTES:
            return OTHER
        event = template_event(self.events, data)
        if event is None:
            return OTHER
        cat = event_category(event)
        if cat == OTHER:  # (its template makes the same kind: not read a second time)
            if self._deferrable(event):
                self.deferrable.add(template)
            return OTHER
        t_event = template_event(self.events, template)
        if t_event is None or t_event.kind != event.kind:
            return OTHER
        if cat == ACCESS:
            return self._learn_access(template, data, event)
        if cat in (NOTE, WARN, ERROR_LINE):
            if self._deferrable(event):  # (an error line the scan holds back is read in its turn)
                self.deferrable.add(template)
            return cat if self._inert(template, t_event, event) else OTHER
        return cat

    def _learn_access(self, template: bytes, data: bytes, event: Event) -> int:
        """ACCESS when ``template`` has its status after the dialect's ``status_mark``, where
        the line ``data`` (its ``event``) has the status the full path read."""
        stats = self.dialect.stats
        status = event.fields.get("status")
        if template.count(stats.protocol) != 1 or not isinstance(status, int):
            return OTHER
        mark = template.find(stats.status_mark, template.index(stats.protocol))
        at = mark + len(stats.status_mark)
        end = at + len(STATUS_DIGITS)
        if mark < 0 or template[at:end] != STATUS_DIGITS or template[end:end + 1] == b"0" \
                or data[at:end] != b"%03d" % status:
            return OTHER
        self.statuses[template] = (at, str(event.fields.get("path", "")).startswith(HEALTH_PATHS))
        return ACCESS

    def _deferrable(self, event: Event) -> bool:
        """Whether a line like ``event``'s (one event, no traceback, not a statistics line)
        may be read at the stretch's flush, in its turn, after the stretch's representatives
        before it instead of all its lines: what it does to the run does not depend on the
        uncounted lines. Not so for a line that starts no record (it may continue the one
        before it), a launch or start-up line (it may start a run), a line of
        another server, one read against the counts so far (``ORDERED_KINDS``), or one the
        serving statistics time against the next batch (a JIT compilation)."""
        d = self.dialect
        kind = event.kind
        return (is_record_start(event.line) and event.dialect in (None, d.name)
                and kind not in d.launch_kinds and kind not in d.startup_kinds and kind not in ORDERED_KINDS
                and not any(word in event.line.text for word in JIT_WORDS))

    def _inert(self, template: bytes, t_event: Event, event: Event) -> bool:
        """Whether every line of ``template`` (a note: ``t_event`` its event, ``event`` a
        line's) does the same to the report as any other, so that a stretch's first and last
        stand for the rest and a count does the rest: it starts a record (it continues none), of
        this server, in no phase, no memory,
        ending, start-up or version fact, no process id in its wrapper, no word the serving
        statistics read, and no catalog line pattern can match it (each pattern requires one
        of its literals, and none is in the template, digits as zeros)."""
        d = self.dialect
        kind = event.kind
        if not is_record_start(event.line) or event.dialect not in (None, d.name) or kind in d.event_phase \
                or kind in d.memory_kinds or kind in d.ending_kinds or kind in d.startup_kinds \
                or kind in d.launch_kinds:
            return False
        if d.version_hints(kind, event.fields) or d.version_hints(kind, t_event.fields):
            return False
        text = t_event.line.text
        if (d.pid_wrappers and t_event.line.wrapper.startswith(d.pid_wrappers)) \
                or any(word in text for word in JIT_WORDS):
            return False
        if self._literals is None:
            self._literals = [shape_literals(spec.line) for _, spec in self.line_specs]
        # a line holding a literal holds it with digits as zeros in its template
        shape, folded = digits_as_zeros(text), digits_as_zeros(text.casefold())
        return not any(need is None or shape_holds(need, shape, folded) for need in self._literals)

    @staticmethod
    def _hold_errors(cats: list, a: int, b: int) -> bool:
        """Make the error lines of lines ``a``..``b-1`` that no serving line follows there OTHER
        (read whole, in their turn), as the C scan does; True when there was one."""
        held = False
        k = b - 1
        while k >= a and cats[k] not in SERVING:
            if cats[k] == ERROR_LINE:
                cats[k] = OTHER
                held = True
            k -= 1
        return held

    def _read_statuses(self, block: bytes, tl: list, cats: list, a: int, b: int, pos: int) -> bool:
        """Read the status of each access line of lines ``a``..``b-1`` (the first at ``pos``),
        as the C scan does: a 5xx is SERVER_ERROR, to a health check OTHER (then True)."""
        statuses = self.statuses
        health_5xx = False
        for j in range(a, b):
            t = tl[j]
            if cats[j] == ACCESS:
                at, health = statuses[t]
                if block[pos + at] >= 53:  # "5"
                    cats[j] = OTHER if health else SERVER_ERROR
                    health_5xx = health_5xx or health
            pos += len(t) + 1
        return health_5xx

    def _learn(self, t: bytes, data: bytes) -> bool:
        """Learn the template ``t`` of the line ``data`` if it is new; True when it is a new
        statistics template (the line and its like are then counted, not fed)."""
        known = self.templates
        if len(t) > TEMPLATE_MAX_BYTES or t in known or not self._room_for_template():
            return False
        cat = self._learn_template(data, t)
        if cat != OTHER:
            wrapper = self._wrapper_class(t)
            if wrapper is None:
                cat = OTHER
            else:
                self.wrappers[t] = wrapper
        known[t] = cat
        if cat == DECODE:
            spans = layout(t, self.dialect.stats.series)
            if spans is not None:
                self.layouts[t] = spans
        if self.scanner is not None:
            self._add_to_scan(self.scanner, t, cat)
        return cat != OTHER

    def _wrapper_class(self, template: bytes) -> int | None:
        """The class of the wrapper (docker's service, Ray's actor…, digits as zeros) of the
        lines of ``template``: a stretch keeps each class's last line, whose stream a headless
        line after it continues. None when ``WRAPPER_CLASSES`` are taken by others."""
        wrapper = self.events.read_alone(template).wrapper
        classes = self.wrapper_classes
        if wrapper not in classes:
            if len(classes) >= WRAPPER_CLASSES:
                return None
            classes[wrapper] = len(classes)
        return classes[wrapper]

    def _head_wrapper(self, t: bytes) -> int:
        """The wrapper class of a request-log line of template ``t`` (its head's)."""
        mark = self.dialect.stats.request_mark
        return self.wrappers[t[: t.find(mark) + len(mark)]]

    def _is_request_log(self, t: bytes, block: bytes, pos: int) -> bool:
        """Whether the line at ``pos`` (template ``t``) is a ``--log-requests`` line, which the
        full path makes a ``request_log`` event whatever follows its head
        (``[…] Receive: obj=``): the head's template is checked once through the full path.
        A carriage return could make the terminal show another text: such lines are not (nor
        does one decide its head's category)."""
        stats = self.dialect.stats
        mark = stats.request_mark
        if len(t) <= stats.request_min_len or mark not in t[: stats.request_window] \
                or block.find(b"\r", pos, pos + len(t)) >= 0:
            return False
        head = t[: t.find(mark) + len(mark)]
        heads = self.request_heads
        cat = heads.get(head)
        if cat is None:
            if len(heads) >= TEMPLATE_MAX_COUNT:
                return False
            cat = REQUEST if template_category(self.events, block[pos : pos + len(t)]) == REQUEST \
                == template_category(self.events, head + b"x)") else OTHER
            wrapper = self._wrapper_class(head) if cat == REQUEST else None
            if wrapper is None:
                cat = OTHER
            else:
                self.wrappers[head] = wrapper
            heads[head] = cat
            if self.scan_heads is not None:
                self.scan_heads.add(head, cat, (), -1, False, wrapper or 0)
        return cat == REQUEST

    def _room_for_template(self) -> bool:
        """Whether another template may be learned; when the table is full, the templates of
        full-path lines are forgotten first (statistics templates are the ones that pay)."""
        known = self.templates
        if len(known) < TEMPLATE_MAX_COUNT:
            return True
        self._keep({t: c for t, c in known.items() if c not in (OTHER, ERROR_LINE)})  # error lines: often one-off ids
        return len(known) < TEMPLATE_MAX_COUNT // 2

    def _relearn(self) -> None:
        """Another server showed up in the file: a line without this server's prefix may be
        that server's now (``EventStream.certain_alone``), so every template is learned again."""
        self.mixed = self.events.mixed
        self.request_heads.clear()
        self.layouts.clear()
        self.statuses.clear()
        if self.scan_heads is not None:
            self.scan_heads = self._new_scan_table()
        self._keep({})

    def _keep(self, kept: dict[bytes, int]) -> None:
        """Forget every learned template but ``kept`` (template -> category)."""
        known = self.templates
        known.clear()  # (in place: a block being classified holds its ``get``)
        self.deferrable.clear()
        known.update(kept)
        self.wrappers = {t: w for t, w in self.wrappers.items() if t in kept or t in self.request_heads}
        if self.scanner is not None:
            self.scanner = self._new_scan_table()
            for t, c in kept.items():
                self._add_to_scan(self.scanner, t, c)

    def take(self, raw: RawLine) -> bool:
        """``logx watch``'s per-line fast path: a line the scan would only count (a learned
        statistics template's or a request log's, no traceback open, the run timed) is counted
        here too: True when ``raw`` was. An error line is read whole: the scan counts one only
        before a serving line, which a line at a time cannot see."""
        if not raw.eol or raw.truncated or self.events.assembler.has_open or not self._timed():
            return False
        if self.events.mixed != self.mixed:
            self._relearn()
        data = raw.data
        t = data.translate(_DIGITS)
        if self._is_request_log(t, data, 0):
            self.bulk.add_request(raw.number, raw.offset, data, self._head_wrapper(t))
            return True
        cat = self.templates.get(t)
        if cat is None:
            self._learn(t, data)
            cat = self.templates.get(t, OTHER)
        if cat == ACCESS:
            at, health = self.statuses[t]
            if data[at] >= 53:  # "5"
                if health:
                    return False
                cat = SERVER_ERROR
        elif cat == DECODE:
            spans = self.layouts.get(t)
            if spans is not None:
                self._own_run().serving.series.add(*point(data, spans))
        elif cat in (OTHER, ERROR_LINE):
            return False
        self.bulk.add(raw.number, raw.offset, data, cat, self.wrappers.get(t))
        return True

    def flush_stretch(self) -> list[Event]:
        """Feed the pending stretch's representatives and count the rest (the caller keeps
        its own line count and offset); their events."""
        bulk = self.bulk
        items = bulk.representatives()
        events: list[Event] = []
        self.tracker.replaying = True  # their decode lines are in the series already
        try:
            for number, offset, data, _ in items:
                events += self.feed(RawLine(number, offset, data))
        finally:
            self.tracker.replaying = False
        run = self._own_run()  # (its representatives made it)
        run.last_line = max(run.last_line, bulk.last_number)
        unread = list(bulk.counts)  # the lines counted but not read, per category
        for item in items:
            unread[item[3]] -= 1  # (deferred lines are OTHER: never counted)
        run.batches += unread[DECODE] + unread[PREFILL]
        run.requests += unread[ACCESS] + unread[SERVER_ERROR]
        run.http_errors += unread[SERVER_ERROR]
        bulk.reset()
        return events
