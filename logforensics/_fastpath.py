"""The statistics fast path: a serving log's batch and access lines counted, not parsed.

Most of a serving log is statistics: batch lines and successful HTTP access lines. While no
traceback is open, such a line is only counted; the first and last lines of each stretch (and
the first and last of each kind) go through the full pipeline, so phases, timestamps and the
latest figures stay exact. Every other line takes the full path, exactly as ``Analyzer.feed``
would. ``FastPath`` holds the learned templates and the pending stretch; the ``Analyzer`` owns
the stages and hands it its ``feed`` and ``flush_bulk``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import repeat

from ._dialects import Dialect
from ._dialects.base import StatsMarks
from ._events import Event
from ._lines import decode
from ._pipeline import EventStream
from ._runs import RunTracker
from ._serving import layout, point
from ._sources import RawLine, SpecialLine, iter_spans
from ._tracebacks import TracebackAssembler

ScanTemplates: type[_scan.Templates] | None
try:
    from . import _scan
    ScanTemplates = _scan.Templates
except ImportError:  # not built (no C compiler at install): the same scan runs in Python
    ScanTemplates = None

# fast-path line categories (``FastPath.consume``); OTHER takes the full path
OTHER, DECODE, PREFILL, ACCESS, REQUEST, BLANK = 0, 1, 2, 3, 4, 5
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_ZEROS = repeat(OTHER)
TEMPLATE_MAX_BYTES = 1024  # longer lines are never statistics lines: full path, not learned
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


class FastPath:
    """The fast path of one dialect's ``EventStream`` and ``RunTracker``: the learned templates
    (``template -> category``, and the C scan's copies), the decode templates' layouts, the
    request-log heads and the pending ``BulkStretch``. ``feed``/``flush``: the analyzer's
    ``feed`` (a line down the full path) and ``flush_bulk`` (the stretch's representatives)."""

    def __init__(self, dialect: Dialect, events: EventStream, tracker: RunTracker, *,
                 feed: Callable[[RawLine], list[Event]], flush: Callable[[], list[Event]],
                 native: bool) -> None:
        self.dialect, self.events, self.tracker = dialect, events, tracker
        self.feed, self.flush = feed, flush
        self.bulk = BulkStretch(dialect.stats)
        self.templates: dict[bytes, int] = {b"": BLANK}  # template -> category
        self.layouts: dict[bytes, tuple] = {}  # decode template -> where its figures are (serving.layout)
        self.request_heads: dict[bytes, int] = {}  # request-log head template -> category
        # the C scan's copies of the two tables above (None: the Python scan)
        self.scanner: _scan.Templates | None = None
        self.scan_heads: _scan.Templates | None = None
        if native and ScanTemplates is not None:
            self.scanner, self.scan_heads = self._new_scan_table(), self._new_scan_table()
            self.scanner.add(b"", BLANK)

    def _new_scan_table(self) -> _scan.Templates:
        assert ScanTemplates is not None  # only called with the C scan built
        stats = self.dialect.stats
        return ScanTemplates(ok_end=stats.ok_end, request_mark=stats.request_mark,
                             request_min_len=stats.request_min_len, request_window=stats.request_window)

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
            if not assembler.has_open:
                series = self.tracker.current.serving.series
                width = series.width
                scanner = self.scanner  # read each time: a full template table is rebuilt
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
                self.flush()
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
        layouts = self.layouts
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
        known = self.templates
        if len(t) > TEMPLATE_MAX_BYTES or t in known or not self._room_for_template():
            return False
        cat = known[t] = learn_template(self.events, data, t)
        if cat == DECODE:
            spans = layout(t, self.dialect.stats.series)
            if spans is not None:
                self.layouts[t] = spans
        if self.scanner is not None:
            self.scanner.add(t, cat, self.layouts.get(t, ()))
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
        heads = self.request_heads
        cat = heads.get(head)
        if cat is None:
            if len(heads) >= TEMPLATE_MAX_COUNT:
                return False
            line = block[pos : pos + len(t)]
            cat = heads[head] = REQUEST if b"\r" not in line and (
                template_category(self.events, line)[0] == REQUEST
                == template_category(self.events, head + b"x)")[0]) else OTHER
            if self.scan_heads is not None:
                self.scan_heads.add(head, cat)
        return cat == REQUEST and b"\r" not in block[pos : pos + len(t)]

    def _room_for_template(self) -> bool:
        """Whether another template may be learned; when the table is full, the templates of
        full-path lines are forgotten first (statistics templates are the ones that pay)."""
        known = self.templates
        if len(known) < TEMPLATE_MAX_COUNT:
            return True
        kept = {t: c for t, c in known.items() if c != OTHER}
        known.clear()
        known.update(kept)
        if self.scanner is not None:
            self.scanner = self._new_scan_table()
            for t, c in kept.items():
                self.scanner.add(t, c, self.layouts.get(t, ()))
        return len(known) < TEMPLATE_MAX_COUNT // 2

    def take(self, raw: RawLine) -> bool:
        """``logx watch``'s per-line fast path: while no traceback is open, a batch-stats or
        HTTP-200 line (a byte test decides) is only counted: True when ``raw`` was."""
        data = raw.data
        stats = self.dialect.stats
        if raw.eol and not raw.truncated and not self.events.assembler.has_open and (
                not data or stats.decode in data or stats.prefill in data or stats.access_ok in data):
            if data and stats.decode in data:
                self.tracker.current.serving.series.add_line(data, stats.series)
            self.bulk.add(raw.number, raw.offset, data)
            return True
        return False

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
        run = self.tracker.current
        run.last_line = max(run.last_line, bulk.last_number)
        run.batches += bulk.batches - sum(1 for item in items if item[3] in (DECODE, PREFILL))
        run.requests += bulk.requests - sum(1 for item in items if item[3] == ACCESS)
        bulk.reset()
        return events
