"""The analysis: stream a log through every stage and build a ``Report``.

``Analyzer`` is incremental (``feed`` raw lines, ``report()`` at any time) so the same code
serves ``logx explain`` (a whole file) and ``logx watch`` (a growing one). ``explain()`` is the
one-call library entry point.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from . import staleness
from .catalog import Catalog, load_catalog
from .events import Event
from .findings import Finding, Matcher, rank
from .pipeline import EventStream, Source
from .report import Report
from .runs import PHASE_RANK, Run, RunTracker
from .sources import RawLine, SourceError, SpecialLine, check_readable, iter_blocks, read_chunks

MAMBA_FLAG_OLD = "--mamba-scheduler-strategy"
MAMBA_FLAG_NEW = "--mamba-radix-cache-strategy"
GRAPH_BS_OLD = "--cuda-graph-max-bs"
GRAPH_BS_NEW = "--cuda-graph-max-bs-decode"


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    if not version:
        return None
    parts = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) if parts else None


def mamba_strategy_flag(run: Run) -> str:
    """The Mamba radix-cache strategy flag's name in this run's release: renamed from
    ``--mamba-scheduler-strategy`` to ``--mamba-radix-cache-strategy`` in 0.5.14, the old
    name removed in 0.5.20."""
    if "mamba_radix_cache_strategy" in run.args:
        return MAMBA_FLAG_NEW
    if "mamba_scheduler_strategy" in run.args:
        return MAMBA_FLAG_OLD
    version = version_tuple(run.sglang_version)
    if version:
        return MAMBA_FLAG_OLD if version < (0, 5, 14) else MAMBA_FLAG_NEW
    if ">=0.5.19" in run.version_hints:  # the dict-form server_args dump: the old name is gone
        return MAMBA_FLAG_NEW
    # The flag SGLang's own messages name is the flag of this release (a cut message
    # still names it: no other flag starts with "--mamba-scheduler").
    texts = " ".join(tb.message for tb in run.tracebacks)
    if MAMBA_FLAG_NEW in texts:
        return MAMBA_FLAG_NEW
    if "--mamba-scheduler" in texts:
        return MAMBA_FLAG_OLD
    return f"{MAMBA_FLAG_NEW} (named {MAMBA_FLAG_OLD} before SGLang 0.5.14)"


def cuda_graph_max_bs_flag(run: Run) -> str:
    """``--cuda-graph-max-bs`` became ``--cuda-graph-max-bs-decode`` in 0.5.20."""
    version = version_tuple(run.sglang_version)
    if version:
        return GRAPH_BS_OLD if version < (0, 5, 20) else GRAPH_BS_NEW
    texts = " ".join(tb.message for tb in run.tracebacks)
    if GRAPH_BS_NEW in texts or "cuda_graph_max_bs_decode" in run.args:
        return GRAPH_BS_NEW
    if f"{GRAPH_BS_OLD} " in texts or "cuda_graph_max_bs" in run.args or ">=0.5.19" not in \
            run.version_hints:
        return GRAPH_BS_OLD
    return f"{GRAPH_BS_NEW} ({GRAPH_BS_OLD} before SGLang 0.5.20)"


def run_facts(run: Run) -> dict[str, Any]:
    """Values for the catalog's ``{placeholders}``."""
    facts: dict[str, Any] = {k: v for k, v in run.args.items()
                             if isinstance(v, str | int | float | bool)}
    facts.update({
        "model": run.model or run.model_class,
        "sglang_version": run.sglang_version,
        "mamba_strategy_flag": mamba_strategy_flag(run),
        "cuda_graph_max_bs_flag": cuda_graph_max_bs_flag(run),
    })
    return facts


class BulkStretch:
    """A stretch of statistics lines seen on the fast path: counts, and the lines that
    represent it (its first line, the last prefill, decode and access lines)."""

    __slots__ = ("count", "batches", "requests", "first", "last_prefill", "last_decode",
                 "last_access", "last_number")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.count = self.batches = self.requests = self.last_number = 0
        self.first = self.last_prefill = self.last_decode = self.last_access = None

    def add(self, number: int, offset: int, data: bytes) -> None:
        self.count += 1
        self.last_number = number
        if not data:  # a blank line only extends the run
            return
        item = (number, offset, data)
        if self.first is None:
            self.first = item
        if b"] Decode batch" in data:
            self.batches += 1
            self.last_decode = item
        elif b"] Prefill batch" in data:
            self.batches += 1
            self.last_prefill = item
        else:
            self.requests += 1
            self.last_access = item

    def representatives(self) -> list[RawLine]:
        items = {i for i in (self.first, self.last_prefill, self.last_decode, self.last_access) if i}
        return [RawLine(n, o, d) for n, o, d in sorted(items)]


@dataclass
class Options:
    """What the caller knows beyond the log (used by the stale-log detector)."""

    run_index: int | None = None  # 1-based; None = the last run
    pid: int | None = None
    since: float | None = None  # epoch seconds the run of interest started
    silence: float = 120.0
    status: bool = True  # run the stale-log detector in explain() (paths; streams only with pid/since)


class Analyzer:
    """Streams raw lines through lines → events → tracebacks → runs → catalog hits."""

    def __init__(self, catalog: Catalog | None = None):
        self.catalog = catalog or load_catalog()
        self.events = EventStream()
        self.tracker = RunTracker()
        self.matcher = Matcher(self.catalog)
        self.lines = 0
        self.bytes = 0
        self._bulk = BulkStretch()
        # stale-log detector: the run of interest starts at this byte (a sidecar's log_offset)
        self.start_offset: int | None = None
        self.start_line: int | None = None
        self._split_done = False

    def start_at(self, offset: int) -> None:
        """Force a run boundary at byte ``offset`` (``logx run --append``: the new run starts there)."""
        self.start_offset = offset if offset > 0 else None

    def feed(self, raw: RawLine) -> list[Event]:
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
        While no traceback is open, such a line is only counted (a cheap byte test, no
        decoding, no regex); the first and last of each stretch go through the full pipeline,
        so phases, timestamps and the latest figures stay exact. Every other line takes the
        full path, exactly as ``feed`` would."""
        number, offset = self.lines, self.bytes
        for block in iter_blocks(chunks):
            if isinstance(block, SpecialLine):
                number += 1
                if self._bulk.count:
                    self._flush_bulk()
                self.feed(RawLine(number, offset, block.data, block.truncated, block.eol))
                offset += block.size
                continue
            lines = block.split(b"\n")
            lines.pop()
            assembler = self.events.assembler
            bulk = self._bulk
            for data in lines:
                number += 1
                if not assembler.has_open and (
                    not data or (b"] Decode batch" in data or b"] Prefill batch" in data
                                 or b'HTTP/1.1" 200' in data)):
                    bulk.add(number, offset, data)
                else:
                    if bulk.count:
                        self._flush_bulk()
                    self.feed(RawLine(number, offset, data))
                offset += len(data) + 1
        self.lines, self.bytes = number, offset

    def _flush_bulk(self) -> None:
        """Feed a stretch of statistics lines' representatives and count the rest."""
        bulk = self._bulk
        keep = bulk.representatives()
        lines, size = self.lines, self.bytes
        for raw in keep:
            self.feed(raw)
        self.lines, self.bytes = lines, size
        run = self.tracker.current
        run.last_line = max(run.last_line, bulk.last_number)
        run.batches += bulk.batches - sum(1 for r in keep if b" batch" in r.data)
        run.requests += bulk.requests - sum(1 for r in keep if b"HTTP/" in r.data)
        bulk.reset()

    def finish(self) -> list[Event]:
        if self._bulk.count:
            self._flush_bulk()
        out = self.events.finish()
        for event in out:
            self._dispatch(event)
        return out

    def _dispatch(self, event: Event) -> None:
        if self.start_line is not None and not self._split_done and event.number >= self.start_line:
            self._split_done = True
            if self.runs and self.runs[-1].first_line < self.start_line:
                self.tracker._new_run(self.start_line)
        run = self.tracker.feed(event)
        self.matcher.on_event(event, run)

    @property
    def runs(self) -> list[Run]:
        return self.tracker.runs

    def findings(self, run: Run) -> list[Finding]:
        return self.matcher.findings(run, run_facts(run))

    def report(self, name: str, options: Options | None = None) -> Report:
        options = options or Options()
        runs = self.runs
        index = options.run_index if options.run_index is not None else len(runs)
        run = runs[index - 1] if runs and 1 <= index <= len(runs) else None
        if self.start_offset is not None and self.start_line is None and options.run_index is None:
            run = None  # the run of interest has not written a line yet: older runs are not it
        findings = rank(self.findings(run)) if run is not None else []
        primary = next((f for f in findings if f.is_problem), None)
        if run is not None and primary is not None and primary.phase in PHASE_RANK:
            # The root cause says where the launch was even when the log does not.
            run.reach(primary.phase, primary.evidence[0].line if primary.evidence else run.last_line)
        return Report(file=name, runs=runs, run=run, findings=rank(findings),
                      lines=self.lines, bytes=self.bytes)


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
    cannot be read and ``ValueError`` for a ``run_index`` outside the file's runs."""
    options = options or Options()
    analyzer = Analyzer(catalog)
    # stale-log detector: paths always; streams (no mtime) only when a pid/since is given
    path = os.fspath(source) if isinstance(source, str | os.PathLike) and os.fspath(source) != "-" else None
    context = staleness.prepare(path, options) if options.status and (
        path is not None or options.pid is not None or options.since is not None) else None
    if context is not None:
        analyzer.start_at(context.offset)
    analyzer.consume(chunks_of(source))
    analyzer.finish()
    if options.run_index is not None and not 1 <= options.run_index <= max(1, len(analyzer.runs)):
        raise ValueError(f"run {options.run_index} does not exist: the log holds "
                         f"{len(analyzer.runs)} run(s)")
    if name is None:
        name = os.fspath(source) if isinstance(source, str | os.PathLike) else "<stream>"
    report = analyzer.report(name, options)
    if context is not None:
        staleness.apply(report, staleness.assess(path, report, options, context=context))
    return report
