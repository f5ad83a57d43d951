"""The ``logx`` command line. It only parses arguments and calls the library.

Exit codes (stable, documented in the README):
0 no failure found · 1 a fatal/error finding · 2 usage error or unreadable input ·
3 inconclusive (empty or stale log; for ``watch``: timeout or silence) · 4 internal error.

Each command is a plain function that returns its exit code. Its options are declared once, on
its parameters, with ``Opt`` and ``Arg``: the arguments typer's ``Option`` and ``Argument`` take.
The typer app is built from those declarations when it is needed: for help, completion, usage
errors and every command but ``explain``, ``status`` and ``watch``. Those three, what people and
scripts run on a log most often, start without typer (importing it and building its commands
cost ~35 ms of a ~170 ms start): ``_direct`` reads their command lines when they are of the forms
it reads exactly as typer does (see ``_direct``), and hands any other command line to typer.
"""

import json
import os
import sys
import types
from collections.abc import Callable
from enum import Enum, StrEnum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple, get_args, get_origin

from . import _cache
from ._errors import (
    EXIT_FAILURE,
    EXIT_INCONCLUSIVE,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    LogxError,
    RunNotFoundError,
    SourceError,
)
from ._version import __version__

if TYPE_CHECKING:
    from ._analysis import Options
    from ._catalog import Catalog
    from ._incident import Incident
    from ._report import Report

HELP = ("Read LLM inference-server logs (SGLang first): what the run reached, what broke, why, "
        "and which flag to change.")


class UsageError(LogxError):
    """A problem with what the user asked for; one line, exit code 2."""


class Opt:
    """An option's declaration: what ``typer.Option`` takes (names, ``help``, ``min``, …);
    ``choices``: its values (a tuple, or a function that returns them), which the command
    receives as strings."""

    def __init__(self, *decls: str, choices: tuple[str, ...] | Callable[[], list[str]] | None = None,
                 **typer_kwargs: Any) -> None:
        self.decls, self.choices, self.kwargs = decls, choices, typer_kwargs

    def values(self) -> tuple[str, ...] | list[str] | None:
        """Its choices, the function's called (None: any value)."""
        return self.choices() if callable(self.choices) else self.choices


class Arg(Opt):
    """A positional argument's declaration: what ``typer.Argument`` takes."""


class Command(NamedTuple):
    name: str
    function: Callable[..., int | None]
    group: str | None  # "patterns" for ``logx patterns list``
    direct: bool  # ``_direct`` may read its command lines (without typer)
    settings: dict[str, Any] | None  # typer's context_settings


COMMANDS: list[Command] = []
GROUPS = {"patterns": "The pattern catalog.", "corpus": "Your own regression corpus of labelled logs."}


def command(name: str, group: str | None = None, direct: bool = False, **settings: Any):
    """Register a command (``@command("explain")``); ``settings``: typer's ``context_settings``."""
    def register(function: Callable[..., int | None]) -> Callable[..., int | None]:
        COMMANDS.append(Command(name, function, group, direct, settings or None))
        return function
    return register


def make_console(width: int | None = None, stderr: bool = False):
    """``render.console.make_console``, imported when a command prints text (not for --json)."""
    from ._render.console import make_console as make

    return make(width, stderr)


def _echo(message: str, err: bool = False) -> None:
    print(message, file=sys.stderr if err else sys.stdout)


WidthOpt = Annotated[int | None, Opt(
    "--width", min=20, help="Text width in columns, at least 20 (default: the terminal's).")]
PatternsOpt = Annotated[list[Path] | None, Opt(
    "--patterns", help="Extra pattern directory (repeatable; also $LOGX_PATTERNS).")]


def _dialect_names() -> list[str]:
    from ._dialects import names

    return names()


DialectOpt = Annotated[str | None, Opt(
    "--dialect", choices=_dialect_names, case_sensitive=False,
    help="The server that wrote the log (default: detected from its first lines).")]


def _load_catalog(patterns: list[Path] | None):
    """The bundled catalog and ``patterns``; the library is imported by the command that runs,
    after ``main`` has turned the disk cache on."""
    from ._catalog import load_catalog

    return load_catalog(patterns)


def _since(value: str) -> float:
    """``--since``'s value as an epoch time; ``ValueError`` says what is wrong with it."""
    from ._clock import parse_since

    return parse_since(value)


PidOpt = Annotated[int | None, Opt(
    "--pid", min=1, help="The server process this log should belong to (its /proc start time and "
                         "liveness are checked).")]
SinceOpt = Annotated[float | None, Opt(
    "--since", parser=_since, metavar="TIME",
    help="The run of interest started at TIME: ISO time (local), HH:MM, a duration ago (30s, 10m, 2h) or "
         "@EPOCH. Older content is reported as stale.")]
SilenceOpt = Annotated[float, Opt(
    "--silence", min=0, help="A live process whose log has not grown for SECONDS during startup is "
                             "reported as hung.")]


@command("explain", direct=True)
def explain_cmd(
    logs: Annotated[list[str], Arg(help="Log file(s); '-' reads standard input.")],
    as_json: Annotated[bool, Opt("--json", help="One JSON object (logx.report/1).")] = False,
    run: Annotated[int | None, Opt(
        "--run", min=1, help="Explain run N (1-based) instead of the last.")] = None,
    patterns: PatternsOpt = None,
    verbose: Annotated[bool, Opt(
        "--verbose", "-v", help="Every finding in full: also the warnings and info findings a failure "
                                "hides, and its symptoms as panels.")] = False,
    width: WidthOpt = None,
    pid: PidOpt = None,
    since: SinceOpt = None,
    silence: SilenceOpt = 120.0,
    status_only: Annotated[bool, Opt(
        "--status", help="Only the verdict and the log's status (FRESH/STALE/EMPTY/SILENT/DEAD).")] = False,
    jobs: Annotated[int | None, Opt(
        "--jobs", "-j", min=1, help="Files read in parallel (default: one process per CPU, at most one "
                                    "per file).")] = None,
    dialect: DialectOpt = None,
    separate: Annotated[bool, Opt(
        "--separate", help="Explain every file on its own, even the node logs of one multi-node "
                           "launch.")] = False,
) -> int:
    """Explain a log: the run's phase, the root cause with evidence, and the fix. The node logs
    of one multi-node launch (or a directory of them) are explained together: which node failed
    first, and which failures elsewhere followed from it."""
    from ._analysis import Options, explain_many
    from ._report import unreadable_json
    from ._sources import expand_inputs

    catalog = _load_catalog(patterns)
    options = Options(run_index=run, pid=pid, since=since, silence=silence, status=True,
                      dialect=dialect)
    if status_only:
        return _status(logs, options, catalog, as_json, width)
    paths = expand_inputs(logs)
    items: list[tuple[Incident, list[Report]] | Report | Exception]
    if separate or len(paths) < 2:  # no node logs to put together: the incident module is not imported
        files: list[str | os.PathLike] = list(paths)
        items, names = explain_many(files, jobs, options=options, catalog=catalog, names=paths), paths
    else:
        from ._incident import explain_deployments

        explained = explain_deployments(paths, jobs, options=options, catalog=catalog, names=paths)
        items, names = explained.items, explained.names
    payloads: list[dict] = []
    worst = EXIT_OK
    if not as_json:  # rich and the renderers only for text: --json starts faster without them
        from ._render.report import render

        console = make_console(width)
    for name, item in zip(names, items, strict=True):
        if isinstance(item, RunNotFoundError):
            raise UsageError(str(item)) from None
        if isinstance(item, Exception):
            _echo(f"logx: {item}", err=True)
            worst = _combine(worst, EXIT_USAGE)
            payloads.append(unreadable_json(name, item))
            continue
        if isinstance(item, tuple):  # a deployment: its node reports explained together
            incident, node_reports = item
            worst = _combine(worst, incident.exit_code)
            if as_json:
                payloads.append(incident.to_json(node_reports))
        else:
            worst = _combine(worst, item.exit_code)
            if as_json:
                payloads.append(item.to_json())
        if as_json:
            continue
        if len(items) > 1 and item is not items[0]:
            console.print()
        if isinstance(item, tuple):  # the deployment view (and its merge) only for node logs put together
            from ._render.incident import render_incident

            render_incident(*item, console)
        else:
            render(item, console, verbose=verbose)
    if as_json:
        single = len(paths) == 1 or (len(payloads) == 1 and "incident" in payloads[0])
        out = payloads[0] if single and payloads else payloads
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    return worst


@command("diff")
def diff_cmd(
    logs: Annotated[list[str], Arg(help="BASELINE.log CANDIDATE.log, or one log holding both runs.")],
    base_run: Annotated[int | None, Opt(
        "--base-run", min=1, help="The baseline's run N (default: its last; one file: the one before --run).")] = None,
    run: Annotated[int | None, Opt(
        "--run", min=1, help="The candidate's run N (default: its last).")] = None,
    everything: Annotated[bool, Opt("--all", help="Show every fact, equal ones too.")] = False,
    as_json: Annotated[bool, Opt("--json", help="One JSON object (logx.diff/1).")] = False,
    patterns: PatternsOpt = None,
    width: WidthOpt = None,
) -> int:
    """What changed between two runs (an upgrade, a flag change, another machine), ranked by
    likely effect."""
    from ._diff import diff_logs
    from ._render.diff import render_diff

    if len(logs) not in (1, 2):
        raise UsageError("diff takes two logs, or one log with two runs")
    try:
        comparison = diff_logs(logs, base_run, run, everything, catalog=_load_catalog(patterns))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps(comparison.to_json(), indent=2, ensure_ascii=False) + "\n")
    else:
        render_diff(comparison, make_console(width), everything)
    return EXIT_OK


@command("status", direct=True)
def status_cmd(
    logs: Annotated[list[str], Arg(help="Log file(s).")],
    as_json: Annotated[bool, Opt("--json", help="One JSON object (logx.status/1).")] = False,
    pid: PidOpt = None,
    since: SinceOpt = None,
    silence: SilenceOpt = 120.0,
    patterns: PatternsOpt = None,
    width: WidthOpt = None,
) -> int:
    """Is this log the run you care about? FRESH, STALE, EMPTY, SILENT or DEAD, with the facts
    (exit code as for explain: 3 for stale/empty)."""
    from ._analysis import Options

    options = Options(pid=pid, since=since, silence=silence, status=True)
    return _status(logs, options, _load_catalog(patterns), as_json, width)


def _status(logs: list[str], options: "Options", catalog: "Catalog", as_json: bool, width: int | None) -> int:
    from ._analysis import explain
    from ._staleness import status_json

    if not as_json:
        from ._render.status import render_status

        console = make_console(width)
    payloads, worst = [], EXIT_OK
    for log in logs:
        try:
            report = explain(log, name=log, options=options, catalog=catalog)
        except SourceError as exc:
            _echo(f"logx: {exc}", err=True)
            worst = _combine(worst, EXIT_USAGE)
            continue
        worst = _combine(worst, report.exit_code)
        if as_json:
            payloads.append(status_json(report))
        else:
            console.print(render_status(report))
    if as_json:
        payload = payloads[0] if len(logs) == 1 and payloads else payloads
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    return worst


@command("run", ignore_unknown_options=True)
def run_cmd(
    command: Annotated[list[str], Arg(help="The server command, after `--`.")],
    log: Annotated[Path, Opt("--log", help="Log file (opened before the command starts).")],
    append: Annotated[bool, Opt(
        "--append", help="Append to the log (logx then explains only this run).")] = False,
) -> int:
    """Start a server detached with stdout+stderr on a log and a sidecar (FILE.logx.json)
    recording its PID, start, and exit code or signal; prints the PID and returns at once."""
    from ._launcher import main as launcher_main

    args = ["--log", str(log), *(["--append"] if append else []), "--", *command]
    return launcher_main(args)


def _combine(worst: int, code: int) -> int:
    """Several files: unreadable (2) > failure (1) > inconclusive (3) > ok (0)."""
    order = {EXIT_OK: 0, EXIT_INCONCLUSIVE: 1, EXIT_FAILURE: 2, EXIT_USAGE: 3}
    return code if order.get(code, 0) > order.get(worst, 0) else worst


@command("list", group="patterns")
def patterns_list(patterns: PatternsOpt = None,
                  as_json: Annotated[bool, Opt("--json")] = False) -> int:
    """List the catalog: id, severity, phase, priority and title."""
    from ._render.catalog import print_catalog

    catalog = _load_catalog(patterns)
    if as_json:
        rows = [{"id": p.id, "title": p.title, "severity": p.severity, "phase": p.phase,
                 "priority": p.priority, "source": p.source} for p in catalog.patterns]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return EXIT_OK
    print_catalog(catalog, make_console())
    return EXIT_OK


@command("lint", group="patterns")
def patterns_lint(
    patterns: PatternsOpt = None,
    fixtures: Annotated[Path | None, Opt(
        "--fixtures", help="Fixture directory that must trigger every pattern.")] = None,
) -> int:
    """Check every pattern: loads, regexes compile and are safe, ids unique, and at least
    one fixture triggers it (when a fixtures directory is found or given)."""
    from ._lint import lint_catalog

    notes: list[str] = []
    problems = lint_catalog(patterns, fixtures, notes)
    for note in notes:
        _echo(f"note: {note}")
    for problem in problems:
        _echo(problem)
    _echo(f"{len(problems)} problem(s)" if problems else "catalog OK")
    return 1 if problems else 0


@command("watch", direct=True)
def watch_cmd(
    logs: Annotated[list[str] | None, Arg(
        help="Log file(s) to follow (tail -F: survives truncation and rotation, waits for it to "
             "appear); '-' or nothing reads standard input. Several files (the node logs of one "
             "deployment) are followed together and end with the deployment's verdict.")] = None,
    until: Annotated[str | None, Opt(
        "--until", choices=("ready", "exit"), help="Gate for scripts: 'ready' exits 0 once the server is ready, 1 on a "
                        "failure or process death; 'exit' waits for the process/stream to end "
                        "and exits with explain's code.")] = None,
    timeout: Annotated[float | None, Opt(
        "--timeout", help="Give up after SECONDS (exit 3, naming the phase).")] = None,
    silence: Annotated[float | None, Opt(
        "--silence", help="Exit 3 when no new line arrived for SECONDS (names the phase it "
                          "stalled in).")] = None,
    from_end: Annotated[bool, Opt("--from-end", help="Skip what the file already holds.")] = False,
    as_json: Annotated[bool, Opt("--json", help="JSON lines: phase, finding, end.")] = False,
    plain: Annotated[bool, Opt("--plain", help="Plain lines even on a terminal.")] = False,
    pid: Annotated[int | None, Opt(
        "--pid", min=1, help="Server PID to watch for death (default: from the `logx run` sidecar).")] = None,
    since: SinceOpt = None,
    patterns: PatternsOpt = None,
    verbose: Annotated[bool, Opt("--verbose", "-v", help="Show info findings too.")] = False,
    width: WidthOpt = None,
    dialect: DialectOpt = None,
) -> int:
    """Follow a log as it is written: the phase reached, findings with their fix the moment
    they appear; with --until, an exit code for scripts."""
    from ._watch import WatchOptions, watch, watch_many

    catalog = _load_catalog(patterns)
    options = WatchOptions(until=until, timeout=timeout, silence=silence,
                           from_end=from_end, mode="json" if as_json else ("plain" if plain else "auto"),
                           verbose=verbose, pid=pid, since=since, width=width,
                           dialect=dialect)
    try:
        if logs and len(logs) > 1:
            code = watch_many(logs, options, catalog=catalog)
        else:
            code = watch(logs[0] if logs else "-", options, catalog=catalog)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return code


@command("share")
def share_cmd(
    log: Annotated[str, Arg(help="Log file; '-' reads standard input.")],
    as_json: Annotated[bool, Opt("--json", help="The same content as data (logx.share/1).")] = False,
    out: Annotated[Path | None, Opt("--out", help="Write the excerpt to FILE instead of stdout.")] = None,
    no_redact: Annotated[bool, Opt(
        "--no-redact", help="Keep tokens, addresses, host and user names as they are.")] = False,
    redact: Annotated[list[str] | None, Opt(
        "--redact", help="Also replace what REGEX matches (repeatable).")] = None,
    run: Annotated[int | None, Opt("--run", min=1, help="Share run N (1-based) instead of the last.")] = None,
    patterns: PatternsOpt = None,
) -> int:
    """A Markdown excerpt for a bug report: the root cause and fix, server, model, flags and
    memory, and the log lines the diagnosis rests on, redacted."""
    from ._redact import Redactor
    from ._share import build_share

    try:
        redactor = Redactor(redact or (), enabled=not no_redact)
        shared = build_share(log, name=log, catalog=_load_catalog(patterns), redactor=redactor, run_index=run)
    except ValueError as exc:  # a bad --redact regex, a --run the log does not have
        raise UsageError(str(exc)) from None
    text = json.dumps(shared.to_json(), indent=2, ensure_ascii=False) + "\n" if as_json else shared.markdown()
    if out is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{out}: cannot write ({exc.strerror or exc})") from None
    check = "same root cause from the excerpt" if shared.same else "the excerpt alone diagnoses differently"
    _echo(f"logx: wrote {out} ({len(text.splitlines())} lines; {check})", err=True)
    return EXIT_OK


@command("add", group="corpus")
def corpus_add(
    log: Annotated[str, Arg(help="Log file; '-' reads standard input.")],
    expect: Annotated[str, Opt("--expect", help="The root cause it should get: a pattern id or 'none'.")],
    directory: Annotated[Path, Opt("--dir", help="The corpus directory.")] = Path("logx-corpus"),
    no_redact: Annotated[bool, Opt("--no-redact", help="Store the lines unredacted.")] = False,
    redact: Annotated[list[str] | None, Opt("--redact", help="Also replace what REGEX matches.")] = None,
    patterns: PatternsOpt = None,
) -> int:
    """Store a redacted copy of LOG, trimmed to the smallest window that keeps its answer,
    with its expected root cause (labels.jsonl + <id>.log, the field corpus's format)."""
    from ._redact import Redactor
    from ._usercorpus import add

    try:
        added = add(log, expect, directory, catalog=_load_catalog(patterns),
                    redactor=Redactor(redact or (), enabled=not no_redact), name=log)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    _echo(f"added {added.path} ({added.kept} of {added.lines:,} lines; expected {added.expected})")
    if not added.agrees:
        _echo(f"logx: logx answers {added.answer} on this log, not {added.expected}: `logx corpus check` "
              "counts it as a miss until a pattern finds it (the copy is the excerpt, not trimmed)", err=True)
    return EXIT_OK


@command("check", group="corpus")
def corpus_check(
    directory: Annotated[Path, Arg(help="The corpus directory.")] = Path("logx-corpus"),
    patterns: PatternsOpt = None,
    update: Annotated[bool, Opt(
        "--update", help="Re-bless: every miss's label becomes today's answer; prints what changed.")] = False,
    as_json: Annotated[bool, Opt("--json", help="The scores as JSON (logx.accuracy/1).")] = False,
    jobs: Annotated[int | None, Opt("--jobs", "-j", min=1, help="Logs explained at a time.")] = 1,
) -> int:
    """Score a corpus with the bundled and your patterns: top-1, precision/recall per root
    cause, every miss with what was found instead; exit 1 on a regression (a miss)."""
    from ._scoring import LabelError, format_score
    from ._usercorpus import check, format_update

    try:
        result = check(directory, catalog=_load_catalog(patterns), update=update, jobs=jobs)
    except LabelError as exc:
        raise UsageError(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps(result.score.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        _echo(format_score(result.score))
    if result.updated:
        _echo(format_update(result.updated))
    return result.exit_code


@command("version")
def version_cmd() -> int:
    """Print logx's version."""
    _echo(f"logx {__version__}")
    return EXIT_OK


# — reading a command line: directly, or through typer —————————————————————————————————


class _NotDirect(Exception):
    """A command line ``_direct`` does not read exactly as typer would: typer reads it."""


def _value(declared: Opt, kind: type, text: str) -> Any:
    """An option's value as typer converts it; ``_NotDirect`` where typer would refuse it or
    would say more (its usage error is the one the user sees)."""
    if text.startswith("-") and text != "-":
        raise _NotDirect  # typer takes it as the value: rarely what was meant, let it say so
    try:
        if "parser" in declared.kwargs:
            return declared.kwargs["parser"](text)
        value = Path(text) if kind is Path else kind(text)
    except ValueError:
        raise _NotDirect from None
    choices = declared.values()
    if choices is not None:
        folded = {c.casefold(): c for c in choices} if declared.kwargs.get("case_sensitive") is False else {}
        value = folded.get(text.casefold(), text)
        if value not in choices:
            raise _NotDirect
    low, high = declared.kwargs.get("min"), declared.kwargs.get("max")
    if (low is not None and value < low) or (high is not None and value > high):
        raise _NotDirect
    return value


def _parameters(function: Callable[..., Any]) -> dict[str, tuple[Opt, type, bool, Any]]:
    """Each parameter: its declaration, its base type (``int`` for ``int | None``, ``Path``
    for ``list[Path]``), whether it repeats, and its default (None for the logs argument, always given)."""
    code = function.__code__  # read off the function, not inspect.signature: inspect costs ~8 ms to import
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    positional_defaults = function.__defaults__ or ()
    defaults = dict(zip(names[code.co_argcount - len(positional_defaults):code.co_argcount],
                        positional_defaults, strict=True)) | (function.__kwdefaults__ or {})
    out = {}
    for name in names:
        base, declared = get_args(function.__annotations__[name])
        kind = next(a for a in get_args(base) if a is not type(None)) if isinstance(base, types.UnionType) else base
        many = get_origin(kind) is list
        out[name] = (declared, get_args(kind)[0] if many else kind, many, defaults.get(name))
    return out


def _direct(argv: list[str]) -> tuple[Callable[..., Any], dict[str, Any]] | None:
    """``(command, its arguments)`` when ``argv`` is a direct command's line in forms read the
    same by typer: ``--name``, ``--name VALUE``, ``--name=VALUE``, ``-x``, ``-x VALUE`` and
    positional values (``-`` among them), every value valid. None for anything else (help,
    ``--``, joined short options, an unknown name, a bad value, completion): typer reads it."""
    found = next((c for c in COMMANDS if c.direct and c.group is None and argv[:1] == [c.name]), None)
    if found is None or "_LOGX_COMPLETE" in os.environ:
        return None
    params = _parameters(found.function)
    names = {decl: name for name, (declared, *_rest) in params.items() if not isinstance(declared, Arg)
             for decl in declared.decls}
    kwargs: dict[str, Any] = {}
    positional: list[str] = []
    tokens = argv[1:]
    try:
        while tokens:
            token = tokens.pop(0)
            if token == "-" or not token.startswith("-"):
                positional.append(token)
                continue
            flag, eq, inline = token.partition("=")
            name = names.get(flag)
            if name is None or (eq and not flag.startswith("--")):
                return None
            declared, kind, many, _default = params[name]
            if kind is bool:
                if eq:
                    return None
                kwargs[name] = True
                continue
            if not eq and not tokens:
                return None
            value = _value(declared, kind, inline if eq else tokens.pop(0))
            kwargs[name] = [*kwargs.get(name, []), value] if many else value
        args = [n for n, (declared, *_rest) in params.items() if isinstance(declared, Arg)]
        if len(args) != 1 or not params[args[0]][2] or not positional:
            return None  # the direct commands take one repeated argument: the logs
        declared, kind, _many, _default = params[args[0]]
        kwargs[args[0]] = [_value(declared, kind, v) for v in positional]
    except _NotDirect:
        return None
    for name, (_declared, _kind, _many, default) in params.items():
        kwargs.setdefault(name, default)
    return found.function, kwargs


def _run(function: Callable[..., int | None], kwargs: dict[str, Any]) -> int:
    """A command's exit code (both ways of reading its command line call it here)."""
    return function(**kwargs) or EXIT_OK


def _as_typer(function: Callable[..., int | None]):
    """``function`` as typer reads a command: its ``Opt``/``Arg`` declarations made typer's,
    a choice received as its string, a parser's ``ValueError`` typer's usage error."""
    import functools
    import inspect

    import typer

    def parsing(parse: Callable[[str], Any]) -> Callable[[str], Any]:
        def parsed(text: str) -> Any:
            try:
                return parse(text)
            except ValueError as exc:
                raise typer.BadParameter(str(exc)) from None
        return parsed

    signature = inspect.signature(function)
    params = []
    for p in signature.parameters.values():
        base, declared = get_args(p.annotation)
        kwargs = dict(declared.kwargs)
        if "parser" in kwargs:
            kwargs["parser"] = parsing(kwargs["parser"])
        choices = declared.values()
        if choices is not None:
            base = StrEnum(p.name.title(), {c: c for c in choices}) | None  # type: ignore[operator]
        info = (typer.Argument if isinstance(declared, Arg) else typer.Option)(*declared.decls, **kwargs)
        params.append(p.replace(annotation=Annotated[base, info]))

    @functools.wraps(function)
    def typer_command(**kwargs: Any) -> None:
        kwargs = {k: v.value if isinstance(v, Enum) else v for k, v in kwargs.items()}
        raise typer.Exit(_run(function, kwargs))

    typer_command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return typer_command


@cache
def typer_app():
    """The whole command line as a typer app (help, completion, usage errors, every command)."""
    import typer

    app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False, help=HELP)

    @app.callback(invoke_without_command=True)
    def _root(version: Annotated[bool, typer.Option("--version", help="Print logx's version and exit.",
                                                    is_eager=True)] = False) -> None:
        if version:
            typer.echo(f"logx {__version__}")
            raise typer.Exit(0)

    groups = {name: typer.Typer(no_args_is_help=True, help=text) for name, text in GROUPS.items()}
    for name, group in groups.items():
        app.add_typer(group, name=name)
    for cmd in COMMANDS:
        target = groups[cmd.group] if cmd.group else app
        target.command(cmd.name, context_settings=cmd.settings)(_as_typer(cmd.function))
    _one_line_help(app, *groups.values())
    return app


def __getattr__(name: str) -> Any:
    """``_cli.app``: the typer app, built on first use (the tests invoke it with typer's runner)."""
    if name == "app":
        return typer_app()
    raise AttributeError(name)


def _one_line_help(*apps) -> None:
    """A command's help is its docstring; its line breaks are source layout, not the text's:
    join them so the help reflows to the terminal instead of breaking mid-sentence."""
    for sub in apps:
        for info in sub.registered_commands:
            doc = info.help or (info.callback.__doc__ if info.callback else None)
            if doc:
                info.help = "\n\n".join(" ".join(p.split()) for p in doc.strip().split("\n\n"))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry (``argv``: the arguments, default ``sys.argv[1:]``): logx never
    shows its own traceback to its user. Usage errors are reported by the argument parser
    itself (exit code 2)."""
    _cache.enable()  # what logx derives from its own data is kept between runs (LOGX_NO_CACHE=1: not)
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        direct = _direct(args)
        if direct is None:
            typer_app()(args=args, prog_name="logx")  # `python -m logforensics` too: completion reads _LOGX_COMPLETE
        else:
            sys.exit(_run(*direct))
    except LogxError as exc:
        print(f"logx: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        _silence_broken_pipe()
        sys.exit(EXIT_OK)
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        print(f"logx: internal error: {type(exc).__name__}: {exc} "
              "(please report it with the log that caused it)", file=sys.stderr)
        sys.exit(EXIT_INTERNAL)


def _silence_broken_pipe() -> None:
    """After ``| head`` closes the pipe, make the interpreter's final flush quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
