"""Hostile and broken inputs: each gets a clear one-line message or a best-effort report with
a documented exit code (0 ok, 1 failure found, 2 unreadable input or usage, 3 inconclusive:
empty or stale, 4 internal error) — never a Python traceback, never a hang.

Run through the console script's own entry point (``cli.main``), as a user would."""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import pytest
from conftest import pattern_dir, pattern_toml

from logforensics import _analysis as analysis
from logforensics import _cli as cli
from logforensics._analysis import Analyzer, explain, explain_many
from logforensics._sources import MAX_LINE_BYTES, SourceError, check_readable

TS = "[2026-03-23 14:00:00 TP0] "


def run_cli(capsys, monkeypatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["logx", *args])
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    out, err = capsys.readouterr()
    assert "Traceback (most recent call last)" not in err, err
    return code, out, err


def explain_json(capsys, monkeypatch, path) -> tuple[int, dict]:
    code, out, err = run_cli(capsys, monkeypatch, "explain", "--json", str(path))
    payload = json.loads(out)
    assert payload["schema"] == "logx.report/1" and payload["exit_code"] == code, (code, err)
    return code, payload


# — unreadable input: exit 2, one line on stderr ——————————————————————————————————————————


def test_missing_file(capsys, monkeypatch, tmp_path):
    code, out, err = run_cli(capsys, monkeypatch, "explain", str(tmp_path / "nope.log"))
    assert code == 2 and err.strip() == f"logx: {tmp_path / 'nope.log'}: no such file"


def test_directory(capsys, monkeypatch, tmp_path):
    code, _, err = run_cli(capsys, monkeypatch, "explain", str(tmp_path))
    assert code == 2 and "is a directory" in err and err.count("\n") == 1


def test_permission_denied_via_access_check(capsys, monkeypatch, tmp_path):
    """As root every file is readable, so ``os.access`` is made to say no."""
    log = tmp_path / "secret.log"
    log.write_text(TS + "hello\n")
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    with pytest.raises(SourceError, match="permission denied"):
        check_readable(log)
    code, _, err = run_cli(capsys, monkeypatch, "explain", str(log))
    assert code == 2 and err.strip() == f"logx: {log}: permission denied"


def test_permission_denied_on_open(capsys, monkeypatch, tmp_path):
    """The file passes the access check but open() fails (a race, an ACL, root-squash NFS)."""
    log = tmp_path / "racy.log"
    log.write_text(TS + "hello\n")
    real_open = open

    def deny(path, *a, **k):
        if str(path) == str(log):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *a, **k)

    monkeypatch.setattr("builtins.open", deny)
    code, _, err = run_cli(capsys, monkeypatch, "explain", str(log))
    assert code == 2 and "Permission denied" in err and err.count("\n") == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file: covered by the tests above")
def test_permission_denied_for_real(capsys, monkeypatch, tmp_path):  # pragma: no cover - non-root only
    log = tmp_path / "secret.log"
    log.write_text(TS + "hello\n")
    log.chmod(0)
    code, _, err = run_cli(capsys, monkeypatch, "explain", str(log))
    assert code == 2 and "permission denied" in err


def test_broken_pattern_toml(capsys, monkeypatch, tmp_path):
    pdir = pattern_dir(tmp_path, "[[pattern]\nid = 'x'\n")
    log = tmp_path / "a.log"
    log.write_text(TS + "hello\n")
    code, _, err = run_cli(capsys, monkeypatch, "explain", "--patterns", str(pdir), str(log))
    assert code == 2 and "invalid TOML" in err and err.count("\n") == 1


def test_pattern_with_bad_regex(capsys, monkeypatch, tmp_path):
    pdir = pattern_dir(tmp_path, pattern_toml("mine", "unbalanced ("))
    log = tmp_path / "a.log"
    log.write_text(TS + "hello\n")
    code, _, err = run_cli(capsys, monkeypatch, "explain", "--patterns", str(pdir), str(log))
    assert code == 2 and "pattern mine: bad regex in 'line'" in err and err.count("\n") == 1


def test_missing_pattern_dir(capsys, monkeypatch, tmp_path):
    log = tmp_path / "a.log"
    log.write_text(TS + "hello\n")
    code, _, err = run_cli(capsys, monkeypatch, "explain", "--patterns", str(tmp_path / "none"), str(log))
    assert code == 2 and "pattern directory not found" in err


def test_one_bad_file_among_several_keeps_the_others(capsys, monkeypatch, tmp_path):
    good = tmp_path / "good.log"
    good.write_text(TS + "RuntimeError: Decode out of memory. Try to lower your batch size.\n")
    code, out, err = run_cli(capsys, monkeypatch, "explain", "--json", "--jobs", "2", str(good),
                             str(tmp_path / "gone.log"))
    assert code == 2 and "gone.log: no such file" in err
    assert [(r["file"], r["verdict"]) for r in json.loads(out)] == [(str(good), "failed"),
                                                                  (str(tmp_path / "gone.log"), "unreadable")]


def test_explain_many_keeps_order_and_per_file_errors(tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / f"{i}.log"
        p.write_text(f"[2026-03-23 14:00:0{i}] server_args=ServerArgs(model_path='m{i}')\n")
        paths.append(str(p))
    paths.insert(1, str(tmp_path / "missing.log"))
    for jobs in (1, 2):
        results = explain_many(paths, jobs)
        assert isinstance(results[1], SourceError)
        assert [r.run.model for r in results if not isinstance(r, Exception)] == ["m0", "m1", "m2"]


# — content: a best-effort report ————————————————————————————————————————————————————————


def test_empty_file(capsys, monkeypatch, tmp_path):
    log = tmp_path / "empty.log"
    log.write_bytes(b"")
    code, payload = explain_json(capsys, monkeypatch, log)
    assert code == 3 and payload["verdict"] == "empty" and payload["lines"] == 0


def test_binary_garbage(capsys, monkeypatch, tmp_path):
    log = tmp_path / "bin.log"
    log.write_bytes(os.urandom(300_000) + bytes(range(256)) * 64)
    code, payload = explain_json(capsys, monkeypatch, log)
    assert code in (0, 1, 3) and payload["lines"] > 0


def test_invalid_utf8_and_nul_bytes(capsys, monkeypatch, tmp_path):
    log = tmp_path / "bad.log"
    log.write_bytes(b"[2026-03-23 14:00:00 TP0] Load weight begin. avail mem=78.50 GB\xff\xfe\n"
                    b"\x00\x00[2026-03-23 14:00:01 TP0] Scheduler hit an exception: "
                    b"Traceback (most recent call last):\n"
                    b'  File "/x/\xc3(scheduler.py", line 9, in run\x00\n'
                    b"RuntimeError: Decode out of memory. Try to lower your batch size.\xe2\x82\n")
    code, payload = explain_json(capsys, monkeypatch, log)
    assert code == 1 and payload["findings"][0]["id"] == "decode_out_of_memory"
    assert "\ufffd" in json.dumps(payload, ensure_ascii=False)


def test_50_mb_single_line_is_cut_not_loaded(capsys, monkeypatch, tmp_path):
    log = tmp_path / "one_line.log"
    with open(log, "wb") as fh:
        fh.write(b"[2026-03-23 14:00:00 TP0] KV Cache " + b"a " * (25 << 20) + b"\n")
        fh.write(b"RuntimeError: Decode out of memory. Try to lower your batch size.\n")
    start = time.perf_counter()
    code, payload = explain_json(capsys, monkeypatch, log)
    assert time.perf_counter() - start < 120  # a net against a hang, far from any real run's time
    assert payload["lines"] == 2 and code in (0, 1)
    assert all(len(e["text"]) <= MAX_LINE_BYTES for f in payload["findings"] for e in f["evidence"])


def test_ten_million_empty_lines_are_fast(capsys, monkeypatch, tmp_path):
    log = tmp_path / "blank.log"
    with open(log, "wb") as fh:
        fh.write(TS.encode() + b"Load weight begin. avail mem=78.50 GB\n")
        fh.write(b"\n" * 10_000_000)
        fh.write(TS.encode() + b"Load weight end. type=X, avail mem=8.50 GB\n")
    fed = []
    real_feed = Analyzer.feed
    monkeypatch.setattr(Analyzer, "feed", lambda self, raw: fed.append(raw.number) or real_feed(self, raw))
    report = explain(log)
    assert len(fed) < 10  # blank lines are counted on the fast path, not fed one by one
    assert report.lines == 10_000_002 and report.run.last_line == 10_000_002
    code, payload = explain_json(capsys, monkeypatch, log)
    assert payload["runs"][0]["phase"] == "weights"


def test_traceback_100k_frames_deep(tmp_path):
    lines = [TS + "Scheduler hit an exception: Traceback (most recent call last):"]
    for i in range(100_000):
        lines.append(f'  File "/x/sglang/srt/deep.py", line {i + 1}, in recurse')
        lines.append("    return recurse(n - 1)")
    lines.append("RecursionError: maximum recursion depth exceeded")
    log = tmp_path / "deep.log"
    log.write_text("\n".join(lines) + "\n")
    start = time.perf_counter()
    report = explain(log)
    assert time.perf_counter() - start < 120  # a net against a hang (quadratic would be hours)
    tb = report.run.tracebacks[0]
    assert tb.exc_type == "RecursionError" and len(tb.frames) <= 80
    assert tb.final.frames_elided > 99_000 and report.findings


def test_1000_chained_exceptions(tmp_path):
    lines = []
    for i in range(1000):
        lines += ["Traceback (most recent call last):", f'  File "/x/a.py", line {i}, in f{i}', "    g()",
                  f"ValueError: level {i}", "",
                  "During handling of the above exception, another exception occurred:", ""]
    lines += ["Traceback (most recent call last):", '  File "/x/a.py", line 1, in main', "    f()",
              "RuntimeError: the last one"]
    data = (TS + "Scheduler hit an exception:\n" + "\n".join(lines) + "\n").encode()
    report = explain(data)
    tb = report.run.tracebacks[0]
    assert tb.exc_type == "RuntimeError" and len(tb.exceptions) <= 16
    json.dumps(report.to_json())


def test_fifo_with_a_writer_that_closes(capsys, monkeypatch, tmp_path):
    """A FIFO reads like a stream: the report comes when the writer closes it. (With no
    writer at all, explain waits for one, as ``cat FIFO`` does.)"""
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "wb") as fh:
            fh.write(b"[2026-03-23 14:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n")
            fh.write(b"[2026-03-23 14:00:01 TP0] Load weight begin. avail mem=78.50 GB\n")

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    code, out, err = run_cli(capsys, monkeypatch, "explain", "--json", str(fifo))
    thread.join(5)
    payload = json.loads(out)
    assert code in (0, 3) and payload["lines"] == 2 and payload["runs"][0]["phase"] == "weights"


def test_file_truncated_while_read(monkeypatch, tmp_path):
    log = tmp_path / "shrinking.log"
    log.write_bytes((TS + "Decode batch, #running-req: 1, #token: 40, token usage: 0.00, cuda graph: True, "
                     "gen throughput (token/s): 80.79, #queue-req: 0\n").encode() * 20_000)
    real = analysis.read_chunks

    def shrinking(fh, *a, **k):
        for i, chunk in enumerate(real(fh, *a, **k)):
            yield chunk
            if i == 0:
                os.truncate(log, 1000)  # the file shrinks under us: reading just ends

    monkeypatch.setattr(analysis, "read_chunks", shrinking)
    report = explain(log)
    assert report.lines > 0 and report.run is not None


def test_file_deleted_while_read(monkeypatch, tmp_path):
    log = tmp_path / "gone.log"
    log.write_bytes((TS + "Load weight begin. avail mem=78.50 GB\n").encode() * 5_000)
    real = analysis.read_chunks

    def deleting(fh, *a, **k):
        for i, chunk in enumerate(real(fh, *a, **k)):
            yield chunk
            if i == 0:
                os.unlink(log)  # the open file stays readable; the stale-log check must cope

    monkeypatch.setattr(analysis, "read_chunks", deleting)
    report = explain(log)
    assert report.lines == 5_000
    json.dumps(report.to_json())


def test_read_error_mid_file_is_a_clean_error(capsys, monkeypatch, tmp_path):
    log = tmp_path / "eio.log"
    log.write_bytes(b"x\n" * 10)

    def failing(fh, *a, **k):
        yield b"x\n"
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(analysis, "read_chunks", failing)
    code, _, err = run_cli(capsys, monkeypatch, "explain", str(log))
    assert code == 2 and "Input/output error" in err
