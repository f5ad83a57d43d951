"""serving_findings: the serving warnings join the catalog's findings without rewriting them."""

from __future__ import annotations

import copy

import pytest
from conftest import FIXTURES, pattern_dir

from logforensics import _serving_findings as serving_findings
from logforensics._analysis import Analyzer, run_facts
from logforensics._catalog import Catalog, load_catalog
from logforensics._findings import CONFIDENCE, Finding


def test_a_curated_finding_is_enriched_as_a_new_finding_and_the_matchers_is_left_as_it_was():
    analyzer = Analyzer()
    analyzer.consume([(FIXTURES / "decode_retraction_kv_pressure__retraction_storm.log").read_bytes()])
    analyzer.finish()
    run = analyzer.runs[-1]
    facts = run_facts(run)
    matched = analyzer.matcher.findings(run, facts)
    assert "decode_retraction_kv_pressure" in [f.id for f in matched]  # the catalog pattern of the same id
    before = copy.deepcopy([f.to_dict() for f in matched])
    out = serving_findings.findings(run, matched, analyzer.matcher.catalog)
    enriched = next(f for f in out if f.id == "decode_retraction_kv_pressure")
    assert enriched not in matched and "8 times (31 requests in all)" in enriched.explanation
    assert [f.to_dict() for f in matched] == before


def serving_run(name: str, catalog: Catalog | None = None) -> tuple[Analyzer, list[Finding]]:
    analyzer = Analyzer(catalog)
    analyzer.consume([(FIXTURES / name).read_bytes()])
    analyzer.finish()
    run = analyzer.runs[-1]
    return analyzer, analyzer.findings(run)


@pytest.mark.parametrize("name, stage", [
    ("decode_retraction_kv_pressure__retraction_storm.log", "serving_retractions"),
    ("flashinfer_jit_first_request_latency__first_request_stall.log", "serving_jit_stall"),
    ("http_5xx_burst__overloaded_503s.log", "serving_5xx"),
    ("serving_queue_growing__capped_running_requests.log", "serving_queue"),
    ("serving_throughput_falling__batches_past_cuda_graph_max_bs.log", "serving_throughput"),
    ("health_check_flapping__detokenizer_timeouts.log", "serving_health"),
])
def test_each_warning_is_its_builtin_patterns_filled_with_the_figures(name, stage):
    """The words are patterns/builtin/serving.toml's: no placeholder is left unfilled, and a
    catalog of no patterns (so no curated retraction pattern either) still makes each warning."""
    pattern = Catalog([]).found_by(stage)
    assert pattern.source.endswith("serving.toml") and pattern.severity == "warning"
    _, found = serving_run(name, Catalog([]))
    made = next(f for f in found if f.id == pattern.id)
    assert made.found_by == stage and made.confidence == CONFIDENCE["serving"]
    assert made.facts["figures"] == made.explanation
    for text in (made.title, made.explanation, made.fix):
        assert "<" not in text and "{" not in text, text


def test_the_stages_own_kv_warning_when_no_curated_pattern_found_the_retractions():
    _, found = serving_run("decode_retraction_kv_pressure__retraction_storm.log", Catalog([]))
    f = next(f for f in found if f.id == "decode_retraction_kv_pressure")
    assert f.title == "KV cache pressure: 8 retractions while serving"
    assert f.explanation.startswith("The scheduler retracted requests 8 times (31 requests in all) from line ")
    assert " new_token_ratio went 0.70 -> 1.00 " in f.explanation
    assert f.fix.endswith(f.facts["fix_figures"]) and "--max-running-requests 86" in f.fix


def test_a_users_pattern_of_the_stage_gives_the_words(tmp_path):
    mine = ('[[pattern]]\nid = "http_5xx_burst"\ntitle = "{http_5xx} of {requests} failed"\n'
            'severity = "warning"\nphase = "serving"\nexplanation = "{share} from {first_at}{health_note}"\n'
            'fix = "cap it"\n  [[pattern.match]]\n  found_by = "serving_5xx"\n')
    _, found = serving_run("http_5xx_burst__overloaded_503s.log", load_catalog([pattern_dir(tmp_path, mine)]))
    f = next(f for f in found if f.id == "http_5xx_burst")
    assert f.title.endswith(" failed") and f.fix == "cap it" and "%" in f.explanation
