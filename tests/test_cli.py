"""The ``logx`` command line: exit codes, JSON, errors as one line (never a traceback)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FIXTURES

SEED = FIXTURES / "spec_decode_radix_mamba_no_buffer__tail5_cut.log"
HEALTHY = FIXTURES / "none__healthy_tp1.log"


def logx(*args, stdin: bytes | None = None, env=None):
    return subprocess.run([sys.executable, "-m", "logforensics", *map(str, args)], input=stdin,
                          capture_output=True, timeout=60, env=env)


def test_seed_case_names_the_flag_and_says_memory_was_never_touched():
    res = logx("explain", SEED, "--width", "120")
    out = res.stdout.decode()
    assert res.returncode == 1
    assert "spec_decode_radix_mamba_no_buffer" in out
    assert "GPU memory was never touched" in out
    assert "--mamba-scheduler-strategy extra_buffer" in out
    assert "\x1b[" not in out  # no colour when not a terminal


def test_json_is_one_object_of_the_schema():
    res = logx("explain", "--json", SEED)
    data = json.loads(res.stdout)
    assert res.returncode == 1
    assert data["schema"] == "logx.report/1" and data["verdict"] == "failed"
    assert data["findings"][0]["id"] == "spec_decode_radix_mamba_no_buffer"
    assert {"id", "title", "severity", "confidence", "phase", "run", "evidence", "explanation",
            "fix"} <= set(data["findings"][0])


def test_healthy_log_exits_0_and_several_files_give_an_array():
    assert logx("explain", HEALTHY).returncode == 0
    res = logx("explain", "--json", HEALTHY, SEED)
    data = json.loads(res.stdout)
    assert [d["verdict"] for d in data] == ["ready", "failed"]
    assert res.returncode == 1


def test_stdin_is_read_with_dash():
    res = logx("explain", "--json", "-", stdin=SEED.read_bytes())
    assert json.loads(res.stdout)["findings"][0]["id"] == "spec_decode_radix_mamba_no_buffer"


@pytest.mark.parametrize("make, words", [
    (lambda d: d / "missing.log", "no such file"),
    (lambda d: d, "is a directory"),
])
def test_unreadable_input_is_one_line_and_exit_2(tmp_path, make, words):
    res = logx("explain", make(tmp_path))
    err = res.stderr.decode()
    assert res.returncode == 2
    assert words in err and "Traceback" not in err and err.count("\n") == 1


def test_unreadable_file_among_others_still_reports_the_others(tmp_path):
    res = logx("explain", "--json", HEALTHY, tmp_path / "missing.log")
    assert res.returncode == 2
    assert json.loads(res.stdout)[0]["verdict"] == "ready"


def test_run_out_of_range_is_a_usage_error():
    res = logx("explain", "--run", "5", HEALTHY)
    assert res.returncode == 2 and "does not exist" in res.stderr.decode()


def test_bad_pattern_directory_is_one_line_naming_file_and_problem(tmp_path):
    (tmp_path / "bad.toml").write_text("[[pattern]]\nid = 'x'\n[oops")
    res = logx("explain", "--patterns", tmp_path, HEALTHY)
    err = res.stderr.decode()
    assert res.returncode == 2 and "bad.toml" in err and "invalid TOML" in err
    assert "Traceback" not in err


def test_unknown_option_is_exit_2():
    assert logx("explain", "--no-such-flag", HEALTHY).returncode == 2


def test_user_patterns_from_environment(tmp_path):
    import os

    (tmp_path / "mine.toml").write_text(
        '[[pattern]]\nid = "mine"\ntitle = "Mine"\nseverity = "fatal"\nphase = "serving"\npriority = 99\n'
        'explanation = "e"\nfix = "f"\n  [[pattern.match]]\n  line = "ready to roll"\n')
    env = {**os.environ, "LOGX_PATTERNS": str(tmp_path)}
    res = logx("explain", "--json", HEALTHY, env=env)
    assert json.loads(res.stdout)["findings"][0]["id"] == "mine"


def test_patterns_list_and_lint():
    res = logx("patterns", "list", "--json")
    ids = {p["id"] for p in json.loads(res.stdout)}
    assert "kv_cache_no_room_mem_fraction" in ids and res.returncode == 0
    assert logx("patterns", "lint").returncode == 0


def test_closed_pipe_downstream_is_quiet():
    proc = subprocess.Popen(f"{sys.executable} -m logforensics explain --width 60 {SEED} | head -1",
                            shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err and out
