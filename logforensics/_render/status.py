"""The text of the stale-log detector's verdict (``logx status``, the block under
``explain``'s verdict). Rich markup; ``staleness.py`` decides, this module shows.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.text import Text

from .._clock import duration
from .._report import Report
from .._staleness import Status

STATE_STYLE = {"FRESH": "bold green", "STALE": "bold yellow", "EMPTY": "bold yellow",
               "SILENT": "bold red", "DEAD": "bold red"}


def status_block(status: Status) -> Group:
    """The status block shown under the verdict (one dim line when nothing was verified)."""
    head = Text.assemble(("Log: ", "bold"), (status.state, STATE_STYLE.get(status.state, "bold")))
    pid_missing = status.facts.get("process", {}).get("exists") is False  # --pid of no process
    if status.state == "FRESH" and not status.verified and not status.findings and not pid_missing:
        head.append(" (unverified: no --pid, --since or sidecar to check against; nothing in the file "
                    "contradicts it)", style="dim")
        return Group(head, *(Text(f"  • {r}", style="dim") for r in status.reasons
                             if not r.startswith("unverified:")))
    head.append("  (verified)" if status.verified else "  (unverified)",
                style="green" if status.verified else "dim")
    from rich.table import Table  # here: the common unverified FRESH block above needs none (~7 ms to import)

    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True, style="dim")
    table.add_column(overflow="fold")
    for reason in status.reasons:
        table.add_row("•", escape(reason))
    for label, text in fact_lines(status.facts):
        table.add_row(label, escape(text))
    return Group(head, table)


def render_status(report: Report) -> Group:
    """The short text of ``logx status``: the verdict line and the status block."""
    verdict = report.verdict
    line = Text.assemble((report.file, "bold underline"), ("  verdict: ", "bold"), (verdict.upper(), "bold"))
    if report.primary is not None:
        line.append(f" — {report.primary.title} ", style="bold")
        line.append(f"[{report.primary.id}]", style="dim")
    if report.runs:
        explained = report.run.index if report.run else "none"
        line.append(f"  (run {explained} of {len(report.runs)})", style="dim")
    parts: list = [line]
    if report.status is not None:
        parts.append(status_block(report.status))
    return Group(*parts)


def fact_lines(facts: dict[str, Any]) -> list[tuple[str, str]]:
    """The few facts worth a line of text (the JSON has them all)."""
    out = []
    if facts.get("source") == "file":
        text = (f"{facts.get('size_bytes', 0):,} bytes, last written {facts.get('mtime')} "
                f"({duration(facts['mtime_age_s'])} ago)")
        if facts.get("bytes_since_start") is not None:
            text += f"; {facts['bytes_since_start']:,} bytes since this run started"
        out.append(("File", text))
    if facts.get("log_last_time"):
        out.append(("Log time", f"{facts.get('log_first_time')} → {facts['log_last_time']}"))
    if facts.get("clock_note"):
        out.append(("Clock", facts["clock_note"]))
    p = facts.get("process")
    if p:
        text = f"pid {p['pid']} ({p['source']}) {'alive' if p['alive'] else 'not running'}" if p["pid"] else \
            f"none ({p['source']}): the command never started"
        if p.get("started_at"):
            text += f", started {p['started_at']}"
        if p.get("writes_to"):
            text += f", writes to {', '.join(p['writes_to'])}"
        if p.get("command"):
            text += f": {p['command'][:120]}"
        out.append(("Process", text))
        if p.get("note"):
            out.append(("", p["note"]))
    sc = facts.get("sidecar")
    if sc:
        end = "running" if not sc.get("ended_at") else (
            f"killed by signal {sc['signal']}" if sc.get("signal") is not None else f"exit code {sc.get('exit_code')}")
        out.append(("Sidecar", f"{sc.get('path')}: pid {sc.get('pid')}, started {sc.get('started_at')}, {end}"))
    if facts.get("sidecar_note"):
        out.append(("Sidecar", facts["sidecar_note"]))
    if facts.get("since"):
        out.append(("Since", facts["since"]))
    if facts.get("pid_note"):
        out.append(("PIDs", facts["pid_note"]))
    return out
