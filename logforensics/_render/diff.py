"""``logx diff``'s text view: the ranked differences of two runs as tables."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .._diff import CONFIRM, Comparison, RunRecord


def _show(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def render_diff(comparison: Comparison, console: Console, everything: bool = False) -> None:
    """Print the comparison for a person: the ranked likely causes, then what the runs showed."""
    b, c = comparison.base, comparison.cand

    def where(r: RunRecord) -> str:
        return r.file + (f" (run {r.run} of {r.runs_in_file})" if r.runs_in_file > 1 else "")

    console.print(Text.assemble(("logx diff ", "bold"), (where(b), "bold underline"), " → ",
                                (where(c), "bold underline")))
    if not comparison.differences:
        console.print(Text("No difference in the facts both logs show.", style="green"))
        return
    for title, rows in (("Likely causes, most likely effect first", comparison.causes),
                        ("What the runs showed", comparison.outcomes),
                        ("Same in both", [d for d in comparison.differences if d.kind == "same"])):
        shown = [d for d in rows if d.score > 0 or everything]
        hidden = len(rows) - len(shown)
        if not rows:
            continue
        table = Table(title=title, title_justify="left", title_style="bold", show_edge=False,
                      pad_edge=False, expand=False)
        table.add_column("#", justify="right", style="dim", no_wrap=True)
        table.add_column("fact", no_wrap=True)
        table.add_column("baseline", overflow="fold")
        table.add_column("candidate", overflow="fold")
        if title != "Same in both":
            table.add_column("why it can matter", overflow="fold")
        for i, d in enumerate(shown, 1):
            cells = [str(i), f"{d.section}.{d.key}", escape(_show(d.base)), escape(_show(d.cand))]
            if title != "Same in both":
                cells.append(escape(d.reason))
            table.add_row(*cells)
        console.print(table)
        if hidden:
            console.print(Text(f"+ {hidden} difference(s) with no likely effect (port, seed, …; show with --all)",
                               style="dim"))
    console.print(Text(CONFIRM, style="italic"))
