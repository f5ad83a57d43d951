"""Stage 3 — events: a table of line rules turns known lines into typed events.

Each rule is data: an event kind, a cheap literal test (``starts`` or ``contains``) that runs
before any regular expression, and a regex whose named groups become the event's fields
(numbers become ints/floats, ``True``/``False`` bools). Lines no rule claims pass through as
kind ``"line"``. The tables themselves are the dialects' (``dialects/<server>/events.py``):
to teach logx a new line, add a ``Rule`` to its server's table. This module holds what every
table shares: the rule type, the field parsers, the rules of the shell, uvicorn and Python
warnings, and the tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from ._lazyre import lazy
from ._lines import LogLine

if TYPE_CHECKING:
    from ._tracebacks import Traceback


class Event:
    """A typed fact read from one line (or, for ``kind == "traceback"``, from a block).
    (Built per event, so written out rather than a ``record``: see _record.py.)"""

    __slots__ = ("kind", "line", "fields", "traceback", "dialect")

    def __init__(self, kind: str, line: LogLine, fields: dict[str, Any] | None = None,
                 traceback: Traceback | None = None, dialect: str | None = None):
        self.kind = kind
        self.line = line
        self.fields: dict[str, Any] = {} if fields is None else fields
        self.traceback = traceback
        self.dialect = dialect  # the server whose line this is, in a mixed file (None: the log's)

    def __repr__(self) -> str:
        return f"Event({self.kind!r}, line {self.line.number}, {self.fields!r})"

    @property
    def number(self) -> int:
        return self.line.number


class Rule(NamedTuple):
    """One line rule. ``starts``: the message starts with this literal; ``contains``: the
    message contains it. ``pattern`` (searched from the start when ``starts`` is set) yields
    the fields; ``parse`` post-processes them."""

    kind: str
    pattern: str | None = None
    starts: str | None = None
    contains: str | None = None
    parse: Callable[[re.Match[str], str], dict[str, Any]] | None = None

    def compiled(self) -> re.Pattern[str] | None:
        return re.compile(self.pattern) if self.pattern else None


_NUM = lazy(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def convert(value: str | None) -> Any:
    """Turn a captured text into the value it denotes (int, float, bool, None or str)."""
    if value is None:
        return None
    if _NUM.fullmatch(value):
        return float(value) if ("." in value or "e" in value or "E" in value) else int(value)
    if value in ("True", "False"):
        return value == "True"
    if value == "None":
        return None
    return value


def groups(m: re.Match[str], _msg: str) -> dict[str, Any]:
    return {k: convert(v) for k, v in m.groupdict().items() if v is not None}


# "#running-req: 7", "token usage: 0.12", "gen throughput (token/s): 80.79" -> gen_throughput
# Every repetition that a search could restart at each position is bounded: a hostile 1 MB
# line must cost linear time (the standard ``re`` module has no timeout).
_KV_PAIR = lazy(r"(#?[a-z_][\w -]{0,63}?)(?: \(token/s\))?(?:=|: )(-?[\d.]+|True|False|None)\b")


def pairs(m: re.Match[str], msg: str) -> dict[str, Any]:
    """Fields of a ``key=value, key: value`` stats line (batch lines, budget lines)."""
    out = groups(m, msg)
    for key, value in _KV_PAIR.findall(msg):
        name = key.strip().lstrip("#").replace("-", "_").replace(" ", "_")
        out.setdefault(name, convert(value))
    return out


def parse_arg_value(text: str) -> Any:
    """A printed argument value: quoted text unquoted, else ``convert``'s value."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return convert(text)


def warning_fields(m: re.Match[str], msg: str) -> dict[str, Any]:
    return {"text": msg[:500]}


# — rules every server's table can share: the shell, uvicorn, Python warnings, argparse ——
# (a dialect places them in its own table: the order of the ``contains`` rules decides.)
SHELL_JOB_KILLED = Rule("killed", r"(?:^\[\d+\][+-]?\s+|line \d+:\s+(?P<pid>\d+) )Killed\b(?P<rest>.*)",
                        contains=" Killed")
SHELL_KILLED = Rule("killed", r"Killed\b(?P<rest>.*)", starts="Killed")
UVICORN_STARTED = Rule("server_started", r"Started server process \[(?P<pid>\d+)\]", starts="Started server")
UVICORN_RUNNING = Rule("uvicorn_running", r"Uvicorn running on (?P<url>\S+)", starts="Uvicorn running")
UVICORN_ACCESS = Rule(
    "access_log",
    r"(?P<client>\S{1,256}) - \"(?P<method>[A-Z]{1,16}) (?P<path>\S{1,4096}) HTTP/[\d.]{1,8}\" (?P<status>\d{3})",
    contains='HTTP/')
UVICORN_SHUTTING_DOWN = Rule("shutdown", r"(?:Shutting down|Finished server process \[(?P<pid>\d+)\])",
                             starts="Shutting down")
UVICORN_FINISHED = Rule("shutdown", r"Finished server process \[(?P<pid>\d+)\]", starts="Finished server")
WARNING = Rule("warning", r"(?:WARNING|Warning: |warnings\.warn)", contains="arning", parse=warning_fields)
# argparse: "usage: prog [-h] …" then "prog: error: unrecognized arguments: --x"
ARGPARSE_USAGE = Rule("argparse_usage", r"usage: (?P<prog>\S+) \[", starts="usage: ")
ARGPARSE_ERROR = Rule("argparse_error", r"^(?:(?P<prog>[\w.-]{1,64}): )?error: (?P<error>.+)", contains="error: ")


# A line no rule knows that reports a failure: its level says so (logging's ERROR, glog's E/F),
# or its words do ("CUresult error", "Server warmup failed; aborting startup: …", "undefined
# symbol"). Such a line is kept as kind "error_line": the catalog's line patterns see every
# line anyway, but a failure announced only in words is never noise, and the traceback
# assembler reads it like a plain line (an exception line or a wrapped message may be one).
ERROR_LEVELS = frozenset({"ERROR", "FATAL", "CRITICAL"})
_FAILURE_WORDS = lazy(
    r"(?i:\berrors?\b|\bfail(?:ed|ure|s)?\b|\babort(?:ed|ing)?\b|\bfatal\b)|undefined symbol|"
    r"cannot open shared object")


class Tokenizer:
    """Applies a dialect's rule table to lines. Rules with ``starts`` are indexed by the
    first word of the literal so a line is tested only against rules that can match it."""

    def __init__(self, rules: tuple[Rule, ...]):
        self._by_word: dict[str, list[Rule]] = {}
        self._contains: list[Rule] = []
        # a rule's regex is compiled when a line first passes its literal test: a small log
        # reaches a handful of the ~120 (compiling them all cost ~18 ms of every start)
        self._compiled: dict[int, re.Pattern[str] | None] = {}  # id of a rule kept in the lists above
        for rule in rules:
            if rule.starts is not None:
                self._by_word.setdefault(_first_word(rule.starts), []).append(rule)
            else:
                self._contains.append(rule)

    def _regex(self, rule: Rule) -> re.Pattern[str] | None:
        try:
            return self._compiled[id(rule)]
        except KeyError:
            rx = self._compiled[id(rule)] = rule.compiled()
            return rx

    def tokenize(self, line: LogLine) -> Event:
        msg = line.message
        if msg:
            for rule in self._by_word.get(_first_word(msg), ()):
                if msg.startswith(rule.starts):  # type: ignore[arg-type]
                    event = _apply(rule, self._regex(rule), msg, line)
                    if event is not None:
                        return event
            for rule in self._contains:
                if rule.contains in msg:  # type: ignore[operator]
                    event = _apply(rule, self._regex(rule), msg, line)
                    if event is not None:
                        return event
        if line.level == "WARNING":
            return Event("warning", line, {"text": msg[:500]})
        if line.level in ERROR_LEVELS or (msg and _FAILURE_WORDS.search(msg)):
            return Event("error_line", line, {"text": msg[:500]})
        return Event("line", line)


def _first_word(text: str) -> str:
    end = text.find(" ")
    word = text if end < 0 else text[:end]
    return word.split("=", 1)[0] if "=" in word else word


def _apply(rule: Rule, rx: re.Pattern[str] | None, msg: str, line: LogLine) -> Event | None:
    if rx is None:
        return Event(rule.kind, line)
    m = rx.match(msg) if rule.starts is not None else rx.search(msg)
    if m is None:
        return None
    parse = rule.parse or groups
    return Event(rule.kind, line, parse(m, msg))
