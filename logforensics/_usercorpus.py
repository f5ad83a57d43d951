"""A user's own regression corpus: ``logx corpus add`` and ``logx corpus check``.

Teams that run inference fleets keep their incidents as regression cases for their own
patterns, the way PyTorch's CI log classifier keeps real log windows with the expected verdict
and a rule that the window must not change it. ``add`` stores a redacted, trimmed copy of a log
— the smallest set of its lines that still gets the full log's answer, checked by explaining
it — with the expected root cause, in the field corpus's format (``labels.jsonl`` beside
``<id>.log``). ``check`` scores a directory of that format with ``scoring.py``, the one scorer
the field-corpus test and ``bench/accuracy.py`` use too, and ``--update`` re-blesses the labels
after an intended change.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ._analysis import Options, explain
from ._catalog import Catalog, load_catalog
from ._record import record
from ._redact import Redactor
from ._scoring import HEALTHY, LABELS, LabelError, Score, answer_of, answered_by, load_labels, score_directory
from ._share import build_share, read_lines, rereadable
from ._version import __version__

DEFAULT_DIR = "logx-corpus"
ID = re.compile(r"[a-z0-9_]+")
TAIL_WINDOWS = (200, 2000, 20000)  # run-end windows tried when the excerpt does not keep the answer
MAX_TRIMMED = 400  # longer copies are stored as they are (trimming explains once per line)
STARTUP_PHASES = ("launch", "args", "import", "init", "weights", "kv_alloc", "cuda_graph", "warmup")


@record
class Added:
    """One log added to a corpus."""

    id: str
    path: Path
    expected: str
    answer: str  # what logx answers on the full log (and on the stored copy)
    lines: int  # lines of the full log
    kept: int  # lines stored
    trimmed: bool  # False: a healthy log, or logx's answer differs from the expected one (excerpt kept whole)

    problem: bool = False  # the answer is a fatal/error finding

    @property
    def agrees(self) -> bool:
        """Whether scoring counts logx's answer as the expected one (a healthy label: no problem)."""
        return not self.problem if self.expected == HEALTHY else self.answer == self.expected


def _answer(data: bytes, catalog: Catalog) -> tuple[str, bool]:
    return answer_of(explain(data, options=Options(status=False), catalog=catalog))


def _text(lines: list[tuple[int, str]]) -> bytes:
    return "".join(text + "\n" for _, text in lines).encode()


def smallest_window(lines: list[tuple[int, str]], target: tuple[str, bool], catalog: Catalog) -> list[tuple[int, str]]:
    """Drop whole blocks of consecutive lines, then single lines, while the answer stays
    ``target``: what remains is a window of the log no line of which can go (each block and line
    is tried once; the result is checked by explaining it)."""
    kept = list(lines)
    blocks: list[list[int]] = []  # runs of consecutive line numbers
    for number, _ in kept:
        if blocks and blocks[-1][-1] == number - 1:
            blocks[-1].append(number)
        else:
            blocks.append([number])
    for unit in [*(set(b) for b in blocks if len(b) > 1), *({n} for n, _ in lines)]:
        trial = [(n, t) for n, t in kept if n not in unit]
        if trial and len(trial) < len(kept) and _answer(_text(trial), catalog) == target:
            kept = trial
    return kept


def _tail_window(source, first: int, last: int, target: tuple[str, bool], catalog: Catalog,
                 redactor: Redactor) -> list[tuple[int, str]] | None:
    """The shortest of the run's last ``TAIL_WINDOWS`` lines that gets ``target`` (redacted),
    or ``None``."""
    for size in TAIL_WINDOWS:
        start = max(first, last - size + 1)
        texts = read_lines(source, range(start, last + 1))
        numbers = sorted(texts)
        lines = list(zip(numbers, redactor.fresh().redact_all(texts[n] for n in numbers), strict=True))
        if _answer(_text(lines), catalog) == target:
            return lines
        if start == first:
            break
    return None


def next_id(directory: Path) -> str:
    """The next free id: one more than the largest numeric id, three digits at least."""
    try:
        ids = [label.id for label in load_labels(directory)]
    except LabelError:
        ids = []
    numbers = [int(i) for i in ids if i.isdigit()]
    return f"{max(numbers, default=0) + 1:03d}"


def add(log: str | os.PathLike, expect: str, directory: str | os.PathLike = DEFAULT_DIR, *,
        catalog: Catalog | None = None, redactor: Redactor | None = None, name: str | None = None) -> Added:
    """Store a redacted, trimmed copy of ``log`` in ``directory`` with ``expect`` as its
    expected root cause (a root-cause id or ``none``). Raises ``ValueError`` for a malformed id and
    ``SourceError`` for a log that cannot be read."""
    catalog = catalog or load_catalog()
    if not ID.fullmatch(expect):  # ids come from the catalog, SGLang's failure sites, the detectors
        raise ValueError(f"--expect {expect!r}: not a root-cause id ([a-z0-9_]+, see `logx patterns list`) "
                         "nor 'none'")
    redactor = redactor or Redactor()
    with rereadable(log) as readable:
        shared = build_share(readable, name=name or os.fspath(log), catalog=catalog, redactor=redactor)
        report = shared.report
        target = answer_of(report)
        excerpt = shared.excerpt
        if _answer(_text(excerpt), catalog) != target and report.run is not None:
            # the answer rests on more than the excerpt (a burst of 5xx lines): the run's last lines
            excerpt = _tail_window(readable, report.run.first_line, report.run.last_line, target, catalog,
                                   redactor) or excerpt
    # A healthy log is kept as its excerpt: any one line of it would still be answered "none".
    trimmed = (target[0] == expect != HEALTHY and len(excerpt) <= MAX_TRIMMED
               and _answer(_text(excerpt), catalog) == target)
    if trimmed:
        excerpt = smallest_window(excerpt, target, catalog)
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    ident = next_id(root)
    path = root / f"{ident}.log"
    path.write_bytes(_text(excerpt))
    label = _label_row(ident, expect, shared, excerpt, trimmed)
    with open(root / LABELS, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(label, ensure_ascii=False) + "\n")
    return Added(ident, path, expect, target[0], report.lines, len(excerpt), trimmed, target[1])


def _label_row(ident: str, expect: str, shared, excerpt: list[tuple[int, str]], trimmed: bool) -> dict[str, Any]:
    """A labels.jsonl row in the field corpus's schema (plus where the copy came from)."""
    report = shared.report
    run = report.run
    finding = answered_by(report)
    cited = {e.line for e in finding.evidence} if finding is not None else set()
    key_line = next((text for n, text in excerpt if n in cited), "")
    # logx's title and fix describe the expected cause only when logx finds it
    cause = (shared.summary.get("root_cause") or {}) if finding is not None and finding.id == expect else {}
    outcome = "ok"
    if report.primary is not None:
        outcome = "crash_at_startup" if report.primary.phase in STARTUP_PHASES else "crash_at_runtime"
    elif finding is not None:
        outcome = "degraded"
    return {
        "id": ident, "server": run.dialect.name if run is not None else None,
        "version": run.server_version if run is not None else None, "root_cause": expect,
        "summary": cause.get("title", ""), "fix": cause.get("fix", ""), "key_line": key_line,
        "truncated": True, "outcome": outcome, "confidence": "user",
        "source": shared.file, "source_lines": report.lines, "trimmed": trimmed,
        "added_by": f"logx corpus add (logx {__version__})",
    }


@record
class Check:
    """A corpus scored, and the labels ``--update`` changed."""

    score: Score
    updated: list[tuple[str, str, str]]  # (id, old root cause, new root cause)

    @property
    def regressions(self) -> list:
        return self.score.misses

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions and not self.updated else 0


def check(directory: str | os.PathLike = DEFAULT_DIR, *, catalog: Catalog | None = None,
          update: bool = False, jobs: int | None = 1) -> Check:
    """Score ``directory``; with ``update``, re-bless every miss: its label becomes logx's
    current answer. Raises ``LabelError`` when the labels cannot be read."""
    score = score_directory(directory, catalog=catalog, jobs=jobs)
    updated: list[tuple[str, str, str]] = []
    if update and score.misses:
        new = {o.label.id: o.counted_answer if o.error is None else o.label.root_cause for o in score.misses}
        file = Path(directory) / LABELS
        rows = []
        for row in file.read_text(encoding="utf-8").splitlines():
            if row.strip():
                data = json.loads(row)
                if data.get("id") in new and new[data["id"]] != data.get("root_cause"):
                    updated.append((data["id"], data["root_cause"], new[data["id"]]))
                    data["root_cause"] = new[data["id"]]
                row = json.dumps(data, ensure_ascii=False)
            rows.append(row)
        file.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    return Check(score, updated)


def format_update(updated: list[tuple[str, str, str]]) -> str:
    """The labels ``--update`` changed, as a diff of labels.jsonl's root causes."""
    out = [f"re-blessed {len(updated)} label(s) in {LABELS}:"]
    for ident, old, new in updated:
        out += [f"- {ident}: {old}", f"+ {ident}: {new}"]
    return "\n".join(out)
