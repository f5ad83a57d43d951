"""The text a person reads of a ``Report`` (``logx explain``): the run summary, the phase
timeline, the memory ledger and the findings as panels. Rich markup; the caller's
``Console`` decides colour (a TTY, ``NO_COLOR``) and width.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .._catalog import SlowPattern
from .._findings import Finding
from .._memory import build_ledger
from .._report import Report, series_json, serving_json
from .._runs import PHASES, Run
from .memory import LedgerView
from .status import status_block

_STYLE = {"fatal": "bold red", "error": "red", "warning": "yellow", "info": "cyan"}
VERDICT_STYLE = {"failed": "bold red", "ready": "bold green", "running": "bold cyan",
                  "stale": "bold yellow", "empty": "bold yellow", "unknown": "bold"}


# — text ————————————————————————————————————————————————————————————————————


def phase_timeline(run: Run, failed: bool) -> Text:
    """``args ✓ → weights ✓ → kv_alloc ✗``: the phases the log shows, up to the one reached;
    ``…`` stands for phases the log does not show (a cut paste)."""
    text = Text()
    reached = PHASES.index(run.phase)
    first = True
    gap = False
    for i, phase in enumerate(PHASES[: reached + 1]):
        last = i == reached
        if phase not in run.phase_lines and not last:
            gap = True
            continue
        if not first:
            text.append(" → ", style="dim")
        if gap:
            text.append("… → ", style="dim")
            gap = False
        first = False
        mark, style = ("✗", "bold red") if (last and failed) else ("✓", "green")
        text.append(f"{phase} ", style="bold" if last else "")
        text.append(mark, style=style)
    return text


def render(report: Report, console: Console, verbose: bool = False) -> None:
    """Print the report for a person."""
    console.print(Group(*_sections(report, verbose, console.width)))


def _sections(report: Report, verbose: bool, console_width: int = 100) -> list:
    out: list = []
    run = report.run
    head = Text.assemble(("logx explain ", "bold"), (report.file, "bold underline"))
    if len(report.runs) > 1 and run is not None:
        head.append(f"   run {run.index} of {len(report.runs)} in this file "
                    f"(lines {run.first_line}–{run.last_line}); "
                    "earlier runs exist — pick one with --run N", style="dim")
    out.append(head)
    verdict = report.verdict
    line = Text.assemble(("Verdict: ", "bold"), (verdict.upper(), VERDICT_STYLE[verdict]))
    if report.primary is not None and verdict not in ("stale", "empty"):  # stale: not this run's cause
        line.append(f" — {report.primary.title} ", style="bold")
        line.append(f"[{report.primary.id}]", style="dim")
    out.append(line)
    lead = report.primary if verdict == "failed" else None
    if lead is not None:  # the cause's fix on the first screen; its panel below holds the proof
        out.append(Text.assemble(("Fix: ", "bold green"), lead.fix))
    if report.status is not None:
        out.append(status_block(report.status))
    if run is None:
        out.append(Text(f"No lines in the log ({report.lines} lines read)."))
        out.extend(finding_panel(i, f, fix_above=f is lead)  # e.g. log_empty
                   for i, f in enumerate(report.findings, 1))
        return out
    out.append(_run_summary(run, report))
    series = serving_summary(run, console_width)
    if series is not None:
        out.append(series)
    ledger = build_ledger(run)
    if ledger.status == "touched":  # the memory ledger: where each rank's GPU memory went
        out.append(LedgerView(ledger))
    if report.memory_untouched and report.primary is not None:
        flags = report.run.dialect.memory_flags if report.run is not None else ()
        named = f" ({', '.join(flags)}, …)" if flags else ""
        out.append(Text(
            "GPU memory was never touched: the run stopped in the "
            f"{report.primary.phase} phase, before any GPU allocation. No memory flag"
            f"{named} will help.", style="bold"))
    own = getattr(report.status, "findings", None) or []  # the stale-log detector's: always shown
    shown, symptoms, hidden = split_findings(report.findings, verbose, own)
    if not report.findings:
        out.append(Text("No findings: nothing in this run matches a known failure.",
                        style="green"))
    for i, finding in enumerate(shown, 1):
        out.append(finding_panel(i, finding, fix_above=finding is lead))
    for finding in symptoms:
        at = finding.evidence[0].line if finding.evidence else "?"
        out.append(Text(f"Also seen (a symptom of the cause above): {finding.title} "
                        f"[{finding.id}, line {at}]", style="dim"))
    if hidden:
        rest = ", ".join(sorted({f.id for f in hidden}))
        out.append(Text(f"+ {len(hidden)} lower-severity finding(s): {rest} (show with -v)", style="dim"))
    out.extend(slow_pattern_line(slow) for slow in report.slow_patterns)
    return out


def slow_pattern_line(slow: SlowPattern) -> Text:
    """A pattern whose regex timed out: said once, with what it cost."""
    what = ("disabled for the rest of this file" if slow.disabled
            else "those lines were read as no match")
    return Text(f"Pattern {slow.id} ({slow.source}): its regex timed out {slow.timeouts}× "
                f"({slow.seconds:.2f} s), {what}; rewrite it without nested repetition "
                "(`logx patterns lint`).", style="yellow")


SYMPTOM_PRIORITY = 10  # problems ranked at or below this are symptoms (sigquit, "see above")


def split_findings(findings: Sequence[Finding], verbose: bool,
                   always: Sequence[Finding] = ()) -> tuple[list[Finding], list[Finding], list[Finding]]:
    """(shown as panels, one-line symptoms, hidden). The primary root cause and the other
    real problems get panels; low-priority problems after a cause are one-line symptoms;
    warnings and info wait for ``-v`` unless nothing else was found. ``always`` (the
    stale-log detector's findings) are always panels."""
    if verbose:
        return list(findings), [], []
    problems = [f for f in findings if f.is_problem]
    if not problems:
        return list(findings), [], []
    primary = problems[0]
    panels = [f for f in findings if f is primary or f in always
              or (f.is_problem and f.priority > SYMPTOM_PRIORITY)]
    symptoms = [f for f in problems if f not in panels]
    hidden = [f for f in findings if f not in panels and f not in symptoms]
    return panels, symptoms, hidden


def _run_summary(run: Run, report: Report) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    version = run.server_version or (f"{run.version_range} (from the log format)" if run.version_range
                                     else "version not printed in the log")
    table.add_row(run.dialect.label, escape(version))
    model = run.model or "unknown"
    if run.model_class:
        model += f" ({run.model_class})"
    table.add_row("Model", escape(model))
    flags = ", ".join(f"{k}={v}" for k, v in shown_args(run).items())
    if flags:
        table.add_row("Flags", escape(flags))
    table.add_row("Phase", phase_timeline(run, report.primary is not None))
    when = " → ".join(t for t in (run.started_at, run.ended_at) if t)
    if when:
        table.add_row("Time", when)
    if run.endings:
        seen: dict[str, int] = {}  # one entry per distinct message (ranks repeat them)
        for e in run.endings:
            seen.setdefault(clip_words(e.line.message, 70), e.number)
        ends = "; ".join(f"{msg} (line {n})" for msg, n in list(seen.items())[:3])
        table.add_row("Ended", escape(ends))
    serving = serving_json(run)
    if serving:
        table.add_row("Serving", escape(", ".join(f"{k}={v}" for k, v in serving.items()
                                                   if v is not None and k != "series")))
    return table


# — the serving summary (serving.Series): one sparkline row per figure ————————————————

SPARKS = "▁▂▃▄▅▆▇█"
# (label, the series' key, the unit after the figures, digits)
SPARK_ROWS = (("gen tok/s", "gen_throughput_mean", "", 0), ("queue", "queue_req_max", " req", 0),
              ("token usage", "token_usage_max", "", 2))
SPARK_MIN = 8  # narrower than this, a row says nothing


def sparkline(values: list[float | None], top: float) -> str:
    """One block per value, scaled from 0 to ``top`` (0-based, so steady noise stays flat);
    a space for a bucket without a decode line."""
    if top <= 0:
        return "".join(" " if v is None else SPARKS[0] for v in values)
    return "".join(" " if v is None else SPARKS[min(len(SPARKS) - 1, int(v / top * (len(SPARKS) - 1) + 0.5))]
                   for v in values)


def _squeeze(rows: list[dict[str, Any]], key: str, room: int) -> list[float | None]:
    """The row's values, adjacent buckets combined (max) until they fit ``room`` blocks."""
    values = [r[key] for r in rows]
    step = -(-len(values) // room)
    out = []
    for i in range(0, len(values), step):
        group = [v for v in values[i:i + step] if v is not None]
        out.append(max(group) if group else None)
    return out


def serving_summary(run: Run, width: int) -> Group | None:
    """The run's serving time series as sparklines, when it served (decode lines were read)."""
    series = series_json(run)
    if series is None:
        return None
    rows = series["buckets"]
    lines = []
    for label, key, unit, digits in SPARK_ROWS:
        values = [r[key] for r in rows if r[key] is not None]
        if values:
            top = max(values)
            lines.append((label, key, top,
                          f"{values[0]:.{digits}f} → {values[-1]:.{digits}f}{unit} (max {top:.{digits}f})"))
    label_width = max(len(label) for label, *_ in SPARK_ROWS) + 2
    room = max(SPARK_MIN, min(len(rows), width - label_width - max((len(f) for *_, f in lines), default=0) - 2))
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True, min_width=label_width)
    table.add_column(no_wrap=True)
    table.add_column(style="dim")
    for label, key, top, figures in lines:
        shown = _squeeze(rows, key, room)
        table.add_row(f"  {label}", Text(sparkline(shown, 1.0 if key == "token_usage_max" else top), style="cyan"),
                      figures)
    head = Text.assemble(("Serving series ", "bold"),
                         f"{series['decode_lines']} decode lines from {series['start']}, "
                         f"{len(rows)} buckets of {series['bucket_seconds']} s")
    return Group(head, table)


_QUIET_DEFAULTS = {"dp_size": 1, "pp_size": 1, "ep_size": 1, "nnodes": 1, "page_size": 1}


def shown_args(run: Run) -> dict[str, Any]:
    """The key flags worth a person's attention: set, not a default, not the model again."""
    out = {}
    for key, value in run.key_args().items():
        if value is None or value is False or key in ("model_path", "host"):
            continue
        if _QUIET_DEFAULTS.get(key) == value or (key == "served_model_name" and value == run.model):
            continue
        if value in ("auto", "None"):
            continue
        out[key] = value
    return out


def finding_panel(i: int, f: Finding, fix_above: bool = False) -> Panel:
    """One finding: title, evidence, why and fix (``fix_above``: the fix is printed under the
    verdict, so the panel points there instead of repeating it)."""
    body = Table.grid(padding=(0, 1))
    body.add_column(style="dim", justify="right", no_wrap=True)
    body.add_column(overflow="fold")
    for ev in f.evidence:
        body.add_row(str(ev.line) if ev.line > 0 else "", Text(ev.text))  # 0: not a log line
    parts: list = [Text.assemble((f"{i}. {f.severity.upper()}  ", _STYLE[f.severity]),
                                 (f.title, "bold"))]
    parts.append(body)
    if f.same_on:
        parts.append(Text(f"(the same traceback on {rank_ranges(f.same_on)})", style="dim"))
    if f.traceback is not None and f.traceback.missing:
        parts.append(Text(f"(traceback incomplete: {', '.join(f.traceback.missing)})",
                          style="dim"))
    parts.append(Text.assemble(("Why: ", "bold"), f.explanation))
    parts.append(Text.assemble(("Fix: ", "bold green"), "printed under the verdict") if fix_above
                 else Text.assemble(("Fix: ", "bold green"), f.fix))
    meta = f"{f.id} · phase {f.phase} · confidence {f.confidence:.2f}"
    if f.occurrences > 1:
        meta += f" · seen {f.occurrences}×"
    if f.streams and any(f.streams):
        meta += f" · {', '.join(s for s in f.streams if s)[:60]}"
    return Panel(Group(*parts), subtitle=Text(meta, style="dim"), subtitle_align="right",
                 border_style=_STYLE[f.severity])


def clip_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with "…" when cut (a
    message cut mid-word reads as another word: "the child fail")."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:") + "…"


_NUMBERED = re.compile(r"(.*?)(\d+)$")


def rank_ranges(streams: list[str]) -> str:
    """``TP1–TP3, TP5``: stream names (their rank tag when they have one), consecutive numbers
    of one prefix as a range."""
    runs: list[list] = []  # [prefix, first, last] or [name, None, None]
    names = {s.rsplit("|", 1)[-1] or s.rsplit("|", 1)[0] for s in streams}
    for name in sorted(names, key=lambda s: (m.group(1), int(m.group(2))) if (m := _NUMBERED.match(s))
                       else (s, -1)):
        m = _NUMBERED.match(name)
        if m and runs and runs[-1][0] == m.group(1) and runs[-1][2] == int(m.group(2)) - 1:
            runs[-1][2] += 1
        elif m:
            runs.append([m.group(1), int(m.group(2)), int(m.group(2))])
        else:
            runs.append([name, None, None])
    return ", ".join(p if a is None else f"{p}{a}" if a == b else f"{p}{a}–{p}{b}" for p, a, b in runs)
