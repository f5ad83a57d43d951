"""The memory ledger as text: a compact table (one column per group of identical ranks), the
static-fraction and KV-room arithmetic under it, and on a terminal one bar per rank.
``ledger_table``/``ledger_lines`` are plain text for any renderer (``share`` writes Markdown
from them); ``LedgerView`` is the rich renderable the report shows."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from .._memory.facts import oom_sentence
from .._memory.ledger import STEP_LABEL, STEPS, Ledger, RankLedger
from .._memory.units import gib_text, number

_MAX_COLUMNS = 4


def _cell(r: RankLedger, step: str, ledger: Ledger) -> str:
    state = r.step_state(step, ledger.run_reached, ledger.hybrid)
    if state == "not_reached":
        return "— not reached"
    if state == "unknown":
        return "unknown (not in log)"
    if state == "not_logged":
        return "(first rank prints it)"
    oom = r.oom.oom if r.oom is not None else None
    if state == "ran_out":
        assert oom is not None
        asked = f"asked {gib_text(oom.requested_gib)}" if oom.requested_gib is not None else "ran out"
        free = f", {gib_text(oom.free_gib)} free" if oom.free_gib is not None else ""
        prefix = ""
        if step == "cuda_graphs" and r.graph_last_bs is not None:
            prefix = f"bs≈{r.graph_last_bs}: "
        return f"✗ {prefix}{asked}{free}"
    if state == "failed":
        rest = ledger.kv_rest
        if step == "kv_cache" and rest is not None and rest <= 0:
            return f"✗ no room: rest = {gib_text(rest)}"
        return "✗ failed here"
    if state == "in_progress":
        if step == "cuda_graphs":
            where = f" at bs={r.graph_last_bs}, {gib_text(r.graph_last_avail_gib)} free" if r.graph_last_bs else ""
            return f"started, no end line{where}"
        return "started, no end line"
    if step == "init":
        return f"{gib_text(r.before_weights_gib)} → {gib_text(r.avail_at_start_gib)} free"
    if step == "weights":
        return f"{gib_text(r.weights_gib)} → {gib_text(r.avail_after_weights_gib)} free"
    if step == "kv_cache":
        if r.kv_k_gib is not None and r.kv_v_gib is not None:
            size = f"K {r.kv_k_gib:.2f} + V {r.kv_v_gib:.2f} = {gib_text(r.kv_gib)}"
        else:
            size = gib_text(r.kv_gib)
        tokens = f", {r.kv_tokens:,} tok" if r.kv_tokens is not None else ""
        return f"{size}{tokens}"
    if step == "mamba_cache":
        per = ledger.server.step_note(step, r) if ledger.server is not None else ""
        slots = f", {r.mamba_slots} slots" if r.mamba_slots is not None else ""
        return f"{gib_text(r.mamba_gib)}{slots}{per}"
    if step == "pools":
        return f"→ {gib_text(r.avail_after_pools_gib)} free"
    if step == "cuda_graphs":
        return f"{gib_text(r.graph_gib)} → {gib_text(r.avail_after_graphs_gib)} free"
    if step == "serving":
        b = r.budget or {}
        left = number(b.get("available_gpu_mem"))
        tail = f" → {gib_text(left)} free" if b.get("available_gpu_mem") is not None else ""
        return f"max {b.get('max_running_requests', '?')} req{tail}"
    return ""


_BAR_STYLES = (("init", "cyan"), ("weights", "blue"), ("KV", "green"), ("Mamba", "magenta"),
               ("graphs", "yellow"), ("other process", "red"), ("free", "dim"))


def bar_segments(r: RankLedger) -> list[tuple[str, float]] | None:
    """What a rank's GPU holds, in GiB, for the bar: init, weights, KV, Mamba, graphs, other
    processes, free (the latest free figure). What the log does not show stays out (the bar's
    unfilled rest). ``None`` when the GPU total is unknown."""
    total = r.gpu_total_gib
    if not total or total <= 0:
        return None
    weights = r.weights_gib
    oom = r.oom.oom if r.oom is not None else None
    known = sum(x or 0.0 for x in (r.before_weights_gib, r.kv_gib, r.mamba_gib, r.graph_gib))
    if weights is None and oom is not None and oom.own_gib is not None and r.oom is not None \
            and r.oom.phase == "weights":
        weights = max(0.0, oom.own_gib - known)  # loaded so far
    other = max(0.0, r.held_before_start_gib or 0.0) if r.gpu_total_source == "torch OOM message" else 0.0
    if oom is not None and oom.other_gib:
        other = max(other, oom.other_gib)
    free = next((x for x in (oom.free_gib if oom else None, r.avail_after_graphs_gib, r.avail_after_pools_gib,
                             r.avail_after_weights_gib, r.avail_at_start_gib) if x is not None), None)
    sizes = [r.before_weights_gib, weights, r.kv_gib, r.mamba_gib, r.graph_gib, other, free]
    return [(label, max(0.0, size or 0.0)) for (label, _), size in zip(_BAR_STYLES, sizes, strict=True)]


def _bar(r: RankLedger, width: int = 40) -> Text | None:
    segments = bar_segments(r)
    if segments is None:
        return None
    total = r.gpu_total_gib or 1.0
    text = Text()
    used = 0
    for (label, style), (_, size) in zip(_BAR_STYLES, segments, strict=True):
        n = min(width - used, int(round(width * size / total)))
        if n > 0:
            text.append(("░" if label == "free" else "█") * n, style=style)
            used += n
    if used < width:
        text.append("·" * (width - used), style="dim")  # not in the log
    text.append(f" {total:.2f} GiB", style="dim")
    return text


def _legend() -> Text:
    text = Text(" " * 11)
    for label, style in _BAR_STYLES:
        text.append("░" if label == "free" else "█", style=style)
        text.append(f" {label}  ", style="dim")
    text.append("· not in the log", style="dim")
    return text


def render_ledger(ledger: Ledger, bars: bool = False) -> list:
    """The ledger as rich renderables: a compact table (one column per group of identical
    ranks), the static-fraction and KV-room arithmetic, and, on a terminal, one bar per rank."""
    out: list = []
    title = Text("Memory", style="bold")
    title.append(" (GiB per GPU; used → free after", style="dim")
    note = ledger.server.title_note() if ledger.server is not None else None
    if note is not None:  # a server without a static fraction (vLLM) is not told it lacks one
        title.append(f"; {note}", style="dim")
    title.append(")", style="dim")
    out.append(title)
    if ledger.status == "not touched":
        out.append(Text("GPU memory: not touched (the run stopped before any GPU allocation)."))
        return out
    header, rows, more = ledger_table(ledger)
    table = Table(box=None, padding=(0, 1), show_edge=False, pad_edge=False, header_style="bold")
    table.add_column(header[0], style="bold", no_wrap=True)
    for label in header[1:]:
        table.add_column(label, overflow="fold")
    for row in rows:
        table.add_row(*row)
    out.append(table)
    if more:
        out.append(Text(f"+ {more} more rank group(s) in --json", style="dim"))
    for line in ledger_lines(ledger):
        out.append(Text(line))
    if bars:
        for label, r in ledger.groups()[:_MAX_COLUMNS]:
            bar = _bar(r)
            if bar is not None:
                bar_row = Text(f"{label:>10} ", style="bold")
                bar_row.append_text(bar)
                out.append(bar_row)
        out.append(_legend())
    return out


def ledger_table(ledger: Ledger) -> tuple[list[str], list[list[str]], int]:
    """The ledger's table as plain text, for any renderer: the header (``step``, then one
    column per group of identical ranks, at most ``_MAX_COLUMNS``), the rows, and how many
    rank groups did not fit."""
    groups = ledger.groups()
    shown = groups[:_MAX_COLUMNS]
    total_row = []
    for _, r in shown:
        if r.gpu_total_gib is None:
            total_row.append("unknown")
        elif r.gpu_total_source and r.gpu_total_source.startswith("at least"):
            total_row.append(f"≥ {r.gpu_total_gib:.2f}")
        else:
            total_row.append(f"{r.gpu_total_gib:.2f} (torch OOM)")
    rows = [["GPU total", *total_row]]
    for step in STEPS:
        cells = [_cell(r, step, ledger) if r.step_state(step, ledger.run_reached, ledger.hybrid) != "n/a"
                 else None for _, r in shown]
        if all(c is None for c in cells):
            continue
        if step == "serving" and all(c in ("— not reached", "(first rank prints it)", None) for c in cells):
            continue
        rows.append([STEP_LABEL[step], *[c or "—" for c in cells]])
    return ["step", *(label for label, _ in shown)], rows, max(0, len(groups) - _MAX_COLUMNS)


def ledger_lines(ledger: Ledger) -> list[str]:
    """The ledger's arithmetic, one sentence per line (used under the table)."""
    lines = ledger.server.notes(ledger) if ledger.server is not None else []
    if ledger.oom is not None:
        lines.append(oom_sentence(ledger.oom, ledger.phase_words))
    if ledger.unbalanced_note:
        lines.append(ledger.unbalanced_note)
    return lines


class LedgerView:
    """The ledger as the report shows it: the bars only on a terminal."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from render_ledger(self.ledger, bars=console.is_terminal)
