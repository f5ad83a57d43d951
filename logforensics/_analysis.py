"""The analysis: stream a log through every stage and build a ``Report``.

``Analyzer`` is incremental (``feed`` raw lines, ``report()`` at any time) so the same code
serves ``logx explain`` (a whole file) and ``logx watch`` (a growing one). ``explain()`` is the
one-call library entry point.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any

from . import _serving_findings, _staleness
from ._catalog import Catalog, load_catalog
from ._dialects import DEFAULT, DETECT_LINES, Detection, Dialect, detect, given
from ._errors import RunNotFoundError, SourceError
from ._events import Event
from ._fastpath import FastPath
from ._findings import Finding, Matcher, rank
from ._lines import visible_text
from ._memory import build_ledger, memory_facts
from ._pipeline import EventStream, Source
from ._record import record
from ._report import Report
from ._runs import PHASE_RANK, Run, RunTracker
from ._sources import RawLine, check_readable, read_chunks

_FACTS = "run_facts"  # the facts' key in ``Run.derived``


def run_facts(run: Run) -> dict[str, Any]:
    """Values for the catalog's ``{placeholders}``. Kept in the run with what they were read
    from (its memory ledger, arguments, release, tracebacks; its last line too when its
    server's facts read the run's tail): a followed log derives its findings again at each
    re-sighted warning, and the memory sentences cost most of that."""
    ledger = build_ledger(run)
    state = (len(run.args), run.model, run.model_class, run.server_version, run.version_bounds,
             len(run.tracebacks), run.last_line if run.dialect.facts_read_tail else None)
    kept = run.derived.get(_FACTS)
    if kept is not None and kept[0] is run and kept[1] is ledger and kept[2] == state:
        return dict(kept[3])
    facts = _read_facts(run)
    run.derived[_FACTS] = (run, ledger, state, facts)
    return dict(facts)


def _read_facts(run: Run) -> dict[str, Any]:
    facts: dict[str, Any] = {k: v for k, v in run.args.items()
                             if isinstance(v, str | int | float | bool)}
    facts.update(run.dialect.facts.wording)  # the server's own words for shared patterns' placeholders
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


DETECT_BYTES = 1 << 16  # the dialect is detected from the first lines in this many bytes


@record(eq=False)
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
        self._native_scan = native_scan
        self.lines = 0
        self.bytes = 0
        self._held: list[RawLine] | None = []  # lines held for detection (None: settled)
        # told the events of every line read in full, as it is read (logx watch, catching up on
        # a file's back-log through consume)
        self.on_events: Callable[[list[Event]], None] | None = None
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
        self.fast = FastPath(dialect, self.events, self.tracker, feed=self.feed, flush=self.flush_bulk,
                             line_specs=self.matcher.catalog.line_specs, native=self._native_scan)

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
        if self.on_events is not None:
            self.on_events(out)
        return out

    def consume(self, chunks) -> None:
        """Read a whole input (an iterable of byte chunks) on the statistics fast path
        (``FastPath.consume``): the same results as feeding it line by line."""
        if self._held is not None:
            chunks = self._detect_from_first_chunk(iter(chunks))
        self.lines, self.bytes = self.fast.consume(chunks, self.lines, self.bytes)

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

    def feed_fast(self, raw: RawLine) -> list[Event]:
        """``feed`` for one line at a time (``logx watch``), with the statistics fast path:
        while no traceback is open, a batch-stats or HTTP-200 line is only counted; the
        stretch's representatives go through the full pipeline before the next other line
        (or at ``flush_bulk``). Returns the events produced, as ``feed`` does."""
        if self._held is not None:
            return self.feed(raw)
        if self.fast.take(raw):
            self.lines, self.bytes = raw.number, raw.offset + len(raw.data) + 1
            return []
        return self.flush_bulk() + self.feed(raw)

    def flush_bulk(self) -> list[Event]:
        """Feed the pending stretch of statistics lines' representatives and count the rest;
        returns the representatives' events (and those of lines held for detection)."""
        if self._held is not None:
            return self.settle()
        if not self.fast.bulk.count:
            return []
        lines, size = self.lines, self.bytes
        events = self.fast.flush_stretch()
        self.lines, self.bytes = lines, size
        return events

    def finish(self) -> list[Event]:
        settled = self.settle()
        if self.fast.bulk.count:
            self.flush_bulk()
        out = self.events.finish()
        for event in out:
            self._dispatch(event)
        width = self.events.cut_width()
        if width:
            for run in self.runs:
                self.matcher_for(run).reread_cut(run, width)
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
        """``run``'s ranked findings, read from the run as the findings so far tell it (the
        releases its failure-site matches allow: the flags' spellings)."""
        matcher = self.matcher_for(run)
        told = run.with_release_hints(matcher.release_hints.get(run.index, set()))
        facts = run_facts(told)
        return _serving_findings.findings(told, matcher.findings(told, facts), matcher.catalog)

    def told(self, run: Run) -> Run:
        """``run`` with what its findings learned of its release (``Run.with_release_hints``)."""
        return run.with_release_hints(self.matcher_for(run).release_hints.get(run.index, set()))

    def report(self, name: str, options: Options | None = None,
               findings_of: Callable[[Run], list[Finding]] | None = None,
               freshness: _staleness.Check | None = None) -> Report:
        """The report of what was read: the run ``options`` asks for and its findings
        (``findings_of(run)``, default ``findings``: ``logx watch`` adds what only it sees),
        with the stale-log detector's verdict on them when ``freshness`` is given (its findings
        lead the run's: the report is built once)."""
        options = options or Options()
        if self._held is not None:
            self.settle()
        read_runs = self.runs
        index = options.run_index if options.run_index is not None else len(read_runs)
        read = read_runs[index - 1] if read_runs and 1 <= index <= len(read_runs) else None
        if self.start_offset is not None and self.start_line is None and options.run_index is None:
            read = None  # the run of interest has not written a line yet: older runs are not it
        findings = rank((findings_of or self.findings)(read)) if read is not None else []
        runs = [self.told(r) for r in read_runs]  # as the findings tell them (their release)
        run = runs[index - 1] if read is not None else None
        primary = next((f for f in findings if f.is_problem), None)
        if run is not None and primary is not None and primary.phase in PHASE_RANK:
            told = run
            run = told.reached(primary.phase, primary.evidence[0].line if primary.evidence else told.last_line)
            runs = [run if r is told else r for r in runs]
        status = None
        if freshness is not None:
            status = _staleness.decide(freshness, _staleness.Reading(
                runs=runs, run=run, findings=findings, detection=self.detection, lines=self.lines, bytes=self.bytes))
            findings = _staleness.lead(findings, status)
        return Report(file=name, runs=runs, run=run, findings=findings, status=status,
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
    if context is None and options.status and analyzer.bytes == 0:
        context = _staleness.prepare(None, options)  # an empty stream is EMPTY, as an empty file is
    freshness = _staleness.Check(context, options, analyzer.catalog) if context is not None else None
    return analyzer.report(name, options, freshness=freshness)


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
