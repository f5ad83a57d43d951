"""The text of a deployment (``incident.Incident``): its nodes, one timeline merged by time,
the root cause's panel from its node's report, and every other failure as a consequence."""

from __future__ import annotations

import os
import re

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .._findings import CLOCK_TOLERANCE
from .._incident import Incident
from .._report import Report
from .report import VERDICT_STYLE, finding_panel

_TP_TAG = re.compile(r"((?:\w+_)?)TP(\d+)")  # "TP8", vLLM's "Worker_TP8"


def render_incident(incident: Incident, reports: list[Report], console: Console) -> None:
    """Print a deployment: the nodes, the merged timeline, the root cause with its evidence,
    and every other node's failure as its consequence."""
    console.print(Group(*_incident_sections(incident, reports)))


def _node_name(rank: int | None) -> str:
    return f"node {rank}" if rank is not None else "node ?"


def _incident_sections(incident: Incident, reports: list[Report]) -> list:
    nodes, root = incident.nodes, incident.root
    first = nodes[0]
    folder = os.path.commonpath([os.path.dirname(n.file) or "." for n in nodes])

    def short(file: str) -> str:  # file names once their common directory is said
        return os.path.relpath(file, folder) if folder not in ("", ".") else file

    head = Text.assemble(("logx explain ", "bold"), (f"deployment of {len(nodes)} node logs", "bold underline"))
    if folder not in ("", "."):
        head.append(f" in {folder}/", style="bold")
    ident = ", ".join(f"{k}={v}" for k, v in (("model", first.model), ("nnodes", first.nnodes),
                                             ("dist_init_addr", first.dist_init_addr)) if v)
    out: list = [head, Text(ident, style="dim")]
    verdict = incident.verdict
    line = Text.assemble(("Verdict: ", "bold"), (verdict.upper(), VERDICT_STYLE[verdict]))
    if root is not None:
        where = f"{_node_name(incident.node_rank_of(root.file))}" + (f", {root.stream}" if root.stream else "")
        line.append(f" — {root.title} ", style="bold")
        line.append(f"[{root.id}]", style="dim")
        line.append(f" on {where} ({short(root.file)}, line {root.line})", style="bold")
    out.append(line)
    table = Table(box=None, padding=(0, 1), show_edge=False)
    for column in ("node", "file", "ranks", "reached", "last line", "first failure"):
        table.add_column(column, style="bold" if column == "node" else "", overflow="fold")
    for node, rank in zip(nodes, incident.node_ranks, strict=True):
        failure = node.failures[0] if node.failures else None
        what = "—"
        if failure is not None:
            what = f"{failure.id} ({'root cause' if failure is root else 'consequence'})"
        table.add_row(str(rank) if rank is not None else "?", escape(short(node.file)), _rank_span(node.ranks),
                      node.phase, node.ended_at or "—", escape(what),
                      style="red" if failure is root and root is not None else "")
    out.append(table)
    tolerance = int(CLOCK_TOLERANCE.total_seconds())
    out.append(Text(f"Timeline (all nodes, merged by time; clocks may differ by up to {tolerance} s)",
                    style="bold"))
    grid = Table.grid(padding=(0, 1))
    for entry in incident.timeline:
        what = entry["event"].replace("_", " ")
        if "id" in entry:
            what += f" {entry['id']} ({entry['stream'] + ', ' if entry['stream'] else ''}line {entry['line']})"
        at = entry["at"] or "(no time)"
        grid.add_row(f"≈{at}" if entry.get("estimated") else at, _node_name(entry["node_rank"]), escape(what),
                     style="bold red" if entry["event"] == "root_cause" else "")
    out.append(grid)
    if root is None:
        out.append(Text("No node failed.", style="green"))
        return out
    report = next(r for r in reports if r.file == root.file)
    finding = next((f for f in report.findings if f.id == root.id), None)
    out.append(Text(f"Root cause on {_node_name(incident.node_rank_of(root.file))}, {short(root.file)}:",
                    style="bold"))
    if finding is not None:
        out.append(finding_panel(1, finding))
    if incident.only_symptoms:
        out.append(Text("No node shows an error of its own: every failure is one that follows another "
                        "(a timeout, a signal). The first in time is shown; check the nodes whose logs "
                        "are missing here and the network between them.", style="bold"))
    for other in incident.uncertain:
        out.append(Text(f"Order uncertain: {other.id} on {_node_name(incident.node_rank_of(other.file))} "
                        f"({short(other.file)}, line {other.line}, {other.at or 'no time'}) happened within "
                        f"{tolerance} s of the root cause; the more specific error (then the earlier "
                        "phase) was chosen.", style="yellow"))
    if incident.consequences:
        out.append(Text("Consequences (failures that follow the root cause; the first line of each kind):",
                        style="bold"))
        body = Table.grid(padding=(0, 1))
        body.add_column(no_wrap=True)
        body.add_column(overflow="fold")
        shown: set[str] = set()
        for f in incident.consequences:
            where = f"{_node_name(incident.node_rank_of(f.file))} {f.stream}".rstrip()
            body.add_row(escape(where), Text.assemble(
                (f"{f.title} [{f.id}]", ""), (f" {short(f.file)}:{f.line}" + (f" at {f.at}" if f.at else ""), "dim")))
            if f.id not in shown:
                shown.add(f.id)
                body.add_row("", Text(f.text[:300], style="dim"))
        out.append(body)
    out.append(Text("Each node's full report: logx explain --separate FILE…", style="dim"))
    return out


def _rank_span(ranks: tuple[str, ...]) -> str:
    """``TP8–TP15`` (``Worker_TP8–Worker_TP15``) for a contiguous run of TP ranks, which stand
    for the node when it has them; else the processes joined."""
    tps = [m for r in ranks if (m := _TP_TAG.fullmatch(r))]
    tags = [m.group(0) for m in tps] or list(ranks)
    if not tags:
        return "—"
    numbers = [int(m.group(2)) for m in tps]
    if len({m.group(1) for m in tps}) == 1 and len(numbers) > 2 \
            and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{tags[0]}–{tags[-1]}"
    return ", ".join(tags)
