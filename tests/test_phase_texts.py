"""A pattern's texts by the phase its finding is in (``[pattern.from_phase.<phase>]``): the same
wrapper says "start-up failed" when the engine failed to start and "died while serving" once the
run served. The catalog holds the texts; the code picks them by the finding's phase, for every
pattern alike."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from logforensics._analysis import Options, explain
from logforensics._catalog import CatalogError, build_pattern, load_catalog

BASE = {"id": "my_wrapper", "title": "Start-up failed", "severity": "error", "phase": "any",
        "explanation": "It did not start.", "fix": "Look above.", "match": [{"line": "boom"}]}


def _pattern(from_phase):
    return build_pattern({**BASE, "from_phase": from_phase}, "p.toml")


def test_a_finding_takes_the_texts_of_the_latest_phase_at_or_before_its_own():
    p = _pattern({"serving": {"fix": "Served, then died."},
                  "ready": {"title": "Died after start-up", "explanation": "It had started."}})
    assert list(p.from_phase) == ["ready", "serving"]  # lifecycle order, whatever the file's
    for phase in ("launch", "args", "weights", "warmup"):
        assert (p.in_phase(phase).title, p.in_phase(phase).fix) == ("Start-up failed", "Look above.")
    assert (p.in_phase("ready").title, p.in_phase("ready").explanation, p.in_phase("ready").fix) == (
        "Died after start-up", "It had started.", "Look above.")
    assert (p.in_phase("serving").title, p.in_phase("serving").fix) == ("Start-up failed", "Served, then died.")
    assert p.in_phase("serving").id == p.id and p.in_phase("weights") is p


@pytest.mark.parametrize(("from_phase", "problem"), [
    ({"running": {"title": "x"}}, "unknown phase 'running'"),
    ({"serving": {"severity": "info"}}, "from_phase.serving takes"),
    ({"serving": {}}, "from_phase.serving takes"),
    ({"serving": {"title": "  "}}, "non-empty string"),
    ("serving", "'from_phase' must be a table"),
])
def test_bad_from_phase_tables_are_named(from_phase, problem):
    with pytest.raises(CatalogError, match=problem):
        _pattern(from_phase)


def test_the_bundled_wrapper_is_worded_by_phase():
    wrapper = load_catalog().for_dialect("vllm").by_id["init_failed_see_above"]
    assert "start-up" in wrapper.title.lower()
    assert "while serving" in wrapper.in_phase("serving").title
    assert "while serving" in wrapper.in_phase("ready").title


@pytest.mark.parametrize(("name", "wording"), [
    ("init_failed_see_above__cuda_wheel_on_cpu_tail5", "Engine start-up failed"),  # died starting
    ("init_failed_see_above__v0_background_loop_errored_while_serving", "The engine died while serving"),
    ("init_failed_see_above__v1_013_engine_dead_then_shutdown_tail15", "The engine died while serving"),
])
def test_the_wrapper_says_how_far_the_run_got(name, wording):
    report = explain(FIXTURES / "vllm" / f"{name}.log", options=Options(status=False))
    (finding,) = [f for f in report.findings if f.id == "init_failed_see_above"]
    assert finding.title.startswith(wording), finding.title
    assert ("start" in finding.explanation) and (("serving" in finding.explanation) == ("serving" in wording))


def test_a_symptom_of_a_serving_failure_is_worded_as_one():
    """The real cause leads; the EngineDeadError after it is "also seen" as a death while serving."""
    report = explain(FIXTURES / "vllm" / "forward_cuda_oom_activations__v1_013_long_prompts.log",
                     options=Options(status=False))
    assert report.primary.id == "forward_cuda_oom_activations"
    (wrapper,) = [f for f in report.findings if f.id == "init_failed_see_above"]
    assert wrapper.phase == "serving" and "while serving" in wrapper.title
