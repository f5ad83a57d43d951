"""``logx run --log FILE [--append] -- CMD ARGS…``: start a server the robust way, record facts.

Why: ``nohup python -m sglang.launch_server … > log 2>&1 &`` over ssh goes wrong in quiet ways:
the redirect is lost and the log stays empty, the server dies with the ssh session, or one
reads the previous run's log. ``launch`` opens the log itself (before anything starts), runs
the command under a small detached supervisor, and writes a sidecar JSON next to the log so
the diagnosis knows which process wrote the log, since when, and how it ended.

Sidecar ``FILE.logx.json`` (e.g. ``server.log.logx.json``), schema ``logx.sidecar/1``::

    {
      "schema": "logx.sidecar/1",
      "pid": 1234,                 # the server process (null if it could not be started)
      "supervisor_pid": 1233,      # the logx supervisor that waits for it
      "started_at": "2025-01-31T12:00:00.123456+00:00",   # ISO-8601 UTC
      "command": ["python", "-m", "sglang.launch_server", "..."],
      "cwd": "/home/me",           # working directory of the server
      "host": "gpu-node-1",
      "log": "/abs/path/server.log",
      "log_offset": 0,             # log size in bytes when this run started (0 unless --append)
      "ended_at": null,            # ISO-8601 UTC once the server exited
      "exit_code": null,           # int when it exited normally
      "signal": null,              # int when killed by a signal (e.g. 9 for SIGKILL)
      "error": "..."               # only present when the command could not be started
    }

The supervisor writes the sidecar once the server is started, then waits for it and rewrites
the sidecar atomically (temp file + ``os.replace``) with ``ended_at`` and ``exit_code`` or
``signal``. ``ended_at: null`` with a dead ``supervisor_pid`` means the supervisor itself was
killed (e.g. SIGKILL, reboot), so the outcome is unknown. A command that cannot be started
gets ``exit_code`` 127 (not found) or 126 (not executable) and an ``error`` string.

Supervisor: this file run as a script (``python -I launcher.py --supervise``, spec on stdin).
It is started in a new session with stdin from /dev/null and stdout/stderr on the log, no
other inherited descriptor except a status pipe, then forks once more (the classic daemon
double fork: the grandchild is not a session leader, so it can never acquire a controlling
terminal, and the launcher only has to reap the short-lived intermediate). It ignores
SIGHUP, forwards SIGTERM/SIGINT to the server, starts the server in its own process group
with stdout and stderr on the log, reports the server PID back through the pipe, moves to
``/`` and waits. This module uses only the standard library so that it runs as a bare script.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# Run as the supervisor script (``python -I launcher.py``) there is no package: only
# ``_supervise`` runs there, and it raises no LaunchError and reads no sidecar; its records
# are the standard library's dataclasses.
try:
    from ._record import field, record
except ImportError:
    from dataclasses import dataclass as record  # type: ignore[no-redef]
    from dataclasses import field  # type: ignore[assignment]
with contextlib.suppress(ImportError):
    from ._errors import LaunchError
    from ._process_end import signal_name

SCHEMA = "logx.sidecar/1"
SIDECAR_SUFFIX = ".logx.json"
REPORT_TIMEOUT = 10.0



@record(slots=True, eq=False)
class LaunchResult:
    """What ``launch`` started: the server PID and where its log and sidecar are."""

    pid: int
    sidecar_path: Path
    log_path: Path
    supervisor_pid: int | None = None
    log_offset: int = 0
    started_at: str | None = None


@record(slots=True, eq=False)
class Sidecar:
    """Mirror of the sidecar JSON. Every field is optional: missing or ill-typed keys give the
    default, so a sidecar from a newer/older logx still reads."""

    schema: str | None = None
    pid: int | None = None
    supervisor_pid: int | None = None
    started_at: str | None = None
    command: list[str] = field(default_factory=list)
    cwd: str | None = None
    host: str | None = None
    log: str | None = None
    log_offset: int = 0
    ended_at: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    error: str | None = None
    path: Path | None = None  # where the sidecar was read from (not part of the JSON)

    @property
    def finished(self) -> bool:
        """True once the supervisor recorded the end of the run."""
        return self.ended_at is not None

    @property
    def signal_name(self) -> str:
        """``SIGKILL`` for signal 9 (``signal N`` for one Python does not name)."""
        return signal_name(self.signal)

    @property
    def end_text(self) -> str:
        """How the run ended, in words ("was killed by signal 9 (SIGKILL)")."""
        if self.signal is not None:
            text = f"was killed by signal {self.signal} ({self.signal_name})"
        elif self.exit_code is not None:
            text = f"exited with code {self.exit_code}"
        else:
            text = "ended (how is not recorded)"
        return text + (f": {self.error}" if self.error else "")

    @property
    def started_at_dt(self) -> datetime | None:
        return _parse_iso(self.started_at)

    @property
    def ended_at_dt(self) -> datetime | None:
        return _parse_iso(self.ended_at)

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: Path | None = None) -> Sidecar:
        def as_int(key: str) -> int | None:
            v = d.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) else None

        def as_str(key: str) -> str | None:
            v = d.get(key)
            return v if isinstance(v, str) else None

        cmd = d.get("command")
        return cls(
            schema=as_str("schema"),
            pid=as_int("pid"),
            supervisor_pid=as_int("supervisor_pid"),
            started_at=as_str("started_at"),
            command=[str(a) for a in cmd] if isinstance(cmd, list) else [],
            cwd=as_str("cwd"),
            host=as_str("host"),
            log=as_str("log"),
            log_offset=as_int("log_offset") or 0,
            ended_at=as_str("ended_at"),
            exit_code=as_int("exit_code"),
            signal=as_int("signal"),
            error=as_str("error"),
            path=path,
        )


def _parse_iso(s: str | None) -> datetime | None:
    if not s:
        return None
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat()


def sidecar_path(log_path: Path | str) -> Path:
    """``server.log`` -> ``server.log.logx.json`` (same directory)."""
    p = Path(log_path)
    return p.with_name(p.name + SIDECAR_SUFFIX)


def read_sidecar(log_path: Path | str) -> Sidecar | None:
    """The sidecar of ``log_path``, or None if absent, unreadable or not a JSON object.
    Never raises."""
    try:
        path = sidecar_path(log_path)
        with open(path, "rb") as f:
            data = json.loads(f.read())
    except (OSError, ValueError, TypeError):
        return None
    if not isinstance(data, dict):
        return None
    return Sidecar.from_dict(data, path=path)


def _write_sidecar(path: str, record: dict[str, Any]) -> None:
    """Atomic write: a reader sees the old or the new sidecar, never half of one."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --------------------------------------------------------------------------- launcher side


def launch(
    argv: list[str],
    log_path: Path | str,
    append: bool = False,
    *,
    timeout: float = REPORT_TIMEOUT,
) -> LaunchResult:
    """Start ``argv`` detached under a supervisor, stdout+stderr to ``log_path``.

    The log is opened here, before anything starts (truncated, or appended to with
    ``append=True``). Returns as soon as the server process exists; its sidecar is already
    written by then. Raises ``LaunchError`` (one-line message) if the log cannot be opened,
    the command cannot be started (the sidecar then records exit_code 127/126 and ``error``),
    or the supervisor does not report within ``timeout`` seconds.
    """
    import subprocess  # here, not at import: the stale-log check imports this module for its sidecar

    argv = [os.fsdecode(a) for a in argv]
    if not argv:
        raise LaunchError("no command given (usage: logx run --log FILE -- CMD ARGS...)")
    log_path = Path(os.path.abspath(log_path))
    side = sidecar_path(log_path)
    try:
        cwd = os.getcwd()
    except OSError as e:
        raise LaunchError(f"current directory is unusable: {e.strerror}") from None
    if not log_path.parent.is_dir():
        raise LaunchError(f"cannot open log {log_path}: directory does not exist")
    if not os.access(log_path.parent, os.W_OK | os.X_OK):
        raise LaunchError(f"cannot write the sidecar: directory {log_path.parent} not writable")

    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
    if not append:
        flags |= os.O_TRUNC
    try:
        log_fd = os.open(log_path, flags, 0o644)
    except OSError as e:
        raise LaunchError(f"cannot open log {log_path}: {e.strerror}") from None

    status_r = status_w = -1
    try:
        log_offset = os.fstat(log_fd).st_size
        # A stale sidecar would describe the previous run; the new one is written shortly.
        with contextlib.suppress(OSError):
            side.unlink()
        status_r, status_w = os.pipe()
        spec = {
            "argv": argv,
            "cwd": cwd,
            "log": str(log_path),
            "sidecar": str(side),
            "log_offset": log_offset,
            "status_fd": status_w,
        }
        try:
            proc = subprocess.Popen(
                [sys.executable or "python3", "-I", os.path.abspath(__file__), "--supervise"],
                stdin=subprocess.PIPE,
                stdout=log_fd,
                stderr=log_fd,
                pass_fds=(status_w,),
                close_fds=True,
                start_new_session=True,
                cwd=cwd,
            )
        except OSError as e:
            raise LaunchError(f"cannot start the logx supervisor: {e.strerror}") from None
        os.close(status_w)
        status_w = -1
        # If the supervisor died early this fails; reported below as "exited without reporting".
        with contextlib.suppress(OSError), proc.stdin:  # type: ignore[union-attr]
            proc.stdin.write(json.dumps(spec).encode("utf-8"))  # type: ignore[union-attr]
        report = _read_report(status_r, timeout)
    finally:
        os.close(log_fd)
        for fd in (status_r, status_w):
            if fd >= 0:
                os.close(fd)

    # The intermediate process exits right after forking the real supervisor: reap it.
    try:
        rc = proc.wait(timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired:
        rc = None

    if report is None:
        if rc is None:
            proc.kill()
            proc.wait()
            raise LaunchError(f"logx supervisor did not report within {timeout:g}s")
        raise LaunchError(f"logx supervisor exited without reporting (status {rc}); see {log_path}")
    if not report.get("ok"):
        code = report.get("exit_code")
        raise LaunchError(str(report.get("error") or "launch failed"), exit_code=code)
    return LaunchResult(
        pid=int(report["pid"]),
        sidecar_path=side,
        log_path=log_path,
        supervisor_pid=report.get("supervisor_pid"),
        log_offset=log_offset,
        started_at=report.get("started_at"),
    )


def _read_report(fd: int, timeout: float) -> dict[str, Any] | None:
    """First JSON line from the status pipe; None on EOF without one or on timeout.

    After the line, waits (briefly) for EOF too: the supervisor closes the pipe right after
    reporting, so when ``launch`` returns it holds nothing but its stdio."""
    deadline = time.monotonic() + timeout
    buf = b""
    while True:
        if b"\n" in buf:
            deadline = min(deadline, time.monotonic() + 1.0)
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
    if b"\n" not in buf:
        return None
    try:
        report = json.loads(buf.split(b"\n", 1)[0])
    except ValueError:
        return None
    return report if isinstance(report, dict) else None


# ------------------------------------------------------------------------- supervisor side


def _report(fd: int, payload: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # launcher gone (timed out, killed): nothing to tell
        os.write(fd, (json.dumps(payload) + "\n").encode("utf-8"))
    with contextlib.suppress(OSError):
        os.close(fd)


def _supervise() -> int:
    """Body of the supervisor process (see the module docstring)."""
    import socket
    import subprocess

    # Python-level handlers (not SIG_IGN) so that the server, after exec, starts with default
    # dispositions. Installed first: a SIGHUP from the dying ssh session must not kill us.
    pending: list[int] = []
    child: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, _frame: object) -> None:
        if not child:
            pending.append(signum)  # delivered as soon as the server exists
        elif child[0].returncode is None:
            with contextlib.suppress(OSError):
                os.kill(child[0].pid, signum)

    signal.signal(signal.SIGHUP, lambda _s, _f: None)
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)

    spec = json.loads(sys.stdin.buffer.read())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    status_fd = int(spec["status_fd"])

    if os.fork() > 0:
        os._exit(0)  # intermediate: the launcher reaps it; the grandchild is orphaned to init

    argv: list[str] = spec["argv"]
    sidecar = spec["sidecar"]
    record: dict[str, Any] = {
        "schema": SCHEMA,
        "pid": None,
        "supervisor_pid": os.getpid(),
        "started_at": _now_iso(),
        "command": argv,
        "cwd": spec["cwd"],
        "host": socket.gethostname(),
        "log": spec["log"],
        "log_offset": spec["log_offset"],
        "ended_at": None,
        "exit_code": None,
        "signal": None,
    }
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=1,
            stderr=2,
            cwd=spec["cwd"],
            close_fds=True,
            process_group=0,
        )
    except OSError as e:
        code = 127 if isinstance(e, FileNotFoundError | NotADirectoryError) else 126
        what = "command not found" if code == 127 else (e.strerror or type(e).__name__)
        message = f"cannot start {argv[0]!r}: {what} (exit code {code})"
        record.update(ended_at=_now_iso(), exit_code=code, error=message)
        with contextlib.suppress(OSError):
            _write_sidecar(sidecar, record)
        with contextlib.suppress(OSError):
            os.write(2, f"logx: {message}\n".encode())
        _report(status_fd, {"ok": False, "error": message, "exit_code": code})
        return code

    child.append(proc)
    for signum in pending:
        forward(signum, None)
    record["pid"] = proc.pid
    with contextlib.suppress(OSError):
        _write_sidecar(sidecar, record)
    _report(
        status_fd,
        {
            "ok": True,
            "pid": proc.pid,
            "supervisor_pid": os.getpid(),
            "started_at": record["started_at"],
        },
    )
    with contextlib.suppress(OSError):
        os.chdir("/")  # do not pin the server's directory (or its mount)

    rc = proc.wait()
    record["ended_at"] = _now_iso()
    if rc < 0:
        record["signal"] = -rc
    else:
        record["exit_code"] = rc
    with contextlib.suppress(OSError):
        _write_sidecar(sidecar, record)
    return 0


# ------------------------------------------------------------------------------ entry point


def main(args: list[str] | None = None) -> int:
    """``launcher.py --log FILE [--append] -- CMD ARGS…`` (prints where things are) or the
    internal ``--supervise`` mode. Returns a process exit code."""
    args = sys.argv[1:] if args is None else list(args)
    if args[:1] == ["--supervise"]:
        return _supervise()
    log: str | None = None
    append = False
    while args and args[0] != "--":
        opt = args.pop(0)
        if opt == "--append":
            append = True
        elif opt == "--log" and args:
            log = args.pop(0)
        elif opt.startswith("--log="):
            log = opt.split("=", 1)[1]
        else:
            print(f"logx run: unexpected argument {opt!r}", file=sys.stderr)
            return 2
    command = args[1:]
    if not log or not command:
        print("usage: logx run --log FILE [--append] -- CMD ARGS...", file=sys.stderr)
        return 2
    try:
        res = launch(command, Path(log), append=append)
    except LaunchError as e:
        print(f"logx run: {e}", file=sys.stderr)
        return e.exit_code
    print(f"started pid {res.pid} (supervisor {res.supervisor_pid})")
    print(f"log:     {res.log_path}")
    print(f"sidecar: {res.sidecar_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
