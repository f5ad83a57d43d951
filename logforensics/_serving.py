"""A run that serves badly: the figures of its statistics lines, and the warnings they justify.

``ServingStats`` is fed by the run tracker with the serving events the analysis passes on:
every retraction, 5xx and health-check line (they always take the full path), and the
statistics lines the fast path keeps (the first and last of each stretch). So the figures
a finding is built on — retraction counts, the first prefill and decode, the last decode,
the 5xx — are the same whether the file was scanned fast or line by line.

``Series`` is the run's serving time series (throughput, queue, token usage, running
requests per time bucket), summed from *every* decode line: the C scan reads each line's
figures at the places its template's ``layout`` gives, the Python scan and ``logx watch`` do
the same with ``point``, and the full path adds the lines it reads itself (never the
fast path's representatives, already counted). Integer sums and maxima, and buckets aligned
to multiples of their width, make it the same whichever path read which line. Its memory is
bounded: at most ``SERIES_BUCKETS`` buckets, pairs merged (width doubled) as the run grows.

``serving_findings`` turns them into warnings (a run fact here, a finding there: the runs
stage reads this module, the findings stage that one).
"""

from __future__ import annotations

import functools
import re
from datetime import datetime, timedelta
from typing import Any

from ._lines import parse_timestamp
from ._record import field, record

# the events ServingStats reads (besides plain lines, for JIT compilation, once serving began)
SERVING_KINDS = frozenset({"decode_batch", "prefill_batch", "kv_retract", "access_log"})
# (failed health checks reach ``on_health_failure`` from the run tracker, which knows what was served)
RETRACTION_STORM = 3  # retraction lines before the KV pool counts as under pressure
JIT_STALL_SECONDS = 20.0  # first prefill → first decode gap that is a stall, not a slow step
JIT_WORDS = ("JIT", "Compiling", "ninja", "nvcc")  # kernels compiled on first use
HTTP_5XX_BURST = 5  # server errors in one run before they are a finding
HTTP_5XX_SHARE = 0.05  # … and at least this share of the requests
SERIES_MIN_BUCKETS = 6  # buckets with decode lines before the series' trends are read
QUEUE_RISING_SHARE = 0.7  # the queue rose in at least this share of the steps between buckets …
QUEUE_GROWN_MIN = 10  # … to at least this many waiting requests, at least twice the first
THROUGHPUT_FALL = 0.6  # the last third's throughput at most this share of the first third's …
THROUGHPUT_LOAD_HELD = 0.9  # … with at least this share of its running requests
HEALTH_FLAPS = 3  # health-check failure episodes (the server answering in between) that are flapping
HEALTH_EPISODE_GAP = 30.0  # seconds: failures closer than this are one episode
HEALTH_PATHS = ("/health", "/health_generate", "/ping")  # a failed one of these is a failed health check


@record
class Mark:
    line: int
    ts: str | None
    text: str


@record
class ServingStats:
    """What the statistics lines of one run showed (bounded: counts, marks, a capped sample)."""

    retractions: int = 0
    retracted_reqs: int = 0
    first_retraction: Mark | None = None
    last_retraction: Mark | None = None
    new_token_ratio: tuple[float, float] | None = None  # first "a" and last "b" of "#new_token_ratio: a -> b"
    first_prefill: Mark | None = None
    first_decode: Mark | None = None
    first_decode_fields: dict[str, Any] | None = None
    first_5xx: Mark | None = None
    last_5xx: Mark | None = None
    health_lines: int = 0  # "Health check failed" lines
    health_5xx: int = 0  # 5xx answers to a health path (SGLang prints both for one failed probe)
    # failure episodes: health failures with the server answering (a batch or a good response) in
    # between count apart; the first and last failure lines
    health_episodes: int = 0
    first_health_failure: Mark | None = None
    last_health_failure: Mark | None = None
    _served_at_last_failure: int = -1
    _last_failure_time: str | None = None
    jit_mark: Mark | None = None  # the first JIT-compilation line after the first prefill
    jit_decode: Mark | None = None  # the first decode step after it
    series: Series = field(default_factory=lambda: Series())

    @property
    def health_failures(self) -> int:
        """Failed health probes (the larger count: one probe may print a line and a 503)."""
        return max(self.health_lines, self.health_5xx)

    def on_health_failure(self, served: int, now: str | None, number: int, ts: str | None, text: str,
                          answered: bool) -> None:
        """A failed health check (its line or a 5xx answer to a health path). It starts a new
        episode when the server answered since the last failure (``served``: the run's batches
        and good responses so far) at least ``HEALTH_EPISODE_GAP`` later (``now``: the log's
        latest time; access lines often print none); ``answered``: a 5xx answer, not a line."""
        if answered:
            self.health_5xx += 1
        else:
            self.health_lines += 1
        last, at = parse_timestamp(self._last_failure_time), parse_timestamp(now)
        close = last is not None and at is not None and (at - last).total_seconds() < HEALTH_EPISODE_GAP
        if served != self._served_at_last_failure and not close:
            self.health_episodes += 1
        self._served_at_last_failure, self._last_failure_time = served, now
        mark = Mark(number, ts, text)
        self.first_health_failure = self.first_health_failure or mark
        self.last_health_failure = mark

    def on_event(self, kind: str, fields: dict[str, Any], number: int, ts: str | None, text: str) -> None:
        if kind == "decode_batch":
            if self.jit_mark is not None and self.jit_decode is None:
                self.jit_decode = Mark(number, ts, text)
            if self.first_decode is None:
                self.first_decode, self.first_decode_fields = Mark(number, ts, text), fields
        elif kind == "prefill_batch":
            if self.first_prefill is None:
                self.first_prefill = Mark(number, ts, text)
        elif kind == "kv_retract":
            self.retractions += 1
            n = fields.get("n")
            self.retracted_reqs += n if isinstance(n, int) else 0
            mark = Mark(number, ts, text)
            self.first_retraction = self.first_retraction or mark
            self.last_retraction = mark
            ratio = _ratio(text)
            if ratio is not None:
                first = self.new_token_ratio[0] if self.new_token_ratio else ratio[0]
                self.new_token_ratio = (first, ratio[1])
        elif kind == "access_log" and isinstance(fields.get("status"), int) and fields["status"] >= 500:
            mark = Mark(number, ts, text)
            self.first_5xx = self.first_5xx or mark
            self.last_5xx = mark
        elif self.first_prefill is not None and self.jit_mark is None and any(word in text for word in JIT_WORDS):
            self.jit_mark = Mark(number, ts, text)


def _ratio(text: str) -> tuple[float, float] | None:
    """``#new_token_ratio: 0.7000 -> 0.9500`` of a retraction line."""
    head, sep, rest = text.partition("new_token_ratio: ")
    if not sep:
        return None
    a, sep, b = rest.partition(" -> ")
    try:
        return float(a), float(b.split(",")[0].split()[0])
    except (ValueError, IndexError):
        return None


# — the serving series ————————————————————————————————————————————————————————————

SERIES_FIELDS = ("gen_throughput", "queue_req", "token_usage", "running_req")  # _scan.c's FIGURES
TIME_PARTS = 6  # year, month, day, hour, minute, second (_scan.c's TIME_PARTS)
NO_YEAR = 2000  # the year of a time printed without one (vLLM's "MM-DD"): a leap year, so Feb 29 fits
SERIES_BUCKETS = 60  # buckets kept; more and pairs are merged
SERIES_FIRST_WIDTH = 10  # seconds per bucket at first (doubled at each merge)
_COUNTS = ("queue_req", "running_req")  # whole requests: their maxima are integers
MAX_DIGITS = 18  # a longer figure is not read (it would overflow a 64-bit integer)
_TIME = re.compile(rb"(?:(\d{4})-)?(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)")
TIME_WINDOW = 160  # the time is in a line's prefix: its first bytes
_FIGURE = frozenset(b"0123456789")

Layout = tuple[tuple[int, int], ...]  # (offset, length) of each time part, then of each figure


def layout(data: bytes, marks: tuple[tuple[bytes, ...], ...]) -> Layout | None:
    """Where a decode line (or its template: digits sit at the same places) prints its time
    parts and its ``SERIES_FIELDS`` figures (``marks``: the dialect's ``StatsMarks.series``);
    length 0 = not printed. None without a time: such a line is not in the series."""
    m = _TIME.search(data, 0, TIME_WINDOW)
    if m is None:
        return None
    spans = [(m.start(i), m.end(i) - m.start(i)) if m.start(i) >= 0 else (0, 0)
             for i in range(1, TIME_PARTS + 1)]
    for alternatives in marks:
        span = (0, 0)
        for mark in alternatives:
            at = data.find(mark)
            if at < 0:
                continue
            at += len(mark)
            end, dot = at, False
            while end < len(data) and (data[end] in _FIGURE or (data[end] == 46 and not dot)):  # 46: "."
                dot = dot or data[end] == 46
                end += 1
            if 0 < end - at <= MAX_DIGITS and data[at] in _FIGURE:
                span = (at, end - at)
            break
        spans.append(span)
    return tuple(spans)


def milli(figure: bytes) -> int:
    """``b"456.78"`` in thousandths (456780); decimals past the third are dropped."""
    if 46 not in figure:  # 46: "." (a count: the common case, read per decode line by the Python scan)
        return int(figure) * 1000
    whole, _, frac = figure.partition(b".")
    return int(whole or b"0") * 1000 + int((frac[:3] + b"000")[:3])


@functools.lru_cache(maxsize=4096)
def _days(year: bytes, month: bytes, day: bytes) -> int:
    """Days since 1970 of a printed date (a log has few: read once each)."""
    return days_from_civil(int(year) if year else NO_YEAR, int(month), int(day))


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (the arithmetic of ``_scan.c``)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m - 3 if m > 2 else m + 9) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def point(data: bytes, spans: Layout) -> tuple[int, tuple[int, ...]]:
    """The line's time (seconds since 1970 in the log's clock) and figures (milli-units, -1:
    not printed), read at ``spans``."""
    (ya, yn), (moa, mon), (da, dn), (ha, hn), (mia, min_), (sa, sn) = spans[:TIME_PARTS]
    t = (_days(data[ya:ya + yn], data[moa:moa + mon], data[da:da + dn]) * 86400
         + int(data[ha:ha + hn]) * 3600 + int(data[mia:mia + min_]) * 60 + int(data[sa:sa + sn]))
    return t, tuple(milli(data[a:a + n]) if n else -1 for a, n in spans[TIME_PARTS:])


@record
class Series:
    """A run's decode lines per time bucket of ``width`` seconds (``buckets``: key = time //
    width -> [lines, then count, sum, max of each figure], milli-units, max -1 when none)."""

    width: int = SERIES_FIRST_WIDTH
    buckets: dict[int, list[int]] = field(default_factory=dict)
    lo: int = 0
    hi: int = -1

    def add(self, t: int, figures: tuple[int, ...]) -> None:
        """One decode line at time ``t``."""
        agg = self.buckets.get(t // self.width)
        if agg is None:
            agg = self._bucket(t // self.width)
        agg[0] += 1
        for i, v in enumerate(figures):
            if v >= 0:
                j = 1 + 3 * i
                agg[j] += 1
                agg[j + 1] += v
                if v > agg[j + 2]:
                    agg[j + 2] = v

    def add_line(self, data: bytes, marks: tuple[tuple[bytes, ...], ...]) -> None:
        """One decode line read whole (the full path, ``logx watch``)."""
        spans = layout(data, marks)
        if spans is not None:
            self.add(*point(data, spans))

    def add_buckets(self, buckets: list[tuple[int, ...]], width: int) -> None:
        """What the C scan summed at ``width`` (no wider than this series'): ``(key, *agg)``."""
        for key, *agg in buckets:
            _combine(self._bucket(key * width // self.width), agg)

    def _bucket(self, key: int) -> list[int]:
        agg = self.buckets.get(key)
        if agg is not None:
            return agg
        if not self.buckets:
            self.lo = self.hi = key
        self.lo, self.hi = min(self.lo, key), max(self.hi, key)
        while self.hi - self.lo >= SERIES_BUCKETS:
            self._merge()
            key //= 2
        return self.buckets.setdefault(key, [0] + [0, 0, -1] * len(SERIES_FIELDS))

    def _merge(self) -> None:
        merged: dict[int, list[int]] = {}
        for key, agg in self.buckets.items():
            have = merged.get(key // 2)
            if have is None:
                merged[key // 2] = agg
            else:
                _combine(have, agg)
        self.buckets, self.width = merged, self.width * 2
        self.lo, self.hi = self.lo // 2, self.hi // 2

    @property
    def lines(self) -> int:
        return sum(agg[0] for agg in self.buckets.values())

    def rows(self, usage_per_unit: float = 1.0) -> list[dict[str, Any]]:
        """The buckets from first to last (empty ones included), in the units of the JSON:
        tok/s, requests, token usage as a fraction of the pool."""
        out = []
        for key in range(self.lo, self.hi + 1) if self.buckets else ():
            agg = self.buckets.get(key)
            row: dict[str, Any] = {"start": key * self.width, "decode_lines": agg[0] if agg else 0}
            for i, name in enumerate(SERIES_FIELDS):
                n, total, top = agg[1 + 3 * i: 4 + 3 * i] if agg else (0, 0, -1)
                scale = 1000 * (usage_per_unit if name == "token_usage" else 1)
                digits = 3 if name == "token_usage" else 1
                row[f"{name}_mean"] = round(total / n / scale, digits) if n else None
                row[f"{name}_max"] = (top // 1000 if name in _COUNTS else round(top / scale, digits)) if n else None
            out.append(row)
        return out

    def to_json(self, usage_per_unit: float = 1.0, with_year: bool = True) -> dict[str, Any] | None:
        """``logx.report/1``'s ``serving.series`` (README: keys, bucket size, units)."""
        if not self.buckets:
            return None
        rows = self.rows(usage_per_unit)
        first = rows[0]["start"]
        for row in rows:
            row["offset_s"] = row.pop("start") - first
        return {"bucket_seconds": self.width, "start": clock(first, with_year), "decode_lines": self.lines,
                "buckets": [{"offset_s": r.pop("offset_s"), **r} for r in rows]}

    def totals(self) -> dict[str, Any]:
        """The whole run's mean and max of each figure (milli-units summed exactly)."""
        out: dict[str, Any] = {}
        for i, name in enumerate(SERIES_FIELDS):
            aggs = [a for a in self.buckets.values() if a[1 + 3 * i]]
            n = sum(a[1 + 3 * i] for a in aggs)
            out[name] = (sum(a[2 + 3 * i] for a in aggs) / n / 1000 if n else None,
                         max(a[3 + 3 * i] for a in aggs) / 1000 if n else None)
        return out


def clock(t: int, with_year: bool = True) -> str:
    """``t`` (``point``'s seconds) as the log prints it: ``2026-03-01 00:00:01``, or
    ``03-01 00:00:01`` for a log whose times have no year."""
    text = (datetime(1970, 1, 1) + timedelta(seconds=t)).strftime("%Y-%m-%d %H:%M:%S")
    return text if with_year else text[5:]


def _combine(into: list[int], agg: list[int] | tuple[int, ...]) -> None:
    into[0] += agg[0]
    for j in range(1, len(into), 3):
        into[j] += agg[j]
        into[j + 1] += agg[j + 1]
        into[j + 2] = max(into[j + 2], agg[j + 2])
