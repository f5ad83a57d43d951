"""The regression corpus: every fixture's diagnosis is pinned.

Each ``fixtures/[<dialect>/]<root_cause>__<variant>.log`` (SGLang's at the top, vLLM's in
``fixtures/vllm/``) must get ``<root_cause>`` as its first
fatal/error finding (``none__…``: no fatal/error finding at all), and syrupy snapshots of the
text report (fixed width, no colour) and of the JSON make any change of diagnosis visible.
"""

from __future__ import annotations

import io
import json

import pytest
from conftest import FIXTURES, REPO
from rich.console import Console

from logforensics._analysis import Options, explain
from logforensics._catalog import HOST_STAGES, load_catalog
from logforensics._dialects import DIALECTS
from logforensics._render.report import render
from logforensics._tracebacks import is_caret_line

# SGLang's at the top, each other dialect's in its folder (fixtures/diff/ holds logx diff's pairs)
FIXTURE_FILES = sorted([*FIXTURES.glob("*.log"), *(p for name in DIALECTS if name != "sglang"
                                                    for p in (FIXTURES / name).glob("*.log"))])
CATALOG = load_catalog()
FIRST_SCREEN_LINES = 24


def FIXTURE_ID(path) -> str:  # noqa: N802 - a parametrize id function
    """``name`` for SGLang's fixtures, ``vllm/name`` for a dialect's folder."""
    return str(path.relative_to(FIXTURES).with_suffix(""))


def expected_cause(path) -> str:
    return path.name.split("__", 1)[0]


def report_of(path):
    # The stale-log detector reads the clock and the file's mtime: it has its own tests, and
    # is off here so that snapshots do not depend on when the checkout was made.
    return explain(path, name=str(path.relative_to(REPO)), catalog=CATALOG, options=Options(status=False))


def text_of(report) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, color_system=None, force_terminal=False,
                      highlight=False)
    render(report, console)
    return buffer.getvalue()


def test_there_is_a_corpus():
    assert len(FIXTURE_FILES) >= 40


PROBLEM_IDS = {p.id for p in CATALOG.patterns if p.is_problem}
WARNING_IDS = {p.id for p in CATALOG.patterns if not p.is_problem} - PROBLEM_IDS
SURVIVABLE_IDS = {p.id for p in CATALOG.patterns if p.is_problem and p.survivable}


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=FIXTURE_ID)
def test_fixture_root_cause(path):
    report = report_of(path)
    problems = [f.id for f in report.findings if f.is_problem]
    carets = [e.text for f in report.findings for e in f.evidence if is_caret_line(e.text)]
    assert not carets, f"caret lines as evidence: {carets}"
    want = expected_cause(path)
    if want == "none":
        assert problems == [], f"healthy log got {problems}"
    elif want in WARNING_IDS or (want in SURVIVABLE_IDS and want not in problems):
        # a warning (the serving warnings too), or a survivable cause the server kept serving
        # after (its snapshot pins which): the finding is there, and nothing failed
        assert want in [f.id for f in report.findings]
        assert problems == []
    else:
        assert problems and problems[0] == want, f"expected {want}, got {problems}"


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=FIXTURE_ID)
def test_fixture_text_snapshot(path, snapshot):
    report = report_of(path)
    text = text_of(report)
    assert text == snapshot
    assert text.count("never touched") <= 1, "a fact said twice"
    if report.exit_code == 1:  # verdict, cause and fix on the first screen (24 lines at width 100)
        first_screen = text.splitlines()[:FIRST_SCREEN_LINES]
        assert report.primary is not None and report.primary.id in " ".join(first_screen[:3])
        assert any(line.startswith("Fix: ") for line in first_screen), first_screen


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=FIXTURE_ID)
def test_fixture_json_snapshot(path, snapshot):
    payload = report_of(path).to_json()
    text = json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True)
    json.loads(text)
    assert text == snapshot


def test_every_pattern_is_triggered_by_a_fixture():
    """Per dialect: a dialect's own pattern must fire on a log of that dialect; a generic one
    (python/, cuda/, …) on any log. The built-in verdicts that read the host (HOST_STAGES: the
    stale-log detector's, watch's process end) have their tests in test_staleness/test_watch."""
    seen = set()
    for path in FIXTURE_FILES:
        report = report_of(path)
        seen |= {(report.server["name"], f.id) for f in report.findings}
    ids = {pid for _, pid in seen}
    missing = sorted(f"{p.dialect or 'any'}/{p.id}" for p in CATALOG.patterns
                     if ((p.dialect, p.id) not in seen if p.dialect else p.id not in ids)
                     and not all(s.found_by in HOST_STAGES for s in p.matches))
    assert missing == []
