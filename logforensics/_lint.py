"""``logx patterns list`` and ``lint``: the catalog as a table, and its health checks."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import regex

from ._analysis import Options, explain
from ._catalog import HOST_STAGES, TRACEBACK_KEYS, Catalog, CatalogError, Regex, builtin_dir, load_catalog
from ._dialects import DIALECTS

# Strings that make a backtracking regex explode: long runs of one class of character that
# end in a character the pattern does not expect.
ADVERSARIAL = (
    "a" * 5_000 + "!",
    "a " * 3_000 + "!",
    "0" * 5_000 + "!",
    " " * 5_000 + "!",
    "-" * 5_000 + "x",
    "a=" * 3_000 + "\n",
    "File \"" + "/a" * 3_000,
    "Error: " * 2_000,
    "0." * 3_000 + "x",
)
BACKTRACK_BUDGET = 0.5  # seconds per regex over all adversarial strings


def regex_is_safe(pattern: Regex | regex.Pattern) -> bool:
    """Run ``pattern`` over strings built to trigger catastrophic backtracking. The budget is
    this process's CPU time, not the wall clock: a loaded machine must not fail a safe regex
    (the ``timeout`` stays as the guard that stops an exponential one)."""
    start = time.process_time()
    for text in ADVERSARIAL:
        try:
            pattern.search(text, timeout=BACKTRACK_BUDGET)
            pattern.search(text, partial=True, timeout=BACKTRACK_BUDGET)
        except TimeoutError:
            return False
    return time.process_time() - start < BACKTRACK_BUDGET * 4


def default_fixtures_dir() -> Path | None:
    """``fixtures/`` of the source checkout logx runs from, or of the current directory."""
    for candidate in (builtin_dir().parent / "fixtures", Path.cwd() / "fixtures"):
        if candidate.is_dir():
            return candidate
    return None


def lint_catalog(extra: Sequence[str | os.PathLike] | None = None,
                 fixtures: os.PathLike | None = None, notes: list[str] | None = None) -> list[str]:
    """Problems found in the catalog, one line each (empty list: all good). Without a fixtures
    directory (an installed wheel has none) the trigger check is skipped: a note, added to
    ``notes`` when given, else a problem."""
    try:
        catalog = load_catalog(extra)
    except CatalogError as exc:
        return [str(exc)]
    problems = []
    for p in catalog.patterns:
        for spec in p.matches:
            for key in (*TRACEBACK_KEYS, "line"):
                rx = getattr(spec, key)
                if rx is None:
                    continue
                try:
                    rx.compiled  # noqa: B018 - the bundled catalog's regexes compile on first use
                except regex.error as exc:
                    problems.append(f"{p.source}: pattern {p.id}: bad regex in '{key}': {exc}")
                    continue
                if not regex_is_safe(rx):
                    problems.append(f"{p.source}: pattern {p.id}: regex in '{key}' is slow on "
                                    "adversarial input (catastrophic backtracking?)")
    fixture_dir = Path(fixtures) if fixtures else default_fixtures_dir()
    if fixture_dir is None:
        missing = ("no fixtures directory found: the check that every pattern is triggered was "
                   "skipped (pass --fixtures DIR)")
        (notes if notes is not None else problems).append(missing)
        return problems
    triggered = fixtures_triggering(catalog, fixture_dir)
    for p in catalog.patterns:
        if p.id not in triggered and not all(s.found_by in HOST_STAGES for s in p.matches):
            problems.append(f"{p.source}: pattern {p.id}: no fixture in {fixture_dir} "
                            "triggers it")
    return problems


def fixtures_triggering(catalog: Catalog, fixture_dir: Path) -> dict[str, list[str]]:
    """Pattern id -> fixture files whose explained run produced a finding with that id."""
    out: dict[str, list[str]] = {}
    logs = [*fixture_dir.glob("*.log"), *(p for name in DIALECTS for p in (fixture_dir / name).glob("*.log"))]
    for log in sorted(logs):  # SGLang's at the top, another dialect's in fixtures/<dialect>/
        report = explain(log, catalog=catalog, options=Options())
        for pid in {f.id for f in report.findings}:
            out.setdefault(pid, []).append(log.name)
    return out
