"""The errors a caller of logx can catch, and the exit codes (one home for both).

Every error logx raises on purpose is a ``LogxError`` with a one-line message meant for a
person; ``exit_code`` is what the CLI exits with when it reaches the top. Anything else that
escapes is a bug (the CLI reports it as ``EXIT_INTERNAL``, never with a traceback).
"""

from __future__ import annotations

# Exit codes of ``explain``/``status``/``watch`` (stable: scripts gate on them; README lists them).
EXIT_OK = 0  # no failure found / the --until condition was met
EXIT_FAILURE = 1  # a fatal/error finding: the run failed
EXIT_USAGE = 2  # a usage error or input that cannot be read
EXIT_INCONCLUSIVE = 3  # the log is empty or stale; watch: timeout or silence
EXIT_INTERNAL = 4  # a bug in logx


class LogxError(Exception):
    """Base of the errors a caller can catch; the message is one line."""

    exit_code = EXIT_USAGE


class SourceError(LogxError):
    """Input that cannot be read at all (missing, a directory, permission denied…)."""


class CatalogError(LogxError):
    """A pattern file or pattern that cannot be used; the message names the file, the
    pattern id and the problem."""


class RunNotFoundError(LogxError, ValueError):
    """A run index the log does not have (``--run N``)."""


class LaunchError(LogxError):
    """``logx run`` could not launch the command. ``exit_code``: the command's own (127 not
    found, 126 not executable) when it got that far, else ``EXIT_FAILURE``."""

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code or EXIT_FAILURE
