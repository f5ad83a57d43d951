"""Stage 6 — findings: match the catalog against a run's tracebacks, lines and state, then
rank the results so the root cause comes first and its symptoms after it.

Matching is incremental (``Matcher.on_line`` / ``on_traceback`` as events stream by) so that
no line has to be kept; ``Matcher.findings(run)`` turns the hits into ranked ``Finding``s with
their evidence, explanation and a fix whose ``{placeholders}`` are filled from the match and
the run's facts.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ._catalog import Catalog, MatchSpec, Pattern, RegexGuard
from ._conditions import CONDITIONS, Evidence
from ._dialects import PHASE_RANK
from ._dialects.base import version_tuple
from ._events import Event
from ._lazyre import lazy
from ._lines import ServerPrefix, decode, glog_timestamp, parse_timestamp, printed_year
from ._matching import digits_as_zeros, found_in, fullmatch, search, search_message, shape_holds, shape_literals
from ._record import field, record, replace
from ._runs import Run, phase_from_frames
from ._sources import RawLine
from ._tracebacks import ExceptionInfo, Traceback, is_caret_line

if TYPE_CHECKING:
    from . import _sites

MAX_EVIDENCE = 8
MAX_UNCLAIMED_LINES = 32  # error lines per run kept for the site index (the last ones)
SEVERITY_RANK = {"fatal": 0, "error": 0, "warning": 1, "info": 2}
ROLE_RANK = {"cause": 0, "symptom": 1}
# How sure a finding is, by how it was found: the one table every finding's confidence is read
# from (a failure-site match scores itself, sites.py).
CONFIDENCE = {
    "line": 0.9,  # a catalog line pattern matched a log line
    "line_partial": 0.7,  # ... only the start of a cut line
    "traceback_message": 0.95,  # a traceback pattern whose message regex matched
    "traceback": 0.75,  # a traceback pattern without a message regex (type, frames)
    "traceback_partial": 0.8,  # the message regex matched the start of a cut message
    "chained_penalty": 0.1,  # taken off when the match is a chained exception, not the final one
    "condition": 0.6,  # a condition on the run's state
    "condition_traceback": 0.85,  # a condition and the traceback keys of the same match table
    "unclassified": 0.3,  # a traceback nothing explains
    "serving": 0.7,  # a serving warning from the run's statistics (serving_findings.py)
    "process_end": 0.7,  # logx watch: the process ended before ready, without a traceback
    "status_sidecar": 0.95,  # the stale-log detector, with the sidecar of `logx run`
    "status": 0.85,  # the stale-log detector, from the file and /proc alone
}
# Failures of different processes closer than this cannot be ordered by their clocks: the
# clocks of different nodes differ by seconds, and the ranks of one node print their errors
# through buffers, a rank's consequence often a moment before the real error of another.
CLOCK_TOLERANCE = timedelta(seconds=10)
MAX_SHAPES = 4096  # line shapes whose candidate patterns are kept (cleared when full)
MAX_SHAPE_BYTES = 1024  # a longer line's candidates are found afresh: the kept shapes stay small
__all__ = ["CLOCK_TOLERANCE", "CONFIDENCE", "Evidence", "Finding", "Hit", "Matcher", "evidence_time", "fill",
           "first_cause", "rank"]
# Stats lines are the bulk of a serving log and carry no failure text.
# Request logs (--log-requests: "Receive: obj=…") are user content: a prompt quoting an error
# is not a failure of the server.
_SKIP_LINE_KINDS = frozenset({"prefill_batch", "decode_batch", "request_log"})
_PLACEHOLDER = lazy(r"\{([A-Za-z_]\w*)\}")
# Asides that only report a value: " (now {x})", " (exit code {x})", ", here {x}" — dropped
# whole when the value is unknown.
_ASIDE = lazy(r" ?\([^(){}]{0,24}\{[A-Za-z_]\w*\}[^(){}]{0,20}\)|, (?:here|now) \{[A-Za-z_]\w*\}")


@record(eq=False)
class Finding:
    """A root cause (or symptom) found in a run, with the lines that prove it."""

    id: str
    title: str
    severity: str
    confidence: float
    phase: str
    run: int
    evidence: list[Evidence]
    explanation: str
    fix: str
    priority: int = 50
    streams: list[str] = field(default_factory=list)
    occurrences: int = 1
    traceback: Traceback | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    role: str = "cause"
    at: str | None = None  # when it first happened: the time its first line or traceback prints
    # streams (ranks) that printed the same traceback as the one cited: not cited again
    same_on: list[str] = field(default_factory=list)
    pattern: Pattern | None = field(default=None, repr=False, compare=False)  # the one it was made from

    @property
    def time(self) -> datetime | None:
        return parse_timestamp(self.at)

    @property
    def is_problem(self) -> bool:
        return self.severity in ("fatal", "error")

    @property
    def found_by(self) -> str | None:
        """The stage of logx that made it (its pattern's ``found_by``); None for a match."""
        specs = self.pattern.matches if self.pattern is not None else []
        return next((s.found_by for s in specs if s.found_by), None)

    def sort_key(self) -> tuple:
        """Problems, then warnings, then info; within each, causes before symptoms, then
        priority, then the first evidence line."""
        first = self.evidence[0].line if self.evidence else 0
        return (SEVERITY_RANK.get(self.severity, 3), ROLE_RANK.get(self.role, 0), -self.priority, first)

    def to_dict(self) -> dict:
        out = {
            "id": self.id, "title": self.title, "severity": self.severity,
            "confidence": round(self.confidence, 2), "phase": self.phase, "role": self.role, "run": self.run,
            "evidence": [e.to_dict() for e in self.evidence],
            "explanation": self.explanation, "fix": self.fix,
            "occurrences": self.occurrences, "streams": self.streams,
        }
        if self.traceback is not None:
            tb = self.traceback
            frame = tb.raising_frame
            out["exception"] = {
                "type": tb.exc_type, "message": tb.message[:2000],
                "raised_at": frame.to_dict() if frame else None, "missing": tb.missing,
            }
        if self.same_on:
            out["same_on"] = self.same_on
        if self.facts:
            out["facts"] = self.facts
        return out


@record(eq=False)
class Hit:
    pattern: Pattern
    groups: dict[str, Any]
    evidence: list[Evidence]
    confidence: float
    stream: str
    traceback: Traceback | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    # its evidence starts at the failure (a line, a traceback); a condition's evidence is the
    # state it read (the memory lines before the failure), which says nothing of when it failed
    timed: bool = True


# — matching ————————————————————————————————————————————————————————————————


def _exception_matches(spec: MatchSpec, exc: ExceptionInfo, tb: Traceback,
                       may_be_cut: bool) -> tuple[dict, bool] | None:
    groups: dict[str, Any] = {}
    partial = False
    if spec.exception is not None:
        if not exc.type:
            return None
        if not (fullmatch(spec.exception, exc.short_type or "") or fullmatch(spec.exception, exc.type)):
            return None
    if spec.message is not None:
        if not exc.message:
            return None
        found = search_message(spec.message, exc.message, may_be_cut)
        if found is None and exc.head_cut and "\n" in exc.message:  # its first line ends at the paste's width
            found = search(spec.message, exc.message.split("\n", 1)[0], True)
        if found is None:
            return None
        m, partial = found
        groups.update({k: v for k, v in m.groupdict().items() if v is not None})
    frames = exc.frames or tb.frames
    if spec.frame is not None and not any(found_in(spec.frame, f.location) for f in frames):
        return None
    if spec.raising_frame is not None:
        raising = frames[-1] if frames else None
        if raising is None or not found_in(spec.raising_frame, raising.location):
            return None
    if spec.context is not None and not found_in(spec.context, tb.context):
        return None
    return groups, partial


def traceback_evidence(tb: Traceback, exc: ExceptionInfo | None = None) -> list[Evidence]:
    """A compact proof: the header, the exception line(s) of ``exc`` (the one a pattern
    matched) and of the chain's cause when that is another exception (a pattern may match
    the KeyError a ValueError explains), then the raising frame as room allows."""
    exc = exc or tb.final
    lines = [(n, text) for n, text in tb.lines if not is_caret_line(text)]
    proof: list[tuple[int, str]] = lines[:1]
    cause = tb.cause
    proof.extend(_exception_lines(lines, exc) or lines[-2:])
    if cause is not exc and cause.type:  # not found: its lines were elided from a long traceback
        proof.extend(_exception_lines(lines, cause))
    frame_lines: list[tuple[int, str]] = []
    frames = exc.frames or tb.frames
    if frames:
        last = frames[-1]
        needle = f'line {last.line}'
        for i, (n, text) in enumerate(lines):
            if last.file in text and needle in text:
                frame_lines.append((n, text))
                if i + 1 < len(lines) and lines[i + 1][1].startswith((" ", "\t")) \
                        and last.source and last.source in lines[i + 1][1]:
                    frame_lines.append(lines[i + 1])
                break
    picked = dict((n, text) for n, text in proof if text.strip())
    for n, text in frame_lines:
        if len(picked) < MAX_EVIDENCE and text.strip():
            picked.setdefault(n, text)
    return [Evidence(n, text) for n, text in sorted(picked.items())[:MAX_EVIDENCE]]


MAX_FAILURE_LINES = 2  # later lines of a long message that say what failed, beyond the first three
_FAILURE_LINE = lazy(r"(?i)\b(?:error|fail(?:ed|s|ure)?)\b")


def _exception_lines(lines: list[tuple[int, str]], exc: ExceptionInfo) -> list[tuple[int, str]]:
    """``exc``'s type line and the two after it, found among a traceback's evidence lines, and
    the first later lines of its message that say what failed (NCCL's "Last error:" detail)."""
    if exc.type:
        key = exc.message.split("\n", 1)[0][:60]
        for i, (_n, text) in enumerate(lines):
            if (exc.type in text or "what():" in text) and key in text:
                rest = lines[i + 3 : i + 1 + exc.message.count("\n") + 1]
                return lines[i : i + 3] + [x for x in rest if _FAILURE_LINE.search(x[1])][:MAX_FAILURE_LINES]
    return []


class Matcher:
    """Collects catalog hits per run while events stream by."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.hits: dict[int, list[Hit]] = {}
        # per line spec, its required literals with digits as zeros (built on first use), and the
        # candidate patterns of each line shape seen (``_line_candidates``)
        self._zeroed: tuple[list, list] | None = None
        self._by_shape: dict[bytes, list[tuple[Pattern, MatchSpec]]] = {}
        self.guard = RegexGuard()  # regex timeouts per pattern (a backtracking user pattern)
        # per run, the last error lines no pattern claimed: looked up in the site index
        self.unclaimed: dict[int, deque[Event]] = {}
        # per run, the releases the failure sites matched allow (Run.with_release_hints)
        self.release_hints: dict[int, set[str]] = {}

    def _guarded(self, pattern: Pattern, match: Callable[..., Any], *args: Any) -> Any:
        """``match(*args)``, or None when ``pattern`` was disabled for timing out or its regex
        times out now (counted against it, with the time it cost)."""
        if self.guard.disabled(pattern):
            return None
        start = time.perf_counter()
        try:
            return match(*args)
        except TimeoutError:
            self.guard.timed_out(pattern, time.perf_counter() - start)
            return None

    def on_event(self, event: Event, run: Run, last_line: bool = False) -> list[Hit]:
        if event.kind == "traceback" and event.traceback is not None:
            return self.on_traceback(event.traceback, run)
        specs = self.catalog.event_specs.get(event.kind)
        if specs:
            self._on_fields(event, run, specs)
        if event.kind in _SKIP_LINE_KINDS:
            return []
        return self.on_line(event, run, last_line)

    def _on_fields(self, event: Event, run: Run, specs: list[tuple[Pattern, MatchSpec]]) -> None:
        """The ``event`` match tables of the event's kind: its fields fill the pattern's text."""
        fields = event.fields
        for pattern, spec in specs:
            if all(isinstance(value := fields.get(name), int | float) and value >= least
                   for name, least in (spec.at_least or {}).items()):
                self.hits.setdefault(run.index, []).append(
                    Hit(pattern, {k: v for k, v in fields.items() if v is not None},
                        [Evidence(event.number, event.line.text)], CONFIDENCE["line"], event.line.stream))

    def _line_candidates(self, msg: str) -> list[tuple[Pattern, MatchSpec]]:
        """The line patterns ``msg`` holds a required literal of (``search`` checks the literal
        itself). Kept per line shape, digits as zeros: a literal in a line is in its shape, so
        made, and a warning repeated with other numbers (a retraction every few hundred lines)
        is checked against the ~120 patterns once, not each time."""
        line_specs = self.catalog.line_specs
        if self._zeroed is None or self._zeroed[0] is not line_specs:
            self._zeroed = (line_specs, [shape_literals(spec.line) for _, spec in line_specs])
            self._by_shape.clear()
        key = digits_as_zeros(msg)
        found = self._by_shape.get(key)
        if found is None:
            folded = digits_as_zeros(msg.casefold())  # the same for every line of this shape
            found = [ps for ps, need in zip(line_specs, self._zeroed[1], strict=True)
                     if need is None or shape_holds(need, key, folded)]
            if len(key) <= MAX_SHAPE_BYTES:
                if len(self._by_shape) >= MAX_SHAPES:
                    self._by_shape.clear()
                self._by_shape[key] = found
        return found

    def on_line(self, event: Event, run: Run, may_be_cut: bool = False) -> list[Hit]:
        msg = event.line.message
        line_specs = self.catalog.line_specs
        if not msg:
            return []
        cut = may_be_cut or event.line.truncated or not event.line.eol or event.line.at_width
        new = []
        # a cut line may hold a partial match (its literals cut off): search it with every pattern
        for pattern, spec in line_specs if cut else self._line_candidates(msg):
            found = self._guarded(pattern, search, spec.line, msg, cut)
            if found is None:
                continue
            m, partial = found
            hit = Hit(pattern, {k: v for k, v in m.groupdict().items() if v is not None},
                      [Evidence(event.number, event.line.text)],
                      CONFIDENCE["line_partial" if partial else "line"],
                      event.line.stream)
            new.append(hit)
        if new:
            self.hits.setdefault(run.index, []).extend(new)
        elif event.kind == "error_line":
            self.unclaimed.setdefault(run.index, deque(maxlen=MAX_UNCLAIMED_LINES)).append(event)
        return new

    def on_traceback(self, tb: Traceback, run: Run) -> list[Hit]:
        may_be_cut = tb.may_be_cut
        new = []
        matched_ids: set[str] = set()
        ordered = [tb.final] + [e for e in reversed(tb.exceptions) if e is not tb.final]
        for pattern, spec in self.catalog.traceback_specs:
            if pattern.id in matched_ids:
                continue
            for exc in ordered:
                result = self._guarded(pattern, _exception_matches, spec, exc, tb,
                                       may_be_cut and exc is tb.final)
                if result is None:
                    continue
                groups, partial = result
                confidence = CONFIDENCE["traceback_message" if spec.message is not None else "traceback"]
                if partial:
                    confidence = CONFIDENCE["traceback_partial"]
                if exc is not tb.final:
                    confidence -= CONFIDENCE["chained_penalty"]
                new.append(Hit(pattern, groups, traceback_evidence(tb, exc), confidence,
                               tb.stream, tb))
                matched_ids.add(pattern.id)
                break
        if not new:
            new.append(site_hit(tb, run, self.release_hints.setdefault(run.index, set()))
                       or home_hit(tb, run) or self._unexplained(tb, run))
        # One traceback, one explanation: the most specific pattern (highest priority) wins,
        # so a generic match (e.g. "raised in argument handling") never repeats a specific one.
        best = max(new, key=lambda h: (h.pattern.priority, h.confidence))
        self.hits.setdefault(run.index, []).append(best)
        return [best]

    def _unexplained(self, tb: Traceback, run: Run) -> Hit:
        """The built-in pattern of a traceback nothing explains (``unclassified_exception``),
        with what the traceback shows of the failure as its placeholders."""
        frame = tb.raising_frame
        where = "unknown location" if frame is None else frame.file + (f":{frame.line}" if frame.line else "") \
            + (f" in {frame.function}" if frame.function else "")  # a frame line cut at the screen edge has neither
        from . import _sites

        server = run.dialect
        package = _sites.frame_package(frame.file if frame else None,
                                       server.sites.package if server.sites else server.name)
        values = {
            "exception_type": tb.exc_type or "unknown type",
            "exception": tb.exc_type or "an exception (its type line was cut off)",
            "raised_at": where,
            "exception_message": tb.message.split("\n", 1)[0][:300] if tb.message else "(message not in the log)",
            "package_note": f" The raising frame belongs to {package[0]}: {package[1]}" if package else "",
        }
        pattern = self.catalog.found_by("unexplained_traceback")
        if not tb.exc_type:  # cut before its type line: it names no failure
            # and with no message either it is often another failure's own tail: a symptom
            pattern = replace(pattern, priority=pattern.priority // 2,
                              role=pattern.role if tb.message else "symptom")
        facts = {"package": package[0]} if package else {}
        return Hit(pattern, values, traceback_evidence(tb), CONFIDENCE["unclassified"], tb.stream, tb, facts)

    def reread_cut(self, run: Run, width: int) -> None:
        """At the end of the input: ``run``'s unclaimed error lines as wide as the paste turned
        out to be cut at (``width``), read before that was known, may have lost their end: read
        them again accepting partial matches."""
        kept = self.unclaimed.get(run.index)
        late = [e for e in kept or () if not e.line.at_width and len(e.line.text) == width]
        for event in late:
            kept.remove(event)  # type: ignore[union-attr]
            self.on_line(event, run, may_be_cut=True)  # keeps it again when still unclaimed

    def findings(self, run: Run, facts: dict[str, Any]) -> list[Finding]:
        """Ranked findings for ``run`` (most likely root cause first)."""
        hits = list(self.hits.get(run.index, []))
        for pattern, spec in self.catalog.condition_specs:
            evidence = CONDITIONS[spec.condition](run)  # type: ignore[index]
            if not evidence:
                continue
            if not spec.on_traceback:
                hits.append(Hit(pattern, {}, evidence, CONFIDENCE["condition"], "", timed=False))
                continue
            for tb in run.tracebacks:  # condition AND traceback keys
                for exc in [tb.final] + [e for e in tb.exceptions if e is not tb.final]:
                    result = self._guarded(pattern, _exception_matches, spec, exc, tb,
                                           tb.may_be_cut)
                    if result is not None:
                        ev = traceback_evidence(tb, exc)
                        ev += [e for e in evidence if e.line not in {x.line for x in ev}]
                        hits.append(Hit(pattern, result[0], ev, CONFIDENCE["condition_traceback"], tb.stream, tb))
                        break
        hits = [h for h in _one_per_traceback(hits) if not _before_serving(h, run)]
        year = printed_year(run.started_at or run.ended_at)
        if not any(h.pattern.is_problem and h.pattern.role == "cause" and h.pattern.priority > SITE_PRIORITY
                   for h in hits):  # a plain error line may name the cause a site knows
            hints = self.release_hints.setdefault(run.index, set())
            hits += [h for e in self.unclaimed.get(run.index, ()) if (h := site_line_hit(e, run, hints))]
        keyed = []
        last_seen: dict[tuple, int] = {}  # a finding's last line: whether it was survived
        for hit in hits:
            values = {**facts, **hit.groups}
            if hit.groups.get("rejected_flags") and run.dialect.sites:  # as the log's release names them
                from . import _sites

                values["renamed_flags"] = _sites.renamed_flags(hit.groups["rejected_flags"], *_release_of(run)[1],
                                                               run.dialect.sites, run.dialect.label)
            p = hit.pattern
            phase = _phase_at(run, hit) if p.phase == "any" else run.phase if p.phase == "reached" else p.phase
            title = fill(p.in_phase(phase).title, values)
            key = (p.id, title) if p.merge == "title" else (p.id,)
            keyed.append((hit, values, key, phase))
            last_seen[key] = max(last_seen.get(key, 0), _last_line(hit))
        merged: dict[tuple, Finding] = {}
        for hit, values, key, phase in keyed:
            p = hit.pattern
            if key in merged:
                f = merged[key]
                if hit.timed:  # a condition's state adds its lines, not another sighting
                    f.occurrences += 1
                if hit.stream and hit.stream not in f.streams:
                    f.streams.append(hit.stream)
                f.confidence = max(f.confidence, hit.confidence)
                if f.at is None and hit.timed:
                    f.at = evidence_time(hit.evidence, run.dialect.prefix, year)
                if _repeats(f, hit):
                    if hit.stream not in f.same_on:
                        f.same_on.append(hit.stream)
                    continue
                have = {e.line for e in f.evidence}
                extra = [e for e in hit.evidence if e.line not in have]
                f.evidence = sorted(f.evidence + extra, key=lambda e: e.line)[:MAX_EVIDENCE]
                continue
            survived = p.survivable and run.last_serving_line > last_seen[key]
            merged[key] = make_finding(
                p, values, sorted(hit.evidence, key=lambda e: e.line), hit.confidence, run.index, phase,
                served_after=run.last_serving_line if survived else None,
                streams=[hit.stream] if hit.stream else [], traceback=hit.traceback, facts=dict(hit.facts),
                at=evidence_time(hit.evidence, run.dialect.prefix, year) if hit.timed else None)
        return rank(list(merged.values()))


def _last_line(hit: Hit) -> int:
    return hit.traceback.last_line if hit.traceback is not None else max((e.line for e in hit.evidence), default=0)


class DecidingHits:
    """The hits of one run that decide what its findings show (``Matcher.findings`` merges a
    finding's hits so; kept beside it), for ``logx watch``'s catch-up (``Watcher._only_seen_hits``).

    A line hit (no traceback, a pattern not merged by title) of a finding already reported
    only adds a sighting: of those, per finding, the ones kept are the first (its texts, phase
    and values), the last seen (whether it was survived), the earliest evidence line, the most
    confident, the first of each stream (the streams, in order) and the first that prints a
    time (``at``). The rest only count (``occurrences``) and add evidence lines after the
    first. Hits the findings drop before serving (``_before_serving``) are left out; every
    other hit is kept. Read incrementally: valid while ``state`` (what the choice depends on)
    holds."""

    def __init__(self, state: tuple):
        self.state = state
        self.done = 0  # hits read
        self.keep: list[bool] = []
        self.groups: dict[str, dict[Any, tuple[Any, int]]] = {}  # per finding: its hits that decide

    @staticmethod
    def state_of(run: Run, reported: int) -> tuple:
        """What the choice depends on: ``reported``, how many findings were reported so far."""
        return (run.index, reported, run.phase_lines.get("ready"), run.phase_lines.get("serving"),
                printed_year(run.started_at or run.ended_at), id(run.dialect))

    def update(self, reported: set, run: Run, hits: list[Hit]) -> list[Hit] | None:
        """The hits to derive the findings from (``reported``: the ``(run, pattern id)`` of
        the findings reported); None when that is all of them."""
        year = self.state[4]
        prefix = run.dialect.prefix
        keep = self.keep
        for i in range(self.done, len(hits)):
            h = hits[i]
            p = h.pattern
            if h.traceback is not None or p.merge == "title" or (run.index, p.id) not in reported:
                keep.append(True)
                continue
            keep.append(False)
            if _before_serving(h, run):  # dropped by the findings either way
                continue
            last = max((e.line for e in h.evidence), default=0)
            first = min((e.line for e in h.evidence), default=0)
            roles = self.groups.get(p.id)
            if roles is None:  # its first: texts, phase, values
                roles = self.groups[p.id] = {"start": (0, i), "last": (last, i), "first": (first, i),
                                             "confidence": (h.confidence, i)}
                old: set[int] = set()
            else:
                old = {j for _, j in roles.values()}
                if last > roles["last"][0]:
                    roles["last"] = (last, i)
                if first < roles["first"][0]:
                    roles["first"] = (first, i)
                if h.confidence > roles["confidence"][0]:
                    roles["confidence"] = (h.confidence, i)
            if h.stream and ("stream", h.stream) not in roles:
                roles[("stream", h.stream)] = (0, i)
            if "at" not in roles and h.timed and evidence_time(h.evidence, prefix, year) is not None:
                roles["at"] = (0, i)
            now = {j for _, j in roles.values()}
            for j in old - now:
                keep[j] = False
            for j in now - old:
                keep[j] = True
        self.done = len(hits)
        if all(keep):
            return None
        return [h for h, k in zip(hits, keep, strict=True) if k]


def make_finding(pattern: Pattern, values: dict[str, Any], evidence: list[Evidence], confidence: float,
                 run: int, phase: str, *, served_after: int | None = None, streams: list[str] | None = None,
                 traceback: Traceback | None = None, facts: dict[str, Any] | None = None,
                 at: str | None = None) -> Finding:
    """The one place a finding is made: ``pattern``'s texts filled with ``values``.
    ``served_after``: the line the server served at after the pattern's last sighting (a
    survivable pattern's failed request or passing trouble: a warning that says so). The texts
    are the pattern's in ``phase`` (``Pattern.in_phase``: its ``from_phase`` tables)."""
    pattern = pattern.in_phase(phase)
    severity, explanation = pattern.severity, fill(pattern.explanation, values)
    if served_after is not None:  # what the server survived: a failed request, not a crash
        severity = "warning"
        explanation += f" The server kept serving after it (line {served_after}), so it did not take the server down."
    return Finding(
        id=pattern.id, title=fill(pattern.title, values), severity=severity, confidence=confidence,
        phase=phase, run=run, evidence=evidence, explanation=explanation,
        fix=fill(pattern.fix, values), priority=pattern.priority, streams=streams or [],
        traceback=traceback, role=pattern.role, facts=facts or {}, at=at, pattern=pattern)


def stage_finding(catalog: Catalog | None, stage: str, values: dict[str, Any], evidence: list[Evidence],
                  how: str, run: int, reached: str, facts: dict[str, Any] | None = None) -> Finding:
    """A finding a stage of logx makes itself (a ``found_by`` pattern: the stale-log detector's
    verdicts, watch's process end): the pattern of ``stage`` in ``catalog`` (else the bundled
    one) filled with what the stage saw; its confidence is ``CONFIDENCE[how]``; ``reached``:
    the phase the run had reached (the ``{phase}`` of its texts)."""
    pattern = (catalog or _NO_PATTERNS).found_by(stage)
    phase = reached if pattern.phase == "reached" else pattern.phase
    return make_finding(pattern, {"phase": reached, **values}, evidence, CONFIDENCE[how], run, phase, facts=facts)


_NO_PATTERNS = Catalog([])  # a catalog of none: its found_by patterns are the bundled ones


# — findings from the server's failure sites (sites.py, Dialect.sites) ——————————————————————

SITE_SOURCE = "failure-site index"
HOME_SOURCE = "server module of the raising frame"
HOME_PRIORITY = 20  # below a site match (the module says less than the check), above unclassified
HOME_CONFIDENCE = 0.4
SITE_PRIORITY = 30  # below every curated pattern that names the cause, above the symptoms
MIN_SITE_CONFIDENCE = 0.5


def site_hit(tb: Traceback, run: Run, hints: set[str]) -> Hit | None:
    """A traceback no pattern explains, matched to the site of the log's server that raised it: the
    finding names the site, the failed check in words, and the flags the site names. A site
    match also narrows the release range of a log that does not print its version: added to
    ``hints`` (the matcher's for the run, ``Run.with_release_hints``)."""
    data = run.dialect.sites
    if not tb.exc_type or data is None:
        return None
    from . import _sites

    found = _sites.match_traceback(tb, data)
    made = _site_pattern(found, run, hints, tb.exc_type, tb.message)
    if made is None or found is None:
        return None
    pattern, facts = made
    return Hit(pattern, {}, traceback_evidence(tb), round(found.confidence, 2), tb.stream, tb, facts)


def home_hit(tb: Traceback, run: Run) -> Hit | None:
    """An exception the server's own code raised with no site of its own (an ``AttributeError``
    on a malformed config): the category of the module it was raised in (the dialect's
    categories, the rules that read only the file and function)."""
    from . import _sites

    data = run.dialect.sites
    home = _sites.home_category(tb.frames, data, tb.exc_type) if tb.exc_type and data else None
    if home is None:
        return None
    frame, category, flag = home
    if flag:  # as the log's release spells it
        flag = _sites.flag_as_spelled(flag, *_release_of(run)[1], data, run.dialect.label)
    label = run.dialect.label
    owner = f"{label}'s " if _sites.in_server(frame.file, data) else ""  # else a library the server called
    message = tb.message.split("\n", 1)[0][:300].rstrip(".") or "(no message)"
    pattern = Pattern(
        id=category.id, title=f"{tb.exc_type} in {category.what} ({frame.function})",
        severity="error", phase=category.phase or "any", priority=HOME_PRIORITY,
        explanation=(f"{tb.exc_type} was raised in {owner}{category.what} at {frame.file}:{frame.line} "
                     f"in {frame.function}: {message}. No pattern and no {label} check names it; the "
                     "module it came from says what it was doing."),
        fix=category.fix + (f" The flag: `{flag}`." if flag else ""), source=HOME_SOURCE,
        merge="title", survivable=True,
    )
    return Hit(pattern, {}, traceback_evidence(tb), HOME_CONFIDENCE, tb.stream, tb,
               {"raised_in": {"file": frame.file, "function": frame.function}})


def site_line_hit(event: Event, run: Run, hints: set[str]) -> Hit | None:
    """A plain error line no pattern claims, matched to the site that printed it (a log call
    or the argument parser; an exception line is a traceback of its own). It is a cause only in a
    run that then failed: not served after it, and ended by an ending event or a traceback
    after it, or the log stops soon after it (a headless tail)."""
    data = run.dialect.sites
    line = event.number
    if data is None or run.last_serving_line > line:
        return None
    after = [e.number for e in run.endings] + [tb.first_line for tb in run.tracebacks]
    if not any(n >= line for n in after) and not (not run.ready and run.last_line - line <= TAIL_OF_RUN):
        return None
    from . import _sites

    message = event.line.message
    found = _sites.site_index(data).lookup(None, message, cut=event.line.truncated or not event.line.eol)
    if found is None or found.site.kind == "log.warning":
        return None
    made = _site_pattern(found, run, hints, None, message)
    if made is None:
        return None
    pattern, facts = made
    return Hit(pattern, {}, [Evidence(line, event.line.text)], round(found.confidence, 2),
               event.line.stream, None, facts)


TAIL_OF_RUN = 20  # lines: an error line this close to where a failed start-up's log stops


def _site_pattern(found: _sites.SiteMatch | None, run: Run, hints: set[str], exc_type: str | None,
                  message: str) -> tuple[Pattern, dict[str, Any]] | None:
    """The finding a site match stands for (its home's category), or None when the match is
    too weak or its home has no category."""
    data = run.dialect.sites
    if found is None or data is None or found.confidence < MIN_SITE_CONFIDENCE:
        return None
    from . import _sites

    category = _sites.category_of(found.site, data)
    if category is None:
        return None
    index = _sites.site_index(data)
    site = found.site
    low, high = found.release_bounds
    if found.confidence >= 0.7:
        if low != index.releases[0]:
            hints.add(f">={low}")
        if high != index.releases[-1]:
            hints.add(f"<={high}")
    release, bounds = _release_of(run.with_release_hints(hints))
    flags = list(dict.fromkeys(_sites.flag_as_spelled(f, *bounds, data, run.dialect.label) for f in
                               [*site.flags, *(f"--{a.replace('_', '-')}" for a in site.args)]))
    condition = _sites.plain_condition(site.conditions)
    check = f" It fired because {condition}." if condition else ""
    named = ", ".join(f"`{x}`" for x in [*flags, *site.env][:8])
    spelled = f" (flags as {run.dialect.label} {release} spells them)"
    fix = category.fix + (f" The check reads {named}{spelled}." if named else "")
    shown = message.split("\n", 1)[0][:300].rstrip(".")
    what = f"raised {exc_type}" if exc_type else "printed"
    pattern = Pattern(
        id=category.id, title=f"{exc_type or 'Error'} from {category.what} ({site.function})",
        severity="error", phase=category.phase or "any", priority=SITE_PRIORITY,
        explanation=(f"{site.kind} in {site.where} ({run.dialect.label} {site.release_range}) {what}: "
                     f"{shown}.{check} No curated pattern names this failure; "
                     f"{run.dialect.label}'s own source does."),
        fix=fix, source=SITE_SOURCE, merge="title", survivable=True,
    )
    facts = {"site": {"file": site.file, "function": site.function, "kind": site.kind,
                      "releases": site.release_range, "conditions": list(site.conditions),
                      "flags": flags, "env": list(site.env), "equivalent_sites": len(found.equivalent)}}
    return pattern, facts


def _release_of(run: Run) -> tuple[str, tuple[tuple[int, ...] | None, tuple[int, ...] | None]]:
    """The run's server release in words, and its bounds: the version the log prints, else
    the range its formats and site matches allow."""
    version = version_tuple(run.server_version)
    if version:
        return run.server_version or "", (version, version)
    return run.version_range or "(release unknown)", run.version_bounds


def _repeats(f: Finding, hit: Hit) -> bool:
    """``hit`` is another rank's copy of the traceback ``f`` already cites."""
    return (f.traceback is not None and hit.traceback is not None and bool(hit.stream)
            and bool(f.streams) and hit.stream != f.streams[0]
            and hit.traceback.signature == f.traceback.signature)


def _before_serving(hit: Hit, run: Run) -> bool:
    """A serving-phase warning matched on a line printed before the server served (the same
    JIT text seen during start-up) is not a serving problem. Serving starts at the ready line,
    or in a tail without one at the first batch or retraction line."""
    p = hit.pattern
    if p.phase != "serving" or p.is_problem or hit.traceback is not None or not hit.evidence:
        return False
    start = run.phase_lines.get("ready") or run.phase_lines.get("serving")
    return start is None or hit.evidence[0].line < start


def _one_per_traceback(hits: list[Hit]) -> list[Hit]:
    """Keep, for each traceback, only its best hit (highest priority, then confidence)."""
    best: dict[int, Hit] = {}
    for hit in hits:
        if hit.traceback is None:
            continue
        key = id(hit.traceback)
        if key not in best or (hit.pattern.priority, hit.confidence) > (best[key].pattern.priority,
                                                                        best[key].confidence):
            best[key] = hit
    return [h for h in hits if h.traceback is None or best[id(h.traceback)] is h]


def rank(findings: list[Finding]) -> list[Finding]:
    """Order findings: problems before warnings before info, causes before symptoms, then by
    priority, then by the first evidence line. When the problems come from several processes
    (the ranks of one log), the root cause is ``first_cause`` of each process's leading
    problem, as for the nodes of a deployment: the first rank's real error outranks the other
    ranks' timeouts and their later errors."""
    ordered = sorted(findings, key=Finding.sort_key)
    leads: dict[str, Finding] = {}
    for f in ordered:
        if f.is_problem:
            leads.setdefault(f.streams[0] if f.streams else "", f)
    if len(leads) > 1:
        root, _uncertain = first_cause(list(leads.values()), lambda f: f.time)
        if root is not None and root is not ordered[0]:
            ordered.remove(root)
            ordered.insert(0, root)
    return ordered


class Failing(Protocol):
    """What ``first_cause`` reads of a failure (a ``Finding``, a deployment's ``Failure``)."""

    @property
    def role(self) -> str: ...
    @property
    def phase(self) -> str: ...
    @property
    def priority(self) -> int: ...


F = TypeVar("F", bound=Failing)


def first_cause(leads: Sequence[F], when: Callable[[F], datetime | None],
                tolerance: timedelta = CLOCK_TOLERANCE) -> tuple[F | None, list[F]]:
    """The root cause among the leading failures of several processes (the ranks of one log,
    the nodes of one deployment), and the failures too close to it in time to be ordered.

    A cause wins over any symptom (a timeout, a signal, "see root cause above"), whenever the
    symptom happened; among causes (or, with none, among symptoms) the first in time. Failures
    within ``tolerance`` of the first, or of unknown time, cannot be ordered by their clocks:
    among them the more specific pattern (the higher priority), then the earlier phase, wins;
    the others are returned as uncertain. Ties keep the order of ``leads``."""
    causes = [f for f in leads if f.role == "cause"]
    candidates = causes or list(leads)
    if not candidates:
        return None, []
    times = {id(f): when(f) for f in candidates}

    def in_time(f: F) -> tuple:
        t = times[id(f)]
        return (t is None, t or datetime.min, PHASE_RANK.get(f.phase, 0), -f.priority)

    candidates.sort(key=in_time)
    first = times[id(candidates[0])]
    close = [f for f in candidates if f is candidates[0] or first is None
             or (t := times[id(f)]) is None or t - first <= tolerance]
    close.sort(key=lambda f: (-f.priority, PHASE_RANK.get(f.phase, 0), in_time(f)))
    return close[0], close[1:]


def evidence_time(evidence: list[Evidence], prefix: ServerPrefix, year: int | None) -> str | None:
    """The first timestamp printed on ``evidence`` (a torch/glog stamp, which has no year, gets
    ``year``, the run's, when its lines print one); None when no line has one."""
    for ev in evidence:
        line = decode(RawLine(ev.line, 0, ev.text.encode("utf-8", "replace")), prefix)
        if line.ts:
            return line.ts
        stamp = glog_timestamp(line.text, year)
        if stamp:
            return stamp
    return None


def _phase_at(run: Run, hit: Hit) -> str:
    if hit.traceback is not None:
        from_frames = phase_from_frames(hit.traceback, run.dialect)
        if from_frames:
            return from_frames
    line = hit.evidence[0].line if hit.evidence else run.last_line
    reached = "launch"
    for phase, first in sorted(run.phase_lines.items(), key=lambda kv: kv[1]):
        if first <= line:
            reached = phase
    return "args" if reached == "launch" and run.args_line else reached


def fill(template: str, values: dict[str, Any]) -> str:
    """Fill ``{name}`` placeholders. A short parenthesis that only reports an unknown value
    ("(now {max_running_requests})") is dropped; any other unknown name renders as ``<name>``."""

    def known(name: str) -> bool:
        return values.get(name) is not None

    def drop_aside(m: re.Match[str]) -> str:
        names = _PLACEHOLDER.findall(m.group(0))
        return "" if names and not all(known(n) for n in names) else m.group(0)

    def sub(m: re.Match[str]) -> str:
        value = values.get(m.group(1))
        return f"<{m.group(1)}>" if value is None else str(value)

    return _PLACEHOLDER.sub(sub, _ASIDE.sub(drop_aside, template))
