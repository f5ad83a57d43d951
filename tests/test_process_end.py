"""How a process ended, in the finding's words (logforensics/_process_end.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from logforensics._process_end import death_values, signal_name


def test_a_signal_is_named_as_python_names_it_and_an_unknown_one_by_number():
    assert signal_name(9) == "SIGKILL" and signal_name(15) == "SIGTERM"
    assert signal_name(200) == "signal 200"


def test_sigkill_points_at_the_oom_killer_around_the_recorded_end():
    ended = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
    values = death_values("pid 7", 9, None, 120, ended_at=ended, recorded=True)
    assert values["ended"] == "was killed by signal 9 (SIGKILL)"
    assert "dmesg" in values["death_fix"] and " around " in values["death_fix"]
    assert "logx run" not in values["death_fix"]  # its end was recorded: no relaunch advice


def test_an_unrecorded_end_asks_for_a_relaunch_that_records_it():
    values = death_values("The process", None, None, 3, end="the input stream ended")
    assert values["ended"] == "died" and values["end_note"] == "; the input stream ended"
    assert "logx run --log FILE -- CMD" in values["death_fix"]
    coded = death_values("pid 8", None, 1, 3, note="stderr went elsewhere")
    assert coded["ended"] == "exited with code 1" and "(stderr went elsewhere.)" in coded["death_note"]
