"""The ``logx`` command line: exit codes, JSON, errors as one line (never a traceback).

``logx(...)`` runs the console entry in this process (conftest); the tests where the process
is the point (a closed pipe, FIFOs and /dev/fd paths, ``python -m``) spawn one."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, logx

SEED = FIXTURES / "spec_decode_radix_mamba_no_buffer__tail5_cut.log"
HEALTHY = FIXTURES / "none__healthy_tp1.log"


def test_python_m_logforensics_is_the_entry_point_as_a_process():
    res = subprocess.run([sys.executable, "-m", "logforensics", "explain", "--json", SEED], capture_output=True,
                         timeout=60)
    in_process = json.loads(logx("explain", "--json", SEED).stdout)
    assert res.returncode == 1 and json.loads(res.stdout)["findings"] == in_process["findings"]
    assert res.stderr == b""


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


# — one answer whatever the input path ————————————————————————————————————————————————

KV = FIXTURES / "kv_cache_no_room_mem_fraction__weights_leave_no_kv_tp2.log"


def _explain_through(path_kind: str, data: bytes, tmp_path) -> subprocess.CompletedProcess:
    """``logx explain --json`` reading ``data`` through a FIFO, ``<(…)`` (a /dev/fd pipe),
    ``/dev/stdin`` on a pipe, ``-`` on a pipe, or a regular file."""
    cmd = [sys.executable, "-m", "logforensics", "explain", "--json"]
    if path_kind == "file":
        log = tmp_path / "server.log"
        log.write_bytes(data)
        return subprocess.run([*cmd, str(log)], capture_output=True, timeout=60)
    if path_kind == "fifo":
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        writer = subprocess.Popen(["sh", "-c", f'cat > "{fifo}"'], stdin=subprocess.PIPE)
        proc = subprocess.Popen([*cmd, str(fifo)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        writer.communicate(data, timeout=60)
        out, err = proc.communicate(timeout=60)
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if path_kind == "procsub":
        r, w = os.pipe()
        proc = subprocess.Popen([*cmd, f"/dev/fd/{r}"], pass_fds=(r,), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        os.close(r)
        with os.fdopen(w, "wb") as fh:
            fh.write(data)
        out, err = proc.communicate(timeout=60)
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    arg = "/dev/stdin" if path_kind == "devstdin" else "-"
    proc = subprocess.Popen([*cmd, arg], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(data, timeout=60)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


KINDS = ["file", "fifo", "procsub", "devstdin", "dash"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_path_gives_the_verdict_of_what_was_read(kind, tmp_path):
    """A FIFO, ``<(…)`` and /dev/stdin are streams: never "EMPTY: 0 bytes" from their stat."""
    res = _explain_through(kind, KV.read_bytes(), tmp_path)
    data = json.loads(res.stdout)
    assert res.returncode == 1, res.stderr
    assert data["verdict"] == "failed" and data["findings"][0]["id"] == "kv_cache_no_room_mem_fraction"


@pytest.mark.parametrize("kind", KINDS)
def test_empty_input_is_empty_through_every_path_with_fitting_advice(kind, tmp_path):
    res = _explain_through(kind, b"", tmp_path)
    data = json.loads(res.stdout)
    assert res.returncode == 3, res.stderr
    assert data["verdict"] == "empty" and data["findings"][0]["id"] == "log_empty"
    fix = data["findings"][0]["fix"]
    if kind == "file":
        assert "logx run" in fix
    else:  # a pipe carries stdout only: the advice is about the pipe, not about a log file
        assert "2>&1" in fix


def test_empty_log_of_a_logx_run_launch_does_not_advise_logx_run(tmp_path):
    from datetime import UTC, datetime

    log = tmp_path / "server.log"
    log.write_bytes(b"")
    sidecar = {"schema": "logx.sidecar/1", "pid": 999_999_999, "started_at": datetime.now(UTC).isoformat(),
               "command": ["python", "-m", "sglang.launch_server", "--model-path", "m"], "log": str(log),
               "log_offset": 0, "ended_at": datetime.now(UTC).isoformat(), "exit_code": None, "signal": 9}
    (tmp_path / "server.log.logx.json").write_text(json.dumps(sidecar))
    res = logx("explain", "--json", log)
    finding = json.loads(res.stdout)["findings"][0]
    assert res.returncode == 3 and finding["id"] == "log_empty"
    assert "Relaunch with `logx run`" not in finding["fix"] and "logx run" in finding["explanation"]
    assert "python -m sglang.launch_server --model-path m" in finding["fix"]


def test_json_keeps_an_entry_for_a_missing_file(tmp_path):
    missing = tmp_path / "missing.log"
    res = logx("explain", "--json", HEALTHY, missing)
    data = json.loads(res.stdout)
    assert res.returncode == 2
    assert [d["verdict"] for d in data] == ["ready", "unreadable"]
    assert data[1]["file"] == str(missing) and "no such file" in data[1]["error"] and data[1]["exit_code"] == 2
    alone = logx("explain", "--json", missing)
    assert json.loads(alone.stdout)["verdict"] == "unreadable" and alone.returncode == 2


def test_pid_of_no_process_says_so_instead_of_stale():
    res = logx("status", "--json", "--pid", "999999999", HEALTHY)
    status = json.loads(res.stdout)["status"]
    assert status["state"] != "STALE" and status["verified"] is False
    assert "no process with pid 999999999 exists" in status["reasons"][0]


def test_version_flag_and_command():
    assert logx("--version").stdout.decode().startswith("logx ")
    assert logx("--version").stdout == logx("version").stdout


def test_width_below_20_is_a_usage_error_not_an_empty_report():
    res = logx("explain", "--width", "0", HEALTHY)
    assert res.returncode == 2 and b"--width" in res.stderr


def test_patterns_list_through_a_pipe_keeps_every_id_whole():
    out = logx("patterns", "list").stdout.decode()
    from logforensics._catalog import load_catalog

    for p in load_catalog().patterns:
        assert f" {p.id} " in out, p.id


def test_help_texts_reflow_instead_of_breaking_mid_sentence():
    out = logx("--help").stdout.decode()
    lines = [ln.strip("│ ").rstrip() for ln in out.splitlines()]
    # the status command's help: one sentence, wrapped by the width only
    status = next(i for i, ln in enumerate(lines) if ln.startswith("status"))
    text = " ".join(lines[status:status + 3])
    assert "DEAD, with the facts (exit code" in text, text


@pytest.mark.parametrize("shell,env", [
    ("bash", {"COMP_WORDS": "logx corpus ", "COMP_CWORD": "2"}),
    ("zsh", {"_TYPER_COMPLETE_ARGS": "logx corpus "}),
    ("fish", {"_TYPER_COMPLETE_ARGS": "logx corpus ", "_TYPER_COMPLETE_FISH_ACTION": "get-args"}),
])
def test_shell_completion_offers_subcommands(shell, env):
    res = logx(env={**os.environ, "_LOGX_COMPLETE": f"complete_{shell}", **env})
    out = res.stdout.decode()
    assert "add" in out and "check" in out, out
    assert "--install-completion" in logx("--help").stdout.decode()


def _modules_after(*argvs: list[str]) -> tuple[bytes, list[str]]:
    """What ``logx ARGV`` prints, each in turn in one fresh process, and the modules of typer,
    rich, logx's text renderers and its deployment merge that were imported by then."""
    probe = (
        "import sys\n"
        "from logforensics._cli import main\n"
        f"for argv in {[list(a) for a in argvs]!r}:\n"
        "    sys.argv = ['logx', *argv]\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted({m.split('.')[0] if not m.startswith('logforensics') else m for m in sys.modules\n"
        "              if m.startswith(('logforensics._render', 'logforensics._incident', 'rich', 'typer'))}),\n"
        "      file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60)
    return res.stdout, ast.literal_eval(res.stderr.decode().strip().splitlines()[-1])


def test_json_commands_import_neither_typer_nor_a_text_renderer():
    """Start-up: ``explain --json`` and ``status --json`` are read without typer, and print no
    text: neither typer nor ``render/`` nor rich is imported (nor, for one file, the merge of a
    deployment's node logs)."""
    out, modules = _modules_after(["explain", "--json", str(SEED)], ["status", "--json", "--since", "1h", str(HEALTHY)])
    assert b'"schema": "logx.report/1"' in out and b'"schema": "logx.status/1"' in out
    assert modules == []


def test_text_commands_import_rich_but_not_typer():
    out, modules = _modules_after(["explain", "--width", "80", str(SEED)], ["status", str(HEALTHY)])
    assert out.strip()
    assert "typer" not in modules and "rich" in modules
    # one file's report: neither the deployment merge nor its view
    assert "logforensics._incident" not in modules and "logforensics._render.incident" not in modules


def test_a_watch_that_is_not_live_imports_neither_typer_nor_rich():
    """``watch --json`` and a plain watch (not a TTY) are read without typer and print without
    rich: only a live view on a terminal loads it (``render/live.py``)."""
    out, modules = _modules_after(["watch", "--until", "ready", "--json", str(HEALTHY)],
                                  ["watch", "--until", "ready", "--plain", str(HEALTHY)])
    assert b'"verdict": "ready"' in out and b"end READY" in out
    assert "typer" not in modules and "rich" not in modules and "logforensics._render.live" not in modules


def test_help_and_usage_errors_are_typers():
    """What the direct reading does not read goes to typer, which says what is wrong."""
    bad = logx("explain", "--width", "5", HEALTHY)
    assert bad.returncode == 2 and b"--width" in bad.stderr
    assert logx("explain", "--no-such-flag", HEALTHY).returncode == 2
    assert logx("status").returncode == 2
    assert b"--json" in logx("explain", "--help").stdout
    since = logx("status", "--since", "soonish", HEALTHY)
    assert since.returncode == 2 and b"--since" in since.stderr
