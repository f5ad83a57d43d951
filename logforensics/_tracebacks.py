"""Stage 4 — tracebacks: assemble Python tracebacks (and C++ ``what():`` aborts) from lines.

One state machine per process stream (wrapper + rank tag), because ranks interleave in one
file. SGLang writes a traceback as one log record: the header rides on a prefixed line
(``[… TP0] Scheduler hit an exception: Traceback (most recent call last):``) and the rest
follows on unprefixed lines, so an unprefixed line belongs to the stream that wrote the last
prefixed line of the same wrapper.

Real logs are cut: the person ran ``tail -5`` (no header), the message ends at the screen
edge or in ``...``, frames are elided, input ends mid-traceback. A traceback is never dropped;
it records what is missing (``head_missing``, ``message_missing``, ``message_truncated``,
``frames_cut``). It is emitted as soon as it is known complete — the next line of the same
process that is not part of it — and at end of input.
"""

from __future__ import annotations

import copy

from ._lazyre import lazy
from ._lines import LogLine
from ._record import field, record

MAX_FRAMES_KEPT = 40  # per end (first N and last N frames of a segment are kept)
MAX_MESSAGE_LINES = 60
MAX_MESSAGE_CHARS = 8000
MAX_EVIDENCE_LINES = 24  # per end
MAX_SEGMENTS = 16

_HEADER = "Traceback (most recent call last):"
# Every expression here is linear on hostile lines: no two adjacent parts can match the same
# characters (``.+?\s*$`` or ``-+[+-]*`` would be quadratic on a long run of spaces or dashes).
_FRAME = lazy(r"\s*File [\"\u201c]([^\"\u201d]+)[\"\u201d], line (\d+)(?:, in (.+))?$")
# The same line cut at the screen's edge: 'File "/usr/local/lib/python3.11/dist-packages/sgl'
_CUT_FRAME = lazy(
    r"\s*File [\"\u201c]([^\"\u201d]+)(?:[\"\u201d](?:, line (\d+)(?:, in (.*))?|,[^\"\u201d]*)?)?$")
MIN_CUT_WIDTH_LINES = 3  # lines of a traceback at its widest length that show a paste's width
WRAP_MIN_WIDTH = 60  # a line this long that is the traceback's widest may go on, hard-wrapped
_CARET = lazy(r"\s*[\^~]+\s*$")
_CHAIN = (
    "During handling of the above exception, another exception occurred",
    "The above exception was the direct cause of the following exception",
)
_EXC = lazy(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:: ?(.*))?$")
_EXC_REPR = lazy(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:Error|Exception))\((.*)\)$")
_EXC_NAME = lazy(
    r"(?:Error|Exception|Exit|Interrupt|Warning|Iteration|Fault|Failure|Timeout|"
    r"OutOfResources|Abort\w*|Group)$"
)
_WHAT = lazy(r"\s*what\(\):\s+(.*)")
_NATIVE_HEAD = lazy(r"terminate called after throwing an instance of '([^']+)'")
_NATIVE_FRAME = lazy(r"\s*(?:frame #\d+: |Exception raised from |\(no backtrace available\))")
_GROUP_PREFIX = lazy(r"\s*(?:\+[-+]*|\|)(?: |$)")
_GROUP_SEPARATOR = lazy(r"\s*\+?-[-+]*(?: [\d.]+ -+| \.\.\.)?\s*$")
_ELLIPSIS = lazy(r"\s*(?:\.\.\.|\u2026)")
# CPython's own elision of a frame repeated more than 3 times (recursion): nothing is missing
_REPEATED = lazy(r"\s*\[Previous line repeated \d+ more times?\]\s*$")
_TERMINAL_PUNCT = tuple(".!?)]}'\">`")

# Event kinds the assembler may fold into a traceback (a message line, a headless start).
PLAIN_KINDS = frozenset({"line", "warning", "error_line"})
# Event kinds that are never part of a traceback message: they end it.
_FENCES = ("```", "~~~")  # a log pasted into an issue sits between Markdown code fences
_ENDING_KINDS = frozenset({
    "killed", "exit_code", "sigquit_child", "sigquit_running", "sigterm", "rank_dead",
    "subprocess_crashed", "kill_process_tree", "server_args", "ready", "server_started",
    "component_exception", "launch_command", "watchdog_timeout", "warmup_failed",
})


@record(slots=True, eq=False)
class Frame:
    file: str
    line: int | None
    function: str | None
    source: str | None = None

    @property
    def location(self) -> str:
        """``file:function`` — what catalog ``frame`` regexes are matched against."""
        return f"{self.file}:{self.function or ''}"

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "function": self.function,
                "source": self.source}


@record(slots=True, eq=False)
class ExceptionInfo:
    """One exception of a (possibly chained) traceback."""

    type: str | None = None  # dotted name as printed, e.g. "torch.OutOfMemoryError"
    message: str = ""
    frames: list[Frame] = field(default_factory=list)
    frames_elided: int = 0
    native: bool = False  # a C++ exception (``what():``), type is the C++ type if known
    chain: str | None = None  # how it relates to the previous one: "context" | "cause"
    head_width: int = 0  # the width of the line that printed its type (a paste's width cuts it)
    head_cut: bool = False  # that line was cut at the paste's width: the message's first line is a prefix

    @property
    def short_type(self) -> str | None:
        return self.type.rsplit(".", 1)[-1] if self.type else None

    def to_dict(self) -> dict:
        return {"type": self.type, "message": self.message, "native": self.native,
                "chain": self.chain, "frames": [f.to_dict() for f in self.frames],
                "frames_elided": self.frames_elided}


@record(slots=True, eq=False)
class Traceback:
    """An assembled traceback. ``exceptions`` is the chain in printed order; the last one
    with a type is what was finally raised."""

    stream: str
    tag: str
    wrapper: str
    first_line: int
    last_line: int = 0
    context: str = ""  # text before the header: "Scheduler hit an exception"
    ts: str | None = None
    exceptions: list[ExceptionInfo] = field(default_factory=list)
    head_missing: bool = False
    message_missing: bool = False
    message_truncated: bool = False
    frames_cut: bool = False
    ends_input: bool = False  # nothing followed it: a cut message may go on past the paste
    lines: list[tuple[int, str]] = field(default_factory=list)  # evidence (capped)
    lines_elided: int = 0

    @property
    def final(self) -> ExceptionInfo:
        for exc in reversed(self.exceptions):
            if exc.type:
                return exc
        return self.exceptions[-1] if self.exceptions else ExceptionInfo()

    @property
    def cause(self) -> ExceptionInfo:
        """The exception of the chain that says what went wrong: the final one, unless it only
        wraps the one before it — no message of its own, or that one's message repeated in
        it (``raise OSError(f"{e}") from e``) — then, the same way, the one before."""
        typed = [e for e in self.exceptions if e.type]
        if not typed:
            return self.final
        found = typed[-1]
        for inner in reversed(typed[:-1]):
            if not _wraps(found, inner):
                break
            found = inner
        return found

    @property
    def may_be_cut(self) -> bool:
        """Whether the final message may go on past what the log shows: cut (``...``, at the
        line cap or the paste's width), or at the end of the input without a sentence's end."""
        return self.message_truncated or (self.ends_input and not self.message.rstrip().endswith(_TERMINAL_PUNCT))

    @property
    def exc_type(self) -> str | None:
        return self.final.type

    @property
    def message(self) -> str:
        return self.final.message

    @property
    def frames(self) -> list[Frame]:
        final = self.final
        if final.frames:
            return final.frames
        for exc in reversed(self.exceptions):
            if exc.frames:
                return exc.frames
        return []

    @property
    def raising_frame(self) -> Frame | None:
        frames = self.frames
        return frames[-1] if frames else None

    @property
    def signature(self) -> tuple:
        """What makes two tracebacks the same failure (ranks of one launch print the same
        one): the final exception's type and message and the frames it was raised through."""
        return (self.exc_type, self.message,
                tuple((f.file, f.line, f.function) for f in self.frames))

    @property
    def missing(self) -> list[str]:
        names = ("head_missing", "message_missing", "message_truncated", "frames_cut")
        return [n for n in names if getattr(self, n)]

    def to_dict(self) -> dict:
        return {
            "stream": self.stream, "first_line": self.first_line, "last_line": self.last_line,
            "context": self.context, "type": self.exc_type, "message": self.message,
            "missing": self.missing, "exceptions": [e.to_dict() for e in self.exceptions],
            "lines_elided": self.lines_elided,
        }


MIN_WRAPPED_CHARS = 8  # a shorter inner message is too common to prove the outer repeats it
_SPACE = lazy(r"\s+")


def _wraps(outer: ExceptionInfo, inner: ExceptionInfo) -> bool:
    """Whether ``outer`` only re-raises ``inner``: it adds no message, or quotes inner's."""
    said = _SPACE.sub("", outer.message)
    if not said or said == inner.short_type:
        return True
    quoted = _SPACE.sub("", inner.message.split("\n", 1)[0])[:200]
    return len(quoted) >= MIN_WRAPPED_CHARS and quoted in said


class _Builder:
    """Mutable state of one traceback being read."""

    __slots__ = ("tb", "phase", "current", "tail", "record_level", "widest", "at_widest", "wrapped",
                 "frame_text")

    def __init__(self, line: LogLine, stream: str, head: bool, context: str = ""):
        self.tb = Traceback(stream=stream, tag=line.tag, wrapper=line.wrapper,
                            first_line=line.number, context=context, ts=line.ts,
                            head_missing=not head)
        self.current = ExceptionInfo()
        self.tb.exceptions.append(self.current)
        self.phase = "frames"  # frames | message | blank
        self.tail: list[Frame] = []  # last frames when the middle is elided
        # A logger that prefixes every line of the traceback ("[ts] ERROR: Traceback …",
        # "[ts] ERROR:   File …"): the level of those records, else None
        self.record_level: str | None = None
        # the widest line so far and how many lines have that width: a paste copied from a
        # terminal has its long lines all cut at the same width
        self.widest = self.at_widest = 0
        self.wrapped = ""  # the last line kept may have been hard-wrapped (see keep)
        self.frame_text: str | None = None  # the last frame line, while it is the last line read

    # — evidence —
    def keep(self, line: LogLine) -> None:
        tb = self.tb
        tb.last_line = line.number
        width = len(line.text)
        # as wide as the paste ("paste"), or the widest line of this traceback so far ("widest"):
        # a hard wrap may have put its rest on the next line
        self.wrapped = "paste" if line.at_width else \
            "widest" if width >= WRAP_MIN_WIDTH and width >= self.widest else ""
        if self.phase == "message" and self.current.type and not self.current.head_width:
            self.current.head_width = width
        if width > self.widest:
            self.widest, self.at_widest = width, 1
        elif width == self.widest:
            self.at_widest += 1
        if len(tb.lines) < 2 * MAX_EVIDENCE_LINES:
            tb.lines.append((line.number, line.text))
        else:
            tb.lines_elided += 1
            tb.lines[MAX_EVIDENCE_LINES:] = tb.lines[MAX_EVIDENCE_LINES + 1 :] + [
                (line.number, line.text)
            ]

    # — structure —
    def add_frame(self, frame: Frame) -> None:
        exc = self.current
        if len(exc.frames) < 2 * MAX_FRAMES_KEPT:
            exc.frames.append(frame)
        else:
            exc.frames_elided += 1
            del exc.frames[MAX_FRAMES_KEPT]
            exc.frames.append(frame)

    def join_wrapped(self, rest: str) -> None:
        """``rest``, the part of the line above that a hard wrap put on its own line, joined
        back: to the frame line (its file, number and function read again) or the source line."""
        frames = self.current.frames
        if not frames:
            return
        if self.frame_text is not None:
            self.frame_text += rest
            m = _FRAME.match(self.frame_text) or _CUT_FRAME.match(self.frame_text)
            if m:
                function = m.group(3).rstrip() if m.group(3) else None
                frames[-1] = Frame(m.group(1), int(m.group(2)) if m.group(2) else None, function or None)
        elif frames[-1].source is not None:
            frames[-1].source += rest

    def new_segment(self, chain: str | None) -> None:
        if len(self.tb.exceptions) >= MAX_SEGMENTS:
            # Keep the first and the latest segments; deep chains are rare and the root
            # cause is usually at one end.
            del self.tb.exceptions[1]
        self.current = ExceptionInfo(chain=chain)
        self.tb.exceptions.append(self.current)
        self.phase = "frames"

    def set_exception(self, exc_type: str, message: str, native: bool = False) -> None:
        if self.current.type is not None:
            self.new_segment("context")
        self.current.type = exc_type
        self.current.message = message
        self.current.native = native
        self.phase = "message"

    def add_message_line(self, text: str) -> bool:
        exc = self.current
        if exc.message.count("\n") >= MAX_MESSAGE_LINES or len(exc.message) > MAX_MESSAGE_CHARS:
            return False
        exc.message = f"{exc.message}\n{text}" if exc.message else text
        return True

    def finish(self, at_eof: bool, last_cut: bool = False) -> Traceback:
        tb = self.tb
        tb.ends_input = at_eof
        final = tb.final
        if final.type is None:
            tb.message_missing = True
            tb.frames_cut = tb.frames_cut or bool(final.frames)
        msg = final.message.rstrip()
        cut_at_end = last_cut and self.phase == "message" and not msg.endswith(_TERMINAL_PUNCT)
        # an exception line as wide as several others, the widest, was cut at the paste's width
        for exc in tb.exceptions:
            exc.head_cut = self.at_widest >= MIN_CUT_WIDTH_LINES and exc.head_width == self.widest
        if msg.endswith(("...", "\u2026")) or cut_at_end or (final.head_cut and "\n" not in final.message):
            tb.message_truncated = True
        for exc in tb.exceptions:
            exc.message = exc.message.rstrip()
        return tb


def classify_exception_line(text: str, strict: bool) -> tuple[str, str] | None:
    """``(type, message)`` if ``text`` reads as the last line of a traceback. ``strict``
    (used when no header or frame came first) also requires an exception-like name."""
    if not text:
        return None
    if text[0].isspace():
        # A paste that shifted the exception line by one space (" ValueError: …"); source
        # lines are indented further, and the name must read as an exception's.
        if len(text) < 2 or text[1].isspace():
            return None
        text = text[1:]
        m = _EXC.match(text)
        if m is None or not _EXC_NAME.search(m.group(1).rsplit(".", 1)[-1]):
            return None
    m = _EXC.match(text)
    if m:
        exc_type, message = m.group(1), m.group(2) or ""
        last = exc_type.rsplit(".", 1)[-1]
        if m.group(2) is None and ":" not in text and not _EXC_NAME.search(last):
            return None  # a bare word is not an exception unless it is named like one
        if strict and not (_EXC_NAME.search(last) or "error" in exc_type.lower()):
            return None
        if not strict and not (_EXC_NAME.search(last) or "." in exc_type or last[0].isupper()):
            return None
        return exc_type, message
    m = _EXC_REPR.match(text)
    if m:
        return m.group(1), m.group(2).strip("'\"")
    return None


# Lines of other streams after which a traceback that printed its exception is over (ranks'
# tracebacks interleave, and a message's later lines come within a few dozen of its first).
IDLE_LINES = 1000


class TracebackAssembler:
    """Feed it every line (with its event's kind); it returns the tracebacks each line completes."""

    def __init__(self, repeated_prefix: bool = False) -> None:
        """``repeated_prefix``: the server repeats its prefix on every line of a record (vLLM),
        so a prefixed line of the same time stamp may continue the stream's traceback."""
        self._repeated_prefix = repeated_prefix
        self._open: dict[str, _Builder] = {}
        self._current: dict[str, str] = {}  # wrapper -> stream of its last prefixed line
        self._last_cut = False

    @property
    def has_open(self) -> bool:
        """Whether a traceback is being read (then every line matters)."""
        return bool(self._open)

    def feed(self, line: LogLine, kind: str, repeated_prefix: bool | None = None) -> tuple[bool, list[Traceback]]:
        """Process one line. Returns ``(consumed, completed)``: whether the line became part
        of a traceback, and the tracebacks known complete after it. ``repeated_prefix``: this
        line's server repeats its prefix (a mixed file's other server; None: the assembler's)."""
        done: list[Traceback] = []
        if self._open:
            self._end_idle(line.number, done)
        repeated = self._repeated_prefix if repeated_prefix is None else repeated_prefix
        self._last_cut = line.truncated or not line.eol
        msg = line.message
        if is_record_start(line):
            stream = line.stream
            open_here = self._open.get(stream)
            if (repeated and open_here is not None and line.ts == open_here.tb.ts
                    and self._continue(open_here, line, kind)):
                open_here.keep(line)
                return True, done
            self._current[line.wrapper] = stream
            builder = self._open.get(stream)
            if builder is not None and builder.record_level is not None \
                    and builder.record_level == line.level \
                    and self._continue(builder, line, kind):
                builder.keep(line)  # the next line of a traceback logged line by line
                return True, done
            # A new record ends this stream's traceback, and any traceback of the same
            # wrapper that already reached its message (its record is over).
            for key in [k for k, b in self._open.items()
                        if k == stream or (b.tb.wrapper == line.wrapper and b.phase != "frames")]:
                done.append(self._open.pop(key).finish(at_eof=False))
            if _HEADER in msg:
                self._open_with_header(line, stream, msg)
                return True, done
            # A prefixed line can carry a traceback's first line when a paste lost the rest.
            return self._start_headless(line, stream, msg), done
        stream = self._current.get(line.wrapper, line.stream)
        builder = self._open.get(stream)
        if builder is not None:
            if self._continue(builder, line, kind):
                builder.keep(line)
                return True, done
            done.append(self._open.pop(stream).finish(at_eof=False))
        if _HEADER in msg and not msg.lstrip().startswith(("|", "+")):
            self._open_with_header(line, stream, msg)
            return True, done
        if kind not in PLAIN_KINDS:
            return False, done
        return self._start_headless(line, stream, msg), done

    def _end_idle(self, number: int, done: list[Traceback]) -> None:
        """End each traceback that printed its exception and then nothing for ``IDLE_LINES``
        lines: its process died or went on with no record of its own (vLLM's workers, a rank
        whose stream never writes again), and an open traceback makes every later line be read
        in full."""
        for key in [k for k, b in self._open.items()
                    if b.phase != "frames" and number - b.tb.last_line > IDLE_LINES]:
            done.append(self._open.pop(key).finish(at_eof=False))

    def _open_with_header(self, line: LogLine, stream: str, msg: str) -> None:
        """Open a traceback at its ``Traceback (most recent call last):`` line; the text
        before it ("Scheduler hit an exception:") is its context."""
        before = msg[: msg.find(_HEADER)]
        group = before.rstrip().endswith("Exception Group")
        if group:
            before = before.rstrip()[: -len("Exception Group")].rstrip().rstrip("+").rstrip()
        builder = _Builder(line, stream, head=True, context=before.strip().rstrip(":").strip())
        if line.level and not before.strip() and is_record_start(line):
            builder.record_level = line.level
        builder.keep(line)
        self._open[stream] = builder

    def _start_headless(self, line: LogLine, stream: str, text: str) -> bool:
        """Open a traceback whose header is missing, if ``text`` looks like its inside."""
        if not text:
            return False
        if text.lstrip().startswith("+ Exception Group Traceback"):
            builder = _Builder(line, stream, head=True)
        elif _NATIVE_HEAD.search(text):
            builder = _Builder(line, stream, head=True)  # a C++ abort's own head
        elif _FRAME.match(text) or _WHAT.match(text):
            builder = _Builder(line, stream, head=False)
        elif _CARET.match(text):
            builder = _Builder(line, stream, head=False)
            builder.tb.frames_cut = True
            if line.level and is_record_start(line):
                builder.record_level = line.level
            builder.keep(line)
            self._open[stream] = builder
            return True
        elif classify_exception_line(text, strict=True):
            builder = _Builder(line, stream, head=False)
            builder.tb.frames_cut = True
        else:
            return False
        if line.level and is_record_start(line):
            builder.record_level = line.level  # a traceback logged line by line, its head cut off
        self._open[stream] = builder
        if not self._continue(builder, line, None, text):
            del self._open[stream]
            return False
        builder.keep(line)
        return True

    def _continue(self, b: _Builder, line: LogLine, kind: str | None,
                  text: str | None = None) -> bool:
        """Try to add ``line`` to the traceback; False means the line is not part of it."""
        text = line.message if text is None else text
        wrapped_frame, b.frame_text = b.frame_text, None  # the line above, if it was a frame line
        if kind is not None and kind in _ENDING_KINDS:
            return False
        if text[:3] in _FENCES:
            return False  # a Markdown code fence: the paste's log ends (or starts) here
        if text.lstrip(" ")[:1] in ("|", "+") and _GROUP_PREFIX.match(text):  # any nesting depth
            if _GROUP_SEPARATOR.match(text):
                # "+---------------- 2 ----------------": the next sub-exception of a group;
                # "+------------------------------------" closes one (no segment follows)
                numbered = any(ch.isdigit() for ch in text) or "..." in text
                if numbered and (b.current.type is not None or b.current.frames):
                    b.new_segment("group")
                return True
            text = _GROUP_PREFIX.sub("", text, count=1)
            while text.startswith(("| ", "|", "+-")) and _GROUP_PREFIX.match(text):
                text = _GROUP_PREFIX.sub("", text, count=1)
        stripped = text.strip()
        current = b.current
        empty = current.type is None and not current.frames
        if stripped.endswith(_HEADER):
            if empty:
                return True  # the header of this (chained or grouped) segment
            if current.type is not None:
                return False  # an unchained traceback follows: Python prints a marker between chained ones
            b.new_segment("context")
            return True
        if stripped.startswith(_CHAIN):
            b.new_segment("cause" if stripped.startswith(_CHAIN[1]) else "context")
            b.phase = "blank"  # a header follows
            return True
        m = _FRAME.match(text) or _CUT_FRAME.match(text)
        if m:
            if b.phase == "message":
                return False  # a second, unchained traceback: a new one starts here
            b.phase = "frames"
            function = m.group(3).rstrip() if m.group(3) else None
            b.add_frame(Frame(m.group(1), int(m.group(2)) if m.group(2) else None, function or None))
            b.frame_text = text
            return True
        m = _NATIVE_HEAD.search(text)
        if m:
            if current.type is not None:
                return False
            current.type = m.group(1)
            current.native = True
            b.phase = "frames"
            return True
        m = _WHAT.match(text)
        if m:
            if current.native and current.type and not current.message:
                current.message = m.group(1)
                b.phase = "message"
            else:
                b.set_exception("what()", m.group(1), native=True)
            self._mark_cut(b, line)
            return True
        if not stripped:
            if b.phase == "message":
                b.phase = "blank"
            return True
        if current.native and _NATIVE_FRAME.match(text):
            return True
        if b.phase == "frames":
            if (wrapped_frame is not None and b.wrapped and not _FRAME.match(wrapped_frame)
                    and _FRAME.match(wrapped_frame + text)):
                # a wide frame line that stopped short, and this line completes it: a hard wrap
                # before the paste's width shows (a rest with spaces: '.py", line 9, in f')
                b.frame_text = wrapped_frame
                b.join_wrapped(text)
                return True
            if _CARET.match(text) or _REPEATED.match(text):
                return True
            if _ELLIPSIS.match(text):
                b.tb.frames_cut = True
                return True
            if text[0].isspace() and not (current.frames and current.frames[-1].source is not None
                                          and classify_exception_line(text, strict=False)):
                if current.frames and current.frames[-1].source is None:
                    current.frames[-1].source = stripped
                else:
                    b.tb.frames_cut = True  # a source line whose frame line was cut
                return True
            exc = classify_exception_line(text, strict=False)
            if exc:
                b.set_exception(*exc)
                self._mark_cut(b, line)
                return True
            # a paste hard-wrapped at its width: the rest of the frame or source line above (after
            # a line only known as the widest, a fragment without spaces: "rained", "_")
            if kind in PLAIN_KINDS and (b.wrapped == "paste" or (b.wrapped == "widest" and " " not in stripped)):
                b.frame_text = wrapped_frame
                b.join_wrapped(text)
                return True
            return False
        if b.phase == "message":
            if kind is not None and kind not in PLAIN_KINDS:
                return False
            if not b.add_message_line(text.rstrip()):
                return False
            self._mark_cut(b, line)
            return True
        # phase "blank": only a chain marker, header or group separator (handled above)
        return False

    @staticmethod
    def _mark_cut(b: _Builder, line: LogLine) -> None:
        """A message line cut at the line-length cap is a truncated message."""
        if line.truncated:
            b.tb.message_truncated = True

    def flush(self) -> list[Traceback]:
        """End of input: every open traceback is complete as far as it goes."""
        done = [b.finish(at_eof=True, last_cut=self._last_cut)
                for b in self._open.values()]
        self._open.clear()
        done.sort(key=lambda tb: tb.first_line)
        return done

    def pending(self) -> list[Traceback]:
        """Snapshots of tracebacks still open (for live views after an idle pause)."""
        out = []
        for b in self._open.values():
            snap = copy.deepcopy(b)
            out.append(snap.finish(at_eof=True, last_cut=self._last_cut))
        return out


def is_caret_line(text: str) -> bool:
    """CPython's position markers under a source line (``    ^^^^^``, ``~~~~^^^``): they point
    at columns of the line above and say nothing alone, so they are never evidence."""
    return _CARET.match(text) is not None


def is_record_start(line: LogLine) -> bool:
    """A line that starts a new log record: it carries a timestamp, a level or a rank tag."""
    return line.ts is not None or line.level is not None or bool(line.tag)
