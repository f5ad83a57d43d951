"""A user's regression corpus: ``corpus add`` stores a trimmed, redacted copy that keeps the
answer; ``corpus check`` scores it (with scoring.py) and ``--update`` re-blesses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import CORPUS, FIXTURES, logx, pattern_dir

from logforensics._analysis import Options, explain
from logforensics._catalog import load_catalog
from logforensics._scoring import answer_of, load_labels
from logforensics._usercorpus import add, check, smallest_window

CATALOG = load_catalog()
FIXTURE_LOGS = sorted(FIXTURES.glob("*.log"))


def expected(path) -> str:
    return path.name.split("__")[0]


def test_every_fixture_round_trips_through_add_and_check(tmp_path):
    corpus = tmp_path / "corpus"
    for path in FIXTURE_LOGS:
        added = add(path, expected(path), corpus, catalog=CATALOG)
        assert added.agrees, path.name
        assert added.kept <= added.lines
        stored = explain(added.path.read_bytes(), options=Options(status=False), catalog=CATALOG)
        # the full log's answer is what add() found on it (test_explain_fixtures pins it per fixture)
        assert answer_of(stored) == (added.answer, added.problem)
    result = check(corpus, catalog=CATALOG)
    assert result.score.total == len(FIXTURE_LOGS)
    assert result.regressions == [] and result.exit_code == 0
    assert [label.id for label in load_labels(corpus)] == [f"{i:03d}" for i in range(1, len(FIXTURE_LOGS) + 1)]


def test_labels_rows_have_the_field_corpus_schema(tmp_path):
    add(FIXTURES / "cuda_graph_capture_oom__target_decode_0_5_23.log", "cuda_graph_capture_oom", tmp_path,
        catalog=CATALOG)
    (row,) = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    if (CORPUS / "labels.jsonl").is_file():
        field_keys = set(json.loads((CORPUS / "labels.jsonl").read_text().splitlines()[0]))
    else:
        field_keys = {"id", "server", "version", "root_cause", "summary", "fix", "key_line", "truncated",
                      "outcome", "confidence"}
    assert field_keys <= set(row)
    assert row["root_cause"] == "cuda_graph_capture_oom" and row["outcome"] == "crash_at_startup"
    assert row["key_line"] in (tmp_path / "001.log").read_text().splitlines()


def test_the_window_is_trimmed_to_lines_that_all_matter(tmp_path):
    path = FIXTURES / "kv_cache_no_room_mem_fraction__weights_leave_no_kv_tp2.log"
    added = add(path, "kv_cache_no_room_mem_fraction", tmp_path, catalog=CATALOG)
    assert added.trimmed and added.kept < added.lines
    lines = [(i, t) for i, t in enumerate(added.path.read_text().splitlines(), 1)]
    target = answer_of(explain(path, options=Options(status=False), catalog=CATALOG))
    assert smallest_window(lines, target, CATALOG) == lines  # nothing more can go


def test_the_stored_copy_is_redacted(tmp_path):
    log = tmp_path / "s.log"
    log.write_text("[2026-01-01 10:00:00] launched by alice@gpu-node-01.corp.internal\n"
                   'Traceback (most recent call last):\n  File "/home/alice/x.py", line 1, in <module>\n'
                   "RuntimeError: cannot reach 10.11.12.13\n")
    added = add(log, "unclassified_exception", tmp_path / "c", catalog=CATALOG)
    text = added.path.read_text() + (tmp_path / "c" / "labels.jsonl").read_text()
    assert "alice" not in text and "10.11.12.13" not in text and "<ip-1>" in text


def test_a_regression_fails_check_and_update_re_blesses_it(tmp_path):
    corpus = tmp_path / "corpus"
    path = FIXTURES / "port_in_use__uvicorn_bind_30000.log"
    add(path, "port_in_use", corpus, catalog=CATALOG)
    assert logx("corpus", "check", corpus).returncode == 0
    # a user pattern of the same id that no longer matches: the corpus catches the change
    broken = pattern_dir(tmp_path, '[[pattern]]\nid = "port_in_use"\ntitle = "t"\nseverity = "fatal"\n'
                                   'phase = "serving"\nexplanation = "e"\nfix = "f"\n'
                                   "  [[pattern.match]]\n  line = 'never printed by anyone'\n")
    res = logx("corpus", "check", corpus, "--patterns", broken)
    out = res.stdout.decode()
    assert res.returncode == 1
    assert "misses (1):" in out and "001: expected port_in_use, got" in out
    assert "port_in_use" in out and "precision" in out
    res = logx("corpus", "check", corpus, "--patterns", broken, "--update")
    assert res.returncode == 0
    assert "- 001: port_in_use" in res.stdout.decode() and "+ 001: " in res.stdout.decode()
    assert logx("corpus", "check", corpus, "--patterns", broken).returncode == 0
    assert load_labels(corpus)[0].root_cause != "port_in_use"


def test_add_warns_when_logx_disagrees_and_refuses_malformed_ids(tmp_path):
    path = FIXTURES / "port_in_use__uvicorn_bind_30000.log"
    res = logx("corpus", "add", path, "--expect", "cuda_graph_capture_oom", "--dir", tmp_path)
    assert res.returncode == 0 and b"answers port_in_use" in res.stderr
    assert logx("corpus", "check", tmp_path).returncode == 1
    res = logx("corpus", "add", path, "--expect", "No Such Cause", "--dir", tmp_path / "x")
    assert res.returncode == 2 and b"not a root-cause id" in res.stderr and b"Traceback" not in res.stderr


@pytest.mark.skipif(not (CORPUS / "labels.jsonl").is_file(), reason=f"field corpus not found at {CORPUS}")
def test_check_scores_the_field_corpus_as_the_accuracy_script_does():
    res = logx("corpus", "check", CORPUS, "--json", "--jobs", "2")
    bench = subprocess.run([sys.executable, str(FIXTURES.parent / "bench" / "accuracy.py"), str(CORPUS), "--json",
                            "--jobs", "2"], capture_output=True, timeout=300)
    mine, theirs = json.loads(res.stdout), json.loads(bench.stdout)
    assert mine["top1"] == theirs["top1"] and mine["causes"] == theirs["causes"]
    assert res.returncode == (1 if mine["correct"] < mine["logs"] else 0)
