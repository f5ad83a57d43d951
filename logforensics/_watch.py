"""``logx watch`` — follow a log as it is written and say, live, where the launch is and what
went wrong the moment it goes wrong.

    from logforensics._watch import WatchOptions, watch
    code = watch("server.log", WatchOptions(until="ready", timeout=600))   # gate for scripts
    code = watch("-")                                                       # tail -f … | logx watch

This module is the entry point: it opens the source (``follow.py``), picks the view
(``render/watch.py``) and runs the loop (``watcher.py``); ``gate.py`` holds the options and
the decisions' types.

Gate mode (``until``): ``"ready"`` ends with 0 at "The server is fired up and ready to roll!",
1 as soon as a fatal/error finding is seen (decided on the best-ranked problem finding once
the lines already written are read) or the process dies (the ``logx run`` sidecar or
``pid``, polled every ``process_poll`` seconds; a pipe's EOF); ``"exit"`` waits for the
process or stream to end and exits with explain's exit code. ``timeout`` and ``silence`` end
with 3 (naming the phase it stalled in). Without ``until``: until Ctrl-C or EOF of a pipe,
then a summary and explain's exit code. Exit codes are those of ``report.py``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from . import _staleness
from ._analysis import Options
from ._catalog import Catalog, load_catalog
from ._clock import SYSTEM_CLOCK, Clock
from ._deployment_watch import DeploymentWatch
from ._errors import EXIT_OK
from ._follow import COUNT_LIMIT, FollowItem, follow_file, follow_stream
from ._gate import UNTIL, ProcessMonitor, Terminated, WatchOptions
from ._launcher import read_sidecar
from ._render.watch import JsonRenderer, PlainRenderer, Renderer
from ._sources import SourceError
from ._watcher import Watcher

__all__ = ["WatchOptions", "watch", "watch_many"]



BACKLOG_BYTES = 4 << 20  # a file holding more than this when the watch starts catches up by blocks


def _backlog(source: str, options: WatchOptions, context: _staleness.Context | None) -> int:
    """How many bytes of ``source`` the watch reads with the block scan before following it:
    the whole lines it already holds, when it is a regular file followed from its start and
    holds more than ``BACKLOG_BYTES`` (a small one is read line by line, as it always was)."""
    if source == "-" or options.from_end or (context is not None and context.offset):
        return 0
    try:
        st = os.stat(source)  # never open a FIFO here: without a writer, opening it blocks
        if not stat.S_ISREG(st.st_mode) or st.st_size <= BACKLOG_BYTES:
            return 0
        with open(source, "rb") as fh:
            # up to what the follower can count lines in (its line numbers go on from there)
            size = min(os.fstat(fh.fileno()).st_size, COUNT_LIMIT)
            fh.seek(max(0, size - (1 << 20)))
            tail = fh.read(size - fh.tell())
    except OSError:
        return 0
    newline = tail.rfind(b"\n")
    return size - len(tail) + newline + 1 if newline >= 0 else 0


def open_source(source: str, options: WatchOptions, context: _staleness.Context | None = None,
                start: int = 0, clock: Clock = SYSTEM_CLOCK,
                lines_before: Callable[[], int] | None = None) -> tuple[Iterator[FollowItem], str]:
    """The follower for ``source`` (``-`` = standard input) and its display name. A file
    that does not exist yet is fine (it is waited for); a directory is a ``SourceError``.
    A ``logx run --append`` sidecar (``context.offset``) starts the file where its run began;
    ``start``: the bytes already read (the back-log) are not followed again, nor counted when
    ``lines_before`` gives their lines."""
    if source == "-":
        stdin = sys.stdin
        if stdin is None or stdin.isatty():
            raise SourceError("no log to watch: name a file (logx watch server.log) or pipe one "
                              "in (tail -f server.log | logx watch)")
        return follow_stream(stdin.buffer, poll=options.poll,
                             partial_after=options.idle_flush, clock=clock), "<stdin>"
    if os.path.isdir(source):
        raise SourceError(f"{source}: is a directory, not a log file")
    offset = start or (context.offset if context is not None and not options.from_end else 0)
    return follow_file(source, from_end=options.from_end, start_offset=offset,
                       poll=options.poll, partial_after=options.idle_flush, clock=clock,
                       lines_before=lines_before if start else None), source


def _terminate(signum, frame) -> None:
    raise Terminated


def _silence_stdout() -> None:
    """After ``| head`` closed the pipe: make later writes and the final flush quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _check(options: WatchOptions) -> None:
    if options.until not in (None, *UNTIL):
        raise ValueError(f"--until must be one of {', '.join(UNTIL)}")
    for name in ("timeout", "silence"):
        value = getattr(options, name)
        if value is not None and value <= 0:
            raise ValueError(f"--{name} must be a positive number of seconds")


def _watcher(source: str, options: WatchOptions, catalog: Catalog, renderer: Renderer,
             clock: Clock = SYSTEM_CLOCK) -> Watcher:
    """The watch loop of one source: its follower, its process monitor, its sidecar context."""
    path = None if source == "-" else source
    monitor = ProcessMonitor(path, options.pid, options.use_sidecar)
    context = None
    if path is not None:
        context = _staleness.prepare(path, Options(pid=options.pid, since=options.since)) \
            if options.use_sidecar \
            else _staleness.Context(path=path)
    backlog = _backlog(source, options, context)
    # the follower starts after the back-log's catch-up: its line numbers go on from the scan's
    items, name = open_source(source, options, context, start=backlog, clock=clock,
                              lines_before=lambda: watcher.analyzer.lines)
    watcher = Watcher(items, renderer, options, catalog, name, monitor if monitor.active else None,
                      path=path, context=context, backlog=backlog, clock=clock)
    if options.until == "exit" and source != "-" and options.pid is None and (
            not options.use_sidecar or read_sidecar(source) is None):
        renderer.notice("note", "no `logx run` sidecar and no --pid: --until exit cannot see the "
                                "process end; it stops at Ctrl-C or --timeout")
    return watcher


@contextlib.contextmanager
def _session(out: TextIO | None, closing: list[Any]) -> Iterator[None]:
    """SIGTERM ends the watch like Ctrl-C; a closed pipe downstream is quiet; followers and
    live views are closed whatever happens."""
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate)  # `timeout`, kill: end like Ctrl-C
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        for thing in closing:
            stop = thing.stop if isinstance(thing, Renderer) else getattr(thing, "close", None)
            if stop is not None:
                with contextlib.suppress(Exception):
                    stop()


def make_renderer(options: WatchOptions, out: TextIO | None = None, console: Any = None) -> Renderer:
    """The view ``options.mode`` asks for (``auto``: live on a TTY, plain lines otherwise);
    ``console``: the rich Console of a live view (one on the stream by default)."""
    mode = options.mode
    stream = out if out is not None else sys.stdout
    if mode == "auto":
        mode = "live" if getattr(stream, "isatty", lambda: False)() else "plain"
    if mode == "json":
        return JsonRenderer(stream)
    if mode == "live":
        from ._render.live import LiveRenderer, make_live_console

        return LiveRenderer(console or make_live_console(stream, options.width), verbose=options.verbose)
    if mode == "plain":
        return PlainRenderer(stream, verbose=options.verbose)
    raise ValueError(f"unknown watch mode {mode!r}")


def watch(source: str = "-", options: WatchOptions | None = None, *,
          catalog: Catalog | None = None, out: TextIO | None = None,
          console: Any = None, clock: Clock = SYSTEM_CLOCK) -> int:
    """Follow ``source`` (a path, or ``-`` for standard input) and return the exit code:
    0 ready / no failure, 1 a fatal/error finding or the process died before ready,
    3 timeout or silence. ``console``: the rich Console of the live view (one on ``out`` by
    default); ``clock``: what it waits and measures time by. Raises ``SourceError`` for a source
    that cannot be followed and ``ValueError`` for bad options."""
    options = options or WatchOptions()
    _check(options)
    catalog = catalog or load_catalog()
    renderer = make_renderer(options, out, console)
    watcher = _watcher(source, options, catalog, renderer, clock)
    try:
        with _session(out, [renderer, watcher.items]):
            return watcher.execute()
    except BrokenPipeError:
        if out is None or out is sys.stdout:
            _silence_stdout()
        return EXIT_OK


def watch_many(sources: list[str], options: WatchOptions | None = None, *,
               catalog: Catalog | None = None, out: TextIO | None = None,
               clock: Clock = SYSTEM_CLOCK) -> int:
    """Follow several node logs together (``logx watch node*.log``): each file's updates are
    printed with its name, and the end is the deployment's, as ``logx explain`` gives it for
    the same files (see ``deployment_watch.py``). Plain lines or JSON lines (a live view is
    one file's). Same exit codes as ``watch``."""
    options = options or WatchOptions()
    _check(options)
    catalog = catalog or load_catalog()
    mode = "json" if options.mode == "json" else "plain"
    watchers = [_watcher(src, options, catalog,
                         JsonRenderer(out, label=src) if mode == "json" else
                         PlainRenderer(out, verbose=options.verbose, label=src), clock)
                for src in sources]
    try:
        with _session(out, [w.items for w in watchers]):
            return DeploymentWatch(watchers, JsonRenderer(out) if mode == "json" else PlainRenderer(out)).execute()
    except BrokenPipeError:
        if out is None or out is sys.stdout:
            _silence_stdout()
        return EXIT_OK
