"""``logx share``: a diagnosis turned into a bug report a maintainer can read.

Maintainers ask for the log and the environment; users paste 2,000 lines with their tokens and
host names in them, or five lines that miss the cause. ``share`` writes a short Markdown excerpt
instead: the verdict and root cause with its fix, the server, model, key flags and the memory
ledger, then one code block holding only the log lines the diagnosis rests on — the failing
traceback, the lines the findings cite, the start-up lines the ledger reads — with the gaps
marked. Everything is redacted (``redact.py``) and the excerpt is checked: ``logx explain`` on
the code block alone must name the same root cause as on the whole log.

The log is read twice, both times streaming: once to explain it, once to pick out the few
line numbers the excerpt needs. Memory stays bounded whatever the log's size.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ._analysis import Options, explain
from ._catalog import Catalog, load_catalog
from ._lines import visible_text
from ._memory import build_ledger
from ._pipeline import Source, raw_lines
from ._record import field, record
from ._redact import Redactor, Replacement
from ._render.memory import ledger_lines, ledger_table
from ._render.report import phase_timeline, shown_args
from ._report import Report
from ._runs import Run
from ._version import __version__

SCHEMA = "logx.share/1"
MAX_OUTPUT_LINES = 120  # the whole Markdown excerpt; a bug report is read, not scrolled
MIN_BLOCK_LINES = 40  # the code block keeps at least this many lines, whatever the header takes
LINE_CHARS = 8000  # a longer log line is cut (a server_args dump fits)
CONTEXT_BEFORE = 8  # lines before the root cause's first line, when the excerpt needs them
TAIL = 8  # the run's last lines, when the excerpt needs them
MAX_EVIDENCE_PER_FINDING = 4
WHOLE_TRACEBACK_LINES = 60  # a longer traceback is shown as its first and last lines
GAP = "[… {} lines …]"
GAP_ONE = "[… 1 line …]"


@record
class Share:
    """A shareable excerpt of one log: what it says (all redacted) and the lines behind it."""

    file: str
    lines: int
    report: Report  # of the whole log (not redacted: for the caller, never printed as is)
    summary: dict[str, Any]  # verdict, root cause, server, model, flags, phase, memory (redacted)
    excerpt: list[tuple[int, str]]  # (line number, redacted text), in file order
    rediagnosed: str  # the root cause `logx explain` gives on the code block alone
    redactions: list[Replacement] = field(default_factory=list)
    redacted: bool = True  # False: --no-redact

    @property
    def expected(self) -> str:
        return root_cause_id(self.report)

    @property
    def same(self) -> bool:
        return self.rediagnosed == self.expected

    def block_lines(self) -> list[str]:
        """The code block's lines: the excerpt with every gap marked."""
        return block_lines(self.excerpt, self.lines)

    def block_text(self) -> str:
        return "".join(line + "\n" for line in self.block_lines())

    def to_json(self) -> dict[str, Any]:
        items: list[dict[str, Any]] = []
        last = 0
        for number, text in self.excerpt:
            if number > last + 1:
                items.append({"gap": number - last - 1})
            items.append({"line": number, "text": text})
            last = number
        if self.lines > last:
            items.append({"gap": self.lines - last})
        return {"schema": SCHEMA, "file": self.file, "lines": self.lines, **self.summary,
                "excerpt": items,
                "rediagnosis": {"root_cause": self.rediagnosed, "same": self.same},
                "redacted": self.redacted, "redactions": [r.to_dict() for r in self.redactions],
                "logx_version": __version__}

    def markdown(self) -> str:
        return render_markdown(self)


def root_cause_id(report: Report) -> str:
    """The id a report names as the root cause, ``none`` when it names none."""
    return report.primary.id if report.primary is not None else "none"


def block_lines(excerpt: list[tuple[int, str]], total: int) -> list[str]:
    out, last = [], 0
    for number, text in excerpt:
        if number > last + 1:
            out.append(_gap(number - last - 1))
        out.append(text)
        last = number
    if total > last:
        out.append(_gap(total - last))
    return out


def _gap(n: int) -> str:
    return GAP_ONE if n == 1 else GAP.format(f"{n:,}")


# — which lines carry the diagnosis ——————————————————————————————————————————————————


def diagnosis_tiers(report: Report) -> list[list[int]]:
    """Line numbers in the order they are worth a place in the excerpt: the root cause (its
    traceback as logx kept it, its evidence); the other problems' evidence, the server_args
    line, the ledger's start-up lines on the failing rank and how the run ended; every rank's
    ledger lines, the first line of each phase and the warnings' evidence; then, for the
    diagnoses that need more than these lines, context (the lines before the root cause, a
    long traceback's middle, the run's tail) and every line from the cause's first to the run's end."""
    run = report.run
    if run is None:
        return []
    findings = report.findings
    primary = report.primary
    cause: list[int] = []
    also_cited: list[int] = []  # other ranks' copies of the failing traceback
    if primary is not None:
        cited = [e.line for e in primary.evidence]
        holding = [tb for tb in run.tracebacks if tb is primary.traceback
                   or any(tb.first_line <= n <= tb.last_line for n in cited)]
        if primary.traceback in holding:  # the root cause's own traceback first
            holding.remove(primary.traceback)
            holding.insert(0, primary.traceback)
        for i, tb in enumerate(holding):
            (cause if i == 0 else also_cited).extend(_traceback_lines(tb))
        cause += cited
    ledger = build_ledger(run)
    failing_tag = _tag_of(primary, run)
    ranks = sorted(ledger.ranks, key=lambda r: r.rank != failing_tag)
    near: list[int] = also_cited
    for finding in findings:
        if finding.is_problem and finding is not primary:
            near += [e.line for e in finding.evidence[:MAX_EVIDENCE_PER_FINDING]]
    if run.args_line:
        near.append(run.args_line)
    if ranks:
        near += list(ranks[0].lines.values())
    seen: set[str] = set()
    for ending in run.endings:
        if ending.line.message[:70] not in seen:
            seen.add(ending.line.message[:70])
            near.append(ending.number)
        if len(seen) == 3:
            break
    wide = [n for r in ranks[1:] for n in r.lines.values()] + sorted(run.phase_lines.values())
    wide += [e.line for f in findings if not f.is_problem for e in f.evidence[:2]]
    first = min((n for n in cause if n > 0), default=run.last_line)
    context = list(range(max(run.first_line, first - CONTEXT_BEFORE), first))
    if primary is not None and primary.traceback is not None:  # a long traceback's middle too
        context += range(primary.traceback.first_line, primary.traceback.last_line + 1)
    context += list(range(max(run.first_line, run.last_line - TAIL + 1), run.last_line + 1))
    cited = [n for n in cause if n > 0]
    # the root cause's evidence may lie in an earlier run (weights that loaded there): kept
    proof = {e.line for e in primary.evidence} if primary is not None else set()
    inside = [n for n in cited if n >= run.first_line]
    span = list(range(min(inside), max(run.last_line, max(inside)) + 1)) if inside else []  # no gaps from the cause on
    tiers = [cause, near, wide, context, span]
    return [[n for n in dict.fromkeys(tier) if n > 0 and (n in proof or run.first_line <= n)]
            for tier in tiers]


def _traceback_lines(tb) -> list[int]:
    """A traceback's line numbers: all of them when it fits, else those logx kept (its
    head and its end)."""
    if tb.last_line - tb.first_line + 1 <= WHOLE_TRACEBACK_LINES:
        return list(range(tb.first_line, tb.last_line + 1))
    return [n for n, _ in tb.lines]


def _tag_of(finding, run: Run) -> str:
    """The rank tag of the line a finding rests on (the failing rank's ledger comes first)."""
    if finding is None:
        return ""
    if finding.traceback is not None:
        return finding.traceback.tag
    return finding.streams[0].rpartition("|")[2] if finding.streams else ""


def pick(tiers: list[list[int]], total: int, budget: int) -> list[int]:
    """The line numbers of whole tiers, then of as much of the next ones as the budget allows
    (every gap marker costs a line too). The first tier is kept whole."""
    chosen: set[int] = set()
    for i, tier in enumerate(tiers):
        for n in tier:
            if n in chosen:
                continue
            chosen.add(n)
            if i > 0 and block_size(chosen, total) > budget:
                chosen.discard(n)
    return sorted(chosen)


def block_size(numbers: Iterable[int], total: int) -> int:
    """Lines of the code block holding ``numbers``: the lines and one marker per gap."""
    ordered = sorted(numbers)
    gaps = sum(1 for a, b in zip([0, *ordered], ordered, strict=False) if b > a + 1)
    return len(ordered) + gaps + (1 if ordered and ordered[-1] < total else 0)


def read_lines(source: Source, numbers: Iterable[int]) -> dict[int, str]:
    """The visible text of the wanted lines, in one streaming pass (only they are kept)."""
    wanted = set(numbers)
    out: dict[int, str] = {}
    if not wanted:
        return out
    last = max(wanted)
    for raw in raw_lines(source):
        if raw.number in wanted:
            text = visible_text(raw.data)
            if len(text) > LINE_CHARS:
                text = text[:LINE_CHARS] + f" [… {len(text) - LINE_CHARS:,} chars]"
            out[raw.number] = text
        if raw.number >= last:
            break
    return out


# — building the excerpt ——————————————————————————————————————————————————————————————


@contextmanager
def rereadable(source: Source) -> Iterator[Source]:
    """A source that can be read twice: stdin or a stream is spooled to a temporary file
    (on disk: memory stays bounded)."""
    if isinstance(source, bytes | bytearray) or (isinstance(source, str | os.PathLike) and os.fspath(source) != "-"):
        yield source
        return
    stream = sys.stdin.buffer if isinstance(source, str) else source
    with tempfile.NamedTemporaryFile(prefix="logx-share-", suffix=".log") as spool:
        shutil.copyfileobj(stream, spool)  # type: ignore[arg-type]
        spool.flush()
        yield spool.name


def build_share(source: Source, *, name: str | None = None, catalog: Catalog | None = None,
                redactor: Redactor | None = None, run_index: int | None = None,
                max_lines: int = MAX_OUTPUT_LINES) -> Share:
    """Explain ``source`` and build its shareable excerpt (see the module's docstring).

    Raises ``SourceError`` for a path that cannot be read and ``ValueError`` for a
    ``run_index`` outside the file's runs."""
    catalog = catalog or load_catalog()
    redactor = redactor or Redactor()
    with rereadable(source) as readable:
        report = explain(readable, name=name, options=Options(run_index=run_index, status=False),
                         catalog=catalog)
        tiers = diagnosis_tiers(report)
        texts = read_lines(readable, {n for tier in tiers for n in tier})
    display = os.path.basename(name or (os.fspath(source) if isinstance(source, str | os.PathLike) else "<stream>"))
    header = summary_texts(report)
    share = _redacted_share(report, display, header, [], redactor.fresh())
    budget = max(MIN_BLOCK_LINES, max_lines - len(render_markdown(share).splitlines()) - 2)
    # Context, and then every line from the cause on, come in (before the other ranks' lines)
    # only when the excerpt without them does not re-diagnose the same.
    cause, near, wide, context, span = tiers or [[]] * 5
    for order in ([cause, near, wide], [cause, context, near, wide], [cause, span, context, near, wide]):
        numbers = [n for n in pick(order, report.lines, budget) if n in texts]
        share = _redacted_share(report, display, header, [(n, texts[n]) for n in numbers], redactor.fresh())
        share.rediagnosed = rediagnose(share.block_text(), catalog)
        if share.same:
            break
    return share


def _redacted_share(report: Report, display: str, header: dict[str, str], excerpt: list[tuple[int, str]],
                    redactor: Redactor) -> Share:
    """The share of these lines, redacted by ``redactor`` (fresh: its summary counts only what
    is shown)."""
    redacted = redactor.redact_all([*(t for _, t in excerpt), *header.values(), display])
    lines, rest = redacted[:len(excerpt)], redacted[len(excerpt):]
    summary = summary_data(report, dict(zip(header, rest, strict=False)))
    return Share(file=rest[-1], lines=report.lines, report=report, summary=summary,
                 excerpt=[(n, t) for (n, _), t in zip(excerpt, lines, strict=True)], rediagnosed="none",
                 redactions=redactor.summary(), redacted=redactor.enabled)


def rediagnose(text: str, catalog: Catalog) -> str:
    """The root cause ``logx explain`` finds in ``text`` alone."""
    return root_cause_id(explain(text.encode(), options=Options(status=False), catalog=catalog))


# — the summary (verdict, server, model, flags, memory) ————————————————————————————————


def server_text(run: Run | None) -> str:
    """``SGLang 0.5.23``, ``vLLM 0.5.19 or later (from the log format)``, …"""
    if run is None:
        return "unknown (no lines)"
    label = run.dialect.label
    if run.server_version:
        return f"{label} {run.server_version}"
    if run.version_range:
        return f"{label} {run.version_range} (from the log format)"
    return f"{label}, version not printed in the log"


def summary_texts(report: Report) -> dict[str, str]:
    """Every free text of the summary, by key (redacted together with the lines)."""
    run, primary = report.run, report.primary
    out: dict[str, str] = {"server": server_text(run)}
    if primary is not None:
        out.update(title=primary.title, fix=primary.fix)
    if run is None:
        return out
    out["model"] = run.model or "unknown"
    for key, value in shown_args(run).items():
        out[f"flag:{key}"] = str(value)
    out["phase"] = phase_timeline(run, primary is not None).plain
    ledger = build_ledger(run)
    if ledger.status == "touched":
        header, rows, _ = ledger_table(ledger)
        for i, row in enumerate(rows):
            for j, cell in enumerate(row):
                out[f"ledger:{i}:{j}"] = cell
        for i, line in enumerate(ledger_lines(ledger)):
            out[f"ledger_note:{i}"] = line
    for i, finding in enumerate(_also_seen(report)):
        out[f"also:{i}"] = finding.title
    return out


def _also_seen(report: Report) -> list:
    return [f for f in report.findings if f.is_problem and f is not report.primary][:3]


def summary_data(report: Report, texts: dict[str, str]) -> dict[str, Any]:
    """The summary as data (``logx.share/1``), built from the redacted texts."""
    run, primary = report.run, report.primary
    data: dict[str, Any] = {"verdict": report.verdict, "root_cause": None, "server": texts["server"]}
    if primary is not None:
        data["root_cause"] = {"id": primary.id, "title": texts["title"], "fix": texts["fix"],
                              "severity": primary.severity, "confidence": round(primary.confidence, 2),
                              "phase": primary.phase}
    if run is None:
        return data
    data.update(model=texts["model"], model_class=run.model_class,
                flags={key: texts[f"flag:{key}"] if texts[f"flag:{key}"] != str(value) else value
                       for key, value in shown_args(run).items()},
                phase=run.phase, phases=texts["phase"])
    ledger = build_ledger(run)
    data["memory"] = None
    if ledger.status == "touched":
        header, rows, more = ledger_table(ledger)
        total, _source = ledger.gpu_total
        data["memory"] = {
            "gpu_total_gib": total, "ranks": len(ledger.ranks),
            "mem_fraction_static": ledger.setting("mem_fraction_static"),
            "columns": header, "more_rank_groups": more,
            "rows": [[texts[f"ledger:{i}:{j}"] for j in range(len(row))] for i, row in enumerate(rows)],
            "notes": [v for k, v in texts.items() if k.startswith("ledger_note:")]}
    data["also_seen"] = [{"id": f.id, "title": texts[f"also:{i}"],
                          "line": f.evidence[0].line if f.evidence else None}
                         for i, f in enumerate(_also_seen(report))]
    data["ended_by"] = [{"line": e.number, "kind": e.kind} for e in run.endings[:3]]
    return data


# — Markdown ————————————————————————————————————————————————————————————————————————————


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _fence(lines: list[str]) -> str:
    """A fence longer than any run of backticks in the lines (at least three)."""
    ticks = 3
    for line in lines:
        count = 0
        for ch in line:
            count = count + 1 if ch == "`" else 0
            ticks = max(ticks, count + 1)
    return "`" * ticks


def render_markdown(share: Share) -> str:
    s = share.summary
    out: list[str] = []
    cause = s.get("root_cause")
    verdict = s["verdict"].upper()
    out.append(f"### logx: {verdict}" + (f" — {cause['title']}" if cause else ""))
    out.append("")
    if cause:
        out.append(f"**Root cause:** `{cause['id']}` ({cause['severity']}, phase {cause['phase']}, "
                   f"confidence {cause['confidence']:.2f})")
        out.append("")
        out.append(f"**Fix:** {cause['fix']}")
        out.append("")
    rows = [("Server", s["server"])]
    if "model" in s:
        model = f"`{s['model']}`" + (f" ({s['model_class']})" if s.get("model_class") else "")
        rows.append(("Model", model))
        if s["flags"]:
            rows.append(("Flags", " ".join(f"`{k}={v}`" for k, v in s["flags"].items())))
        rows.append(("Phase", s["phases"]))
        memory = s.get("memory")
        if memory and memory["gpu_total_gib"]:
            rows.append(("GPU", f"{memory['gpu_total_gib']:.2f} GiB total, {memory['ranks']} rank(s) in the log"))
    out += ["| | |", "|---|---|", *(f"| {k} | {_cell(v)} |" for k, v in rows), ""]
    memory = s.get("memory")
    if memory:
        mfs = memory["mem_fraction_static"]
        out.append("**Memory** (GiB per GPU; used → free after; "
                   + (f"mem_fraction_static={mfs})" if mfs is not None else "mem_fraction_static unknown)"))
        out.append("")
        out.append("| " + " | ".join(_cell(c) for c in memory["columns"]) + " |")
        out.append("|" + "---|" * len(memory["columns"]))
        out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in memory["rows"]]
        if memory["more_rank_groups"]:
            out.append(f"\n+ {memory['more_rank_groups']} more rank group(s) (`logx explain --json`)")
        out.append("")
        out += [f"- {note}" for note in memory["notes"]]
        if memory["notes"]:
            out.append("")
    for also in s.get("also_seen", []):
        where = f", line {also['line']}" if also["line"] else ""
        out.append(f"Also seen: {also['title']} (`{also['id']}`{where})")
    if s.get("also_seen"):
        out.append("")
    block = share.block_lines()
    shown = len(share.excerpt)
    out.append(f"**Log** `{share.file}`: {share.lines:,} lines, the {shown:,} that carry the diagnosis "
               "shown, gaps marked `[… N lines …]`:")
    out.append("")
    fence = _fence(block)
    out += [fence + "text", *block, fence]
    if share.excerpt:
        out.append("")
        if share.same:
            out.append(f"`logx explain` on this block alone gives the same root cause (`{share.rediagnosed}`).")
        else:
            out.append(f"Note: `logx explain` on this block alone gives `{share.rediagnosed}`, on the whole "
                       f"log `{share.expected}`: the diagnosis rests on more lines than fit here.")
    out.append("")
    if share.redactions:
        parts = [f"{r.distinct} {r.what} → {', '.join(f'`{p}`' for p in r.placeholders[:4])}"
                 f"{', …' if len(r.placeholders) > 4 else ''} ({r.count}×)" for r in share.redactions]
        out.append("Redacted (the same value has the same placeholder): " + "; ".join(parts) + ".")
    elif share.redacted:
        out.append("Redacted: nothing found to redact.")
    else:
        out.append("Not redacted (`--no-redact`): check the lines before you share them.")
    out.append(f"<sub>logx {__version__} · `logx share`</sub>")
    return "\n".join(out) + "\n"
