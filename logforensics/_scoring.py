"""Accuracy as a number: score ``logx explain`` on a labelled directory of logs.

A labelled directory is the field corpus's format: ``labels.jsonl`` (one JSON object a line:
``id``, ``root_cause`` — an id of the catalog, or ``none`` for a healthy run — and ``key_line``,
the line that shows the cause, exactly as in the file) beside the logs, ``<id>.log`` each.

For each log the *answer* is the id of the report's primary finding (its first fatal/error
finding); a run with no problem is answered by its first warning (a server that lives but
degrades, e.g. retracting requests under KV pressure), ``none`` when it has neither. A healthy
label is right when the log got no fatal/error finding. The scores:

- top-1: the share of logs whose answer is the label;
- key line cited: among logs labelled with a cause, the share whose primary finding's evidence
  holds the labelled key line (so a user is shown the line that proves it);
- per root cause: precision (of the logs answered X, how many are X) and recall (of the logs
  labelled X, how many were answered X);
- false alarms: healthy logs (``none``) that got a fatal/error finding;
- every miss, with what was found instead.

``bench/accuracy.py`` prints these for any directory; the field-corpus test holds a floor on them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ._analysis import Options, explain_many
from ._catalog import Catalog, load_catalog
from ._findings import Finding
from ._record import field, record
from ._report import Report

LABELS = "labels.jsonl"
HEALTHY = "none"
SCHEMA = "logx.accuracy/1"


class LabelError(Exception):
    """A labelled directory that cannot be scored; the message is one line."""


@record(frozen=True)
class Label:
    """One line of ``labels.jsonl``: what a log should be diagnosed as."""

    id: str
    root_cause: str
    key_line: str = ""
    path: Path = Path()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def healthy(self) -> bool:
        return self.root_cause == HEALTHY


@record
class Outcome:
    """What logx said about one labelled log."""

    label: Label
    answer: str  # the primary finding's id, else the first warning's, else "none"
    key_cited: bool | None  # None for a healthy log or a label without a key line
    found: list[dict[str, Any]]  # every finding: id, severity, first evidence line
    error: str | None = None  # the log could not be read

    problem: bool = False  # the log got a fatal/error finding

    @property
    def correct(self) -> bool:
        if self.error is not None:
            return False
        return not self.problem if self.label.healthy else self.answer == self.label.root_cause

    @property
    def false_alarm(self) -> bool:
        return self.label.healthy and self.problem

    @property
    def counted_answer(self) -> str:
        """The answer as the per-cause table counts it: a healthy log's warnings are ``none``."""
        return HEALTHY if self.label.healthy and self.correct else self.answer

    def to_dict(self) -> dict[str, Any]:
        out = {"id": self.label.id, "expected": self.label.root_cause, "answer": self.answer,
               "correct": self.correct, "key_cited": self.key_cited, "found": self.found}
        if self.error:
            out["error"] = self.error
        return out


@record
class CauseScore:
    """Precision and recall of one root-cause id."""

    id: str
    labelled: int = 0  # logs labelled with this id
    answered: int = 0  # logs answered with this id
    correct: int = 0

    @property
    def precision(self) -> float | None:
        return self.correct / self.answered if self.answered else None

    @property
    def recall(self) -> float | None:
        return self.correct / self.labelled if self.labelled else None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "labelled": self.labelled, "answered": self.answered,
                "correct": self.correct, "precision": _round(self.precision),
                "recall": _round(self.recall)}


@record
class Score:
    """The scores of one labelled directory."""

    directory: str
    outcomes: list[Outcome]

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def correct(self) -> int:
        return sum(o.correct for o in self.outcomes)

    @property
    def top1(self) -> float:
        return self.correct / self.total if self.total else 0.0

    @property
    def with_key_line(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.key_cited is not None]

    @property
    def key_cited(self) -> float:
        rated = self.with_key_line
        return sum(bool(o.key_cited) for o in rated) / len(rated) if rated else 0.0

    @property
    def healthy(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.label.healthy]

    @property
    def false_alarms(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.false_alarm]

    @property
    def misses(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.correct]

    def causes(self) -> list[CauseScore]:
        """Precision and recall per id, for every id labelled or answered (``none`` included)."""
        table: dict[str, CauseScore] = {}
        for o in self.outcomes:
            expected = table.setdefault(o.label.root_cause, CauseScore(o.label.root_cause))
            expected.labelled += 1
            answered = table.setdefault(o.counted_answer, CauseScore(o.counted_answer))
            answered.answered += 1
            if o.correct:
                expected.correct += 1
        return sorted(table.values(), key=lambda c: c.id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "directory": self.directory, "logs": self.total,
            "correct": self.correct, "top1": _round(self.top1),
            "key_line_cited": _round(self.key_cited), "key_lines_rated": len(self.with_key_line),
            "healthy": len(self.healthy), "false_alarms": [o.label.id for o in self.false_alarms],
            "causes": [c.to_dict() for c in self.causes()],
            "outcomes": [o.to_dict() for o in self.outcomes],
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def load_labels(directory: str | os.PathLike) -> list[Label]:
    """The labels of ``directory`` in file order; each must name an existing ``<id>.log``."""
    root = Path(directory)
    file = root / LABELS
    try:
        rows = file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise LabelError(f"{file}: cannot read: {exc.strerror or exc}") from None
    labels = []
    for number, row in enumerate(rows, 1):
        if not row.strip():
            continue
        try:
            data = json.loads(row)
        except json.JSONDecodeError as exc:
            raise LabelError(f"{file}:{number}: invalid JSON: {exc.msg}") from None
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) and data[k]
                                                 for k in ("id", "root_cause")):
            raise LabelError(f"{file}:{number}: needs string fields 'id' and 'root_cause'")
        path = root / f"{data['id']}.log"
        if not path.is_file():
            raise LabelError(f"{file}:{number}: no log {path.name} beside the labels")
        key = data.get("key_line")
        key = key if isinstance(key, str) else ""
        extra = {k: v for k, v in data.items() if k not in ("id", "root_cause", "key_line")}
        labels.append(Label(data["id"], data["root_cause"], key, path, extra))
    return labels


def key_line_numbers(path: Path, key_line: str) -> set[int]:
    """The numbers of the lines of ``path`` that are ``key_line`` (as logx numbers lines:
    split on ``\\n``, a trailing ``\\r`` dropped)."""
    wanted = key_line.rstrip("\r")
    with open(path, "rb") as fh:
        return {n for n, raw in enumerate(fh, 1)
                if raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", "replace") == wanted}


def answered_by(report: Report) -> Finding | None:
    """The finding a report answers with: its primary (first fatal/error) finding, else its
    first warning (a server that lives but warns), else ``None``."""
    return report.primary or next((f for f in report.findings if f.severity == "warning"), None)


def answer_of(report: Report) -> tuple[str, bool]:
    """What scoring reads of a report: the answer's id (``none`` when nothing is found) and
    whether it is a problem (a fatal/error finding)."""
    primary = answered_by(report)
    return (primary.id if primary is not None else HEALTHY), report.primary is not None


def score_report(label: Label, report: Report) -> Outcome:
    """Score one report against its label."""
    primary = answered_by(report)
    answer = primary.id if primary is not None else HEALTHY
    key_cited: bool | None = None
    if not label.healthy and label.key_line.strip():
        if primary is None:
            key_cited = False
        else:
            numbers = key_line_numbers(label.path, label.key_line)
            key = label.key_line.strip()
            key_cited = any(e.line in numbers or e.text.strip() == key for e in primary.evidence)
    found = [{"id": f.id, "severity": f.severity,
              "line": f.evidence[0].line if f.evidence else None,
              "text": f.evidence[-1].text[:200] if f.evidence else ""} for f in report.findings]
    return Outcome(label, answer, key_cited, found, problem=report.primary is not None)


def score_directory(directory: str | os.PathLike, *, catalog: Catalog | None = None,
                    jobs: int | None = 1, options: Options | None = None) -> Score:
    """Explain every labelled log of ``directory`` (``jobs`` at a time) and score the answers.
    Raises ``LabelError`` when the labels cannot be read."""
    labels = load_labels(directory)
    return score_labels(labels, directory=os.fspath(directory), catalog=catalog, jobs=jobs,
                        options=options)


def score_labels(labels: Iterable[Label], *, directory: str = "", catalog: Catalog | None = None,
                 jobs: int | None = 1, options: Options | None = None) -> Score:
    """Score already loaded labels (see ``score_directory``)."""
    labels = list(labels)
    catalog = catalog or load_catalog()
    reports = explain_many([lab.path for lab in labels], jobs, options=options, catalog=catalog)
    outcomes = []
    for label, report in zip(labels, reports, strict=True):
        if isinstance(report, Exception):
            outcomes.append(Outcome(label, HEALTHY, None if label.healthy else False, [], error=str(report)))
        else:
            outcomes.append(score_report(label, report))
    return Score(directory, outcomes)


def format_score(score: Score) -> str:
    """The scores as plain text: the figures, the per-cause table, then every miss."""
    out = [f"{score.directory}: {score.total} logs",
           f"top-1            {score.correct}/{score.total} = {score.top1:.3f}"]
    rated = score.with_key_line
    cited = sum(bool(o.key_cited) for o in rated)
    out.append(f"key line cited   {cited}/{len(rated)} = {score.key_cited:.3f}")
    alarms = score.false_alarms
    out.append(f"false alarms     {len(alarms)}/{len(score.healthy)} healthy logs"
               + (f" ({', '.join(o.label.id for o in alarms)})" if alarms else ""))
    out += ["", f"{'root cause':<44} {'labelled':>8} {'answered':>8} {'precision':>9} {'recall':>6}"]
    for c in score.causes():
        precision = "-" if c.precision is None else f"{c.precision:.2f}"
        recall = "-" if c.recall is None else f"{c.recall:.2f}"
        out.append(f"{c.id:<44} {c.labelled:>8} {c.answered:>8} {precision:>9} {recall:>6}")
    misses = score.misses
    out += ["", f"misses ({len(misses)}):"]
    for o in misses:
        out.append(f"  {o.label.id}: expected {o.label.root_cause}, got {o.answer}"
                   + (f" (error: {o.error})" if o.error else ""))
        for f in o.found[:4]:
            out.append(f"      {f['severity']:<7} {f['id']} (line {f['line']}): {f['text'][:110]}")
    uncited = [o for o in rated if o.correct and not o.key_cited]
    if uncited:
        out += ["", f"right cause, key line not in its evidence ({len(uncited)}):"]
        out += [f"  {o.label.id}: {o.label.root_cause}: {o.label.key_line[:110]}" for o in uncited]
    return "\n".join(out)
