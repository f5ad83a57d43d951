"""serving_findings: the serving warnings join the catalog's findings without rewriting them."""

from __future__ import annotations

import copy

from conftest import FIXTURES

from logforensics import _serving_findings as serving_findings
from logforensics._analysis import Analyzer, run_facts


def test_a_curated_finding_is_enriched_as_a_new_finding_and_the_matchers_is_left_as_it_was():
    analyzer = Analyzer()
    analyzer.consume([(FIXTURES / "decode_retraction_kv_pressure__retraction_storm.log").read_bytes()])
    analyzer.finish()
    run = analyzer.runs[-1]
    facts = run_facts(run)
    matched = analyzer.matcher.findings(run, facts)
    assert "decode_retraction_kv_pressure" in [f.id for f in matched]  # the catalog pattern of the same id
    before = copy.deepcopy([f.to_dict() for f in matched])
    out = serving_findings.findings(run, matched, facts)
    enriched = next(f for f in out if f.id == "decode_retraction_kv_pressure")
    assert enriched not in matched and "8 times (31 requests in all)" in enriched.explanation
    assert [f.to_dict() for f in matched] == before
