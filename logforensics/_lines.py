"""Stage 2 — lines: decode raw bytes and split the prefixes real deployments put in front.

A line is never rejected: invalid UTF-8 is replaced, NUL bytes dropped, ANSI colour codes
stripped, and a carriage-return progress bar keeps only its last visible segment (what a
terminal would show). Then the wrapper prefix (docker compose, Ray, syslog) and the server's own
prefix (its dialect's ``ServerPrefix``), then the uvicorn / Python-logging / torch prefixes
are split off into fields, keeping the raw text for evidence.

The hot path uses the standard ``re`` module with anchored, linear expressions: it runs once
per line on files of gigabytes.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import NamedTuple

from ._lazyre import lazy
from ._sources import RawLine

_ANSI = lazy(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_RAY_REPEAT = lazy(r"\[repeated \d+x across cluster\]$")

# docker compose: "service-1  | msg" (name padded with spaces to a common width)
_DOCKER = lazy(r"([A-Za-z0-9][\w.-]{0,62}?)\s*\| ?")
# Ray: "(SGLangEngine pid=123, ip=10.0.0.1) msg", "(raylet) msg", "(head, rank=0, pid=8292) msg"; the ip
# may be a placeholder ("<ip-1>": a log redacted by logx share)
_RAY = lazy(r"\s*\((\w[\w-]*)(?:,? rank=\d+)?(?:,? pid=(\d+))?(?:, ip=[\w.:<>-]+)?\) ?")
# syslog / journald: "Mar 23 14:01:38 host prog[123]: msg" or ISO time
# (journald's short-iso and rsyslog print an offset: a "...Z" stamp is a container runtime's, below;
# a host name is letters, digits, dots and dashes: "ImportError: /x.so: undefined symbol" after a
# container's stamp is not a host "ImportError:" and a program "/x.so")
_SYSLOG = lazy(
    r"(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?[+-]\d\d:?\d\d)"
    r" ([\w.-]+) ([\w./-]+)(?:\[(\d+)\])?: "
)
# moreutils `ts` (its default format) or a terminal logger: "Mar 23 14:01:38 " and the line
_TS_STAMP = lazy(r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? ")
# the launchers of a multi-node job, each naming the task or host a line came from: Slurm's
# `srun --label` ("0: ", padded when there are ten tasks or more), pdsh / clush ("gpu-node-3: ",
# a lower-case host name with a digit, so "ValueError: " and "Qwen3: " are not one), Open MPI's `--tag-output`
# ("[1,0]<stdout>:"), `kubectl logs --prefix` ("[pod/sglang-0/server] "); and `cat -n`'s numbers
_SRUN = lazy(r" {0,4}(\d{1,5}): ")
_PDSH = lazy(r"([a-z][a-z0-9-]*\d[a-z0-9.-]*|\d{1,3}(?:\.\d{1,3}){3}): ")
_MPIRUN = lazy(r"\[(\d+,\d+)\]<std(?:out|err)>: ?")
_KUBECTL_PREFIX = lazy(r"\[(pod/[\w.-]+)/[\w.-]+\] ")
_CAT_N = lazy(r" *\d+\t")
_MAX_WRAPPERS = 3  # Ray inside docker compose behind kubectl's stamp: wrappers nest
# kubectl logs --timestamps / docker logs -t: "2026-03-23T14:01:38.123456789Z " before each line
_RFC3339 = lazy(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) ")
# Python logging default: "2025-03-27 21:33:31,320 - INFO - name: msg"
_PYLOG = lazy(
    r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[,.](\d{3}) - ([A-Z]+) - "
)
# torch / glog: "[rank1]:[W623 15:37:01.823833318 socket.cpp:460] msg"
# (the month is not zero-padded: "W623" is June 23; older builds print "[W CudaIPCTypes.cpp:16]")
# torch's logging without brackets: "[rank5]:W0215 12:25:06.525000 14707 torch/x.py:504] msg"
_TORCH = lazy(r"\[(rank\d+)\]:(?:\[([IWEF])(?:\d{3,4} [\d:.]+)? ?[^\]]*\]|"
              r"([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]\s]{1,300}\]) ?")
# glog (Mooncake, NIXL, C++ libraries): "E0612 14:05:26.176716 1192408 tcp_transport.cpp:136] msg"
_GLOG = lazy(r"([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]\s]{1,300}\] ?")
# uvicorn level prefix inside a message: "INFO:     Started server process [123]"
_LEVEL = lazy(r"(INFO|WARNING|ERROR|DEBUG|CRITICAL|TRACE):\s+")

# grep -n: the line's number in front of it, "123:" on a matched line and "123-" on a context
# line; over several files (or -r) the file's name before it, "server.log:123:" / "server.log-123-"
# (a name holds a letter, a dot or a slash: "45-2026-03-23 …" is line 45); "--" between groups
_GREP_N = lazy(r"(\d{1,9})[:-]")
_GREP_FILE_N = lazy(r"([\w./-]*?[A-Za-z_./][\w./-]*?)([:-])(\d{1,9})\2")
# what follows a clock's or a date's first field ("12:34:56", "03-23 14:01"): a real line, not grep's
_CLOCK_REST = lazy(r"\d\d[:.-]\d")
# what follows srun's label ("3: x") or the line of a compiler's "file.c:5:10: error": grep's too?
_LABEL_REST = lazy(r" [^ ]|\d+:")
_GREP_LEAD = 3  # lines before grep's first one: its command ("$ grep -n …"), a Markdown fence
_FENCES = ("```", "~~~")  # a Markdown fence around a paste
_GREP_FILES_KEPT = 1024  # files whose last line number is kept (memory stays flat)

_UVICORN_WIDTH = 10  # "INFO:     ", "ERROR:    ", "WARNING:  "
_TORCH_LEVEL = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}


class ServerPrefix(NamedTuple):
    """A server's own line prefix (a dialect's): ``pattern`` is matched at the message start
    (after any wrapper) and names its groups ``ts`` (the time), ``frac`` (its fraction of a
    second, optional), ``tags`` (the process/rank tags, optional) and ``level`` (optional);
    ``first`` holds the characters such a line can start with (a cheap test before the
    regex runs on every line); ``repeated``: the server prints its prefix again on every line
    of a multi-line record (vLLM's tracebacks), so such a line continues the record."""

    pattern: re.Pattern[str]
    first: str
    repeated: bool = False


class LogLine:
    """One decoded line. ``text`` is the visible line (after ANSI/CR clean-up, wrapper
    included) and is what evidence shows; ``message`` is what remains after every prefix.
    (Built per line read in full, so written out rather than a ``record``: see _record.py.)"""

    __slots__ = ("number", "offset", "text", "message", "ts", "tag", "wrapper", "level",
                 "truncated", "eol", "at_width")

    def __init__(self, number: int, offset: int, text: str, message: str, ts: str | None = None,
                 tag: str = "", wrapper: str = "", level: str | None = None,
                 truncated: bool = False, eol: bool = True, at_width: bool = False):
        self.number = number
        self.offset = offset
        self.text = text
        self.message = message
        self.ts = ts  # timestamp text as printed ("2026-03-23 14:01:38.123")
        self.tag = tag  # rank tag: "TP0", "DP1 TP3 EP3", "rank1", "" for launcher lines
        self.wrapper = wrapper  # "sglang" (docker), "SGLangEngine pid=123" (Ray), "host prog[1]" …
        self.level = level  # INFO/WARNING/… when the line carries one (uvicorn, logging)
        self.truncated = truncated  # cut at the line-length cap by the source
        self.eol = eol  # False when the input ended inside this line (no newline)
        self.at_width = at_width  # as long as the paste's widest lines: a terminal may have cut it there

    def __repr__(self) -> str:
        return f"LogLine({self.number}, {self.text!r})"

    def without_message(self) -> LogLine:
        """This line with an empty ``message`` (a traceback's first line, told apart from its header)."""
        return LogLine(self.number, self.offset, self.text, "", self.ts, self.tag, self.wrapper,
                       self.level, self.truncated, self.eol, self.at_width)

    @property
    def stream(self) -> str:
        """Key of the process that wrote the line: wrapper + rank tag."""
        return f"{self.wrapper}|{self.tag}" if self.wrapper else self.tag

    @property
    def time(self) -> datetime | None:
        return parse_timestamp(self.ts)


def parse_timestamp(ts: str | None, default_year: int | None = None) -> datetime | None:
    """Parse a prefix timestamp; ``mm-dd`` short forms get ``default_year`` (or the current
    year). Returns a naive datetime in the log's own clock."""
    if not ts:
        return None
    try:
        if len(ts) >= 19 and ts[4] == "-":
            return datetime.fromisoformat(ts.replace(",", "."))
        year = default_year or datetime.now().year
        return datetime.fromisoformat(f"{year}-{ts}".replace(",", "."))
    except ValueError:
        return None


_GLOG_STAMP = lazy(r"(?:^|[\[:\s])([IWEF])(\d{1,2})(\d\d) (\d\d:\d\d:\d\d(?:\.\d{1,6})?)")


def glog_timestamp(text: str, year: int | None) -> str | None:
    """The time in a torch/glog prefix ("[rank3]:[E1120 14:15:30.000123…", "W0215 12:25:06.5…"),
    which has no year, as ``YYYY-MM-DD HH:MM:SS`` in ``year`` (``MM-DD HH:MM:SS`` without one, as
    vLLM prints its own); None without one. (Kept out of ``LogLine.ts``, which holds only what a
    line prints.)"""
    m = _GLOG_STAMP.search(text, 0, 120)  # in the prefix, after a wrapper's if any
    if m is None or not 1 <= int(m.group(2)) <= 12:
        return None
    day = f"{int(m.group(2)):02d}-{m.group(3)} {m.group(4)[:8]}"  # whole seconds, as SGLang prints
    return f"{year}-{day}" if year else day


def printed_year(ts: str | None) -> int | None:
    """The year a prefix timestamp prints; None for the short ``mm-dd`` form (vLLM's), whose
    year ``parse_timestamp`` can only guess."""
    parsed = parse_timestamp(ts) if ts and len(ts) >= 19 and ts[4] == "-" else None
    return parsed.year if parsed else None


def visible_text(data: bytes) -> str:
    """Decode bytes the way a terminal would show them."""
    text = data.decode("utf-8", "replace")
    if "\r" in text:
        text = text.rstrip("\r")
        if "\r" in text:
            parts = [p for p in text.split("\r") if p.strip()]
            text = parts[-1] if parts else ""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


class PasteWidth:
    """The width a paste was cut at: a log copied from a terminal (or ``cut -c``) has its long
    lines all cut at one length. Once ``MIN_LINES`` different lines have the longest length seen
    (at least ``MIN_WIDTH`` columns), a line of that length may have lost its end."""

    MIN_LINES = 3
    MIN_WIDTH = 60

    def __init__(self) -> None:
        self.width = 0
        self._seen: set[int] = set()  # hashes of the different lines at that width (up to MIN_LINES)

    def at_width(self, text: str) -> bool:
        n = len(text)
        if n < self.width or n < self.MIN_WIDTH:
            return False
        if n > self.width:
            self.width, self._seen = n, {hash(text)}
            return False
        seen = self._seen
        if len(seen) < self.MIN_LINES:
            seen.add(hash(text))
        return len(seen) >= self.MIN_LINES

    def final(self) -> int:
        """The width the whole paste was cut at, read at its end (0: none): the first lines of
        a short paste come before enough others show it, so two different lines at the widest
        length are evidence enough then."""
        return self.width if len(self._seen) >= 2 else 0


class GrepNumbers:
    """``grep -n``'s numbers in front of a paste's lines, read from the whole paste's evidence,
    not line by line: a log's own line may start with digits and a colon (a clock's "12:34:56",
    srun's label "3: …", a compiler's "x.c:5:10: error"). The paste is grep's when its first line
    (after grep's command or a Markdown fence, if any) carries a number whose rest is not a
    clock's; when the rest may be an srun label's or a column ("3: x", grep's line 3 or srun's
    task 3), the next line decides (``settle``): grep's number there is greater. The paste stays
    grep's while every line carries one greater than the last of its file (blank lines and
    grep's "--" between groups aside); one line that does not ends it, for good: what was a
    number from there on is the line's own text."""

    def __init__(self) -> None:
        self.on: bool | None = None  # None: not decided yet
        self.files: bool = False  # "file:123:" (several files) rather than "123:"
        self._lead = 0  # lines seen before the decision
        self._last: dict[str, int] = {}  # file ("" for one file) -> its last line number

    def read(self, text: str) -> tuple[int, str]:
        """Where ``text``'s own line starts behind grep's number (0: it has none) and the
        file grep names ("" for one file); the paste's evidence so far is updated."""
        on = self.on
        if on is False or not text or text == "--":
            return 0, ""
        found = self._match(text, self.files) if on else self._first(text, label=False)
        if found is None:
            if on:
                self.on = False
            else:
                self._lead += 1
                if self._lead > _GREP_LEAD or not (text.startswith(_FENCES) or "grep" in text):
                    self.on = False
            return 0, ""
        end, file, number = found
        last = self._last
        if number <= last.get(file, 0):
            self.on = False
            return 0, ""
        self.on = True
        if len(last) >= _GREP_FILES_KEPT and file not in last:
            last.clear()
        last[file] = number
        return end, file

    def peek(self, text: str) -> tuple[int, str]:
        """``read`` for a line alone (a template of the statistics fast path, a line read
        again): the evidence is not updated; before the decision, the line is read as grep's
        first would be."""
        if self.on is False or not text or text == "--":
            return 0, ""
        found = self._match(text, self.files) if self.on else self._first(text, label=False, decide=False)
        return (found[0], found[1]) if found else (0, "")

    def undecided(self, text: str) -> bool:
        """Whether ``text``, read before the decision, is grep's line N or srun's task N: the
        next line decides (``settle``)."""
        return self.on is None and self._first(text, label=True, decide=False) is not None \
            and self._first(text, label=False, decide=False) is None

    def settle(self, first: str, second: str) -> None:
        """Decide on an ``undecided`` first line by the one after it: grep's when that one
        carries a greater number."""
        found = self._first(first, label=True)
        after = self._match(second, self.files) if found and second else None
        if found is None or after is None or after[2] <= found[2] or after[1] != found[1]:
            self.on = False
        else:
            self.on = True

    def _first(self, text: str, label: bool, decide: bool = True) -> tuple[int, str, int] | None:
        """A number that may begin a grep paste (``label``: even when its rest is an srun
        label's), and its form; None for none, or a clock's."""
        for files in (False, True):
            found = self._match(text, files)
            if found is not None:
                rest = text[found[0]:]
                if _CLOCK_REST.match(rest) or (not label and _LABEL_REST.match(rest)):
                    return None
                if decide:
                    self.files = files
                return found
        return None

    @staticmethod
    def _match(text: str, files: bool) -> tuple[int, str, int] | None:
        if files:
            m = _GREP_FILE_N.match(text)
            return (m.end(), m.group(1), int(m.group(3))) if m else None
        m = _GREP_N.match(text) if text[:1].isdigit() else None
        return (m.end(), "", int(m.group(1))) if m else None


def decode(raw: RawLine, prefix: ServerPrefix, grep: GrepNumbers | None = None, *,
           alone: bool = False) -> LogLine:
    """Turn a ``RawLine`` into a ``LogLine`` with prefixes split off (``prefix``: the server's;
    ``grep``: the paste's evidence of ``grep -n``, which the line adds to unless it is read
    ``alone``: again, or as a template)."""
    text = visible_text(raw.data)
    line = LogLine(raw.number, raw.offset, text, text, truncated=raw.truncated, eol=raw.eol)
    if grep is None:
        split_prefixes(line, prefix)
    else:
        split_prefixes(line, prefix, *(grep.peek(text) if alone else grep.read(text)))
    return line


def _strip_wrapper(msg: str) -> tuple[str | None, str]:
    """The line after its outermost wrapper prefix and the wrapper's name ("" for a bare time
    stamp), or ``(None, "")`` when it starts with none."""
    first = msg[:1]
    if first == "[":
        m = _KUBECTL_PREFIX.match(msg) if msg.startswith("[pod/") else _MPIRUN.match(msg)
        return (msg[m.end() :], m.group(1)) if m else (None, "")
    if first.isdigit() or first == " ":
        m = _SRUN.match(msg)
        if m:
            return msg[m.end() :], f"task {m.group(1)}"
        m = _CAT_N.match(msg) if "\t" in msg[:12] else None
        if m:
            return msg[m.end() :], ""
    if first == "(" or (first == " " and msg.lstrip().startswith("(")):
        m = _RAY.match(msg)
        if m is None:
            return None, ""
        actor, pid = m.group(1), m.group(2)
        rest = msg[m.end() :]
        if rest.endswith("across cluster]"):
            r = _RAY_REPEAT.search(rest)
            if r:
                rest = rest[: r.start()].rstrip()
        return rest, f"{actor} pid={pid}" if pid else actor
    if not first.isalnum():
        return None, ""
    if "|" in msg[:72]:
        m = _DOCKER.match(msg)
        if m and m.group(1) and not m.group(1).isdigit():
            return msg[m.end() :], m.group(1)
    colon = msg.find(": ", 0, 120)
    if colon > 0 and msg[colon - 1].isdigit():
        m = _PDSH.match(msg)
        if m and m.end() == colon + 2:
            return msg[m.end() :], m.group(1)
    # syslog (also when its message has a "|", e.g. a tqdm bar); ISO stamps start with a digit
    m = _SYSLOG.match(msg) if colon >= 0 else None
    if m and (m.group(3) or not msg.startswith("error: ", m.end())):  # argparse's "prog: error:"
        host, prog, pid = m.group(1), m.group(2), m.group(3)
        return msg[m.end() :], f"{host} {prog}[{pid}]" if pid else f"{host} {prog}"
    if len(msg) > 20 and msg[10] == "T":
        m = _RFC3339.match(msg)
        if m:  # the container runtime's own stamp: the line proper follows
            return msg[m.end() :], ""
    elif first.isupper() and len(msg) > 16 and msg[3] == " ":
        m = _TS_STAMP.match(msg)
        if m:
            return msg[m.end() :], ""
    return None, ""


def _may_wrap_indented(msg: str) -> bool:
    """An indented line that may start with a wrapper (Ray's, srun's padded label, cat -n's)."""
    rest = msg.lstrip(" ")
    return rest[:1] == "(" or (rest[:1].isdigit() and len(msg) - len(rest) <= 6)


def _may_wrap_bracket(msg: str) -> bool:
    """A "[" line that is a launcher's tag, not a server's "[2026-03-23 14:01:38 TP0]"."""
    return msg.startswith("[pod/") or "]<std" in msg[:24]


def _unwrap(msg: str) -> tuple[str, list[str]]:
    """The line behind its wrappers (outermost first, at most ``_MAX_WRAPPERS``) and the names
    of those that name a process."""
    names: list[str] = []
    for _ in range(_MAX_WRAPPERS):
        c = msg[:1]
        if not (c == "(" or c.isalnum() or (c == " " and _may_wrap_indented(msg))
                or (c == "[" and _may_wrap_bracket(msg))):
            break
        rest, name = _strip_wrapper(msg)
        if rest is None:
            break
        msg = rest
        if name:
            names.append(name)
    return msg, names


def without_wrappers(text: str, grep: GrepNumbers | None = None) -> str:
    """A visible line without the wrappers in front of it (what the server printed); ``grep``:
    the paste's evidence of ``grep -n``, which the line adds to."""
    start = grep.read(text)[0] if grep is not None else 0
    return _unwrap(text[start:] if start else text)[0]


def split_prefixes(line: LogLine, prefix: ServerPrefix, start: int = 0, file: str = "") -> None:
    """Fill ``wrapper``, ``ts``, ``tag``, ``level`` and ``message`` of ``line`` in place;
    ``start``: where the line begins behind grep's number, ``file``: the file grep names."""
    msg = line.text
    if start:
        msg = line.message = msg[start:]
        if file:
            line.wrapper = file
    if not msg:
        return
    c = msg[0]
    # cheap tests first: a server's "[2026-… TP0]" line and a traceback's indented one have none
    if c == "[":
        may_wrap = msg[1:2] == "p" or "," in msg[2:5]  # "[pod/…/…]", "[1,0]<stdout>:"
    elif c == " ":
        rest = msg.lstrip(" ")
        may_wrap = rest[:1] == "(" or (rest[:1].isdigit() and len(msg) - len(rest) <= 6)
    else:
        may_wrap = True
    if may_wrap:
        # Wrappers first: they stand in front of everything else, and may stand in front of
        # each other (a Ray actor's line through docker compose).
        msg, names = _unwrap(msg)
        if names:
            line.wrapper = " > ".join([file, *names] if file else names)
    if msg:
        c = msg[0]
        m = prefix.pattern.match(msg) if c in prefix.first else None
        if m:
            groups = m.groupdict()
            frac = groups.get("frac")
            line.ts = groups["ts"] if frac is None else f"{groups['ts']}.{frac}"
            tags = groups.get("tags")
            if tags:
                line.tag = tags.strip()
            if groups.get("level"):
                line.level = groups["level"]
            msg = msg[m.end() :]
        elif c.isdigit():
            m = _PYLOG.match(msg)
            if m:
                line.ts = f"{m.group(1)}.{m.group(2)}"
                line.level = m.group(3)
                msg = msg[m.end() :]
        elif msg.startswith("[rank"):
            m = _TORCH.match(msg)
            if m:
                line.tag = m.group(1)
                line.level = _TORCH_LEVEL[m.group(2) or m.group(3)]
                msg = msg[m.end() :]
        if msg and msg[0] in "IWEF" and msg[1:5].isdigit():
            m = _GLOG.match(msg)
            if m:
                line.level = _TORCH_LEVEL[m.group(1)]
                msg = msg[m.end() :]
        if msg and msg[0] in "IWEDCT" and ":" in msg[:9]:
            m = _LEVEL.match(msg)
            if m:
                line.level = m.group(1)
                # uvicorn pads "LEVEL:" to 10 columns; logging's "LEVEL: msg" has one space,
                # and the message keeps its own indentation (a traceback logged line by line)
                end = m.end()
                if end != _UVICORN_WIDTH and end > len(m.group(1)) + 2:
                    end = len(m.group(1)) + 2
                msg = msg[end:]
    line.message = msg
