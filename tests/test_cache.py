"""The disk cache of what logx derives from its own data (parsed pattern files, literals)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from logforensics import _cache
from logforensics._catalog import load_catalog, load_file


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("LOGX_NO_CACHE", raising=False)
    _cache.disable()
    _cache.enable()
    yield tmp_path / "xdg" / "logx"
    _cache.disable()


def test_off_unless_enabled(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    _cache.disable()
    calls = []
    assert _cache.cached("k", 1, lambda: calls.append(1) or 5) == 5
    assert _cache.cached("k", 1, lambda: calls.append(1) or 5) == 5
    assert len(calls) == 2 and not (tmp_path / "logx").exists()


def test_a_value_is_computed_once_and_kept_for_the_next_process(cache):
    calls = []
    assert _cache.cached("k", ("a", 1), lambda: calls.append(1) or {"x": [1, "y"]}) == {"x": [1, "y"]}
    assert _cache.cached("k", ("a", 1), lambda: calls.append(1) or "other") == {"x": [1, "y"]}
    assert calls == [1]
    _cache._save_all()
    _cache.disable()
    _cache.enable()  # a new process reads the file
    assert _cache.cached("k", ("a", 1), lambda: "recomputed") == {"x": [1, "y"]}


def test_an_edited_pattern_file_is_parsed_again(cache, tmp_path):
    file = tmp_path / "p.toml"
    table = ('[[pattern]]\nid = "{id}"\ntitle = "t"\nseverity = "error"\nphase = "args"\n'
             'explanation = "e"\nfix = "f"\n  [[pattern.match]]\n  line = "boom"\n')
    file.write_text(table.format(id="first_one"))
    assert [p.id for p in load_file(file)] == ["first_one"]
    file.write_text(table.format(id="other_one"))  # same size, same clock tick: the bytes differ
    assert [p.id for p in load_file(file)] == ["other_one"]


def test_a_corrupt_or_unwritable_cache_only_costs_time(cache, monkeypatch):
    cache.mkdir(parents=True)
    (cache / _cache.store_name("toml")).write_bytes(b"\x00garbage")
    ids = {p.id for p in load_catalog().patterns}
    _cache._save_all()
    _cache.disable()
    os.chmod(cache, 0o500)
    try:
        _cache.enable()
        assert {p.id for p in load_catalog().patterns} == ids
        _cache._save_all()  # cannot write: no error
    finally:
        os.chmod(cache, 0o700)


def test_the_cli_keeps_the_cache_and_answers_the_same(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("[2026-03-23 14:00:00] Load weight begin. avail mem=78.50 GB\n"
                   "ValueError: Speculative decoding is not compatible\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env.pop("LOGX_NO_CACHE", None)
    runs = [subprocess.run([sys.executable, "-m", "logforensics", "explain", "--json", str(log)],
                           capture_output=True, text=True, env=env) for _ in range(2)]
    assert sorted(p.name for p in (tmp_path / "xdg" / "logx").iterdir()) == [
        _cache.store_name("prefilters"), _cache.store_name("toml")]
    off = subprocess.run([sys.executable, "-m", "logforensics", "explain", "--json", str(log)],
                         capture_output=True, text=True, env={**env, "LOGX_NO_CACHE": "1"})
    answers = [(r.returncode, [f["id"] for f in json.loads(r.stdout)["findings"]]) for r in (*runs, off)]
    assert answers[0] == answers[1] == answers[2] and answers[0][0] == 1 and answers[0][1]


def test_each_installed_copy_keeps_its_own_file():
    """Two checkouts or venvs of one version never share (and race over) one cache file."""
    name = _cache.store_name("toml")
    assert name.startswith(f"toml-{_cache.__version__}-") and name.endswith(".marshal")
    assert name == _cache.store_name("toml") != _cache.store_name("prefilters")
