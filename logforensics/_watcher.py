"""The ``logx watch`` loop: ``Watcher.run_loop`` pulls lines and idle ticks from ``follow.py``,
feeds every line to the incremental ``Analyzer`` (the same one ``explain`` uses) and turns what
changed into updates for a view (``render/watch.py``): a phase reached, a run started, a finding
(the same ``Finding.to_dict`` schema as ``explain --json``), the process ending, the file
truncated/rotated, and the end (an ``Outcome``).

A traceback is reported as soon as it is complete. One still open when the stream has been
idle for ``idle_flush`` seconds (the crashing process printed its last line and died) is
matched from a snapshot (``TracebackAssembler.pending``) on a throwaway ``Matcher`` seeded
with the run's hits, so a crash is never hidden by the line that never comes. Findings are
keyed (run, id — and for unclassified exceptions the traceback's first line), so a finding
seen in a snapshot is not reported again when its traceback completes.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterable, Iterator
from typing import Any

from . import _staleness
from ._analysis import Analyzer, Options, run_facts
from ._catalog import Catalog, load_catalog
from ._clock import SYSTEM_CLOCK, Clock
from ._errors import EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK
from ._findings import DecidingHits, Evidence, Finding, Matcher, rank, stage_finding
from ._follow import FollowItem, Tick
from ._gate import (
    SETTLE_SECONDS,
    Outcome,
    ProcessEnd,
    ProcessMonitor,
    Terminated,
    WatchOptions,
    display_phase,
    gate_ready,
)
from ._process_end import death_values
from ._record import replace
from ._render.watch import Renderer
from ._report import Report
from ._runs import PHASE_RANK, Run
from ._sources import RawLine, read_chunks
from ._tracebacks import Traceback

_BATCH_KINDS = frozenset({"prefill_batch", "decode_batch"})
# Events that can change a run's findings besides a new catalog hit: the named conditions look
# at endings, memory events and the phase (a phase change also triggers a check).
_TRIGGER_KINDS = frozenset({"server_args", "traceback", "ready"})


def _finding_key(f: Finding) -> tuple:
    if f.pattern is not None and f.pattern.merge == "title":  # one per title: each unknown exception's traceback
        anchor = f.traceback.first_line if f.traceback is not None else f.title
        return (f.run, f.id, anchor)
    return (f.run, f.id)


class Watcher:
    """The watch loop. ``items`` are ``RawLine``s and ``Tick``s (``follow.py``)."""

    def __init__(self, items: Iterable[FollowItem], renderer: Renderer,
                 options: WatchOptions | None = None, catalog: Catalog | None = None,
                 name: str = "<stream>", monitor: ProcessMonitor | None = None,
                 path: str | None = None, context: _staleness.Context | None = None,
                 backlog: int = 0, clock: Clock = SYSTEM_CLOCK):
        self.items = items
        self.clock = clock  # what silence, timeouts and the stale-log check's "now" are measured by
        # the first ``backlog`` bytes of ``path`` (whole lines) are read with explain's block
        # scan before ``items`` (the follower, from that byte) go on live
        self.backlog = backlog
        self.path = path  # a followed file: the stale-log detector checks the final report
        self.context = context
        self.renderer = renderer
        self.options = options or WatchOptions()
        self.catalog = catalog or load_catalog()
        self.analyzer = Analyzer(self.catalog, dialect=self.options.dialect)
        self.name = name
        self.monitor = monitor
        self.started = self.clock.monotonic()
        self.last_line_at = self.started
        self.waiting = False
        self.last_ts: str | None = None
        self.reported: set[tuple] = set()
        self.reported_list: list[Finding] = []
        self._phase_rank: dict[int, int] = {}
        self._runs_seen = 0
        self._hits_seen: dict[int, int] = {}
        self._last_phase: dict[int, str] = {}
        self._flushed_at = -1
        self._pending_hits: list = []  # hits from the last idle-flush snapshot
        self._still = False  # the last tick said the source has been still for STILL_SECONDS
        # the current run has a problem it may survive, and its last serving line when checked
        self._survivable_problem = False
        self._problem_checked_at = 0
        self._pending_tracebacks: list[Traceback] = []  # the open tracebacks it matched
        self._findings: list[Finding] = []  # the current run's findings, ranked
        self.problem_since: float | None = None
        self.process_end: ProcessEnd | None = None
        self._death_drained = False
        self._death_reported = False
        self._next_poll = self.started
        self.finished = False
        self.eof = False
        self.live = False  # caught up with what the source held when the watch started
        self.history_lines: int | None = None  # the lines it held then (None: not caught up yet)
        self.synthetic: list[Finding] = []
        self._slow_noticed = 0  # the patterns disabled for timing out already said
        self._catching_up = False  # reading the back-log (``_catch_up``)
        self._seen_hits: DecidingHits | None = None  # the current run's hits of reported findings, by finding

    # — state ——————————————————————————————————————————————————————————————

    @property
    def run(self) -> Run | None:
        runs = self.analyzer.runs
        return runs[-1] if runs else None

    @property
    def lines(self) -> int:
        return self.analyzer.lines

    @property
    def run_count(self) -> int:
        return len(self.analyzer.runs)

    def current_findings(self) -> list[Finding]:
        return rank(self._findings + [f for f in self.synthetic
                                      if self.run is None or f.run == self.run.index])

    def best_problem(self) -> Finding | None:
        return next((f for f in self.current_findings() if f.is_problem), None)

    def _ingest(self, events: list) -> None:
        disabled = self.analyzer.matcher.guard.disabled_order
        for slow in disabled[self._slow_noticed:]:  # said once, when it is dropped
            self.renderer.notice("note", f"pattern {slow.id} ({slow.source}): its regex timed out "
                                         f"{slow.timeouts}× ({slow.seconds:.2f} s); disabled for the "
                                         "rest of this log", self.last_ts)
        self._slow_noticed = len(disabled)
        interesting = trigger = False
        dialect = self.analyzer.dialect
        triggers = dialect.ending_kinds | dialect.memory_kinds | _TRIGGER_KINDS
        for e in events:
            if e.line.ts:
                self.last_ts = e.line.ts
            kind = e.kind
            if kind != "line":
                interesting = True
                if kind in triggers:
                    trigger = True
        if self._pending_hits and (not self.analyzer.events.assembler.has_open
                                   or any(e.kind == "traceback" for e in events)):
            self._clear_pending()  # the snapshot's traceback completed: its real hits count now
        runs = self.analyzer.runs
        if not runs:
            return
        if len(runs) != self._runs_seen:
            # A new run: the previous run's problems no longer decide (its own are checked below).
            self._clear_pending()
            self.problem_since = None
            for run in runs[max(self._runs_seen - 1, 0):]:
                self._check_phases(run)
                self._check_findings(run)
            for run in runs[max(self._runs_seen, 1):]:
                if run.index > 1:
                    self.renderer.new_run(run, self.last_ts)
            self._runs_seen = len(runs)
        run = runs[-1]
        hits = len(self.analyzer.matcher_for(run).hits.get(run.index, ()))
        if self._survivable_problem and run.last_serving_line > self._problem_checked_at:
            trigger = True  # served again: a survivable problem (retractions, a failed request) may be one no more
        if interesting:
            phase = run.phase
            self._check_phases(run, events)
            if phase != self._last_phase.get(run.index):
                self._last_phase[run.index] = phase
                trigger = True
        if trigger or (hits != self._hits_seen.get(run.index) and not self._only_seen_hits(run)):
            self._check_findings(run)

    def _catch_up(self, path: str, end: int) -> None:
        """The file's first ``end`` bytes through the block scan ``explain`` uses (a 1 GB log
        followed from its start catches up at explain's speed, not line by line): the lines it
        reads in full tell the watch what changed in their turn, as when they are followed."""
        self.analyzer.on_events = self._ingest  # every line read in full, in its turn
        self._catching_up = True
        try:
            with open(path, "rb") as fh:
                self.analyzer.consume(read_chunks(fh, limit=end))
        finally:
            self.analyzer.on_events = None
            self._catching_up = False
            self._seen_hits = None
        self._flush_bulk()

    def feed(self, raw: RawLine) -> None:
        """One line, through the analysis' per-line fast path for statistics lines."""
        self._ingest(self.analyzer.feed_fast(raw))

    def _flush_bulk(self) -> None:
        self._ingest(self.analyzer.flush_bulk())

    def _check_phases(self, run: Run, events: list | None = None) -> None:
        best = self._phase_rank.get(run.index, -1)
        new = [(PHASE_RANK[p], p, line) for p, line in run.phase_lines.items() if PHASE_RANK[p] > best]
        for rank_, phase, line in sorted(new):
            if phase == "serving":
                # The warmup request's batch lines come before the ready line: serving starts
                # at the first batch after it.
                if not gate_ready(run):
                    continue
                ready_at = run.phase_lines.get("ready")
                if ready_at is not None and line < ready_at:
                    later = [e.number for e in events or () if e.kind in _BATCH_KINDS
                             and e.number > ready_at]
                    if not later:
                        continue
                    line = later[0]
            self.renderer.phase(run, phase, line, self.last_ts)
            best = rank_
        self._phase_rank[run.index] = best

    def _check_findings(self, run: Run, pending: list[Traceback] | None = None) -> None:
        self._hits_seen[run.index] = len(self.analyzer.matcher_for(run).hits.get(run.index, ()))
        if pending:
            scratch = self._scratch(run)
            self._pending_tracebacks = list(pending)
            for tb in pending:
                self._pending_hits.extend(scratch.on_traceback(tb, run))
        findings = self.snapshot_findings(run)
        if run is self.run:
            self._findings = findings
            self._survivable_problem = any(f.is_problem and f.pattern is not None and f.pattern.survivable
                                           for f in findings)
            self._problem_checked_at = run.last_serving_line
        for f in findings:
            self._report(f)

    def _only_seen_hits(self, run: Run) -> bool:
        """While the back-log is read: the run's new hits only add sightings of findings already
        reported (a retraction line each few hundred lines of a long log). Instead of deriving
        the run's findings from every hit again (each time more of them), they are derived from
        the hits that decide what a finding shows (``findings.DecidingHits``); when that derivation has no
        finding not yet reported, neither has the full one: it is the watch's current findings
        (only their ``occurrences`` and later evidence lines are short of the full count, until
        the next full derivation: the file's end has one) and nothing is reported. Else (False)
        the full derivation runs, as it always did."""
        if not self._catching_up or self._pending_hits or run is not self.run:
            return False
        matcher = self.analyzer.matcher_for(run)
        hits = matcher.hits.get(run.index)
        if not hits:
            return False
        seen = self._seen_hits
        state = DecidingHits.state_of(run, len(self.reported))
        if seen is None or seen.state != state:
            seen = self._seen_hits = DecidingHits(state)
        kept = seen.update(self.reported, run, hits)
        if kept is None:
            return False
        hints = matcher.release_hints.get(run.index)
        saved = set(hints) if hints is not None else None
        matcher.hits[run.index] = kept
        try:
            findings = self.analyzer.findings(run)
        finally:
            matcher.hits[run.index] = hits
        if any(_finding_key(f) not in self.reported for f in findings):
            # the full derivation decides (with the release hints it would have started from)
            if saved is None:
                matcher.release_hints.pop(run.index, None)
            else:
                matcher.release_hints[run.index] = saved
            return False
        self._hits_seen[run.index] = len(hits)
        self._findings = findings
        self._survivable_problem = any(f.is_problem and f.pattern is not None and f.pattern.survivable
                                       for f in findings)
        self._problem_checked_at = run.last_serving_line
        return True

    def snapshot_findings(self, run: Run) -> list[Finding]:
        """``run``'s ranked findings now, including those of a traceback still open at the
        last idle flush (matched on a throwaway ``Matcher`` seeded with the run's hits)."""
        if self._pending_hits and run is self.run:
            scratch = self._scratch(run)
            scratch.hits[run.index] += self._pending_hits
            # the facts as explain's would be once the open traceback is part of the run
            seen = copy.copy(self.analyzer.told(run))
            seen.tracebacks = run.tracebacks + self._pending_tracebacks
            return scratch.findings(seen, run_facts(seen))
        return self.analyzer.findings(run)

    def _scratch(self, run: Run) -> Matcher:
        """A throwaway matcher seeded with ``run``'s hits, for a traceback still open: the
        catalog of the run's server, as explain's; what its site matches learn of the release is
        the run's (the analyzer's matcher keeps it)."""
        matcher = self.analyzer.matcher_for(run)
        scratch = Matcher(matcher.catalog)
        scratch.hits = {run.index: list(matcher.hits.get(run.index, ()))}
        scratch.release_hints = matcher.release_hints
        return scratch

    def _report(self, f: Finding) -> None:
        key = _finding_key(f)
        if key in self.reported:
            return
        self.reported.add(key)
        self.reported_list.append(f)
        self.renderer.finding(f, self.last_ts)
        if f.is_problem and self.problem_since is None and (self.run is None or f.run == self.run.index):
            self.problem_since = self.clock.monotonic()

    def _clear_pending(self) -> None:
        self._pending_hits = []
        self._pending_tracebacks = []

    def _idle_flush(self, now: float, quiet: bool = False) -> None:
        """Match a traceback still open once the writer went quiet (``quiet``: the source
        says it has been, e.g. a file last written long ago) or ``idle_flush`` s passed."""
        if not (quiet or now - self.last_line_at >= self.options.idle_flush) \
                or self._flushed_at == self.analyzer.lines:
            return
        self._flushed_at = self.analyzer.lines
        pending = self.analyzer.events.assembler.pending()
        if pending:
            if self.run is None:  # a cut log may be nothing but an open traceback: no run yet
                self.analyzer.tracker.current  # noqa: B018 - makes the run, as explain's finish would
                self._ingest([])
            run = self.analyzer.tracker.current
            self._clear_pending()
            self._check_findings(run, pending)

    def conclude(self) -> None:
        """The watch ends here (a deployment decided by another node): what is still open (a
        traceback whose lines stopped) is read as ``explain`` reads the end of the file."""
        self._finish()

    def _finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        self._flush_bulk()
        self._clear_pending()
        events = self.analyzer.finish()
        self._ingest(events)
        if self.run is not None:
            self._check_findings(self.run)

    def _death_findings(self) -> None:
        """The process ended before ready: the stale-log detector's verdict on it for a followed
        file or an input that held nothing (``process_died_without_traceback``, ``log_empty``),
        else watch's own."""
        if self._death_reported:
            return
        self._death_reported = True
        if self._detector_reads():
            status = self.report(status=True).status
            if status is not None and status.state in ("DEAD", "EMPTY") and status.findings:
                for f in status.findings:
                    if not f.run and self.run is not None:
                        f = replace(f, run=self.run.index)
                    self.synthetic.append(f)
                    self._report(f)
                return
        self._synthesize_death()

    def _detector_reads(self) -> bool:
        """Whether the stale-log detector judges this source: a followed file, or an input that
        held nothing (an empty stream is EMPTY, as an empty file is)."""
        return self.path is not None or self.analyzer.bytes == 0

    def _synthesize_death(self) -> Finding | None:
        """A finding for a process (or input stream) that ended before ready with no problem
        finding: the built-in ``process_gone`` pattern, with what watch saw of the end."""
        end = self.process_end or (ProcessEnd(None, source="stream") if self.eof else None)
        run = self.run
        if end is None or gate_ready(run) or self.best_problem() is not None:
            return None
        stream = end.source == "stream"
        values = death_values(f"pid {end.pid}" if end.pid else "The process", end.signal, end.exit_code,
                              run.last_line if run is not None else 0,
                              "the input stream ended" if stream else None, recorded=not stream)
        evidence = [Evidence(n, text) for n, text in list(run.tail)[-3:]] if run is not None else []
        finding = stage_finding(self.catalog, "process_gone", values, evidence, "process_end",
                                run.index if run else 1, run.phase if run is not None else "launch",
                                {"exit_code": end.exit_code, "signal": end.signal, "pid": end.pid})
        self.synthetic.append(finding)
        self._report(finding)
        return finding

    def report(self, status: bool = False) -> Report:
        """The explain-style report of what was seen: the last run, its findings as of now
        (an open traceback's snapshot and watch's own process-death finding included). With
        ``status``, a followed file also goes through the stale-log detector, as in
        ``explain``, so the exit code is the one ``explain`` would give."""
        def findings_of(run: Run) -> list[Finding]:
            return self.snapshot_findings(run) + [f for f in self.synthetic if f.run == run.index]

        if status and self._detector_reads():
            opts = Options(pid=self.options.pid, since=self.options.since,
                           silence=self.options.silence or 120.0)
            context = self.context or _staleness.prepare(self.path, opts)
            try:
                return self.analyzer.report(self.name, Options(), findings_of, freshness=_staleness.Check(
                    context, opts, self.catalog, now=self.clock.time()))
            except Exception:  # noqa: BLE001 - the detector is advisory here; never lose the end
                pass
        return self.analyzer.report(self.name, Options(), findings_of)

    # — decisions ————————————————————————————————————————————————————————————

    def _outcome(self, reason: str, code: int | None = None, message: str = "",
                 **extra: Any) -> Outcome:
        report = self.report(status=reason in ("exited", "eof", "interrupted")
                             or (code is None and reason in ("timeout", "silence")))
        for f in report.status.findings if report.status is not None else []:
            if report.run is None or f.run in (0, report.run.index):
                self._report(f)
        primary = report.primary
        if code is None:
            code = report.exit_code
        verdict = report.verdict
        if reason == "failed":
            verdict, primary = "failed", self.best_problem() or primary
        return Outcome(reason, code, verdict, primary, self.run, self.process_end, message, extra)

    def _stale_history(self, line: int) -> Outcome | None:
        """A gate decided on ``line``, which was already in the file when the watch started:
        make sure it is this run's (the stale-log detector), not a previous run's output."""
        if self.path is None or (self.history_lines is not None and line > self.history_lines):
            return None
        report = self.report(status=True)
        if report.verdict != "stale":
            return None
        for f in report.status.findings if report.status is not None else []:
            self._report(f)
        why = report.status.summary if report.status is not None else "an earlier run's output"
        return Outcome("stale", EXIT_INCONCLUSIVE, "stale", report.primary, self.run, self.process_end,
                       f"the log holds an earlier run's output: {why}")

    def _settled(self, now: float, idle: bool) -> bool:
        """A problem can decide the gate: all that was written has been read (``idle``) or it
        has stood ``SETTLE_SECONDS`` while lines still arrive. A traceback still open may name
        the cause the problem only announces ("EngineCore failed to start." comes before its
        traceback): it gets until the idle flush has matched it. One that stopped inside its
        frames (no exception line yet) decides once the source has been still (``STILL_SECONDS``):
        a loaded machine can pause a writer mid-traceback for longer than the idle flush."""
        waited = now - self.problem_since if self.problem_since is not None else 0.0
        if any(tb.message_missing for tb in self._pending_tracebacks):
            return self._still  # stopped inside its frames: a dead writer, or a paused one
        if self.analyzer.events.assembler.has_open and not self._pending_hits:
            return waited >= SETTLE_SECONDS + self.options.idle_flush
        return idle or waited >= SETTLE_SECONDS

    def _where(self, what: str, verb: str) -> str:
        run = self.run
        phase = display_phase(run) if run is not None else "launch"
        last = self.analyzer.lines
        where = f"{verb} phase {phase}" + (f" (last line {last})" if last else " (no line yet)")
        return f"{what}; {where}"

    def _decide(self, now: float, idle: bool) -> Outcome | None:
        o = self.options
        run = self.run
        until = o.until
        died = self.process_end is not None and self._death_drained
        if until == "ready":
            ended = self.eof or died
            if ended:
                self._finish()
            # While the history is still being read nothing is decided: the gate judges the
            # run the log is about once it has read what the log already holds, as explain does.
            if self.live or ended:
                run = self.run
                problem = self.best_problem()
                if problem is not None and (ended or self._settled(now, idle)):
                    if not ended or gate_ready(run):
                        at = problem.evidence[0].line if problem.evidence else self.analyzer.lines
                        return self._stale_history(at) or self._outcome(
                            "failed", EXIT_FAILURE, f"{problem.id}: {problem.title}")
                elif problem is None and run is not None and gate_ready(run):
                    line = run.phase_lines.get("ready") or run.phase_lines.get("serving") or 0
                    return self._stale_history(line) or self._outcome(
                        "ready", EXIT_OK, f"the server is ready (line {line})")
            if ended:
                self._death_findings()
                problem = self.best_problem()
                what = self.process_end.describe() if self.process_end else "the input stream ended"
                msg = f"{what} before the server was ready"
                if problem is not None:
                    msg += f": {problem.id}: {problem.title}"
                return self._outcome("exited" if self.process_end else "eof", EXIT_FAILURE, msg)
        elif self.eof or (died and until == "exit"):
            self._finish()
            if self.process_end is not None and (self.process_end.abnormal or not gate_ready(self.run)):
                self._death_findings()
            what = self.process_end.describe() if self.process_end else "the input stream ended"
            return self._outcome("exited" if self.process_end else "eof", None, what)
        elif died and not self._death_reported and not gate_ready(run):
            self._death_findings()  # without --until: say so, and keep following (tail -F)
        gate = until is not None
        if o.timeout is not None and now - self.started >= o.timeout:
            return self._outcome("timeout", EXIT_INCONCLUSIVE if gate else None,
                                 self._where(f"no decision after {o.timeout:g} s", "still in"),
                                 waited=round(now - self.started, 3))
        if o.silence is not None and now - self.last_line_at >= o.silence:
            return self._outcome("silence", EXIT_INCONCLUSIVE if gate else None,
                                 self._where(f"no new line for {o.silence:g} s", "stalled in"),
                                 silent_for=round(now - self.last_line_at, 3))
        return None

    def _poll_process(self, now: float) -> None:
        if self.monitor is None or self.process_end is not None or now < self._next_poll:
            return
        self._next_poll = now + self.options.process_poll
        end = self.monitor.poll()
        if end is not None:
            self.process_end = end
            self.renderer.process(end, self.last_ts)

    # — the loop ————————————————————————————————————————————————————————————

    def run_loop(self) -> Outcome:
        """Consume items until a decision (or Ctrl-C); returns how it ended."""
        self.renderer.start(self)
        iterator: Iterator[FollowItem] = iter(self.items)
        outcome: Outcome | None = None
        try:
            if self.backlog and self.path is not None:
                self._catch_up(self.path, self.backlog)
            for item in iterator:
                outcome = self.step(item)
                if outcome is not None:
                    break
            else:
                outcome = self.exhausted()
        except KeyboardInterrupt as exc:
            outcome = self.interrupted(exc)
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()
        return outcome

    def step(self, item: FollowItem) -> Outcome | None:
        """One line or tick of the source; the outcome once the watch is decided."""
        now = self.clock.monotonic()
        idle = False
        if isinstance(item, RawLine):
            self.waiting = False
            self._still = False
            if item.eol:  # a line without newline comes once the writer went quiet
                self.last_line_at = now
            self.feed(item)
        else:
            idle = self._on_tick(item, now)
        self._poll_process(now)
        outcome = self._decide(now, idle)
        if outcome is None:
            self.renderer.refresh(self)
        return outcome

    def exhausted(self) -> Outcome:
        """The source ended (a pipe's EOF): decide on everything read."""
        self.eof = True
        outcome = self._decide(self.clock.monotonic(), True)
        if outcome is None:  # pragma: no cover - at the end of the source every mode decides
            self._finish()
            outcome = self._outcome("eof")
        return outcome

    def interrupted(self, exc: KeyboardInterrupt) -> Outcome:
        """Ctrl-C or SIGTERM: the summary of what was read."""
        self._finish()
        how = "stopped (SIGTERM)" if isinstance(exc, Terminated) else "stopped (Ctrl-C)"
        return self._outcome("interrupted", None, how)

    def _on_tick(self, tick: Tick, now: float) -> bool:
        kind = tick.kind
        if kind == "eof":
            self.eof = True
            return True
        if kind == "waiting":
            if not self.waiting:
                self.waiting = True
                self.renderer.notice("waiting", f"for {self.name} to appear")
            if self.process_end is not None:
                self._death_drained = True
            return True
        if kind in ("truncated", "rotated"):
            self.renderer.notice(kind, tick.detail, self.last_ts)
            return False
        if kind == "opened":
            self.waiting = False
            return False
        # idle: everything the source holds has been read
        if not self.live:
            self.live = True
            self.history_lines = self.analyzer.lines
        self._flush_bulk()
        if self.process_end is not None:
            self._death_drained = True
        self._still = tick.detail == "still"
        if tick.detail != "partial":  # a line is still arriving: the open traceback is not whole
            self._idle_flush(now, quiet=tick.detail in ("quiet", "still"))
        return True

    def execute(self) -> int:
        """Run the loop, print the end, and return the exit code."""
        outcome = self.run_loop()
        self.renderer.end(outcome, self)
        return outcome.exit_code



