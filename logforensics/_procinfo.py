"""Facts about live processes, read straight from ``/proc`` (Linux only, no psutil).

Why: a log alone cannot tell "the server is still starting" from "the server died with the ssh
session" or "this log belongs to a previous run". The process table can: whether the PID from
the sidecar is still alive, when it started (to rule out PID reuse and stale logs), and which
server processes are running right now.

Everything here is best effort and never raises on the races inherent to ``/proc``: a process
can exit between two reads, and some entries can be unreadable. A process that vanishes
mid-read is reported as not alive; a PID with no ``/proc`` entry gives ``None``.
"""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from ._clock import age, epoch, iso
from ._record import field, record

PROC = "/proc"

# States of a process that has exited but may still have a /proc entry: zombie (not yet
# reaped by its parent) and dead (being torn down). Neither will ever write a log line again.
_DEAD_STATES = frozenset({"Z", "X", "x"})


@record(slots=True, eq=False)
class ProcessInfo:
    """A snapshot of one process.

    ``alive`` is False for zombies and for processes that vanished while being read.
    ``start_time`` is tz-aware UTC (``None`` only if ``/proc/PID/stat`` was unreadable); it is
    derived from the boot time, which the kernel reports in whole seconds, so it can be up to
    one second early. ``cmdline`` is empty for zombies and kernel threads; ``comm`` (the
    kernel's 15-char process name) is still there for them.
    """

    pid: int
    alive: bool
    start_time: datetime | None
    cmdline: list[str] = field(default_factory=list)
    state: str = "?"
    ppid: int | None = None
    comm: str = ""
    uid: int | None = None  # the owner of /proc/PID (the process's real user)

    @property
    def command_line(self) -> str:
        """The argv joined with spaces (what ``find_processes`` matches against)."""
        return " ".join(self.cmdline)


@lru_cache(maxsize=1)
def _clock_ticks() -> int:
    """Units of ``starttime`` in /proc/PID/stat (almost always 100)."""
    try:
        return os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError):
        return 100


@lru_cache(maxsize=1)
def _boot_time() -> float | None:
    """Boot time as a Unix timestamp (``btime`` in /proc/stat); constant while the host runs."""
    try:
        with open(f"{PROC}/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:  # vanished (ENOENT/ESRCH), hidepid/permissions, …
        return None


def _parse_cmdline(raw: bytes | None) -> list[str]:
    if not raw:
        return []
    if raw.endswith(b"\0"):
        raw = raw[:-1]
    return [os.fsdecode(part) for part in raw.split(b"\0")]


def _parse_stat(raw: bytes) -> tuple[str, str, int | None, datetime | None] | None:
    """Return (comm, state, ppid, start_time) from a /proc/PID/stat line.

    ``comm`` is in parentheses and may itself contain spaces and ')', so the fixed fields are
    those after the *last* ')'. Field numbers below are the 1-based ones of proc(5).
    """
    try:
        text = raw.decode("utf-8", "replace")
        lpar, rpar = text.index("("), text.rindex(")")
        comm = text[lpar + 1 : rpar]
        rest = text[rpar + 1 :].split()  # rest[0] is field 3
        state = rest[0]
        ppid = int(rest[1])  # field 4
        start_ticks = int(rest[19])  # field 22: starttime, clock ticks since boot
    except (ValueError, IndexError):
        return None
    boot = _boot_time()
    start = None
    if boot is not None:
        start = datetime.fromtimestamp(boot + start_ticks / _clock_ticks(), tz=UTC)
    return comm, state, ppid, start


def process_info(pid: int) -> ProcessInfo | None:
    """Snapshot of ``pid``, or None when no such process exists. Never raises.

    Why: lets the diagnosis say for sure whether the server recorded in a sidecar is still
    running, a zombie nobody reaped, or gone.
    """
    if not isinstance(pid, int) or pid <= 0:
        return None
    base = f"{PROC}/{pid}"
    raw_stat = _read_bytes(f"{base}/stat")
    if raw_stat is None:
        if os.path.exists(base):
            # Entry exists but is unreadable: the process exists, we just know little about it.
            return ProcessInfo(pid=pid, alive=True, start_time=None)
        return None
    parsed = _parse_stat(raw_stat)
    if parsed is None:
        return ProcessInfo(pid=pid, alive=False, start_time=None)
    comm, state, ppid, start = parsed
    raw_cmd = _read_bytes(f"{base}/cmdline")
    alive = state not in _DEAD_STATES
    try:
        uid: int | None = os.stat(base).st_uid
    except OSError:
        uid, alive = None, False  # exited between the reads
    if raw_cmd is None and not os.path.exists(base):
        alive = False  # exited between the two reads
    return ProcessInfo(
        pid=pid,
        alive=alive,
        start_time=start,
        cmdline=_parse_cmdline(raw_cmd),
        state=state,
        ppid=ppid,
        comm=comm,
        uid=uid,
    )


def _pids() -> list[int]:
    try:
        names = os.listdir(PROC)
    except OSError:
        return []
    return sorted(int(n) for n in names if n.isdigit())


def find_processes(pattern: str) -> list[ProcessInfo]:
    """Live processes whose space-joined cmdline contains ``pattern`` (plain substring), sorted
    by PID, excluding the calling process.

    Why: answers "is a server running right now?" (e.g. ``"sglang.launch_server"`` or
    ``"sglang serve"``) even when there is no sidecar, e.g. a server started by hand with nohup.
    """
    me = os.getpid()
    found: list[ProcessInfo] = []
    for pid in _pids():
        if pid == me:
            continue
        # Cheap filter on cmdline first; only matching processes get a full snapshot.
        if pattern not in " ".join(_parse_cmdline(_read_bytes(f"{PROC}/{pid}/cmdline"))):
            continue
        info = process_info(pid)
        if info is not None and info.alive and pattern in info.command_line:
            found.append(info)
    return found


def server_processes(name: str, command: re.Pattern[str], owners: set[int]) -> list[ProcessInfo]:
    """The live processes whose command line holds ``name`` and matches ``command``, run by a
    user in ``owners``: the root of each process tree only (a server's workers are its children)."""
    found = [p for p in find_processes(name) if command.search(p.command_line) and p.uid in owners]
    pids = {p.pid for p in found}
    return [p for p in found if p.ppid not in pids]


def std_streams(pid: int) -> dict[int, tuple[str, tuple[int, int]]]:
    """Where a process's stdout and stderr go: fd -> (path as the kernel shows it, (dev, inode))."""
    out = {}
    for fd in (1, 2):
        link = f"{PROC}/{pid}/fd/{fd}"
        try:
            target = os.readlink(link)
            st = os.stat(link)
        except OSError:
            continue
        out[fd] = (target, (st.st_dev, st.st_ino))
    return out


def holds_file(pid: int, log_id: tuple[int, int]) -> bool | None:
    """Whether ``pid`` has the file ``log_id`` open on any descriptor (None: cannot tell)."""
    base = f"{PROC}/{pid}/fd"
    try:
        names = os.listdir(base)
    except OSError:
        return None
    for name in names:
        try:
            st = os.stat(f"{base}/{name}")
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == log_id:
            return True
    return False


def processes_writing(log_id: tuple[int, int]) -> set[int]:
    """PIDs whose stdout or stderr is the file ``log_id`` (dev, inode). Unreadable ones are skipped."""
    me = os.getpid()
    found: set[int] = set()
    try:
        names = os.listdir(PROC)
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        for fd in (1, 2):
            try:
                st = os.stat(f"{PROC}/{name}/fd/{fd}")
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == log_id:
                found.add(int(name))
                break
    return found


def related(a: int, b: int) -> bool:
    """``a`` and ``b`` are the same process or one is an ancestor of the other (live processes)."""
    return a == b or b in ancestors(a) or a in ancestors(b)


def ancestors(pid: int) -> list[int]:
    out = []
    for _ in range(64):
        info = process_info(pid)
        if info is None or not info.ppid or info.ppid <= 1:
            break
        pid = info.ppid
        out.append(pid)
    return out


def live_servers(servers: list[tuple[str, re.Pattern[str]]], owners: set[int],
                 limit: int = 5) -> list[dict[str, Any]]:
    """The servers alive now (the root process of each tree; ``servers``: each one's process
    name and command line, as its dialect gives them), with where they write: only those of the
    users in ``owners`` (this user, the log's owner), the ones that can be a log's writer.
    Another server's processes and other users' servers on a shared host are none of its
    business."""
    try:
        roots = [p for name, command in servers for p in server_processes(name, command, owners)]
    except OSError:
        return []
    out = []
    for p in roots[:limit]:
        start = epoch(p.start_time)
        d: dict[str, Any] = {"pid": p.pid, "started_at": iso(start), "age_s": age(time.time(), start),
                             "command": p.command_line[:200]}
        targets = sorted({t for t, _ in std_streams(p.pid).values()})
        if targets:
            d["writes_to"] = targets
        out.append(d)
    return out
