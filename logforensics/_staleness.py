"""Stage 5b — the stale-log detector: is this log the output of the run you care about?

Before diagnosing anything, logx says which of these it is looking at, with the facts behind it:

* ``FRESH``  — the log is being / was written by the run of interest (``verified: false`` when
  nothing about a process is known and nothing in the file contradicts it);
* ``STALE``  — the content predates that run (``log_stale``): the file's mtime or its last
  timestamp is older than the process start (``--pid``, ``--since``, sidecar), or the PIDs
  printed in the log belong to another process;
* ``EMPTY``  — the log (or, after ``logx run --append``, this run's part of it) has no bytes
  (``log_empty``);
* ``SILENT`` — the process is alive but the log has not grown for ``silence`` seconds while
  the run is still starting up (``startup_hang``);
* ``DEAD``   — the process is gone, the run ended mid-startup with no traceback and no ready
  line (``process_died_without_traceback``).

The facts come from the file (size, mtime), the log (its timestamps: local naive times, read in
the local timezone; the PIDs it printed), the process table (``procinfo``: alive, start time;
``/proc/PID/fd/1`` and ``/2``: which file a process writes to) and the sidecar that
``logx run`` writes next to the log (PID, start, exit code or signal, byte offset of the run).

The inputs that do not depend on the log are gathered before it is read; the verdict is a
findings stage, decided between the run's catalog findings and the report, so the report is built
once, with its status, and never rewritten::

    check = Check(prepare(path, options), options)   # sidecar + byte offset of the run of interest
    analyzer.start_at(check.context.offset)          # the analysis reads from there
    report = analyzer.report(name, options, freshness=check)   # decide() + lead(), then the Report
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from datetime import datetime
from typing import Any, NamedTuple

from ._catalog import Catalog
from ._clock import TOLERANCE, age, duration, epoch, iso, log_epoch
from ._dialects import DEFAULT, DIALECTS, Detection, Dialect
from ._findings import Evidence, Finding, rank, stage_finding
from ._launcher import Sidecar, read_sidecar
from ._process_end import death_values
from ._procinfo import (
    ProcessInfo,
    holds_file,
    live_servers,
    process_info,
    processes_writing,
    related,
    std_streams,
)
from ._record import field, record
from ._report import Report
from ._runs import Run

STATES = ("FRESH", "STALE", "EMPTY", "SILENT", "DEAD")
# the stages of the built-in patterns (patterns/builtin/) whose findings are the detector's verdicts
VERDICT_STAGES = ("empty_log", "stale_log", "silent_process", "process_gone")
STATUS_SCHEMA = "logx.status/1"
CLOCK_SKEW_LIMIT = 600.0  # log times this far after the file's mtime: the log's clock/timezone differs
STARTUP_WINDOW = 2 * 3600.0  # a printed PID's process started at most this long before the run's first line
SIDECAR_START_WINDOW = (-5.0, 30.0)  # server start relative to the sidecar's started_at (PID reuse check)
SIDECAR_AFTER_END = 10.0  # log writes this long after the sidecar's server ended come from someone else
EVIDENCE_TAIL = 5
# — public data types ————————————————————————————————————————————————————————————————


@record(eq=False)
class Context:
    """What is known before the log is read: the sidecar and where the run of interest starts."""

    path: str | None
    sidecar: Sidecar | None = None  # a valid sidecar for this log (None when absent or ignored)
    sidecar_note: str | None = None  # why a sidecar next to the log was ignored
    offset: int = 0  # byte offset where the run of interest starts (sidecar log_offset)


@record(eq=False)
class Status:
    """The detector's verdict on the log itself, with the facts behind it."""

    state: str  # one of STATES
    verified: bool  # freshness proven by a process/sidecar/--since check (not just "nothing contradicts")
    facts: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)  # one sentence per fact that decided
    findings: list[Finding] = field(default_factory=list)

    @property
    def summary(self) -> str:
        return self.reasons[0] if self.reasons else self.state

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "verified": self.verified,
            "reasons": self.reasons,
            "facts": self.facts,
            "findings": [f.id for f in self.findings],
        }


# — entry points ————————————————————————————————————————————————————————————————————


def prepare(path: str | os.PathLike | None, options: Any = None) -> Context:
    """Read the sidecar of ``path`` (``logx run``) and decide where the run of interest starts.

    A sidecar is ignored (with a note) when it names another log, or when the log is now
    shorter than the offset it recorded (the file was truncated or replaced since)."""
    if path is None or os.fspath(path) == "-":
        return Context(path=None)
    path = os.fspath(path)
    ctx = Context(path=path)
    sidecar = read_sidecar(path)
    if sidecar is None:
        return ctx
    if sidecar.log and not _same_file(sidecar.log, path):
        ctx.sidecar_note = f"sidecar {sidecar.path} describes {sidecar.log}, not this file: ignored"
        return ctx
    pid = getattr(options, "pid", None)
    if pid is not None and sidecar.pid is not None and pid != sidecar.pid:
        ctx.sidecar_note = (f"sidecar {sidecar.path} describes pid {sidecar.pid}; --pid {pid} given: "
                            "the sidecar is not used")
        return ctx
    with contextlib.suppress(OSError):
        st = os.stat(path)
        if sidecar.log_offset > st.st_size:
            ctx.sidecar_note = (f"sidecar {sidecar.path} says its run starts at byte {sidecar.log_offset} "
                                f"but the log has {st.st_size} bytes (truncated or replaced since): ignored")
            return ctx
        ended = epoch(sidecar.ended_at_dt)
        if ended is not None and st.st_mtime > ended + SIDECAR_AFTER_END:
            ctx.sidecar_note = (f"sidecar {sidecar.path} describes pid {sidecar.pid}, which ended {iso(ended)}, "
                                f"but the log was written {iso(st.st_mtime)}: another process wrote it; ignored")
            return ctx
    ctx.sidecar = sidecar
    ctx.offset = max(0, sidecar.log_offset)
    return ctx


class Check(NamedTuple):
    """The freshness inputs known before the log is read: its sidecar and run offset
    (``context``), what the caller knows (``options``: ``pid``, ``since``, ``silence``, as an
    ``analysis.Options``; absent attributes mean unknown), where the verdicts' patterns come from
    (``catalog``: its own ``found_by`` patterns, else the bundled ones) and the time of the check
    (``now``; None: when it is decided)."""

    context: Context
    options: Any = None
    catalog: Catalog | None = None
    now: float | None = None


class Reading(NamedTuple):
    """What the analysis read, as the detector decides on it: the runs, the run of interest and
    its catalog findings, the detected dialect, and how much was read (a stream has no size)."""

    runs: list[Run]
    run: Run | None
    findings: list[Finding]
    detection: Detection | None
    lines: int
    bytes: int


def decide(check: Check, reading: Reading) -> Status:
    """FRESH / STALE / EMPTY / SILENT / DEAD for what was read of ``check.context.path`` (None:
    a stream, so the checks that need an mtime are skipped). Never raises on /proc races."""
    now = time.time() if check.now is None else check.now
    return _Assessment(check.context, reading, check.options, now, check.catalog).decide()


def lead(findings: list[Finding], status: Status) -> list[Finding]:
    """The run's catalog ``findings`` with the detector's leading.

    A finding whose pattern ``yields_to_cause`` (``startup_hang``) follows a catalog root cause
    when there is one (a crashed rank explains the hang); the other detector findings always
    come first."""
    if not status.findings:
        return findings
    own = {f.id for f in status.findings}
    catalog = [f for f in findings if f.id not in own]
    first = [f for f in status.findings if not (f.pattern is not None and f.pattern.yields_to_cause
                                                and any(c.is_problem for c in catalog))]
    return first + rank(catalog + [f for f in status.findings if f not in first])


def status_json(report: Report) -> dict[str, Any]:
    """The short JSON of ``logx status`` / ``explain --status``."""
    status = report.status
    return {
        "schema": STATUS_SCHEMA,
        "file": report.file,
        "verdict": report.verdict,
        "exit_code": report.exit_code,
        "explained_run": report.run.index if report.run else None,
        "runs": len(report.runs),
        "primary": report.primary.id if report.primary else None,
        "status": status.to_dict() if status is not None else None,
        "findings": [f.to_dict() for f in (status.findings if status is not None else [])],
    }


# — the decision ——————————————————————————————————————————————————————————————————————


@record(eq=False)
class _Subject:
    """The process the log should belong to."""

    pid: int
    source: str  # "--pid", "sidecar", "printed in the log", "has the log open"
    info: ProcessInfo | None
    alive: bool
    start: float | None = None  # epoch seconds
    writes_log: bool | None = None  # the process has this log open (None: unknown)
    writes_to: list[str] = field(default_factory=list)
    note: str | None = None

    @property
    def name(self) -> str:
        return f"pid {self.pid}" if self.pid else "the command (it never started)"


class _Assessment:
    def __init__(self, ctx: Context, reading: Reading, options: Any, now: float, catalog: Catalog | None = None):
        self.ctx = ctx
        self.catalog = catalog
        self.reading = reading
        self.options = options
        self.now = now
        self.silence = float(getattr(options, "silence", 120.0) or 120.0)
        self.facts: dict[str, Any] = {"checked_at": iso(now)}
        self.reasons: list[str] = []
        self.sidecar = ctx.sidecar
        self.run: Run | None = reading.run
        detection = reading.detection
        self.dialect: Dialect = detection.dialect if detection is not None else DEFAULT
        # whose live processes can have written this log: its server's; any server's when
        # nothing in the log said which (an empty log, a guess)
        self.servers: tuple[Dialect, ...] = (self.dialect,) if detection is not None \
            and detection.confidence != "guess" else tuple(DIALECTS.values())
        runs = reading.runs
        self.is_last = bool(self.run is not None and runs and self.run is runs[-1])
        self.path = ctx.path
        self.stat = _stat(self.path)
        self.mtime = self.stat.st_mtime if self.stat is not None else None
        self.log_id = (self.stat.st_dev, self.stat.st_ino) if self.stat is not None else None
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self.ts_reliable = False
        self.time_checked = False
        self.pid_missing = False  # --pid names no process on this host

    # — facts ——————————————————————————————————————————————————————————————————
    def _file_facts(self) -> None:
        f = self.facts
        if self.stat is None:
            f["source"] = "stream"
            f["size_bytes"] = self.reading.bytes
        else:
            f["source"] = "file"
            f["size_bytes"] = self.stat.st_size
            f["mtime"] = iso(self.mtime)
            f["mtime_age_s"] = age(self.now, self.mtime)
        f["runs"] = len(self.reading.runs)
        f["explained_run"] = self.run.index if self.run else None
        if self.run is not None:
            f["phase"] = self.run.phase
            f["ready"] = self.run.ready
            f["last_line"] = self.run.last_line

    def _time_facts(self) -> None:
        """Log timestamps of the explained run, and whether they can be trusted."""
        run = self.run
        self.first_ts = log_epoch(run.started_at) if run else None
        self.last_ts = log_epoch(run.ended_at) if run else None
        self.ts_reliable = self.last_ts is not None
        if self.last_ts is None:
            return
        self.facts["log_first_time"] = iso(self.first_ts)
        self.facts["log_last_time"] = iso(self.last_ts)
        self.facts["log_last_time_age_s"] = age(self.now, self.last_ts)
        ref = self.mtime if (self.mtime is not None and self.is_last) else self.now
        skew = self.last_ts - ref
        if skew > CLOCK_SKEW_LIMIT:
            self.ts_reliable = False
            self.facts["clock_skew_s"] = round(skew)
            hours = skew / 3600
            tz = " (a timezone difference?)" if abs(hours - round(hours)) < 0.05 else ""
            self.facts["clock_note"] = (f"the log's last timestamp is {duration(skew)} after the file was last "
                                        f"written{tz}: its clock differs from this host's, so log times are "
                                        "not compared")

    def _sidecar_facts(self) -> None:
        sc = self.sidecar
        if self.ctx.sidecar_note:
            self.facts["sidecar_note"] = self.ctx.sidecar_note
        if sc is None:
            return
        d: dict[str, Any] = {"path": str(sc.path) if sc.path else None, "pid": sc.pid,
                             "started_at": _sc_time(sc.started_at_dt), "ended_at": _sc_time(sc.ended_at_dt),
                             "exit_code": sc.exit_code, "signal": sc.signal, "log_offset": sc.log_offset,
                             "command": " ".join(sc.command)[:300]}
        if sc.error:
            d["error"] = sc.error
        self.facts["sidecar"] = d
        if self.ctx.offset:
            self.facts["bytes_before_run"] = self.ctx.offset
            self.facts["runs_before_offset"] = sum(1 for r in self.reading.runs
                                                   if self.run is None or r.index < self.run.index)

    # — the process ————————————————————————————————————————————————————————————
    def _subject(self) -> _Subject | None:
        pid = getattr(self.options, "pid", None)
        if pid is not None:
            info = process_info(pid)
            s = _Subject(pid, "--pid", info, bool(info and info.alive), epoch(info.start_time if info else None))
            return self._with_fds(s)
        if self.sidecar is not None and self.sidecar.pid is not None:
            return self._sidecar_subject(self.sidecar)
        if self.sidecar is not None and self.sidecar.finished:  # the command could not be started
            return _Subject(0, "sidecar", None, False, epoch(self.sidecar.started_at_dt), note=self.sidecar.error)
        run = self.run
        printed = list(run.pids) if run is not None else []
        checks = []
        for p in printed:
            info = process_info(p)
            ok, why = self._plausible_printed(info)
            checks.append({"pid": p, "alive": bool(info and info.alive), "this_run": ok,
                           **({"note": why} if why else {})})
            if ok and info is not None:
                self.facts["printed_pids"] = checks
                s = _Subject(p, "printed in the log", info, True, epoch(info.start_time))
                return self._with_fds(s)
        if checks:
            self.facts["printed_pids"] = checks
        writer = self._live_writer()
        if writer is not None:
            return writer
        if printed and not any(c["alive"] for c in checks):
            return _Subject(printed[-1], "printed in the log", None, False,
                            note="no process with this PID runs on this host (if the log comes from "
                                 "another machine, this check does not apply)")
        return None

    def _sidecar_subject(self, sc: Sidecar) -> _Subject:
        pid = sc.pid
        assert pid is not None
        info = process_info(pid)
        supervisor = sc.supervisor_pid
        if not sc.finished and not (info and info.alive) and supervisor is not None:
            # The server just exited: give the supervisor a moment to record how.
            sup = process_info(supervisor)
            deadline = time.monotonic() + 1.0
            while sup is not None and sup.alive and time.monotonic() < deadline:
                time.sleep(0.02)
                fresh = read_sidecar(self.path) if self.path else None
                if fresh is not None and fresh.finished and fresh.pid == pid:
                    self.sidecar = sc = fresh
                    self._sidecar_facts()
                    break
                sup = process_info(supervisor)
        alive = bool(info and info.alive) and not sc.finished
        start = epoch(info.start_time if info else None)
        note = None
        launched = epoch(sc.started_at_dt)
        if alive and start is not None and launched is not None:
            lo, hi = SIDECAR_START_WINDOW
            if not lo <= start - launched <= hi:
                alive, note = False, (f"pid {pid} now belongs to another process (started "
                                      f"{iso(start)}): the server is gone")
        if not alive and not sc.finished:
            sup = process_info(sc.supervisor_pid) if sc.supervisor_pid else None
            if not (sup and sup.alive):
                note = (note or "") + ("; " if note else "") + (
                    "the sidecar never recorded the end (the logx supervisor was killed too, e.g. "
                    "SIGKILL or a reboot): how the server ended is unknown")
        s = _Subject(pid, "sidecar", info if alive else None, alive, launched if launched is not None else start,
                     writes_log=True if alive else None, note=note)
        if alive:
            self._with_fds(s)
        return s

    def _with_fds(self, s: _Subject) -> _Subject:
        if not s.alive:
            return s
        s.writes_to = sorted({t for t, _ in std_streams(s.pid).values()})
        if self.log_id is not None:
            s.writes_log = holds_file(s.pid, self.log_id)
        return s

    def _plausible_printed(self, info: ProcessInfo | None) -> tuple[bool, str | None]:
        """Is the live process behind a printed PID the one that printed it (not a reused PID)?"""
        if info is None or not info.alive:
            return False, None
        if self.log_id is not None and holds_file(info.pid, self.log_id):
            return True, None
        start = epoch(info.start_time)
        if start is None:
            return False, "start time unreadable"
        if self.ts_reliable and self.first_ts is not None and self.last_ts is not None:
            if self.first_ts - STARTUP_WINDOW - TOLERANCE <= start <= self.last_ts + TOLERANCE:
                return True, None
            return False, f"a live process has this PID but started {iso(start)}, outside this run's times"
        if self.mtime is not None and start <= self.mtime + TOLERANCE and \
                self.dialect.server_command.search(info.command_line or info.comm):
            return True, None
        return False, "a live process has this PID but nothing ties it to this log"

    def _live_writer(self) -> _Subject | None:
        """A live process whose stdout/stderr is this very file (the root one of a process tree)."""
        if self.log_id is None:
            return None
        pids = processes_writing(self.log_id)
        if not pids:
            return None
        infos = [i for i in (process_info(p) for p in pids) if i is not None and i.alive]
        if not infos:
            return None
        roots = [i for i in infos if i.ppid not in pids] or infos
        root = min(roots, key=lambda i: (epoch(i.start_time) or 0.0, i.pid))
        self.facts["writers"] = [i.pid for i in infos][:20]
        return _Subject(root.pid, "has the log open", root, True, epoch(root.start_time), writes_log=True,
                        writes_to=[os.path.abspath(str(self.path))])

    def _subject_facts(self, s: _Subject) -> None:
        d: dict[str, Any] = {"pid": s.pid, "source": s.source, "alive": s.alive}
        if s.start is not None:
            d["started_at"] = iso(s.start)
            d["age_s"] = age(self.now, s.start)
        if s.info is not None and s.info.cmdline:
            d["command"] = s.info.command_line[:300]
        if s.writes_to:
            d["writes_to"] = s.writes_to
        if s.writes_log is not None:
            d["writes_this_log"] = s.writes_log
        if s.note:
            d["note"] = s.note
        self.facts["process"] = d

    def _owners(self) -> set[int]:
        """The users whose processes can be this log's writer: this one and the file's owner."""
        owners = {os.getuid()}
        if self.stat is not None:
            owners.add(self.stat.st_uid)
        return owners

    # — decision ——————————————————————————————————————————————————————————————
    def decide(self) -> Status:
        self._file_facts()
        self._time_facts()
        self._sidecar_facts()
        since = getattr(self.options, "since", None)
        if since is not None:
            self.facts["since"] = iso(since)
        subject = self._subject()
        if subject is not None:
            self._subject_facts(subject)
        if subject is not None and subject.source == "--pid" and subject.info is None:
            # Nothing to compare with: STALE from the log's other PIDs would be a guess.
            self.pid_missing = True
            self.facts["process"].update(exists=False, note="no such process on this host")
            self.reasons.append(f"no process with pid {subject.pid} exists on this host (it ended, or the "
                                "pid is wrong): its start time and open files cannot be checked")
        self.facts["silence_threshold_s"] = self.silence
        size = self.stat.st_size if self.stat is not None else self.reading.bytes
        region = size - self.ctx.offset
        if self.ctx.offset:
            self.facts["bytes_since_start"] = max(0, region)
        if region <= 0 or (self.stat is None and self.reading.lines == 0):
            return self._empty(subject)
        stale = self._stale_reasons(subject)
        if stale:
            return self._stale(subject, stale)
        self.time_checked = self._reference(subject) is not None  # written after the run of interest began
        if subject is not None and subject.alive:
            return self._alive(subject)
        if subject is not None:
            return self._gone(subject)
        return self._unknown(since)

    def _reference(self, subject: _Subject | None) -> tuple[float, str] | None:
        """The time the run of interest started, as the user (or sidecar) defined it."""
        since = getattr(self.options, "since", None)
        if since is not None:
            return since, f"--since {iso(since)}"
        if subject is not None and subject.source in ("--pid", "sidecar") and subject.start is not None:
            return subject.start, f"pid {subject.pid} started {iso(subject.start)}"
        return None

    def _stale_reasons(self, subject: _Subject | None) -> list[str]:
        reasons: list[str] = []
        ref = self._reference(subject)
        written_after = True
        if ref is not None:
            start, what = ref
            if self.is_last and self.mtime is not None and self.mtime < start - TOLERANCE:
                written_after = False
                reasons.append(f"the file was last written {iso(self.mtime)}, {duration(start - self.mtime)} "
                               f"before the run of interest started ({what})")
            if self.ts_reliable and self.last_ts is not None and self.last_ts < start - TOLERANCE:
                written_after = False
                extra = ""
                if self.is_last and self.mtime is not None and self.mtime >= start - TOLERANCE:
                    extra = (" (the file changed after that: anything newer has no timestamps — see its "
                             "last lines)")
                reasons.append(f"its last timestamp {iso(self.last_ts)} is {duration(start - self.last_ts)} "
                               f"before the run of interest started ({what}){extra}")
        if subject is not None and subject.source in ("--pid", "sidecar") and self.run is not None \
                and not self.pid_missing:
            printed = list(self.run.pids)
            if printed and subject.pid not in printed and not any(related(p, subject.pid) for p in printed):
                names = ", ".join(map(str, printed))
                owners = [p for p in printed if self.log_id is not None and holds_file(p, self.log_id)]
                if owners:
                    reasons.append(f"the log is written by pid {', '.join(map(str, owners))} (alive, another "
                                   f"process), not by pid {subject.pid}")
                elif reasons or not written_after or ref is None or subject.writes_log is False:
                    reasons.append(f"the log was written by pid {names}, not by pid {subject.pid}")
                else:
                    self.facts["pid_note"] = (f"the log names pid {names}, not {subject.pid}, but it was "
                                              f"written after pid {subject.pid} started (a child or wrapper?)")
        if (subject is not None and subject.source == "has the log open" and subject.start is not None
                and self.mtime is not None and self.is_last and self.mtime < subject.start - TOLERANCE
                and (self.last_ts is None or not self.ts_reliable or self.last_ts < subject.start - TOLERANCE)):
            reasons.append(f"pid {subject.pid}, which has this log open, started {iso(subject.start)}: "
                           f"{duration(subject.start - self.mtime)} after the file was last written — it has "
                           "written nothing since, the content is an earlier run's")
        if subject is not None and subject.alive and subject.writes_log is False and subject.writes_to and reasons:
            reasons.append(f"pid {subject.pid} writes to {', '.join(subject.writes_to)}")
        return reasons

    # — verdicts ——————————————————————————————————————————————————————————————
    def _status(self, state: str, verified: bool, findings: list[Finding] | None = None) -> Status:
        return Status(state, verified, self.facts, self.reasons, findings or [])

    def _empty(self, subject: _Subject | None) -> Status:
        name = self.path or "the log"
        whole = not self.ctx.offset
        if self.stat is None:
            what = f"nothing was read from {self.path or 'the input stream'} (0 bytes before it ended)"
        else:
            what = f"{name} has 0 bytes" if whole else \
                f"nothing was written to {name} after byte {self.ctx.offset}, where this run started"
        if subject is not None and subject.alive:
            running = self.now - subject.start if subject.start is not None else None
            if running is not None and running < self.silence:
                self.reasons.append(f"{what}, but pid {subject.pid} ({subject.source}) started only "
                                    f"{duration(running)} ago: no output yet")
                return self._status("FRESH", True)
            if subject.writes_log:
                quiet = self.now - max(x for x in (self.mtime, subject.start, 0.0) if x is not None)
                self.facts["quiet_for_s"] = round(quiet)
                if quiet > self.silence:
                    self.reasons.append(f"pid {subject.pid} is alive and writes to this log, but has written "
                                        f"nothing in {duration(quiet)}")
                    return self._status("SILENT", True, [self._hang_finding(subject, quiet)])
                self.reasons.append(f"{what}; pid {subject.pid} is alive and writes to it")
                return self._status("FRESH", True)
        servers = live_servers([(d.process_name, d.server_command) for d in self.servers], self._owners())
        if servers:
            self.facts["live_servers"] = servers
        self.reasons.append(what)
        if subject is not None:
            state = "alive" if subject.alive else "not running"
            where = f", writes to {', '.join(subject.writes_to)}" if subject.alive and subject.writes_to else ""
            self.reasons.append(f"pid {subject.pid} ({subject.source}) is {state}{where}")
        if servers:
            self.reasons.append("server process(es) alive now: " + "; ".join(
                f"pid {s['pid']}" + (f" writing to {', '.join(s['writes_to'])}" if s.get("writes_to") else "")
                for s in servers))
        elif subject is None or not subject.alive:
            self.reasons.append(f"no {' or '.join(d.label for d in self.servers)} server process is alive on this host")
        return self._status("EMPTY", True, [self._empty_finding(subject, servers, what)])

    def _stale(self, subject: _Subject | None, stale: list[str]) -> Status:
        self.reasons.extend(stale)
        return self._status("STALE", True, [self._stale_finding(subject, stale)])

    def _alive(self, s: _Subject) -> Status:
        run = self.run
        quiet = self.now - self.mtime if self.mtime is not None else None
        if quiet is not None:
            self.facts["quiet_for_s"] = round(quiet)
        detached = s.writes_log is False and not any(t.startswith("pipe:") for t in s.writes_to)
        if detached and s.source in ("--pid", "sidecar"):
            self.reasons.append(f"pid {s.pid} is alive but does not have this log open (it writes to "
                                f"{', '.join(s.writes_to) or 'no file'}): this log's writer is not known")
            return self._status("FRESH", False)
        if quiet is not None and quiet > self.silence and run is not None and not run.ready and self.is_last:
            self.reasons.append(f"pid {s.pid} ({s.source}) is alive but the log has not grown for {duration(quiet)} "
                                f"(threshold {duration(self.silence)}); it stopped in phase {run.phase}")
            return self._status("SILENT", True, [self._hang_finding(s, quiet)])
        state = "serving" if run is not None and run.ready else f"starting (phase {run.phase})" if run else "running"
        tail = f"; last write {duration(quiet)} ago" if quiet is not None else ""
        self.reasons.append(f"pid {s.pid} ({s.source}) is alive and {state}{tail}")
        return self._status("FRESH", True)

    def _gone(self, s: _Subject) -> Status:
        run = self.run
        # a verdict of its own already in the report (logx watch's) explains nothing
        problems = [f for f in self.reading.findings if f.is_problem and f.found_by not in VERDICT_STAGES]
        end = self._end_fact()
        verified = s.source != "printed in the log" or self.time_checked
        if run is not None and self.is_last and not run.ready and not problems:
            who = f"{s.name} ({s.source}) is gone" if s.pid else "the command never started"
            self.reasons.append(f"{who}; the log ends in phase {run.phase} with no traceback and no ready line"
                                + (f"; {end}" if end else ""))
            return self._status("DEAD", verified, [self._dead_finding(s, end)])
        how = "after the server was ready" if run is not None and run.ready else "with an error (see findings)"
        self.reasons.append(f"{s.name} ({s.source}) is no longer running; it ended {how}"
                            + (f": {end}" if end else ""))
        return self._status("FRESH", verified and not self.pid_missing)

    def _unknown(self, since: float | None) -> Status:
        if since is not None:
            self.reasons.append(f"the log was written after --since {iso(since)}")
            return self._status("FRESH", True)
        self.reasons.append("unverified: no --pid, --since or sidecar, and no live process printed in or "
                            "writing to this log; nothing in the file contradicts freshness")
        servers = live_servers([(d.process_name, d.server_command) for d in self.servers], self._owners())
        if servers:
            self.facts["live_servers"] = servers
            later = [s for s in servers if self.mtime is not None and s.get("age_s") is not None
                     and self.now - s["age_s"] > self.mtime + TOLERANCE]
            if later:
                self.reasons.append(
                    "a server process started after this log was last written: " + "; ".join(
                        f"pid {s['pid']} ({s['started_at']})" for s in later)
                    + " — if it is the run you mean, this log is stale (check with --pid)")
        return self._status("FRESH", False)

    # — findings ——————————————————————————————————————————————————————————————
    def _tail_evidence(self, n: int = EVIDENCE_TAIL) -> list[Evidence]:
        run = self.run
        if run is None:
            return []
        return [Evidence(num, text) for num, text in list(run.tail)[-n:]]

    def _sidecar_evidence(self) -> list[Evidence]:
        sc = self.sidecar
        if sc is None:
            return []
        text = f"[sidecar {sc.path.name if sc.path else ''}] pid {sc.pid}, started {_sc_time(sc.started_at_dt)}"
        if sc.finished:
            text += f", ended {_sc_time(sc.ended_at_dt)}: {sc.end_text}"
        else:
            text += ", end not recorded"
        return [Evidence(0, text)]

    def _finding(self, stage: str, values: dict[str, Any], evidence: list[Evidence],
                 facts: dict[str, Any] | None = None) -> Finding:
        """The finding of a verdict: the built-in pattern of ``stage`` (patterns/builtin/)."""
        run = self.run
        return stage_finding(self.catalog, stage, values, evidence, "status_sidecar" if self.sidecar else "status",
                             run.index if run else 0, run.phase if run is not None else "launch", facts)

    def _empty_finding(self, subject: _Subject | None, servers: list[dict], what: str) -> Finding:
        sc = self.sidecar
        values = {"what": what, "input": "log"}
        if sc is not None:  # launched with `logx run`: its stdout and stderr did go to this log
            values["why_empty"] = (
                "The process was started with `logx run`, which opened this log before the command started "
                "and sent its stdout and stderr there, so the command itself printed nothing: it is still "
                "starting, or it died before its first line (a kill, a crash before Python started)."
                + (f" The sidecar says the process {sc.end_text}." if sc.finished else ""))
            command = " ".join(sc.command) if sc.command else "the command"
            values["empty_fix"] = (f"Run `{command}` in a terminal to see what it does before logging; if the "
                                   "sidecar records a signal, look for its sender (`dmesg` for the OOM killer, "
                                   "the container's limits).")
        elif self.stat is None:  # a pipe, `<(…)`, a FIFO or stdin
            values["input"] = "input"
            values["why_empty"] = (
                "The command feeding it printed nothing to its stdout: the server logs to stderr, so a pipe "
                "without `2>&1` carries nothing, and a command that failed to start writes its error to the "
                "terminal, not the pipe.")
            values["empty_fix"] = (f"Send both streams into the pipe: `{self.dialect.launch_example} 2>&1 | logx "
                                   "watch`, or launch with `logx run --log FILE -- …` and read FILE.")
        else:
            values["why_empty"] = (
                "Usually the server died before it wrote a byte (a crash at import whose traceback went to the "
                "terminal, a kill right after the start) or its output went elsewhere: with `nohup … > log 2>&1 &` "
                "over ssh the redirect can end up on the wrong command (quoting), the working directory can "
                "differ, or a process manager captures stdout.")
            values["empty_fix"] = (
                f"Relaunch with `logx run --log FILE -- {self.dialect.launch_example}`: it opens the log before the "
                "server starts, sends stdout and stderr there, and records the PID and exit status next to it "
                "(FILE.logx.json), so `logx explain FILE` can tell what happened.")
        values["live_server_note"] = ""
        if servers:
            pid, where = servers[0]["pid"], servers[0].get("writes_to")
            values["live_server_note"] = (
                f" A server is running now: pid {pid} writes to {', '.join(where)} — read that instead." if where
                else f" A server is running now: see where it writes with `ls -l /proc/{pid}/fd/1 /proc/{pid}/fd/2`.")
        evidence = self._sidecar_evidence() or [Evidence(0, f"[{'file' if self.stat else 'input'}] {what}")]
        return self._finding("empty_log", values, evidence, {"live_servers": [s["pid"] for s in servers]})

    def _stale_finding(self, subject: _Subject | None, stale: list[str]) -> Finding:
        current = (f"pid {subject.pid} writes to {', '.join(subject.writes_to)}" if subject and subject.writes_to
                   else "`ls -l /proc/PID/fd/1 /proc/PID/fd/2` shows where it writes")
        return self._finding("stale_log", {"stale_reasons": "; ".join(stale), "current_output": current},
                             self._tail_evidence(3) + self._sidecar_evidence(), {"reasons": stale})

    def _hang_finding(self, s: _Subject, quiet: float) -> Finding:
        phase = self.run.phase if self.run is not None else "launch"
        where, todo = self.dialect.facts.hang_hints.get(phase, ("after startup", "check the server's health endpoint"))
        values = {"pid": s.pid, "quiet_for": duration(quiet), "silence": duration(self.silence),
                  "hang_where": where, "hang_todo": todo}
        return self._finding("silent_process", values, self._tail_evidence() + self._sidecar_evidence(),
                             {"pid": s.pid, "phase": phase, "quiet_for_s": round(quiet)})

    def _dead_finding(self, s: _Subject, end: str | None) -> Finding:
        run = self.run
        sc = self.sidecar
        values = death_values(s.name, sc.signal if sc else None, sc.exit_code if sc else None,
                              run.last_line if run else 0, end, s.note, sc.ended_at_dt if sc else None,
                              recorded=sc is not None)
        endings = [Evidence(e.number, e.line.text) for e in run.endings[:3]] if run is not None else []
        evidence = sorted({e.line: e for e in endings + self._tail_evidence()}.values(), key=lambda e: e.line)
        facts: dict[str, Any] = {"pid": s.pid, "phase": run.phase if run is not None else "launch"}
        if sc is not None:
            facts.update({"exit_code": sc.exit_code, "signal": sc.signal, "ended_at": _sc_time(sc.ended_at_dt)})
        return self._finding("process_gone", values, evidence + self._sidecar_evidence(), facts)

    def _end_fact(self) -> str | None:
        sc = self.sidecar
        if sc is None or not sc.finished:
            return None
        return f"the sidecar says it {sc.end_text} at {_sc_time(sc.ended_at_dt)}"


# — helpers ——————————————————————————————————————————————————————————————————————————


def _stat(path: str | None) -> os.stat_result | None:
    """The log file's stat; None for a stream: no path, or a FIFO, ``<(…)`` or a device,
    whose size says nothing about what was read through it."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _sc_time(dt: datetime | None) -> str | None:
    """A sidecar time (UTC, microseconds) in the same local ISO form as every other fact."""
    return iso(epoch(dt))


__all__ = ["Check", "Context", "Reading", "Status", "STATES", "VERDICT_STAGES", "decide", "lead",
           "prepare", "status_json"]
