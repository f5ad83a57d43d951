"""The catalog loader: strict validation with one-line errors naming file, id and problem."""

from __future__ import annotations

import pytest
from conftest import pattern_dir

from logforensics._catalog import CatalogError, builtin_dir, load_catalog, timed_search
from logforensics._sites import categories

GOOD = """
[[pattern]]
id = "my_cause"
title = "My cause"
severity = "error"
phase = "serving"
explanation = "why"
fix = "do {thing}"
  [[pattern.match]]
  line = 'boom (?P<thing>\\w+)'
"""


def test_builtin_catalog_loads_and_ids_are_unique_per_dialect():
    catalog = load_catalog()
    keys = [(p.dialect, p.id) for p in catalog.patterns]
    assert len(keys) == len(set(keys))
    for name in ("sglang", "vllm"):
        ids = [p.id for p in catalog.for_dialect(name).patterns]
        assert len(ids) == len(set(ids)), name
    assert builtin_dir().is_dir()


def test_a_dialects_own_pattern_replaces_the_generic_one_on_its_logs():
    catalog = load_catalog()
    vllm = {p.id: p for p in catalog.for_dialect("vllm").patterns}
    sglang = {p.id: p for p in catalog.for_dialect("sglang").patterns}
    assert vllm["cuda_graph_capture_oom"].dialect == "vllm"
    assert sglang["cuda_graph_capture_oom"].dialect is None  # torch/oom.toml's
    assert vllm["port_in_use"].dialect is None  # generic, no vLLM pattern of that id
    assert "kv_cache_no_room_gpu_mem_util" not in sglang


def test_the_same_id_twice_in_one_dialect_is_an_error(tmp_path):
    (tmp_path / "pats" / "vllm").mkdir(parents=True)
    d = pattern_dir(tmp_path, GOOD, "vllm/a.toml")
    (d / "vllm" / "b.toml").write_text(GOOD)
    with pytest.raises(CatalogError, match="duplicate id"):
        load_catalog([d], builtin=False)


def test_user_directory_adds_patterns(tmp_path):
    d = pattern_dir(tmp_path, GOOD)
    catalog = load_catalog([d])
    assert "my_cause" in catalog.by_id
    assert catalog.by_id["my_cause"].severity == "error"


def test_environment_variable_adds_directory(tmp_path, monkeypatch):
    d = pattern_dir(tmp_path, GOOD)
    monkeypatch.setenv("LOGX_PATTERNS", str(d))
    assert "my_cause" in load_catalog().by_id


def test_user_pattern_overrides_builtin_by_id(tmp_path):
    builtin = load_catalog()
    some_id = builtin.patterns[0].id
    d = pattern_dir(tmp_path, GOOD.replace("my_cause", some_id))
    assert load_catalog([d]).by_id[some_id].title == "My cause"


@pytest.mark.parametrize("text, problem", [
    ("[[pattern]]\nid = 'x'\n[oops", "invalid TOML"),
    (GOOD.replace('severity = "error"', 'severity = "bad"'), "severity must be one of"),
    (GOOD.replace('severity = "error"', 'severity = "error"\nrole = "effect"'), "role must be one of"),
    (GOOD.replace('title = "My cause"\n', ""), "missing or empty required field 'title'"),
    (GOOD.replace("boom (?P<thing>\\w+)", "boom (unclosed"), "bad regex in 'line'"),
    (GOOD.replace("line =", "colour ="), "unknown match key(s): colour"),
    (GOOD.replace("line = 'boom (?P<thing>\\w+)'", "condition = 'no_such'"), "unknown condition"),
    (GOOD.replace('id = "my_cause"', 'id = "My Cause"'), "id must be lowercase"),
    (GOOD + GOOD, "duplicate id"),
    (GOOD.replace("  [[pattern.match]]\n  line = 'boom (?P<thing>\\w+)'\n", ""), "needs at least one"),
    (GOOD.replace("line = 'boom (?P<thing>\\w+)'", "found_by = 'my_stage'"), "unknown found_by 'my_stage'"),
    (GOOD.replace("line =", "found_by = 'unexplained_traceback'\n  line ="), "'found_by' stands alone"),
    (GOOD.replace('phase = "serving"', 'phase = "serving"\nmerge = "type"'), "merge must be one of"),
    (GOOD.replace('phase = "serving"', 'phase = "serving"\nsurvivable = "yes"'), "survivable must be true"),
    (GOOD.replace("line = 'boom (?P<thing>\\w+)'", "event = 'no_such_kind'"), "unknown event 'no_such_kind'"),
    (GOOD.replace("line = 'boom (?P<thing>\\w+)'", "event = 'cuda_graph_end'\n  at_least = { x = 'big' }"),
     "'at_least' must be a table of field = number"),
    (GOOD.replace("line = 'boom (?P<thing>\\w+)'", "event = 'cuda_graph_end'\n  line = 'x'"),
     "'event' takes only 'at_least'"),
])
def test_bad_pattern_files_name_file_id_and_problem(tmp_path, text, problem):
    d = pattern_dir(tmp_path, text)
    with pytest.raises(CatalogError) as info:
        load_catalog([d])
    message = str(info.value)
    assert problem in message
    assert "p.toml" in message
    assert "\n" not in message


def test_the_builtin_findings_are_patterns_a_user_pattern_replaces(tmp_path):
    """What logx's stages find themselves (patterns/builtin/) is read from patterns; a catalog
    without them (a test's, a user's alone) still has the bundled ones."""
    from logforensics._catalog import Catalog

    bundled = load_catalog()
    unexplained = bundled.found_by("unexplained_traceback")
    assert unexplained is bundled.by_id["unclassified_exception"]
    assert unexplained.merge == "title" and unexplained.survivable and unexplained.dialect is None
    assert Catalog([]).found_by("unexplained_traceback").id == "unclassified_exception"
    mine = GOOD.replace("my_cause", "unclassified_exception").replace(
        "line = 'boom (?P<thing>\\w+)'", "found_by = 'unexplained_traceback'")
    d = pattern_dir(tmp_path, mine)
    assert load_catalog([d]).found_by("unexplained_traceback").title == "My cause"


def test_line_cannot_mix_with_traceback_keys(tmp_path):
    d = pattern_dir(tmp_path, GOOD.replace("line = ", "exception = 'X'\n  line = "))
    with pytest.raises(CatalogError, match="cannot be combined"):
        load_catalog([d])


def test_missing_directory_is_an_error(tmp_path):
    with pytest.raises(CatalogError, match="not found"):
        load_catalog([tmp_path / "nope"])


def test_search_times_out_instead_of_hanging():
    import regex

    evil = regex.compile(r"(a+)+$")
    with pytest.raises(TimeoutError):  # the matcher counts it against the pattern
        timed_search(evil, "a" * 5000 + "!")


def test_catalog_covers_every_root_cause_id_of_the_reference():
    """Every id of ../shared/reference/root-causes.md has a pattern, except those the stale-log
    detector and the engine produce themselves."""
    from conftest import REPO

    reference = REPO.parent / "shared" / "reference" / "root-causes.md"
    if not reference.is_file():
        pytest.skip(f"reference not found at {reference}")
    import re

    ids = set(re.findall(r"^- `([a-z0-9_]+)`", reference.read_text(), re.M))
    produced_elsewhere = {"log_empty", "log_stale", "startup_hang", "process_died_without_traceback",
                          "unclassified_exception",
                          # serving.py measures the stall (JIT line -> next decode step) itself
                          "flashinfer_jit_first_request_latency"}
    # vLLM-only causes: the vLLM dialect's patterns (patterns/vllm/) cover them, not SGLang's catalog
    vllm_only = {"kv_cache_no_room_gpu_mem_util", "max_model_len_exceeds_kv_capacity", "sampler_warmup_oom",
                 "vllm_c_torch_abi_mismatch"}
    produced_elsewhere |= {c.id for c in categories()}  # findings from SGLang's failure sites
    assert len(ids) > 50
    assert sorted(ids - produced_elsewhere - vllm_only - set(load_catalog().by_id)) == []


def test_bundled_regexes_compile_on_first_use_and_user_ones_at_load(tmp_path, monkeypatch):
    spec = load_catalog().line_specs[0][1]
    assert spec.line._compiled is None  # the bundled catalog is not compiled at load
    spec.line.search("nothing to see")
    assert spec.line._compiled is not None
    d = pattern_dir(tmp_path, GOOD)
    mine = load_catalog([d]).by_id["my_cause"].matches[0].line
    assert mine._compiled is not None
    # a bad regex in the bundled directory: lint reports it (load does not compile it)
    monkeypatch.setattr("logforensics._catalog.builtin_dir", lambda: d)
    (d / "p.toml").write_text(GOOD.replace("boom (?P<thing>\\w+)", "boom (unclosed"))
    from logforensics._lint import lint_catalog

    assert any("pattern my_cause: bad regex in 'line'" in p for p in lint_catalog(fixtures=tmp_path))
