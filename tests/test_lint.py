"""``logx patterns lint``: regex safety and the every-pattern-has-a-fixture rule."""

from __future__ import annotations

import regex
from conftest import pattern_dir, pattern_toml

from logforensics._catalog import load_catalog
from logforensics._lint import fixtures_triggering, lint_catalog, regex_is_safe
from logforensics._render.catalog import catalog_table


def test_bundled_catalog_is_clean():
    assert lint_catalog() == []


def test_catastrophic_regex_is_flagged():
    assert not regex_is_safe(regex.compile(r"(a+)+$"))
    assert regex_is_safe(regex.compile(r"Not enough memory\. Please try"))


def test_user_pattern_without_fixture_is_reported(tmp_path):
    d = pattern_dir(tmp_path, pattern_toml("mine", "never printed by anyone"))
    problems = lint_catalog([d])
    assert any("pattern mine: no fixture" in p for p in problems)


def test_slow_user_regex_is_reported(tmp_path):
    d = pattern_dir(tmp_path, pattern_toml("slow", r"(\w+\s?)+$"))
    problems = lint_catalog([d])
    assert any("pattern slow: regex in 'line' is slow" in p for p in problems)


def test_fixture_trigger_map_and_table(tmp_path):
    (tmp_path / "x.log").write_text("ImportError: libnvrtc.so.12: cannot open shared object file: No such file\n")
    triggered = fixtures_triggering(load_catalog(), tmp_path)
    assert triggered["cuda_runtime_lib_missing"] == ["x.log"]
    assert catalog_table(load_catalog()).row_count == len(load_catalog().patterns)


def test_lint_from_an_installed_wheel_without_fixtures(monkeypatch):
    """An installed wheel has no fixtures/: lint still checks the regexes and says it skipped
    the trigger check, exit 0."""
    from typer.testing import CliRunner

    from logforensics import _cli as cli
    from logforensics import _lint as lint

    monkeypatch.setattr(lint, "default_fixtures_dir", lambda: None)
    notes: list[str] = []
    assert lint_catalog(notes=notes) == [] and "skipped" in notes[0]
    res = CliRunner().invoke(cli.app, ["patterns", "lint"])
    assert res.exit_code == 0 and "note: no fixtures directory found" in res.output and "catalog OK" in res.output
