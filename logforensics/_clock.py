"""Times as the stale-log detector reads and shows them: log stamps (local naive times, no
zone), ``/proc`` start times, ``--since`` as a person types it, and durations in words; and the
clock ``logx watch`` waits by (``Clock``: one object for its time and its waits, so a test can
script them instead of sleeping)."""

from __future__ import annotations

import re
import select
import time
from datetime import datetime

from ._lazyre import lazy
from ._lines import parse_timestamp


class Clock:
    """The real clock of the watch loop: what time it is, and how it waits. A follower sleeps
    between polls of a file and waits on a pipe through it; the watcher measures silence and
    timeouts with it. Tests pass a scripted one whose waits advance its time and write the log."""

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def wait_readable(self, fd: int, timeout: float) -> bool:
        """Whether ``fd`` has something to read (or its end) within ``timeout`` seconds."""
        ready, _, _ = select.select([fd], [], [], timeout)
        return bool(ready)


SYSTEM_CLOCK = Clock()
TOLERANCE = 2.0  # seconds: whole-second log timestamps, /proc start times rounded to the second

_SINCE_UNITS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "mins": 60,
                "minute": 60, "minutes": 60, "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600,
                "hours": 3600, "d": 86400, "day": 86400, "days": 86400}
_SINCE_PART = lazy(r"(\d+(?:\.\d+)?)\s*([a-z]+)")


def parse_since(text: str, now: float | None = None) -> float:
    """``--since``: an ISO time (naive = local time), ``HH:MM[:SS]`` (today, local), a duration
    ago (``30s``, ``10m``, ``2h``, ``1d``, ``1h30m``) or ``@EPOCH``. Returns epoch seconds;
    raises ``ValueError`` with a one-line message."""
    now = time.time() if now is None else now
    t = text.strip()
    if not t:
        raise ValueError("empty time")
    if t.startswith("@"):
        try:
            return float(t[1:])
        except ValueError:
            raise ValueError(f"bad epoch time {text!r} (use @SECONDS)") from None
    low = t.lower().removesuffix(" ago").strip()
    if low and low[0].isdigit() and _SINCE_PART.sub("", low).strip() == "" and _SINCE_PART.search(low):
        total = 0.0
        for number, unit in _SINCE_PART.findall(low):
            if unit not in _SINCE_UNITS:
                raise ValueError(f"bad duration {text!r} (use e.g. 30s, 10m, 2h, 1d)")
            total += float(number) * _SINCE_UNITS[unit]
        return now - total
    if re.fullmatch(r"\d{1,2}:\d\d(:\d\d(\.\d+)?)?", t):
        today = datetime.fromtimestamp(now).date().isoformat()
        value = datetime.fromisoformat(f"{today} {t}").timestamp()
        return value - 86400 if value > now + TOLERANCE else value
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"cannot read time {text!r}: use an ISO time (2026-03-23 14:01:38), "
                         "HH:MM, a duration ago (30s, 10m, 2h) or @EPOCH") from None
    return dt.timestamp()  # naive: local time


def epoch(dt: datetime | None) -> float | None:
    return dt.timestamp() if dt is not None else None


def log_epoch(ts: str | None) -> float | None:
    """A log timestamp (local naive time) as epoch seconds, read in the local timezone."""
    dt = parse_timestamp(ts)
    if dt is None:
        return None
    try:
        return dt.timestamp()
    except (OverflowError, OSError, ValueError):
        return None


def iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch).astimezone().isoformat(timespec="seconds")


def age(now: float, epoch: float | None) -> float | None:
    return None if epoch is None else round(now - epoch, 1)


def duration(seconds: float) -> str:
    """``95 s``, ``12 min``, ``3.5 h``, ``2.0 days``."""
    s = abs(seconds)
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"
