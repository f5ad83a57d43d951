"""Times as the stale-log detector reads them (logforensics/_clock.py): ``--since`` in every form."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

import pytest

from logforensics._clock import duration, parse_since


@pytest.mark.parametrize(("text", "offset"), [("30s", 30), ("10m", 600), ("2h", 7200), ("1d", 86400),
                                              ("1h30m", 5400), ("10 min ago", 600)])
def test_parse_since_durations(text, offset):
    now = 1_800_000_000.0
    assert parse_since(text, now=now) == pytest.approx(now - offset)


def test_parse_since_absolute():
    assert parse_since("@1700000000") == 1_700_000_000
    assert parse_since("2026-03-23T14:01:38+00:00") == datetime(2026, 3, 23, 14, 1, 38, tzinfo=UTC).timestamp()
    assert parse_since("2026-03-23 14:01:38") == datetime(2026, 3, 23, 14, 1, 38).timestamp()  # local
    now = time.time()
    hhmm = datetime.fromtimestamp(now - 60).strftime("%H:%M")
    assert now - 200 < parse_since(hhmm, now=now) <= now
    for bad in ("", "soon", "10 fortnights", "@x"):
        with pytest.raises(ValueError):
            parse_since(bad)


def test_durations_read_in_the_unit_a_person_would_use():
    assert [duration(s) for s in (95, 720, 12600, 172800)] == ["95 s", "12 min", "3.5 h", "2.0 days"]


def test_the_watch_clock_waits_on_a_pipe_until_it_has_something_to_read():
    from logforensics._clock import SYSTEM_CLOCK

    read, write = os.pipe()
    try:
        assert SYSTEM_CLOCK.wait_readable(read, 0.01) is False
        os.write(write, b"x\n")
        assert SYSTEM_CLOCK.wait_readable(read, 0.01) is True
        assert SYSTEM_CLOCK.monotonic() <= SYSTEM_CLOCK.monotonic()
    finally:
        os.close(read)
        os.close(write)
