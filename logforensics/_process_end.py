"""How a process ended, in the words of the ``process_died_without_traceback`` finding.

One home for it: the stale-log detector (a sidecar's or a printed PID's end), ``logx watch``
(its own child, a followed PID) and the sidecar's own sentence all name a signal the same way.
"""

from __future__ import annotations

import signal
from datetime import datetime
from typing import Any

from ._clock import epoch, iso


def signal_name(sig: int | None) -> str:
    """``SIGKILL`` for 9 (``signal N`` for one Python does not name)."""
    try:
        return signal.Signals(sig or 0).name
    except ValueError:
        return f"signal {sig}"


def death_values(who: str, sig: int | None, exit_code: int | None, last_line: int, end: str | None = None,
                 note: str | None = None, ended_at: datetime | None = None,
                 recorded: bool = False) -> dict[str, Any]:
    """The placeholders of ``process_died_without_traceback`` (patterns/builtin/): how the
    process ended, what that says, and what to check. ``recorded``: its end was recorded (the
    sidecar of ``logx run``, logx watch's own process), so no relaunch advice."""
    name = signal_name(sig)
    if sig is not None:
        ended = f"was killed by signal {sig} ({name})"
        why = "A process killed by a signal cannot print why: the reason is outside the log."
    elif exit_code is not None:
        ended = f"exited with code {exit_code}"
        why = ("It exited without a traceback here: its error went to another stream or file (a logging "
               "config, a wrapper script), or it exited on purpose.")
    else:
        ended = "died"
        why = ("It was killed (SIGKILL, the kernel OOM killer, a job scheduler's limit) or its error went "
               "to another stream or file.")
    if note:
        why += f" ({note}.)"
    if sig == signal.SIGKILL:
        around = f" around {iso(epoch(ended_at))}" if ended_at else ""
        fix = ("Signal 9 with no message is usually the kernel OOM killer (host RAM or a container memory limit): "
               f"check `dmesg -T | grep -i oom` (or `journalctl -k`){around}"
               "; give it more host memory or lower what it loads into RAM.")
    elif sig is not None:
        fix = f"Something sent it {name}: check who (a job scheduler, a timeout, a user)."
    else:
        fix = "Check `dmesg -T | grep -i -e oom -e killed` for the OOM killer, and whether stderr went somewhere else."
    if not recorded:
        fix += (" Relaunch with `logx run --log FILE -- CMD` so stdout and stderr both land in the log and the exit "
                "code or signal is recorded.")
    return {"who": who, "ended": ended, "last_line": last_line, "end_note": f"; {end}" if end else "",
            "death_note": why, "death_fix": fix}
