"""The dialect seam: detection, a dialect's data, and patterns that run only where they can match."""

from __future__ import annotations

import gzip
import json
import re
from importlib import resources
from pathlib import Path

import pytest
from conftest import log_bytes
from typer.testing import CliRunner

from logforensics import _dialects as dialects
from logforensics._analysis import Analyzer, explain
from logforensics._catalog import CatalogError, load_catalog
from logforensics._cli import app
from logforensics._dialects import DETECT_LINES, DIALECTS, detect, get
from logforensics._dialects.base import PHASES, FlagRename, bundled_dir, load_facts
from logforensics._dialects.sglang import DIALECT as SGLANG
from logforensics._lines import LogLine, ServerPrefix, split_prefixes
from logforensics._record import replace
from logforensics._runs import Run
from logforensics._sources import RawLine

ARGS = "[2026-03-23 14:00:00] server_args=ServerArgs(model_path='m', tp_size=2)"
PREFIXED = "[2026-03-23 14:00:05 TP0] something only a prefix tells"


@pytest.fixture
def other(monkeypatch):
    """A second dialect ("other") registered for the test: SGLang's tables, its own marker."""
    dialect = replace(SGLANG, name="other", label="Other",
                                  markers=(re.compile(r"OTHER SERVER v\d"),))
    monkeypatch.setitem(DIALECTS, "other", dialect)
    return dialect


def test_detection_says_how_sure_it_is():
    assert (detect([ARGS]).dialect, detect([ARGS]).confidence, detect([ARGS]).line) == (SGLANG, "certain", 1)
    assert (detect(["noise", PREFIXED]).confidence, detect(["noise", PREFIXED]).line) == ("likely", 2)
    assert detect(["no server line here"]).confidence == "guess"
    assert detect([]).dialect is dialects.DEFAULT


@pytest.mark.parametrize("wrap", ["sglang-1  | ", "2026-03-23T14:01:38.123456789Z ", "Mar 23 14:01:38 ",
                                  "Mar 23 14:01:38 gpu1 python3[9]: "])
def test_detection_reads_the_servers_line_behind_a_wrapper(wrap):
    """A marker anchored at the line's start ("Value error, ...") still decides through docker
    compose, kubectl, ts or journald; a process prefix that is itself a marker still counts."""
    vllm = dialects.DIALECTS["vllm"]
    text = "Value error, Tensor parallel size (16) cannot be larger than the number of available GPUs (8)"
    assert (detect([wrap + text]).dialect, detect([wrap + text]).confidence) == (vllm, "certain")
    assert detect([wrap + "(VllmWorker rank=1 pid=8822) ERROR x"]).dialect is vllm


def test_a_hint_counts_with_the_prefixed_lines_and_never_decides_alone(other, monkeypatch):
    """A line another server's log may carry too (a hint) makes its dialect likely, not
    certain; the dialect more lines speak for wins."""
    hinted = replace(other, prefix=ServerPrefix(re.compile(r"NO PREFIX"), first="N"),
                                 hints=(re.compile(r"other/frame\.py"),))
    monkeypatch.setitem(DIALECTS, "other", hinted)
    frame = '  File "/x/other/frame.py", line 3, in f'
    assert (detect(["noise", frame]).dialect, detect(["noise", frame]).confidence,
            detect(["noise", frame]).line) == (hinted, "likely", 2)
    assert detect([PREFIXED, PREFIXED, frame]).dialect is SGLANG
    assert detect([frame, frame, PREFIXED]).dialect is hinted


def test_detection_reads_only_the_first_lines():
    lines = ["noise"] * DETECT_LINES + [ARGS]
    assert detect(lines).confidence == "guess"
    assert detect(lines[1:]).confidence == "certain"


def test_the_first_line_that_names_a_server_decides(other):
    assert detect(["OTHER SERVER v1", ARGS]).dialect is other
    assert detect([ARGS, "OTHER SERVER v1"]).dialect is SGLANG


def test_unknown_dialect_names_the_known_ones():
    with pytest.raises(KeyError, match="known: sglang"):
        get("nope")


def test_a_dialect_maps_events_only_to_known_phases():
    with pytest.raises(ValueError, match="unknown phase"):
        replace(SGLANG, event_phase={"ready": "almost_ready"})


def test_a_server_prefix_is_data_the_line_splitter_reads():
    """Another server's prefix (level first, then the time and a source location) splits the
    same way as SGLang's: the splitter holds no server's format."""
    prefix = ServerPrefix(re.compile(r"(?P<level>INFO|WARNING|ERROR) (?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)"
                                     r"(?:\.(?P<frac>\d+))? \[[\w.]+:\d+\] "), first="IWE")
    line = LogLine(1, 0, "x", "INFO 03-23 14:01:38.5 [api_server.py:12] Started", )
    line.text = line.message
    split_prefixes(line, prefix)
    assert (line.ts, line.level, line.message) == ("03-23 14:01:38.5", "INFO", "Started")
    sglang = LogLine(1, 0, PREFIXED, PREFIXED)
    split_prefixes(sglang, prefix)
    assert sglang.ts is None and sglang.message == PREFIXED  # not this server's prefix


# — facts (patterns/sglang/facts.toml) ——————————————————————————————————————————————

RENAME = FlagRename(fact="f", old="--old-flag", new="--old-flag-new", since=(0, 5, 14),
                    old_marks=("--old-flag ",), new_marks=("--old-flag-new",))


@pytest.mark.parametrize("args,version,bounds,messages,want", [
    ({"old_flag_new": 1}, (0, 5, 9), (None, None), "", "--old-flag-new"),  # what it printed beats its version
    ({"old_flag": 1}, None, (None, None), "", "--old-flag"),
    ({}, (0, 5, 13), (None, None), "--old-flag-new", "--old-flag"),  # its version beats its messages
    ({}, (0, 5, 14), (None, None), "", "--old-flag-new"),
    ({}, None, ((0, 5, 19), None), "", "--old-flag-new"),  # the log format says "0.5.19 or later"
    ({}, None, (None, (0, 5, 9)), "", "--old-flag"),  # "0.5.9 or earlier"
    ({}, None, (None, (0, 5, 18)), "use --old-flag-new x", "--old-flag-new"),  # bounds undecided: its messages
    ({}, None, (None, None), "see --old-flag for", "--old-flag"),
    ({}, None, (None, None), "", "--old-flag-new (named --old-flag before Srv 0.5.14)"),
])
def test_a_renamed_flag_is_named_as_the_runs_release_names_it(args, version, bounds, messages, want):
    assert RENAME.name_in(args, version, bounds, messages, "Srv") == want


def test_when_unknown_old_names_the_old_flag_only_when_nothing_bounds_the_release():
    rename = RENAME._replace(since=(0, 5, 20), when_unknown="old")
    assert rename.name_in({}, None, (None, None), "", "Srv") == "--old-flag"
    assert rename.name_in({}, None, ((0, 5, 19), None), "", "Srv").startswith("--old-flag-new (named")


def test_sglang_facts_drive_the_runs_flag_names_and_version_hints():
    run = Run(index=1, first_line=1)
    run.server_version = "0.5.12"
    assert run.flag_names() == {"mamba_strategy_flag": "--mamba-scheduler-strategy",
                                "cuda_graph_max_bs_flag": "--cuda-graph-max-bs"}
    run.server_version = "0.5.20"
    assert run.flag_names() == {"mamba_strategy_flag": "--mamba-radix-cache-strategy",
                                "cuda_graph_max_bs_flag": "--cuda-graph-max-bs-decode"}
    assert SGLANG.version_hints("server_args", {"form": "dict"}) == {">=0.5.19"}
    assert SGLANG.version_hints("weight_load_end", {"dtype": "bfloat16"}) == {"<=0.5.9"}
    assert SGLANG.version_hints("weight_load_end", {}) == set()
    assert SGLANG.facts.hybrid_model("Qwen3_5ForConditionalGeneration")
    assert not SGLANG.facts.hybrid_model("LlamaForCausalLM") and not SGLANG.facts.hybrid_model(None)
    assert set(SGLANG.facts.hang_hints) <= set(PHASES) and "cuda_graph" in SGLANG.facts.hang_hints


def test_facts_reject_an_unknown_phase_and_a_missing_file_is_no_facts(tmp_path):
    bad = tmp_path / "facts.toml"
    bad.write_text('[hang_hint.nowhere]\nwhere = "x"\nfix = "y"\n')
    with pytest.raises(ValueError, match="nowhere"):
        load_facts(bad)
    bad.write_text('[[version_hint]]\nevent = "e"\nfield = "f"\nhint = ">=1"\nhybrid_model_classes = ["X"]\n')
    with pytest.raises(ValueError, match="unknown key.*hybrid_model_classes"):
        load_facts(bad)  # a top-level key written after a [[table]] belongs to that table
    assert load_facts(tmp_path / "absent.toml").flag_renames == ()
    assert (bundled_dir() / "sglang" / "facts.toml").is_file()
    bad.write_text('[wording]\nkernel_fault_fix = 3\n')
    with pytest.raises(ValueError, match="wording"):
        load_facts(bad)
    bad.write_text('[phase_words]\nprofiling = "memory profiling"\n')
    with pytest.raises(ValueError, match="profiling"):
        load_facts(bad)  # a phase logx does not know


def test_a_generic_pattern_names_the_logs_own_servers_flags():
    """A CUDA fault is the same pattern on every server (patterns/cuda); its fix names the
    backends and flags of the log's server, from the dialect's ``[wording]``."""
    keys = [set(d.facts.wording) for d in DIALECTS.values()]
    assert keys[0] and all(k == keys[0] for k in keys)  # every server words every placeholder
    fault = "RuntimeError: CUDA error: an illegal memory access was encountered"
    sglang = explain(log_bytes("[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
                               "Traceback (most recent call last):", '  File "x.py", line 1, in f', fault))
    vllm = explain(log_bytes("INFO 01-01 10:00:00 [api_server.py:1] vLLM API server version 0.13.0",
                             "ERROR 01-01 10:00:01 [core.py:1] Traceback (most recent call last):",
                             'ERROR 01-01 10:00:01 [core.py:1]   File "x.py", line 1, in f',
                             f"ERROR 01-01 10:00:01 [core.py:1] {fault}"))
    fixes = {r.run.dialect.name: next(f.fix for f in r.findings if f.id == "cuda_illegal_memory_access")
             for r in (sglang, vllm)}
    assert "--disable-cuda-graph" in fixes["sglang"] and "--enforce-eager" not in fixes["sglang"]
    assert "--enforce-eager" in fixes["vllm"] and "sgl-kernel" not in fixes["vllm"]
    nan = "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0"
    vllm_nan = explain(log_bytes("INFO 01-01 10:00:00 [api_server.py:1] vLLM API server version 0.13.0",
                                 "ERROR 01-01 10:00:01 [core.py:1] Traceback (most recent call last):",
                                 'ERROR 01-01 10:00:01 [core.py:1]   File "x.py", line 1, in f',
                                 f"ERROR 01-01 10:00:01 [core.py:1] {nan}"))
    fix = next(f.fix for f in vllm_nan.findings if f.id == "nan_logits_sampling_assert")
    assert "--enforce-eager" in fix and "SGLang" not in fix and "{" not in fix


# — patterns carry a dialect ————————————————————————————————————————————————————————


def _pattern(pid: str, extra: str = "") -> str:
    return (f'[[pattern]]\nid = "{pid}"\ntitle = "t"\nseverity = "error"\nphase = "serving"\n'
            f'explanation = "e"\nfix = "f"\n{extra}  [[pattern.match]]\n  line = "needle"\n')


def _user_catalog(tmp_path: Path) -> Path:
    for folder, pid, extra in (("sglang", "in_sglang", ""), ("python", "in_python", ""),
                               ("sglang", "anywhere", 'dialect = "any"\n'), (".", "top_level", "")):
        d = tmp_path / "pats" / folder
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{pid}.toml").write_text(_pattern(pid, extra))
    (tmp_path / "pats" / "sglang" / "facts.toml").write_text("hybrid_model_classes = []\n")
    return tmp_path / "pats"


def test_a_pattern_belongs_to_its_folders_dialect_unless_it_says_otherwise(tmp_path):
    catalog = load_catalog([_user_catalog(tmp_path)], builtin=False)
    assert {p.id: p.dialect for p in catalog.patterns} == {
        "in_sglang": "sglang", "in_python": None, "anywhere": None, "top_level": None}


def test_a_pattern_runs_only_on_its_dialects_logs(tmp_path, other):
    catalog = load_catalog([_user_catalog(tmp_path)], builtin=False)
    (tmp_path / "pats" / "other").mkdir()
    (tmp_path / "pats" / "other" / "only_other.toml").write_text(_pattern("only_other"))
    catalog = load_catalog([tmp_path / "pats"], builtin=False)
    assert {p.id for p in catalog.for_dialect("other").patterns} == {"in_python", "anywhere", "top_level",
                                                                     "only_other"}
    found = {f.id for f in explain(log_bytes(ARGS, "[2026-03-23 14:00:06] needle"), catalog=catalog).findings}
    assert found == {"in_sglang", "in_python", "anywhere", "top_level"}
    found = {f.id for f in explain(log_bytes("OTHER SERVER v1", "needle"), catalog=catalog).findings}
    assert found == {"in_python", "anywhere", "top_level", "only_other"}


def test_a_pattern_naming_an_unknown_dialect_fails_at_load(tmp_path):
    d = tmp_path / "pats"
    d.mkdir()
    (d / "p.toml").write_text(_pattern("p", 'dialect = "nginx"\n'))
    with pytest.raises(CatalogError, match="dialect must be"):
        load_catalog([d], builtin=False)


# — the analysis reads with the detected (or given) dialect ———————————————————————————


def test_the_report_says_which_dialect_read_the_log():
    report = explain(log_bytes(ARGS, "[2026-03-23 14:00:02] sglang version: 0.5.9"))
    assert report.to_json()["server"] == {"name": "sglang", "version": "0.5.9", "detection": "certain"}
    assert report.to_json()["runs"][0]["sglang_version"] == "0.5.9"
    assert explain(log_bytes("hello")).to_json()["server"]["detection"] == "guess"


def test_a_given_dialect_wins_over_detection(other):
    assert explain(log_bytes("OTHER SERVER v1"), catalog=load_catalog()).server["name"] == "other"
    analyzer = Analyzer(dialect="sglang")
    analyzer.consume([log_bytes("OTHER SERVER v1")])
    analyzer.finish()
    assert analyzer.report("x").server == {"name": "sglang", "version": None, "detection": "given"}
    other_run = explain(log_bytes("OTHER SERVER v1", "[2026-03-23 14:00:02] sglang version: 0.5.9")).run
    assert other_run.server_version == "0.5.9" and other_run.sglang_version is None  # not an SGLang log


def test_lines_fed_one_by_one_wait_for_the_dialect_until_a_line_decides():
    analyzer = Analyzer()
    assert analyzer.feed(RawLine(1, 0, b"[2026-03-23 14:00:00 TP0] Load weight begin. avail mem=78.50 GB")) == []
    events = analyzer.feed(RawLine(2, 60, ARGS.encode()))
    assert [e.kind for e in events] == ["weight_load_begin", "server_args"]
    assert analyzer.detection.confidence == "certain" and analyzer.feed(RawLine(3, 130, b"x"))[0].kind == "line"
    held = Analyzer()
    assert held.feed(RawLine(1, 0, b"plain")) == [] and [e.kind for e in held.flush_bulk()] == ["line"]
    assert held.detection.confidence == "guess"


def test_the_cli_takes_a_dialect(tmp_path):
    log = tmp_path / "x.log"
    log.write_bytes(log_bytes("hello"))
    result = CliRunner().invoke(app, ["explain", "--dialect", "sglang", "--json", str(log)])
    assert json.loads(result.stdout)["server"] == {"name": "sglang", "version": None, "detection": "given"}
    result = CliRunner().invoke(app, ["explain", "--dialect", "nginx", str(log)])
    assert result.exit_code == 2 and "nginx" in result.output


def test_a_dialect_crosses_processes_by_name():
    """A report sent back by an ``explain -j`` worker carries its run's dialect; vLLM's holds
    closures, so it is pickled by name and is the same object on arrival."""
    import pickle

    from logforensics._dialects import DIALECTS

    for dialect in DIALECTS.values():
        assert pickle.loads(pickle.dumps(dialect)) is dialect


@pytest.mark.parametrize("config", ["SchedulerConfig", "ModelConfig", "UVAOffloadConfig"])
def test_a_headless_pydantic_config_error_is_vllms(config):
    """vLLM's engine configs are pydantic dataclasses, SGLang's ServerArgs is not: a paste that
    starts at the validation error is read by vLLM's dialect."""
    text = f"pydantic_core._pydantic_core.ValidationError: 2 validation errors for {config}"
    assert (detect([text]).dialect.name, detect([text]).confidence) == ("vllm", "certain")
    assert detect(["pydantic_core._pydantic_core.ValidationError: 1 validation error for "
                   "ChatCompletionRequest"]).confidence != "certain"


def test_sglang_flag_renames_agree_with_the_release_index():
    """A curated rename (facts.toml: the catalog's placeholder, and the marks that name it in
    SGLang's messages) and the index of flag spellings built from the released wheels
    (data/sglang_flags.json.gz) are two views of one fact: the new spelling's first release is
    the rename's ``since``, and both spellings are one setting there."""
    flags = json.loads(gzip.decompress(
        resources.files("logforensics").joinpath("data/sglang_flags.json.gz").read_bytes()))
    releases = flags["releases"]
    renames = dialects.DIALECTS["sglang"].facts.flag_renames
    assert renames
    for rename in renames:
        setting = next(s for s in flags["settings"] if rename.new in s)
        assert rename.old in setting, rename
        first = min((span[0] for span in setting[rename.new]), key=releases.index)
        assert first == ".".join(map(str, rename.since)), rename


def test_each_dialect_names_its_own_memory_flags():
    """A report that says no memory flag helps names the flags of the log's server."""
    assert DIALECTS["sglang"].memory_flags[0] == "--mem-fraction-static"
    assert DIALECTS["vllm"].memory_flags[0] == "--gpu-memory-utilization"
    assert all(f.startswith("--") for d in DIALECTS.values() for f in d.memory_flags)
