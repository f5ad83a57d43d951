"""Stage 7 — report: the verdict, exit code, JSON schema and the text a person reads.

The JSON schema ``logx.report/1`` is stable: keys are only ever added. The text a person reads
is ``render/report.py``'s.
"""

from __future__ import annotations

from typing import Any

from ._catalog import SlowPattern
from ._dialects import DEFAULT, Detection
from ._errors import EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE
from ._findings import Finding
from ._memory import build_ledger
from ._record import field, record
from ._runs import Run

SCHEMA = "logx.report/1"
VERDICTS = ("failed", "ready", "running", "stale", "empty", "unknown")


@record(eq=False)
class Report:
    """Everything logx concluded about one log."""

    file: str
    runs: list[Run]
    run: Run | None  # the run explained
    findings: list[Finding]
    lines: int = 0
    bytes: int = 0
    status: Any = None  # staleness.Status when the stale-log detector ran
    detection: Detection | None = None  # which dialect read the log, how sure (None: the default's guess)
    slow_patterns: list[SlowPattern] = field(default_factory=list)  # regexes that timed out

    @property
    def primary(self) -> Finding | None:
        """The most likely root cause: the first fatal/error finding."""
        return next((f for f in self.findings if f.is_problem), None)

    @property
    def verdict(self) -> str:
        state = getattr(self.status, "state", None)
        if state == "STALE":
            return "stale"
        if state == "EMPTY":
            return "empty"
        if self.primary is not None:
            return "failed"
        run = self.run
        if run is None or (run.phase == "launch" and run.args_line is None):
            return "unknown"
        if run.ready:
            return "ready"
        return "running"

    @property
    def exit_code(self) -> int:
        verdict = self.verdict
        if verdict == "failed":
            return EXIT_FAILURE
        if verdict in ("stale", "empty"):
            return EXIT_INCONCLUSIVE
        return EXIT_OK

    @property
    def memory_untouched(self) -> bool:
        """The run failed before any GPU allocation (argument validation or import)."""
        primary = self.primary
        return (self.run is not None and primary is not None and primary.phase in
                ("args", "import") and not self.run.memory_touched)

    @property
    def server(self) -> dict[str, Any]:
        """``{name, version, detection}``: the server (dialect) that read the log, the release
        the explained run names, and how sure the dialect is (``dialects.CONFIDENCES``)."""
        detection = self.detection or Detection(DEFAULT, "guess")
        return {"name": detection.dialect.name,
                "version": self.run.server_version if self.run is not None else None,
                "detection": detection.confidence}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": SCHEMA,
            "file": self.file,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "server": self.server,
            "explained_run": self.run.index if self.run else None,
            "lines": self.lines,
            "runs": [run_json(r) for r in self.runs],
            "findings": [f.to_dict() for f in self.findings],
        }
        if self.slow_patterns:
            out["slow_patterns"] = [p.to_dict() for p in self.slow_patterns]
        if self.status is not None:
            out["status"] = self.status.to_dict()
        return out


def run_json(run: Run) -> dict[str, Any]:
    return {
        "index": run.index,
        "phase": run.phase,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "first_line": run.first_line,
        "last_line": run.last_line,
        "sglang_version": run.sglang_version,
        "version_hints": sorted(run.version_hints),
        "version_range": run.version_range,
        "model": run.model,
        "model_class": run.model_class,
        "memory_touched": run.memory_touched,
        "pids": run.pids,
        "ended_by": [{"line": e.number, "kind": e.kind, "text": e.line.text}
                     for e in run.endings[:10]],
        "serving": serving_json(run),
        "args": run.key_args(),
        "memory": build_ledger(run).to_json(),
    }


def serving_json(run: Run) -> dict[str, Any] | None:
    if not (run.batches or run.requests):
        return None
    decode = run.last_decode or {}
    prefill = run.last_prefill or {}
    return {
        "batches": run.batches,
        "requests": run.requests,
        "http_5xx": run.http_errors,
        "running_req": decode.get("running_req", prefill.get("running_req")),
        "queue_req": decode.get("queue_req", prefill.get("queue_req")),
        "token_usage": decode.get("token_usage", decode.get("full_token_usage")),
        "gen_throughput": decode.get("gen_throughput"),
        "series": series_json(run),
    }


def series_json(run: Run) -> dict[str, Any] | None:
    """The run's serving time series (``serving.Series``), None when no decode line was read."""
    first = run.serving.first_decode
    with_year = first is None or first.ts is None or (len(first.ts) >= 19 and first.ts[4] == "-")
    return run.serving.series.to_json(run.dialect.stats.usage_per_unit, with_year)


def unreadable_json(name: str, error: Exception) -> dict[str, Any]:
    """The ``logx.report/1`` entry of a file that could not be read: it keeps its place in a
    multi-file ``--json`` array, with the error the user saw on stderr (exit code 2)."""
    return {"schema": SCHEMA, "file": name, "verdict": "unreadable", "exit_code": EXIT_USAGE,
            "error": str(error)}
