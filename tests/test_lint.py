"""``logx patterns lint``: regex safety and the every-pattern-has-a-fixture rule."""

from __future__ import annotations

import regex

from logforensics.catalog import load_catalog
from logforensics.lint import catalog_table, fixtures_triggering, lint_catalog, regex_is_safe


def test_bundled_catalog_is_clean():
    assert lint_catalog() == []


def test_catastrophic_regex_is_flagged():
    assert not regex_is_safe(regex.compile(r"(a+)+$"))
    assert regex_is_safe(regex.compile(r"Not enough memory\. Please try"))


def test_user_pattern_without_fixture_is_reported(tmp_path):
    d = tmp_path / "pats"
    d.mkdir()
    (d / "mine.toml").write_text(
        '[[pattern]]\nid = "mine"\ntitle = "t"\nseverity = "error"\nphase = "serving"\n'
        'explanation = "e"\nfix = "f"\n  [[pattern.match]]\n  line = "never printed by anyone"\n')
    problems = lint_catalog([d])
    assert any("pattern mine: no fixture" in p for p in problems)


def test_slow_user_regex_is_reported(tmp_path):
    d = tmp_path / "pats"
    d.mkdir()
    (d / "slow.toml").write_text(
        '[[pattern]]\nid = "slow"\ntitle = "t"\nseverity = "error"\nphase = "serving"\n'
        'explanation = "e"\nfix = "f"\n  [[pattern.match]]\n  line = \'(\\w+\\s?)+$\'\n')
    problems = lint_catalog([d])
    assert any("pattern slow: regex in 'line' is slow" in p for p in problems)


def test_fixture_trigger_map_and_table(tmp_path):
    (tmp_path / "x.log").write_text("ImportError: libnvrtc.so.12: cannot open shared object file: No such file\n")
    triggered = fixtures_triggering(load_catalog(), tmp_path)
    assert triggered["cuda_runtime_lib_missing"] == ["x.log"]
    assert catalog_table(load_catalog()).row_count == len(load_catalog().patterns)
