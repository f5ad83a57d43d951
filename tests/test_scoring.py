"""Scoring a labelled directory: top-1, key line cited, precision/recall, false alarms, misses."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES

from logforensics._scoring import LabelError, format_score, key_line_numbers, load_labels, score_directory

OOM = "decode_out_of_memory__page_size_tail"
HEALTHY = "none__healthy_tp1"
PARSE = "argparse_error__renamed_flag"


def labelled(tmp_path, rows):
    """A corpus-format directory: the named fixtures as ``<id>.log`` and ``labels.jsonl``."""
    for row in rows:
        shutil.copy(FIXTURES / f"{row.pop('fixture')}.log", tmp_path / f"{row['id']}.log")
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def key_line_of(fixture: str, needle: str) -> str:
    return next(line for line in (FIXTURES / f"{fixture}.log").read_text().splitlines() if needle in line)


def test_scores_right_wrong_and_healthy_answers(tmp_path):
    key = key_line_of(OOM, "RuntimeError: Decode out of memory")
    d = labelled(tmp_path, [
        {"id": "a", "fixture": OOM, "root_cause": "decode_out_of_memory", "key_line": key},
        {"id": "b", "fixture": OOM, "root_cause": "prefill_out_of_memory", "key_line": key},
        {"id": "c", "fixture": HEALTHY, "root_cause": "none", "key_line": ""},
        {"id": "d", "fixture": OOM, "root_cause": "none"},  # a healthy label on a crash: false alarm
    ])
    score = score_directory(d)
    assert (score.total, score.correct) == (4, 2)
    assert score.top1 == 0.5
    assert [o.label.id for o in score.misses] == ["b", "d"]
    assert [o.label.id for o in score.false_alarms] == ["d"]
    assert score.misses[0].answer == "decode_out_of_memory"
    assert score.misses[0].found[0]["id"] == "decode_out_of_memory"
    # the key line is rated on the two logs labelled with a cause, and cited in both
    assert [o.key_cited for o in score.outcomes] == [True, True, None, None]
    assert score.key_cited == 1.0
    causes = {c.id: c for c in score.causes()}
    assert (causes["decode_out_of_memory"].answered, causes["decode_out_of_memory"].correct) == (3, 1)
    assert causes["decode_out_of_memory"].precision == pytest.approx(1 / 3)
    assert causes["prefill_out_of_memory"].recall == 0.0
    assert causes["prefill_out_of_memory"].precision is None  # never answered
    assert causes["none"].recall == 0.5


def test_key_line_not_in_the_primary_evidence_is_not_cited(tmp_path):
    other = key_line_of(OOM, "batch.prepare_for_decode()")  # a frame the finding does not cite
    d = labelled(tmp_path, [{"id": "a", "fixture": OOM, "root_cause": "decode_out_of_memory",
                             "key_line": other}])
    outcome = score_directory(d).outcomes[0]
    assert outcome.correct and outcome.key_cited is False


def test_json_and_text_name_every_miss(tmp_path):
    d = labelled(tmp_path, [
        {"id": "a", "fixture": PARSE, "root_cause": "argparse_error", "key_line": ""},
        {"id": "b", "fixture": HEALTHY, "root_cause": "watchdog_timeout", "key_line": ""},
    ])
    score = score_directory(d, jobs=2)
    data = score.to_dict()
    assert data["schema"] == "logx.accuracy/1"
    assert (data["logs"], data["correct"]) == (2, 1)
    assert [o["id"] for o in data["outcomes"] if not o["correct"]] == ["b"]
    text = format_score(score)
    assert "top-1            1/2 = 0.500" in text
    assert "b: expected watchdog_timeout, got none" in text


def test_key_line_numbers_ignore_carriage_returns(tmp_path):
    log = tmp_path / "x.log"
    log.write_bytes(b"one\r\ntwo\nthree\r\ntwo\r\n")
    assert key_line_numbers(log, "two") == {2, 4}


@pytest.mark.parametrize("labels, problem", [
    (None, "cannot read"),
    ('{"id": "a", "root_cause": "x"\n', "invalid JSON"),
    ('{"id": "a"}\n', "needs string fields"),
    ('{"id": "missing", "root_cause": "x"}\n', "no log missing.log"),
])
def test_bad_label_files_are_one_line_errors(tmp_path, labels, problem):
    if labels is not None:
        (tmp_path / "labels.jsonl").write_text(labels)
    with pytest.raises(LabelError, match=problem) as info:
        load_labels(tmp_path)
    assert "\n" not in str(info.value)


def test_a_run_that_lives_is_answered_by_its_first_warning(tmp_path):
    """A degraded run (retractions, no crash) has no fatal/error finding: its label is its top
    warning, and labelled healthy it is no false alarm."""
    fixture = "decode_retraction_kv_pressure__retract_warnings"
    d = labelled(tmp_path, [
        {"id": "a", "fixture": fixture, "root_cause": "decode_retraction_kv_pressure"},
        {"id": "b", "fixture": fixture, "root_cause": "none"},
    ])
    score = score_directory(d)
    assert [o.answer for o in score.outcomes] == ["decode_retraction_kv_pressure"] * 2
    assert [o.correct for o in score.outcomes] == [True, True]
    assert score.false_alarms == []
    causes = {c.id: c for c in score.causes()}
    assert (causes["none"].answered, causes["decode_retraction_kv_pressure"].answered) == (1, 1)
