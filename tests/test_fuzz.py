"""Property tests over the whole pipeline: whatever the bytes, explain never raises and
``explain --json`` is always valid JSON of the ``logx.report/1`` schema."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from logforensics._analysis import Analyzer, explain
from logforensics._catalog import load_catalog
from logforensics._cli import app
from logforensics._pipeline import parse
from logforensics._report import VERDICTS

CATALOG = load_catalog()
SEVERITIES = {"fatal", "error", "warning", "info"}
REPORT_KEYS = {"schema", "file", "verdict", "exit_code", "explained_run", "lines", "runs", "findings"}
FINDING_KEYS = {"id", "title", "severity", "confidence", "phase", "run", "evidence", "explanation", "fix"}


def check_report(doc: dict) -> None:
    """The ``logx.report/1`` contract (keys may be added, never removed or retyped)."""
    assert isinstance(doc, dict) and doc.keys() >= REPORT_KEYS, sorted(doc)
    assert doc["schema"] == "logx.report/1"
    assert isinstance(doc["file"], str)
    assert doc["verdict"] in VERDICTS
    assert doc["exit_code"] in (0, 1, 3)
    assert doc["exit_code"] == {"failed": 1, "stale": 3, "empty": 3}.get(doc["verdict"], 0)
    assert doc["explained_run"] is None or isinstance(doc["explained_run"], int)
    assert isinstance(doc["lines"], int) and doc["lines"] >= 0
    assert isinstance(doc["runs"], list)
    for run in doc["runs"]:
        assert isinstance(run["index"], int) and isinstance(run["phase"], str)
    if doc["explained_run"] is not None:
        assert 1 <= doc["explained_run"] <= len(doc["runs"])
    assert isinstance(doc["findings"], list)
    for f in doc["findings"]:
        assert f.keys() >= FINDING_KEYS, sorted(f)
        assert isinstance(f["id"], str) and f["id"]
        assert isinstance(f["title"], str) and isinstance(f["explanation"], str) and isinstance(f["fix"], str)
        assert f["severity"] in SEVERITIES
        assert isinstance(f["confidence"], int | float) and 0 <= f["confidence"] <= 1
        assert isinstance(f["phase"], str) and isinstance(f["run"], int)
        assert isinstance(f["evidence"], list)
        for e in f["evidence"]:
            assert set(e) >= {"line", "text"} and isinstance(e["line"], int) and isinstance(e["text"], str)
    if doc["verdict"] == "failed":
        assert any(f["severity"] in ("fatal", "error") for f in doc["findings"])


# Lines that matter to the parser, to be mixed with noise, cut and garbled.
PIECES = [
    "[2026-03-23 14:00:00] server_args=ServerArgs(model_path='m', tp_size=2, mem_fraction_static=0.9)",
    "[2026-03-23 14:00:05 TP0] Load weight begin. avail mem=78.50 GB",
    "[2026-03-23 14:00:20 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=60.1 GB",
    "[2026-03-23 14:00:30 TP0] KV Cache is allocated. #tokens: 1000, K size: 1.00 GB, V size: 1.00 GB",
    "[2026-03-23 14:00:50] The server is fired up and ready to roll!",
    "[2026-03-23 14:01:00 TP0] Decode batch, #running-req: 7, #token: 40, token usage: 0.12, cuda graph: True",
    '[2026-03-23 14:01:01] INFO:     127.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK',
    "[2026-03-23 14:01:01] Receive: obj=GenerateReqInput(rid='r', text='Traceback (most recent call last):')",
    "[2026-03-23 14:01:02 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/x/sglang/srt/managers/scheduler.py", line 9, in event_loop_normal',
    "    self.run()",
    "    ^^^^^^^^^^",
    "RuntimeError: Decode out of memory. Try to lower your batch size.",
    "During handling of the above exception, another exception occurred:",
    "terminate called after throwing an instance of 'c10::Error'",
    "  what():  CUDA error: an illegal memory access was encountered",
    "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix cache when",
    "[2026-03-23 14:01:03] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
    "Killed",
    "  + Exception Group Traceback (most recent call last):",
    "  | ExceptionGroup: boom (2 sub-exceptions)",
    "\x1b[31mERROR\x1b[0m something",
    "progress 10%\rprogress 100%",
    "",
]
texts = st.one_of(st.sampled_from(PIECES), st.text(max_size=120),
                  st.sampled_from(PIECES).map(lambda s: s[: len(s) // 2]))
logs = st.lists(texts, max_size=30).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass"))
garbled = st.tuples(logs, st.binary(max_size=200), st.integers(0, 10_000)).map(
    lambda t: t[0][: t[2]] + t[1] + t[0][t[2]:])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(logs, garbled, st.binary(max_size=2000)))
def test_explain_never_raises_and_json_has_the_schema(data):
    report = explain(data, catalog=CATALOG)
    doc = json.loads(json.dumps(report.to_json(), ensure_ascii=False))
    check_report(doc)
    assert doc["lines"] == data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
    list(parse(data))  # the event stream alone does not raise either


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.one_of(logs, garbled))
def test_cli_explain_json_is_valid(tmp_path_factory, data):
    log = tmp_path_factory.mktemp("fuzz") / "server.log"
    log.write_bytes(data)
    result = CliRunner().invoke(app, ["explain", "--json", str(log)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    doc = json.loads(result.stdout)
    check_report(doc)
    assert result.exit_code == doc["exit_code"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs, st.integers(1, 64))
def test_incremental_feed_and_cut_chunks_agree(data, cut):
    """``consume`` on chunks cut anywhere gives the same report as one piece."""
    whole = Analyzer(CATALOG)
    whole.consume([data])
    whole.finish()
    pieces = Analyzer(CATALOG)
    pieces.consume(data[i : i + cut] for i in range(0, len(data), cut))
    pieces.finish()
    assert whole.report("x").to_json() == pieces.report("x").to_json()


def test_schema_checker_rejects_a_broken_report():
    doc = explain(b"hello\n", catalog=CATALOG).to_json()
    check_report(doc)
    for broken in ({**doc, "verdict": "weird"}, {k: v for k, v in doc.items() if k != "findings"},
                   {**doc, "findings": [{"id": "x"}]}):
        try:
            check_report(broken)
        except AssertionError:
            continue
        raise AssertionError(f"accepted {broken}")
