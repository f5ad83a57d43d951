"""SGLang's failure-site index (logforensics/_sites.py): a sample of sites from several releases,
rendered as the tracebacks a user pastes (whole, cut at the screen edge, through ``tail -5``),
is matched back to its site; findings name the site, its check and its flags."""

from __future__ import annotations

import functools
import json
import re
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, log_bytes, make_catalog

from logforensics._analysis import explain
from logforensics._dialects.base import SiteData
from logforensics._runs import _vt
from logforensics._sites import (
    Site,
    SiteIndex,
    categories,
    category_of,
    default_change,
    flag_as_spelled,
    flag_in_source,
    frame_package,
    home_category,
    home_frame,
    match_traceback,
    plain_condition,
    release_key,
    renamed_flags,
    site_index,
)
from logforensics._tracebacks import ExceptionInfo, Frame, Traceback

RELEASES = ("0.4.6", "0.4.10", "0.5.3", "0.5.9", "0.5.15.post1", "0.5.23")
PER_RELEASE = 20
REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "sglang-source.json"
_HOLE = re.compile(r"\(\?P<(\w+)>\.\*\?\)")
_ESCAPED = re.compile(r"\\(.)", re.S)


def in_release(site: Site, version: str) -> bool:
    return any(_vt(a) <= _vt(version) <= _vt(b) for a, b in site.releases)


@functools.cache
def sample() -> list[tuple[str, Site]]:
    """Every Nth raise/assert site of each release (deterministic), one-line templates that
    the index files (enough literal text to name a site). Built once: it reads every site."""
    index = site_index()
    indexed = sorted({i for w in index.keys for i in index.posting(w)})
    one_line = [s for s in map(index.site, indexed) if s.kind in ("raise", "assert")
                and "\n" not in s.regex and "\\\n" not in s.regex]
    out = []
    for version in RELEASES:
        eligible = [s for s in one_line if in_release(s, version)]
        step = max(1, len(eligible) // PER_RELEASE)
        out += [(version, s) for s in eligible[::step][:PER_RELEASE]]
    return out


def render(site: Site) -> str:
    """The message with each hole filled by a made-up value."""
    pieces = _HOLE.split(site.regex)
    text = []
    for k, piece in enumerate(pieces):
        text.append(_ESCAPED.sub(r"\1", piece) if k % 2 == 0 else f"Qz{k}")
    return "".join(text)


def traceback_lines(site: Site, message: str) -> list[str]:
    where = f"/usr/local/lib/python3.12/dist-packages/{site.file}"
    return [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", line 11, in <module>',
        "    run_server(server_args)",
        f'  File "{where}", line 120, in {site.function.rsplit(".", 1)[-1]}',
        f"    raise {site.exc_type}(" if site.kind == "raise" else "    assert ok, (",
        f"{site.exc_type}: {message}",
    ]


@pytest.mark.parametrize("shape", ["whole", "cut_140", "tail_5"])
def test_sampled_sites_are_found_from_their_tracebacks(shape):
    cases = sample()
    assert len(cases) >= 5 * PER_RELEASE
    catalog = make_catalog()  # no curated pattern: every traceback is left to the index
    wrong = []
    for version, site in cases:
        lines = traceback_lines(site, render(site))
        if shape == "cut_140" and len(lines[-1]) > 140:
            lines[-1] = lines[-1][:140] + "..."
        if shape == "tail_5":
            lines = lines[-5:]
        report = explain(log_bytes(*lines), catalog=catalog)
        tb = report.findings[0].traceback
        found = match_traceback(tb)
        if found is None or not (found.site == site or found.site.same_template(site)):
            wrong.append((version, site.where, site.regex[:60], found and found.site.where))
    assert not wrong, wrong


def test_lookup_checks_few_candidates():
    """Each lookup checks the templates filed under the message's rare words, not all of them."""
    index = site_index()
    cases = sample()
    before = index.candidates_checked
    for _, site in cases:
        index.lookup(site.exc_type, render(site))
    per_lookup = (index.candidates_checked - before) / len(cases)
    assert per_lookup < len(index) / 20


def make_index(*sites: dict) -> SiteIndex:
    return SiteIndex.from_records(["0.5.1", "0.5.2"], list(sites))


SPEC = {"k": "raise", "t": "ValueError", "f": "sglang/srt/server_args.py", "fn": "ServerArgs.check",
        "re": r"Speculative decoding requires (?P<x>.*?) when the page size is (?P<page_size>.*?)\.",
        "c": ["self.page_size > 1"], "flags": ["--page-size"], "r": [["0.5.1", "0.5.2"]]}


def test_whitespace_and_wrapping_do_not_matter_and_cut_text_matches_as_prefix():
    index = make_index(SPEC)
    wrapped = "Speculative decoding requires\n  topk 1 when the pa\nge size is 16."
    assert index.lookup("ValueError", wrapped).confidence >= 0.9
    cut = index.lookup("ValueError", "Speculative decoding requires topk 1 when the pa...")
    assert cut.partial and 0.5 < cut.confidence < 0.9
    assert index.lookup("ValueError", "Speculative decoding requires topk 1 when the pages run out.") is None
    assert index.lookup("KeyError", "Speculative decoding requires topk 1 when the page size is 16.") is None


def test_an_exception_line_at_the_paste_s_width_is_read_whole_then_cut(monkeypatch):
    """An exception line as wide as the paste's widest lines may be hard-wrapped (its rest on
    the next lines: the whole message matches) or cut (only its first line is the message's
    start); a cut KeyError's message lost its closing quote."""
    import logforensics._sites as sites

    site = {**SPEC, "t": "KeyError", "re": r"invalid tool call parser: (?P<p>.*?) \(chose from \{ (?P<v>.*?) \}\)"}
    data = sites._default_sites()
    index = SiteIndex.from_records(["0.5.1", "0.5.2"], [site], data=data)
    monkeypatch.setitem(sites._LOADED, data.index_file, index)
    wrapped = "'invalid tool call parser: zz (chose from { hermes,ll\nama3_json,mistral })'"
    tb = Traceback(stream="", tag="", wrapper="", first_line=1)
    tb.exceptions.append(ExceptionInfo(type="KeyError", message=wrapped, head_cut=True,
                                       frames=[Frame("/x/sglang/srt/server_args.py", 1, "ServerArgs.check")]))
    found = match_traceback(tb, index.data)
    assert found is not None and not found.partial
    tb.final.message = "'invalid tool call parser: zz (chose from { hermes,ll\nThe server failed to start.'"
    found = match_traceback(tb, index.data)
    assert found is not None and found.partial
    assert index.lookup("KeyError", "'invalid tool call parser: zz (chose from { herm", cut=True) is not None


def test_the_raising_frame_breaks_ties_between_sites_with_one_template():
    other = {**SPEC, "f": "sglang/srt/speculative/eagle_worker.py", "fn": "EAGLEWorker.__init__"}
    index = make_index(SPEC, other)
    message = "Speculative decoding requires topk 1 when the page size is 16."
    found = index.lookup("ValueError", message, file="/x/sglang/srt/speculative/eagle_worker.py",
                         function="__init__")
    assert found.site.file == "sglang/srt/speculative/eagle_worker.py" and len(found.equivalent) == 1


def test_an_index_compares_frames_from_its_own_servers_package():
    """Each dialect's index names its server's package: a vLLM frame's path is compared from
    ``vllm/`` on (the raising frame agrees), and the server's core subtree wins a tie."""
    data = SiteData(index_file="x.json.gz", categories="x.toml", package="vllm", core="vllm/v1/")
    core = {**SPEC, "f": "vllm/v1/engine/core.py", "fn": "EngineCore.__init__"}
    tool = {**SPEC, "f": "vllm/benchmarks/serve.py", "fn": "main"}
    index = SiteIndex.from_records(["0.5.1", "0.5.2"], [tool, core], data=data)
    message = "Speculative decoding requires topk 1 when the page size is 16."
    assert index.lookup("ValueError", message).site.file == "vllm/v1/engine/core.py"
    found = index.lookup("ValueError", message, file="/opt/venv/lib/site-packages/vllm/benchmarks/serve.py",
                         function="main")
    assert found.site.file == "vllm/benchmarks/serve.py" and found.file_agrees


def test_a_log_gets_sites_of_its_own_server_only():
    """An SGLang site's message in a vLLM log is not that SGLang site (vLLM never raised it)."""
    site = next(s for s in map(site_index().site, range(len(site_index())))
                if s.kind == "raise" and s.file == "sglang/srt/server_args.py" and s.exc_type == "ValueError"
                and s.literal_chars > 40 and s.starts_literal and "\n" not in s.regex)
    lines = ["INFO 11-20 09:15:02 [api_server.py:1351] vLLM API server version 0.13.0",
             *traceback_lines(site, render(site))]
    sglang_log = explain(log_bytes(*lines[1:]), catalog=make_catalog())
    assert sglang_log.findings[0].id != "unclassified_exception"
    vllm_log = explain(log_bytes(*lines), catalog=make_catalog())
    assert vllm_log.server["name"] == "vllm"
    assert [f.id for f in vllm_log.findings] == ["unclassified_exception"]
    assert "SGLang 0." not in vllm_log.findings[0].explanation


def test_a_bare_assert_is_found_by_its_source_line():
    bare = {"k": "assert", "t": "AssertionError", "f": "sglang/srt/layers/linear.py", "fn": "Linear.split",
            "c": ["not (self.output_size % tp_size == 0)"], "r": [["0.5.1", "0.5.1"]]}
    index = make_index(bare)
    found = index.lookup("AssertionError", "", file="/x/sglang/srt/layers/linear.py", function="split",
                         source="assert self.output_size % tp_size == 0")
    assert found is not None and found.site.function == "Linear.split"


def test_conditions_read_as_plain_words():
    assert plain_condition(["self.tp_size % self.pp_size != 0"]) == "tp_size is not a multiple of pp_size"
    assert plain_condition(["self.server_args.lora_paths is None", "not (x > 3)"]) == \
        "lora_paths is not set and x is at most 3"


def test_categories_come_from_the_sites_home():
    def site(file, fn="f", text="bad value", kind="raise"):
        record = {"k": kind, "t": "ValueError", "f": file, "fn": fn, "re": text, "r": [["0.5.1", "0.5.1"]]}
        return SiteIndex.from_records(["0.5.1"], [record]).site(0)
    assert category_of(site("sglang/srt/server_args.py")).id == "server_args_invalid"
    assert category_of(site("sglang/srt/configs/model_config.py")).id == "model_config_invalid"
    assert category_of(site("sglang/srt/utils/hf_transformers_utils.py", "get_tokenizer")).id == \
        "tokenizer_load_failed"
    assert category_of(site("sglang/srt/distributed/utils.py", "ensure_divisibility")).id == \
        "tp_size_not_divisible_heads"
    assert category_of(site("sglang/srt/managers/scheduler.py")) is None
    # the argument parser's --config file, the chat template, the config's rope_scaling
    assert category_of(site("sglang/srt/utils/server_args_config_parser.py", "_validate_yaml_file",
                            "Config file not found: (?P<path>.*?)")).id == "server_args_invalid"
    assert category_of(site("sglang/srt/parser/template_manager.py", "_load_explicit_chat_template",
                            "Chat template (?P<t>.*?) is not a built-in template name")).id == "server_args_invalid"
    assert category_of(site("sglang/srt/layers/rotary_embedding/factory.py", "get_rope",
                            "Unknown RoPE scaling type (?P<t>.*?)")).id == "model_config_invalid"
    # on a CPU each TP rank takes a NUMA node: more ranks than nodes is more ranks than devices
    assert category_of(site("sglang/srt/model_executor/model_runner.py", "ModelRunner.init_threads_binding",
                            "tp_size (?P<tp>.*?) should be smaller than or equal to number of numa node on the "
                            "machine (?P<n>.*?)", "assert")).id == "tp_exceeds_visible_gpus"
    # the tokenizer manager's serving loop is not tokenizer loading
    assert category_of(site("sglang/srt/managers/tokenizer_manager.py", "TokenizerManager.sigterm_watchdog",
                            "Signal SIGTERM received while health check failed", "log.error")) is None
    # since 0.5.21 the runtime context checks the parallel sizes again: its other checks are internal
    assert category_of(site("sglang/srt/runtime_context.py", "_validate_parallel",
                            "parallel topology is inconsistent \\(set by (?P<source>.*?)\\): (?P<problems>.*?)")).id \
        == "server_args_invalid"
    assert category_of(site("sglang/srt/runtime_context.py", "RuntimeContext.override",
                            "config not published; cannot override")) is None


def test_an_exception_the_standard_library_raised_is_its_callers():
    frames = [Frame("/usr/local/lib/python3.11/dist-packages/sglang/srt/configs/model_config.py", 612,
                    "__init__", "self.model_override_args = json.loads(model_override_args)"),
              Frame("/usr/lib/python3.11/json/__init__.py", 346, "loads", "return _default_decoder.decode(s)"),
              Frame("/usr/lib/python3.11/json/decoder.py", 353, "raw_decode", "obj, end = self.scan_once(s, idx)")]
    assert home_frame(frames) is frames[0]
    assert home_frame(frames[:1]) is frames[0]
    assert home_frame(frames[1:]) is frames[-1]  # no caller shown: the raising frame
    # a parameter passed on keeps its flag's field's tail; one word names no flag
    assert flag_in_source(frames[0].source) == "--json-model-override-args"
    assert flag_in_source("config = json.loads(text)") is None
    frame, category, flag = home_category(frames)
    assert (frame, category.id, flag) == (frames[0], "server_args_invalid", "--json-model-override-args")
    # the same call on a value no flag gave is the model config's module
    plain = [Frame(frames[0].file, 600, "__init__", "self.hf_config = json.loads(text)"), *frames[1:]]
    assert home_category(plain)[1].id == "model_config_invalid"
    # a site-packages folder under lib/python3.X is no standard library
    torch = Frame("/opt/venv/lib/python3.11/site-packages/torch/serialization.py", 1, "load", "x")
    assert home_frame([frames[0], torch]) is torch


@pytest.mark.parametrize("exc_type, source, flag", [
    ("orjson.JSONDecodeError", "self.model_loader_extra_config = orjson.loads(model_loader_extra_config)",
     "--model-loader-extra-config"),
    ("TypeError", "gc.set_threshold(*gc_threshold)", "--gc-threshold"),
])
def test_a_compiled_call_that_rejected_a_flags_value_is_the_flags(exc_type, source, flag):
    """orjson.loads or a builtin raises with no frame of its own: the raising frame's line is the
    call, not a ``raise``, and the error is about the value it was handed."""
    frame = Frame("/usr/local/lib/python3.11/dist-packages/sglang/srt/configs/load_config.py", 137,
                  "__post_init__", source)
    found, category, named = home_category([frame], exc_type=exc_type)
    assert (found, category.id, named) == (frame, "server_args_invalid", flag)
    # the same line failing otherwise (a CUDA error) is its module's; a raise there is the module's own check
    assert home_category([frame], exc_type="RuntimeError")[1].id == "model_config_invalid"
    raising = Frame(frame.file, 140, "__post_init__", "raise ValueError(model_loader_extra_config)")
    assert home_category([raising], exc_type="ValueError")[1].id == "model_config_invalid"


def test_a_library_reader_of_the_model_folder_is_that_files_home():
    sglang = Frame("/usr/local/lib/python3.11/dist-packages/sglang/srt/hf_transformers_utils.py", 141,
                   "get_config", "config = AutoConfig.from_pretrained(")
    config = Frame("/usr/local/lib/python3.11/dist-packages/transformers/configuration_utils.py", 758,
                   "_get_config_dict", 'config_dict["_commit_hash"] = commit_hash')
    assert home_category([sglang, config])[1].id == "model_config_invalid"
    assert home_category([config])[1].id == "model_config_invalid"  # a tail without the server's frames
    # a cut tokenizer.json: the standard library raised under transformers' tokenizer reader, its path cut at 80
    tokenizer = Frame("/usr/local/lib/python3.11/dist-packages/transformers/tokenization_utils_", None, None,
                      "tokenizer_file_handle = json.load(tokenizer_file_handle)")
    decoder = Frame("/usr/lib/python3.11/json/decoder.py", 353, "raw_decode", "obj, end = self.scan_once(s, idx)")
    assert home_category([tokenizer, decoder])[1].id == "tokenizer_load_failed"
    # the config's rope parameters are checked by transformers' rope utilities while the config is built
    rope = Frame("/usr/local/lib/python3.11/dist-packages/transformers/modeling_rope_utils.py", 1114,
                 "_check_received_keys", "raise KeyError(f\"Missing required keys in `rope_parameters`\")")
    assert home_category([sglang, config, rope])[1].id == "model_config_invalid"
    # any other module of the library has no home of its own
    modeling = Frame("/usr/local/lib/python3.11/dist-packages/transformers/models/qwen2/modeling_qwen2.py", 287,
                     "__init__", "self.rope_init_fn = ROPE_INIT_FUNCTIONS[self.rope_type]")
    assert home_category([sglang, modeling]) is None


def test_frame_package_names_the_raising_package():
    assert frame_package("/usr/lib/python3/dist-packages/torch/cuda/__init__.py")[0] == "torch"
    assert frame_package("/opt/venv/lib/python3.11/site-packages/verl/workers/rollout.py")[0] == "verl"
    assert frame_package(None) is None
    vllm_frame = "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/linear.py"
    assert "vLLM's own code raised" in frame_package(vllm_frame, "vllm")[1]
    assert "vLLM code that SGLang imports" in frame_package(vllm_frame, "sglang")[1]


@pytest.mark.skipif(not REFERENCE.is_file(), reason="shared reference not beside the checkout")
def test_reference_validation_sites_are_in_the_index():
    """The reference's 0.5.23 (and older) argument-validation sites, rendered, are found at
    their file and function; a few use literal braces the rendering cannot tell from holes."""
    index = site_index()
    sites = json.loads(REFERENCE.read_text())["validation_sites"]["0.5.23"]
    found = 0
    total = 0
    for ref in sites:
        if not ref.get("message") or ref["message"].startswith("<expr"):
            continue
        total += 1
        message = re.sub(r"\{[^{}]*\}", "Qz1", ref["message"])
        exc = None if ref["kind"] == "parser.error" else ref["exc_type"]
        m = index.lookup(exc, message, file="/x/" + ref["file"], function=ref["func"].rsplit(".", 1)[-1])
        found += bool(m and any(s.file == ref["file"] and in_release(s, "0.5.23")
                                for s in [m.site, *m.equivalent]))
    assert found >= 0.98 * total


@pytest.mark.skipif(not REFERENCE.is_file(), reason="shared reference not beside the checkout")
def test_every_category_is_a_reference_root_cause():
    ids = set(re.findall(r"^- `([a-z0-9_]+)`", (REFERENCE.parent / "root-causes.md").read_text(), re.M))
    assert {c.id for c in categories()} - ids == set()


def test_a_changed_default_is_found_only_between_releases_that_straddle_it():
    old, new = ((0, 5, 3), (0, 5, 3)), ((0, 5, 4), (0, 5, 4))

    def change(*args):
        return default_change("sglang_defaults.json", *args)

    assert change("mamba_full_memory_ratio", 0.2, 0.9, old, new) == "0.5.3.post3"
    assert change("mamba_full_memory_ratio", 0.2, 0.9, new, new) is None  # same release: set by hand
    assert change("mamba_full_memory_ratio", 0.9, 0.2, old, new) is None  # the other way round
    assert change("mamba_full_memory_ratio", 0.2, 0.9, (None, (0, 5, 18)), ((0, 5, 19), None)) == "0.5.3.post3"
    assert change("tp_size", 1, 2, old, new) is None  # no such change indexed
    assert release_key("0.5.3.post3") > release_key("0.5.3") and release_key("0.5.4") > release_key("0.5.3.post3")


def test_the_index_tool_reads_literal_serverargs_defaults(tmp_path):
    sys.path.insert(0, str(REPO / "tools"))
    from index_sglang import build_defaults

    for version, ratio in (("0.9.0", "0.2"), ("0.9.1", "0.9")):
        with zipfile.ZipFile(tmp_path / f"sglang-{version}-py3-none-any.whl", "w") as wheel:
            wheel.writestr("sglang/srt/server_args.py",
                           "@dataclass\nclass ServerArgs:\n    tp_size: int = 1\n"
                           f"    mamba_full_memory_ratio: float = {ratio}\n    chunked_prefill_size: int = compute()\n")
    data = build_defaults(["0.9.0", "0.9.1"], tmp_path)
    assert data == {"releases": ["0.9.0", "0.9.1"], "changes": {"mamba_full_memory_ratio": [["0.9.1", 0.2, 0.9]]}}


def test_the_index_tool_writes_the_index_logx_reads(tmp_path):
    """tools/index_sglang.py's build and write end in the file ``site_index`` reads: a check
    added in one release is found at its site, with the releases it exists in, in blocks read
    back whole; a rebuild is byte-identical."""
    sys.path.insert(0, str(REPO / "tools"))
    from index_sglang import build, write

    check = ("class ServerArgs:\n    def check(self):\n        if self.page_size > 1:\n"
             "            raise ValueError(f'Paged speculative decoding needs topk 1, got {self.topk}')\n")
    for version, body in (("0.9.0", "x = 1\n"), ("0.9.1", check), ("0.9.2", check)):
        with zipfile.ZipFile(tmp_path / f"sglang-{version}-py3-none-any.whl", "w") as wheel:
            wheel.writestr("sglang/srt/server_args.py", body)
    out = tmp_path / "sites.idx"
    write(build(["0.9.0", "0.9.1", "0.9.2"], tmp_path), out)
    index = SiteIndex(out.read_bytes())
    found = index.lookup("ValueError", "Paged speculative decoding needs topk 1, got 4")
    assert found is not None and found.site.where == "sglang/srt/server_args.py:ServerArgs.check"
    assert found.site.release_range == "0.9.1–0.9.2" and found.site.conditions == ("self.page_size > 1",)
    first = out.read_bytes()
    write(build(["0.9.0", "0.9.1", "0.9.2"], tmp_path), out)
    assert out.read_bytes() == first


def test_an_index_keeps_its_blocks_compressed_and_reads_back_every_site(monkeypatch):
    """Sites in many blocks (ordered by file: a bare assert's frame reads only its file's
    blocks) come back field for field; no more than ``DECODED_BLOCKS`` stay decoded."""
    import logforensics._sites as sites

    monkeypatch.setattr(sites, "SITES_PER_BLOCK", 4)
    monkeypatch.setattr(sites, "DECODED_BLOCKS", 3)
    records = [{**SPEC, "f": f"sglang/srt/m{i:02}.py", "re": f"check {i} failed: (?P<x>.*?)"} for i in range(40)]
    records.append({"k": "assert", "t": "AssertionError", "f": "sglang/srt/m17.py", "fn": "Linear.split",
                    "c": ["not (x % tp == 0)"], "r": [["0.5.1", "0.5.1"]]})
    index = SiteIndex.from_records(["0.5.1", "0.5.2"], records)
    assert len(index) == 41
    assert sorted(index.site(i).regex for i in range(len(index)) if index.site(i).regex) == \
        sorted(r["re"] for r in records[:40])
    assert len(index._blocks) <= 3 and index.flags == frozenset({"page_size"})
    found = index.lookup("AssertionError", "", file="/x/sglang/srt/m17.py", function="split",
                         source="assert x % tp == 0")
    assert found is not None and found.site.function == "Linear.split"
    assert index.lookup("ValueError", "check 31 failed: because").site.file == "sglang/srt/m31.py"
    with pytest.raises(ValueError, match="not a logx site index"):
        SiteIndex(b"{}")


def test_the_vllm_index_covers_its_releases_and_finds_a_config_check_nobody_wrote_a_pattern_for():
    """vLLM's index (tools/index_vllm.py) spans 0.6.6 to 0.34 in a small file; a rendered
    argument check of vLLM's is found at its site in a vLLM log and named by its category."""
    from logforensics._dialects import DIALECTS

    data = DIALECTS["vllm"].sites
    index = site_index(data)
    assert index.releases[0] == "0.6.6.post1" and index.releases[-1] == "0.34.0" and len(index) > 10_000
    size = (Path(__file__).resolve().parent.parent / "logforensics" / "data" / data.index_file).stat().st_size
    assert size < 1_500_000
    lines = [
        "(APIServer pid=7) INFO 12-02 01:20:11 [startup.py:96] non-default args: {'model': '/models/m'}",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.11/site-packages/vllm/reasoning/abs_reasoning_parsers.py", line 256,'
        " in get_reasoning_parser",
        "    raise KeyError(",
        "KeyError: \"Reasoning parser 'thinker' not found. Available parsers: deepseek_r1, qwen3\"",
    ]
    finding = explain(log_bytes(*lines)).findings[0]
    assert finding.id == "server_args_invalid" and "vLLM 0." in finding.explanation
    assert finding.facts["site"]["file"] == "vllm/reasoning/abs_reasoning_parsers.py"


@pytest.mark.skipif(not REFERENCE.is_file(), reason="shared reference not beside the checkout")
def test_every_vllm_category_is_a_known_root_cause():
    """A vLLM category names a reference root cause or one of the vLLM catalog's own ids."""
    from logforensics._catalog import load_catalog
    from logforensics._dialects import DIALECTS

    ids = set(re.findall(r"^- `([a-z0-9_]+)`", (REFERENCE.parent / "root-causes.md").read_text(), re.M))
    ids |= {p.id for p in load_catalog().for_dialect("vllm").patterns}
    assert {c.id for c in categories(DIALECTS["vllm"].sites)} - ids == set()


def test_a_traceback_raised_in_another_package_is_no_site_of_the_server():
    """torch's module ``__getattr__`` raising "module 'torch' has no attribute …" is not the
    server's own ``__getattr__`` site of the same wording."""
    lines = ["INFO 11-20 09:15:02 [api_server.py:1351] vLLM API server version 0.13.0",
             "Traceback (most recent call last):",
             '  File "/usr/local/lib/python3.11/site-packages/torch/__init__.py", line 2681, in __getattr__',
             '    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
             "AttributeError: module 'torch' has no attribute 'float99'"]
    from logforensics._dialects import DIALECTS

    report = explain(log_bytes(*lines), catalog=make_catalog())
    assert [f.id for f in report.findings] == ["unclassified_exception"]
    assert match_traceback(report.findings[0].traceback, DIALECTS["vllm"].sites) is None


# — flags named as the log's release spells them (data/sglang_flags.json.gz) ——————————————


@pytest.mark.parametrize("flag, low, high, spelled", [
    ("--mamba-radix-cache-strategy", "0.5.10", "0.5.10", "--mamba-scheduler-strategy"),  # before the rename
    ("--mamba-scheduler-strategy", "0.5.23", "0.5.23", "--mamba-radix-cache-strategy"),  # after it
    ("--mamba-radix-cache-strategy", "0.5.14", "0.5.23", "--mamba-radix-cache-strategy"),
    ("--mamba-radix-cache-strategy", None, None,
     "--mamba-radix-cache-strategy (named --mamba-scheduler-strategy before SGLang 0.5.14)"),
    ("--cuda-graph-max-bs", "0.5.21", "0.5.22", "--cuda-graph-max-bs-decode"),
    ("--tp-size", "0.4.6", "0.5.23", "--tp-size"),  # never renamed
])
def test_a_flag_is_named_as_the_release_spells_it(flag, low, high, spelled):
    assert flag_as_spelled(flag, low and _vt(low), high and _vt(high)) == spelled


@pytest.mark.parametrize("rejected, release, note", [
    ("--stream-output", "0.5.23",
     "`--stream-output` is now `--incremental-streaming-output`, its name since SGLang 0.5.10"),
    ("--mamba-scheduler-strategy extra_buffer", None,  # no release printed: the newest name
     "`--mamba-scheduler-strategy` is now `--mamba-radix-cache-strategy`, its name since SGLang 0.5.14"),
    ("--disable-cuda-graph", "0.5.22", "`--disable-cuda-graph` is now `--cuda-graph-backend-decode=disabled "
     "--cuda-graph-backend-prefill=disabled`, its name since SGLang 0.5.14"),
    ("--reasoning_parser kimi_k2", None, "`--reasoning_parser` is spelled `--reasoning-parser`"),
    ("--no-such-flag 1", None, None),
    ("--incremental-streaming-output", "0.5.2", None),  # a newer flag than the release: no old name of it
])
def test_a_rejected_flag_is_named_as_the_release_calls_it(rejected, release, note):
    bound = release and _vt(release)
    assert renamed_flags(rejected, bound, bound) == note


MAMBA_SITE = {"k": "raise", "t": "ValueError", "re": r"Radix cache for mamba needs a hybrid model, got (?P<arch>.*?)",
              "f": "sglang/srt/server_args.py", "fn": "ServerArgs._handle_mamba_radix_cache",
              "c": ["not is_hybrid"], "flags": [], "env": [], "args": ["mamba_radix_cache_strategy"],
              "r": [["0.5.10", "0.5.23"]]}


@pytest.mark.parametrize("version, flag", [("0.5.10", "--mamba-scheduler-strategy"),
                                           ("0.5.23", "--mamba-radix-cache-strategy")])
def test_a_site_finding_names_the_flag_of_the_logs_release(monkeypatch, version, flag):
    import logforensics._sites as sites

    data = sites._default_sites()
    monkeypatch.setitem(sites._LOADED, data.index_file,
                        SiteIndex.from_records(["0.5.10", "0.5.23"], [MAMBA_SITE], data=data))
    data = log_bytes(f"[2026-11-02 10:00:00] sglang version: {version}",
                     "Traceback (most recent call last):",
                     '  File "/usr/lib/python3/dist-packages/sglang/srt/server_args.py", line 9, '
                     'in _handle_mamba_radix_cache',
                     '    raise ValueError(f"...")',
                     "ValueError: Radix cache for mamba needs a hybrid model, got LlamaForCausalLM")
    top = explain(data, catalog=make_catalog()).findings[0]
    assert top.id == "server_args_invalid"
    assert f"`{flag}`" in top.fix and f"SGLang {version}" in top.fix


@pytest.mark.parametrize(("key", "expected"), [
    ("model.layers.3.mlp.experts.w2_weight_scale_inv", "weight_loading_key_mismatch"),
    ("frobnicated", "unclassified_exception"),
])
def test_a_missing_key_under_load_model_is_a_tensor_only_when_dotted(key, expected):
    """A bare word missing while the model is built (an unknown rope type in transformers' model
    code, SGLang 0.5.2) is no checkpoint tensor; a tensor's name is dotted."""
    site = "/usr/local/lib/python3.11/dist-packages"
    lines = ["Traceback (most recent call last):",
             f'  File "{site}/sglang/srt/model_loader/loader.py", line 477, in load_model',
             "    model = _initialize_model(",
             f'  File "{site}/transformers/models/qwen2/modeling_qwen2.py", line 287, in __init__',
             "    self.rope_init_fn = ROPE_INIT_FUNCTIONS[self.rope_type]",
             f"KeyError: '{key}'"]
    assert explain(log_bytes(*lines)).findings[0].id == expected
