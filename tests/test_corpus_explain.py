"""The field corpus (../shared/corpus): real logs from public bug reports, labelled.

A floor on the share of logs whose first fatal/error finding is the labelled root cause, and
no fatal/error finding on healthy logs. Skipped when the corpus is not beside the checkout.
"""

from __future__ import annotations

import json

import pytest
from conftest import CORPUS

from logforensics.analysis import explain
from logforensics.catalog import load_catalog

FLOOR = 0.65  # measured 56/85 = 0.66 on the grown corpus (85 logs); raise it as logx generalises

pytestmark = pytest.mark.skipif(not (CORPUS / "labels.jsonl").is_file(),
                                reason=f"field corpus not found at {CORPUS}")


def labels():
    return [json.loads(line) for line in (CORPUS / "labels.jsonl").read_text().splitlines()
            if line.strip()]


def first_problem(path, catalog) -> str:
    report = explain(path, catalog=catalog)
    problems = [f.id for f in report.findings if f.is_problem]
    return problems[0] if problems else "none"


def test_field_corpus_root_causes():
    catalog = load_catalog()
    results = [(lab, first_problem(CORPUS / f"{lab['id']}.log", catalog)) for lab in labels()]
    misses = [(lab["id"], lab["root_cause"], got) for lab, got in results if got != lab["root_cause"]]
    share = 1 - len(misses) / len(results)
    assert share >= FLOOR, f"share {share:.2f} below {FLOOR}; misses: {misses}"


def test_healthy_field_logs_get_no_failure():
    catalog = load_catalog()
    for lab in labels():
        if lab["root_cause"] == "none":
            assert first_problem(CORPUS / f"{lab['id']}.log", catalog) == "none", lab["id"]
