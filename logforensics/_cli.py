"""The ``logx`` command line. It only parses arguments and calls the library.

Exit codes (stable, documented in the README):
0 no failure found · 1 a fatal/error finding · 2 usage error or unreadable input ·
3 inconclusive (empty or stale log; for ``watch``: timeout or silence) · 4 internal error.
"""

from __future__ import annotations

import json
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from . import __version__, _cache
from ._analysis import Options, explain
from ._catalog import load_catalog
from ._dialects import names as dialect_names
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
from ._incident import explain_deployments
from ._report import unreadable_json
from ._sources import expand_inputs


def make_console(width: int | None = None, stderr: bool = False):
    """``render.console.make_console``, imported when a command prints text (not for --json)."""
    from ._render.console import make_console as make

    return make(width, stderr)

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Read LLM inference-server logs (SGLang first): what the run reached, "
                       "what broke, why, and which flag to change.")


@app.callback(invoke_without_command=True)
def _root(version: Annotated[bool, typer.Option("--version", help="Print logx's version and exit.",
                                                is_eager=True)] = False) -> None:
    """Read LLM inference-server logs (SGLang first): what the run reached, what broke, why,
    and which flag to change."""
    if version:
        typer.echo(f"logx {__version__}")
        raise typer.Exit(0)


patterns_app = typer.Typer(no_args_is_help=True, help="The pattern catalog.")
app.add_typer(patterns_app, name="patterns")
corpus_app = typer.Typer(no_args_is_help=True, help="Your own regression corpus of labelled logs.")
app.add_typer(corpus_app, name="corpus")


class UsageError(LogxError):
    """A problem with what the user asked for; one line, exit code 2."""


WidthOpt = Annotated[int | None, typer.Option(
    "--width", min=20, help="Text width in columns, at least 20 (default: the terminal's).")]
PatternsOpt = Annotated[list[Path] | None, typer.Option(
    "--patterns", help="Extra pattern directory (repeatable; also $LOGX_PATTERNS).")]


DialectName = StrEnum("DialectName", {name: name for name in dialect_names()})  # type: ignore[misc]
DialectOpt = Annotated[DialectName | None, typer.Option(
    "--dialect", help="The server that wrote the log (default: detected from its first lines).",
    case_sensitive=False)]


# — stale-log detector options (explain, status) —————————————————————————————————————
def _since(value: str | None) -> float | None:
    from ._clock import parse_since

    if value is None:
        return None
    try:
        return parse_since(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--since") from None


PidOpt = Annotated[int | None, typer.Option(
    "--pid", min=1, help="The server process this log should belong to (its /proc start time and "
                         "liveness are checked).")]
SinceOpt = Annotated[str | None, typer.Option(
    "--since", help="The run of interest started at TIME: ISO time (local), HH:MM, a duration ago "
                    "(30s, 10m, 2h) or @EPOCH. Older content is reported as stale.")]
SilenceOpt = Annotated[float, typer.Option(
    "--silence", min=0, help="A live process whose log has not grown for SECONDS during startup is "
                             "reported as hung.")]


@app.command("explain")
def explain_cmd(
    logs: Annotated[list[str], typer.Argument(help="Log file(s); '-' reads standard input.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object (logx.report/1).")] = False,
    run: Annotated[int | None, typer.Option(
        "--run", min=1, help="Explain run N (1-based) instead of the last.")] = None,
    patterns: PatternsOpt = None,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Every finding in full: also the warnings and info findings a failure "
                                "hides, and its symptoms as panels.")] = False,
    width: WidthOpt = None,
    pid: PidOpt = None,
    since: SinceOpt = None,
    silence: SilenceOpt = 120.0,
    status_only: Annotated[bool, typer.Option(
        "--status", help="Only the verdict and the log's status (FRESH/STALE/EMPTY/SILENT/DEAD).")] = False,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", min=1, help="Files read in parallel (default: one process per CPU, at most one "
                                    "per file).")] = None,
    dialect: DialectOpt = None,
    separate: Annotated[bool, typer.Option(
        "--separate", help="Explain every file on its own, even the node logs of one multi-node "
                           "launch.")] = False,
) -> None:
    """Explain a log: the run's phase, the root cause with evidence, and the fix. The node logs
    of one multi-node launch (or a directory of them) are explained together: which node failed
    first, and which failures elsewhere followed from it."""
    catalog = load_catalog(patterns)
    options = Options(run_index=run, pid=pid, since=_since(since), silence=silence, status=True,
                      dialect=dialect.value if dialect else None)
    if status_only:
        raise typer.Exit(_status(logs, options, catalog, as_json, width))
    paths = expand_inputs(logs)
    explained = explain_deployments(paths, jobs, options=options, catalog=catalog, names=paths,
                                    separate=separate)
    payloads: list[dict] = []
    worst = EXIT_OK
    if not as_json:  # rich and the renderers only for text: --json starts faster without them
        from ._render.incident import render_incident
        from ._render.report import render

        console = make_console(width)
    for name, item in zip(explained.names, explained.items, strict=True):
        if isinstance(item, RunNotFoundError):
            raise UsageError(str(item)) from None
        if isinstance(item, Exception):
            typer.echo(f"logx: {item}", err=True)
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
        if len(explained.items) > 1 and item is not explained.items[0]:
            console.print()
        if isinstance(item, tuple):
            render_incident(*item, console)
        else:
            render(item, console, verbose=verbose)
    if as_json:
        single = len(paths) == 1 or (len(payloads) == 1 and "incident" in payloads[0])
        out = payloads[0] if single and payloads else payloads
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    raise typer.Exit(worst)


@app.command("diff")
def diff_cmd(
    logs: Annotated[list[str], typer.Argument(help="BASELINE.log CANDIDATE.log, or one log holding both runs.")],
    base_run: Annotated[int | None, typer.Option(
        "--base-run", min=1, help="The baseline's run N (default: its last; one file: the one before --run).")] = None,
    run: Annotated[int | None, typer.Option(
        "--run", min=1, help="The candidate's run N (default: its last).")] = None,
    everything: Annotated[bool, typer.Option("--all", help="Show every fact, equal ones too.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object (logx.diff/1).")] = False,
    patterns: PatternsOpt = None,
    width: WidthOpt = None,
) -> None:
    """What changed between two runs (an upgrade, a flag change, another machine), ranked by
    likely effect."""
    from ._diff import diff_logs
    from ._render.diff import render_diff

    if len(logs) not in (1, 2):
        raise UsageError("diff takes two logs, or one log with two runs")
    try:
        comparison = diff_logs(logs, base_run, run, everything, catalog=load_catalog(patterns))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps(comparison.to_json(), indent=2, ensure_ascii=False) + "\n")
    else:
        render_diff(comparison, make_console(width), everything)
    raise typer.Exit(EXIT_OK)


@app.command("status")
def status_cmd(
    logs: Annotated[list[str], typer.Argument(help="Log file(s).")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object (logx.status/1).")] = False,
    pid: PidOpt = None,
    since: SinceOpt = None,
    silence: SilenceOpt = 120.0,
    patterns: PatternsOpt = None,
    width: WidthOpt = None,
) -> None:
    """Is this log the run you care about? FRESH, STALE, EMPTY, SILENT or DEAD, with the facts
    (exit code as for explain: 3 for stale/empty)."""
    options = Options(pid=pid, since=_since(since), silence=silence, status=True)
    raise typer.Exit(_status(logs, options, load_catalog(patterns), as_json, width))


def _status(logs: list[str], options: Options, catalog, as_json: bool, width: int | None) -> int:
    from ._staleness import status_json

    if not as_json:
        from ._render.status import render_status

        console = make_console(width)
    payloads, worst = [], EXIT_OK
    for log in logs:
        try:
            report = explain(log, name=log, options=options, catalog=catalog)
        except SourceError as exc:
            typer.echo(f"logx: {exc}", err=True)
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


@app.command("run", context_settings={"ignore_unknown_options": True})
def run_cmd(
    command: Annotated[list[str], typer.Argument(help="The server command, after `--`.")],
    log: Annotated[Path, typer.Option("--log", help="Log file (opened before the command starts).")],
    append: Annotated[bool, typer.Option(
        "--append", help="Append to the log (logx then explains only this run).")] = False,
) -> None:
    """Start a server detached with stdout+stderr on a log and a sidecar (FILE.logx.json)
    recording its PID, start, and exit code or signal; prints the PID and returns at once."""
    from ._launcher import main as launcher_main

    args = ["--log", str(log), *(["--append"] if append else []), "--", *command]
    raise typer.Exit(launcher_main(args))


def _combine(worst: int, code: int) -> int:
    """Several files: unreadable (2) > failure (1) > inconclusive (3) > ok (0)."""
    order = {EXIT_OK: 0, EXIT_INCONCLUSIVE: 1, EXIT_FAILURE: 2, EXIT_USAGE: 3}
    return code if order.get(code, 0) > order.get(worst, 0) else worst


@patterns_app.command("list")
def patterns_list(patterns: PatternsOpt = None,
                  as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List the catalog: id, severity, phase, priority and title."""
    from ._render.catalog import print_catalog

    catalog = load_catalog(patterns)
    if as_json:
        rows = [{"id": p.id, "title": p.title, "severity": p.severity, "phase": p.phase,
                 "priority": p.priority, "source": p.source} for p in catalog.patterns]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    print_catalog(catalog, make_console())


@patterns_app.command("lint")
def patterns_lint(
    patterns: PatternsOpt = None,
    fixtures: Annotated[Path | None, typer.Option(
        "--fixtures", help="Fixture directory that must trigger every pattern.")] = None,
) -> None:
    """Check every pattern: loads, regexes compile and are safe, ids unique, and at least
    one fixture triggers it (when a fixtures directory is found or given)."""
    from ._lint import lint_catalog

    notes: list[str] = []
    problems = lint_catalog(patterns, fixtures, notes)
    for note in notes:
        typer.echo(f"note: {note}")
    for problem in problems:
        typer.echo(problem)
    typer.echo(f"{len(problems)} problem(s)" if problems else "catalog OK")
    raise typer.Exit(1 if problems else 0)


class Until(StrEnum):
    ready = "ready"
    exit = "exit"


@app.command("watch")
def watch_cmd(
    logs: Annotated[list[str] | None, typer.Argument(
        help="Log file(s) to follow (tail -F: survives truncation and rotation, waits for it to "
             "appear); '-' or nothing reads standard input. Several files (the node logs of one "
             "deployment) are followed together and end with the deployment's verdict.")] = None,
    until: Annotated[Until | None, typer.Option(
        "--until", help="Gate for scripts: 'ready' exits 0 once the server is ready, 1 on a "
                        "failure or process death; 'exit' waits for the process/stream to end "
                        "and exits with explain's code.")] = None,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", help="Give up after SECONDS (exit 3, naming the phase).")] = None,
    silence: Annotated[float | None, typer.Option(
        "--silence", help="Exit 3 when no new line arrived for SECONDS (names the phase it "
                          "stalled in).")] = None,
    from_end: Annotated[bool, typer.Option("--from-end", help="Skip what the file already holds.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines: phase, finding, end.")] = False,
    plain: Annotated[bool, typer.Option("--plain", help="Plain lines even on a terminal.")] = False,
    pid: Annotated[int | None, typer.Option(
        "--pid", min=1, help="Server PID to watch for death (default: from the `logx run` sidecar).")] = None,
    since: SinceOpt = None,
    patterns: PatternsOpt = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show info findings too.")] = False,
    width: WidthOpt = None,
    dialect: DialectOpt = None,
) -> None:
    """Follow a log as it is written: the phase reached, findings with their fix the moment
    they appear; with --until, an exit code for scripts."""
    from ._watch import WatchOptions, watch, watch_many

    catalog = load_catalog(patterns)
    options = WatchOptions(until=until.value if until else None, timeout=timeout, silence=silence,
                           from_end=from_end, mode="json" if as_json else ("plain" if plain else "auto"),
                           verbose=verbose, pid=pid, since=_since(since), width=width,
                           dialect=dialect.value if dialect else None)
    try:
        if logs and len(logs) > 1:
            code = watch_many(logs, options, catalog=catalog)
        else:
            code = watch(logs[0] if logs else "-", options, catalog=catalog, console=make_console(width))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    raise typer.Exit(code)


@app.command("share")
def share_cmd(
    log: Annotated[str, typer.Argument(help="Log file; '-' reads standard input.")],
    as_json: Annotated[bool, typer.Option("--json", help="The same content as data (logx.share/1).")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write the excerpt to FILE instead of stdout.")] = None,
    no_redact: Annotated[bool, typer.Option(
        "--no-redact", help="Keep tokens, addresses, host and user names as they are.")] = False,
    redact: Annotated[list[str] | None, typer.Option(
        "--redact", help="Also replace what REGEX matches (repeatable).")] = None,
    run: Annotated[int | None, typer.Option("--run", min=1, help="Share run N (1-based) instead of the last.")] = None,
    patterns: PatternsOpt = None,
) -> None:
    """A Markdown excerpt for a bug report: the root cause and fix, server, model, flags and
    memory, and the log lines the diagnosis rests on, redacted."""
    from ._redact import Redactor
    from ._share import build_share

    try:
        redactor = Redactor(redact or (), enabled=not no_redact)
        shared = build_share(log, name=log, catalog=load_catalog(patterns), redactor=redactor, run_index=run)
    except ValueError as exc:  # a bad --redact regex, a --run the log does not have
        raise UsageError(str(exc)) from None
    text = json.dumps(shared.to_json(), indent=2, ensure_ascii=False) + "\n" if as_json else shared.markdown()
    if out is None:
        sys.stdout.write(text)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{out}: cannot write ({exc.strerror or exc})") from None
    check = "same root cause from the excerpt" if shared.same else "the excerpt alone diagnoses differently"
    typer.echo(f"logx: wrote {out} ({len(text.splitlines())} lines; {check})", err=True)


@corpus_app.command("add")
def corpus_add(
    log: Annotated[str, typer.Argument(help="Log file; '-' reads standard input.")],
    expect: Annotated[str, typer.Option("--expect", help="The root cause it should get: a pattern id or 'none'.")],
    directory: Annotated[Path, typer.Option("--dir", help="The corpus directory.")] = Path("logx-corpus"),
    no_redact: Annotated[bool, typer.Option("--no-redact", help="Store the lines unredacted.")] = False,
    redact: Annotated[list[str] | None, typer.Option("--redact", help="Also replace what REGEX matches.")] = None,
    patterns: PatternsOpt = None,
) -> None:
    """Store a redacted copy of LOG, trimmed to the smallest window that keeps its answer,
    with its expected root cause (labels.jsonl + <id>.log, the field corpus's format)."""
    from ._redact import Redactor
    from ._usercorpus import add

    try:
        added = add(log, expect, directory, catalog=load_catalog(patterns),
                    redactor=Redactor(redact or (), enabled=not no_redact), name=log)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    typer.echo(f"added {added.path} ({added.kept} of {added.lines:,} lines; expected {added.expected})")
    if not added.agrees:
        typer.echo(f"logx: logx answers {added.answer} on this log, not {added.expected}: `logx corpus check` "
                   "counts it as a miss until a pattern finds it (the copy is the excerpt, not trimmed)", err=True)


@corpus_app.command("check")
def corpus_check(
    directory: Annotated[Path, typer.Argument(help="The corpus directory.")] = Path("logx-corpus"),
    patterns: PatternsOpt = None,
    update: Annotated[bool, typer.Option(
        "--update", help="Re-bless: every miss's label becomes today's answer; prints what changed.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The scores as JSON (logx.accuracy/1).")] = False,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Logs explained at a time.")] = 1,
) -> None:
    """Score a corpus with the bundled and your patterns: top-1, precision/recall per root
    cause, every miss with what was found instead; exit 1 on a regression (a miss)."""
    from ._scoring import LabelError, format_score
    from ._usercorpus import check, format_update

    try:
        result = check(directory, catalog=load_catalog(patterns), update=update, jobs=jobs)
    except LabelError as exc:
        raise UsageError(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps(result.score.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        typer.echo(format_score(result.score))
    if result.updated:
        typer.echo(format_update(result.updated))
    raise typer.Exit(result.exit_code)


@app.command("version")
def version_cmd() -> None:
    """Print logx's version."""
    typer.echo(f"logx {__version__}")


def _one_line_help(*apps: typer.Typer) -> None:
    """A command's help is its docstring; its line breaks are source layout, not the text's:
    join them so the help reflows to the terminal instead of breaking mid-sentence."""
    for sub in apps:
        for info in sub.registered_commands:
            doc = info.help or (info.callback.__doc__ if info.callback else None)
            if doc:
                info.help = "\n\n".join(" ".join(p.split()) for p in doc.strip().split("\n\n"))


_one_line_help(app, patterns_app, corpus_app)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry (``argv``: the arguments, default ``sys.argv[1:]``): logx never
    shows its own traceback to its user. Usage errors are reported by the argument parser
    itself (exit code 2)."""
    _cache.enable()  # what logx derives from its own data is kept between runs (LOGX_NO_CACHE=1: not)
    try:
        app(args=argv, prog_name="logx")  # also under `python -m logforensics`: completion reads _LOGX_COMPLETE
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
