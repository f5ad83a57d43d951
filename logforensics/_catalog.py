"""The pattern catalog: load, validate and compile ``patterns/**/*.toml``.

The catalog is data (see ``patterns/README.md`` for the schema). Loading is strict: a broken
file or pattern raises ``CatalogError`` whose message names the file, the pattern id and the
problem, so a user's own pattern directory fails loudly instead of silently matching nothing.
Every regex is compiled with the ``regex`` module and always run with a timeout, so a hostile
line cannot hang logx.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _cache
from ._conditions import CONDITIONS
from ._dialects import DIALECTS, PHASE_RANK
from ._dialects.base import bundled_dir
from ._errors import CatalogError
from ._record import field, record, replace

if TYPE_CHECKING:
    import regex

SEVERITIES = ("fatal", "error", "warning", "info")
ROLES = ("cause", "symptom")  # a cause outranks every symptom of the same severity group
# "any": the phase the failure happened in (its frames, its line's place); "reached": the phase
# the run had reached (a finding about how the run ended, not one line)
PHASES = ("args", "import", "init", "weights", "kv_alloc", "cuda_graph", "warmup", "serving",
          "any", "reached")
TRACEBACK_KEYS = ("exception", "message", "frame", "raising_frame", "context")
# What logx's own stages find, for the built-in patterns' ``found_by`` (patterns/builtin/):
# a finding no regex can match, made by the stage that sees it.
FOUND_BY = {
    "unexplained_traceback": "a traceback no pattern and no failure site of the server explains",
    # the stale-log detector's verdicts (_staleness.py) and logx watch's end (_watcher.py)
    "empty_log": "the log (or this run's part of it) has no bytes",
    "stale_log": "the log's content predates the run of interest",
    "silent_process": "the process is alive but its log stopped growing before ready",
    "process_gone": "the process ended before ready with no traceback and no ready line",
    # the serving-statistics stage's warnings (_serving_findings.py, from the run's ServingStats)
    "serving_retractions": "the scheduler retracted requests again and again: the KV pool is too small for the load",
    "serving_jit_stall": "kernels compiled on first use held the next decode step back",
    "serving_5xx": "a share of the requests failed with a server error while the server stayed up",
    "serving_queue": "the request queue grew over most of the serving series",
    "serving_throughput": "generation throughput fell while as many requests kept running",
    "serving_health": "the health check failed in separate episodes, the server answering in between",
}
# the stages that read the host (the file's times, its processes, watch's process), not the log
# alone: no fixture can show them (tests/test_staleness.py and tests/test_watch.py make them)
HOST_STAGES = frozenset({"empty_log", "stale_log", "silent_process", "process_gone"})
MATCH_KEYS = (*TRACEBACK_KEYS, "line", "condition", "found_by", "event", "at_least")
MERGES = ("id", "title")  # findings of one pattern: one per id, or one per filled title
BUILTIN_FOLDER = "builtin"  # the bundled patterns of the findings logx's stages make
REQUIRED = ("id", "title", "severity", "phase", "explanation", "fix")
PHASE_TEXTS = ("title", "explanation", "fix")  # what a [pattern.from_phase.<phase>] table may say
REGEX_TIMEOUT = 0.25  # seconds, per search
FACTS_FILE = "facts.toml"  # a dialect's facts beside its patterns (dialects/base.py reads it)
ENV_VAR = "LOGX_PATTERNS"
_ID = re.compile(r"[a-z0-9_]+")


class Regex:
    """A catalog regex, compiled on first use. The bundled catalog's ~230 regexes take about
    60 ms to compile, more than a small log takes to explain, and a run needs a handful (the
    ``regex`` module itself, ~8 ms to import, is imported by the first). Has the
    ``regex.Pattern`` methods logx uses; a user's own patterns are compiled at load (so a bad
    one is reported there, see ``load_catalog``), the bundled ones are checked by the tests."""

    __slots__ = ("pattern", "_compiled")

    def __init__(self, pattern: str):
        self.pattern = pattern
        self._compiled: regex.Pattern | None = None

    @property
    def compiled(self) -> regex.Pattern:
        if self._compiled is None:
            import regex

            self._compiled = regex.compile(self.pattern)
        return self._compiled

    def search(self, *args, **kwargs):
        return self.compiled.search(*args, **kwargs)

    def fullmatch(self, *args, **kwargs):
        return self.compiled.fullmatch(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r})"


@record(slots=True, eq=False)
class MatchSpec:
    """One ``[[pattern.match]]`` table, compiled. Absent keys are ``None``."""

    exception: Regex | None = None
    message: Regex | None = None
    frame: Regex | None = None
    raising_frame: Regex | None = None
    context: Regex | None = None
    line: Regex | None = None
    condition: str | None = None
    found_by: str | None = None  # made by a stage of logx (FOUND_BY), not matched
    event: str | None = None  # an event kind the dialect's rules read from a line
    at_least: dict[str, float] | None = None  # the event's fields that must be at least these numbers

    @property
    def on_traceback(self) -> bool:
        """Whether the table has keys that match a traceback."""
        return any(getattr(self, key) is not None for key in TRACEBACK_KEYS)

    @property
    def kind(self) -> str:
        if self.found_by:
            return "found_by"
        if self.condition:
            return "condition"
        if self.event:
            return "event"
        if self.line is not None:
            return "line"
        return "traceback"


@record(slots=True, eq=False)
class Pattern:
    id: str
    title: str
    severity: str
    phase: str
    explanation: str
    fix: str
    priority: int = 50
    references: list[str] = field(default_factory=list)
    matches: list[MatchSpec] = field(default_factory=list)
    source: str = ""  # file it came from
    role: str = "cause"  # "symptom": a consequence of some other failure (sigquit, "see above")
    dialect: str | None = None  # the server whose logs it reads (None: every server's)
    merge: str = "id"  # "title": findings merged only when their filled titles are the same
    survivable: bool = False  # a finding the server kept serving after is a warning
    yields_to_cause: bool = False  # a stale-log verdict that follows a catalog root cause
    # ``[pattern.from_phase.<phase>]``: phase -> the texts (title, explanation, fix) of a finding
    # in that phase or a later one, in lifecycle order (a wrapper that says "start-up failed"
    # at start-up and "died while serving" once the run served)
    from_phase: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def is_problem(self) -> bool:
        return self.severity in ("fatal", "error")

    def in_phase(self, phase: str) -> Pattern:
        """The pattern as a finding in ``phase`` tells it: the texts of its latest
        ``from_phase`` at or before ``phase`` in the lifecycle, its own where none is."""
        rank = PHASE_RANK.get(phase)
        texts = None if rank is None else next(
            (t for name, t in reversed(self.from_phase.items()) if PHASE_RANK[name] <= rank), None)
        return replace(self, **texts, from_phase={}) if texts else self


@record(eq=False)
class Catalog:
    patterns: list[Pattern]

    def __post_init__(self) -> None:
        # id -> pattern; where dialects share an id, the generic one (a dialect's view has one)
        self.by_id = {p.id: p for p in sorted(self.patterns, key=lambda p: p.dialect is None)}
        self.traceback_specs = [(p, s) for p in self.patterns for s in p.matches
                                if s.kind == "traceback"]
        self.line_specs = [(p, s) for p in self.patterns for s in p.matches if s.kind == "line"]
        self.condition_specs = [(p, s) for p in self.patterns for s in p.matches
                                if s.kind == "condition"]
        # event kind -> its specs: read off the event's fields, no regex (the line was read once)
        self.event_specs: dict[str, list[tuple[Pattern, MatchSpec]]] = {}
        for p in self.patterns:
            for s in p.matches:
                if s.event:
                    self.event_specs.setdefault(s.event, []).append((p, s))
        self._found_by = {s.found_by: p for p in self.patterns for s in p.matches if s.found_by}
        self._views: dict[str, Catalog] = {}

    def found_by(self, stage: str) -> Pattern:
        """The pattern of what ``stage`` (a ``FOUND_BY`` name) finds: this catalog's, else the
        bundled one (``patterns/builtin/``: a catalog made of a few patterns still has them)."""
        return self._found_by.get(stage) or builtin_patterns()[stage]

    def for_dialect(self, name: str) -> Catalog:
        """The patterns that run on a log of dialect ``name``: its own, and the generic ones it
        has no pattern of the same id for (a dialect's own pattern replaces a generic one)."""
        view = self._views.get(name)
        if view is None:
            own = {p.id for p in self.patterns if p.dialect == name}
            view = self._views[name] = Catalog([p for p in self.patterns if p.dialect == name
                                                or (p.dialect is None and p.id not in own)])
        return view


def builtin_dir() -> Path:
    """The bundled catalog (``patterns/``, beside the dialects' facts)."""
    return bundled_dir()


@functools.cache
def builtin_patterns() -> dict[str, Pattern]:
    """``{found_by: pattern}`` of the bundled built-in patterns (``patterns/builtin/``)."""
    folder = builtin_dir() / BUILTIN_FOLDER
    return {s.found_by: p for file in sorted(folder.glob("*.toml"))
            for p in load_file(file, folder=BUILTIN_FOLDER) for s in p.matches if s.found_by}


def pattern_dirs(extra: Sequence[str | os.PathLike] | None = None) -> list[Path]:
    """Directories to load, in order: bundled, ``$LOGX_PATTERNS`` entries, then ``extra``.
    Later directories override earlier ones by pattern id."""
    dirs = [builtin_dir()]
    env = os.environ.get(ENV_VAR, "")
    dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs += [Path(p) for p in (extra or [])]
    return dirs


def load_catalog(extra: Sequence[str | os.PathLike] | None = None, builtin: bool = True) -> Catalog:
    """Load every pattern file; raise ``CatalogError`` on the first problem. Regexes of the
    bundled catalog are compiled on first use, those of other directories at once."""
    dirs = pattern_dirs(extra) if builtin else [Path(p) for p in (extra or [])]
    bundled = builtin_dir()
    merged: dict[tuple[str | None, str], Pattern] = {}  # (dialect, id): ids are per dialect
    for directory in dirs:
        if not directory.is_dir():
            raise CatalogError(f"{directory}: pattern directory not found")
        seen_here: dict[tuple[str | None, str], str] = {}
        for file in sorted(directory.rglob("*.toml")):
            if file.name == FACTS_FILE:
                continue
            folder = file.relative_to(directory).parts[0] if file.parent != directory else None
            for pattern in load_file(file, compile_now=directory != bundled, folder=folder):
                key = (pattern.dialect, pattern.id)
                if directory != bundled and pattern.dialect is None:
                    # a user's generic pattern replaces the bundled ones of its id on every dialect
                    for old in [k for k in merged if k[1] == pattern.id]:
                        del merged[old]
                if key in seen_here:
                    raise CatalogError(
                        f"{file}: pattern {pattern.id}: duplicate id "
                        f"(also in {seen_here[key]})")
                seen_here[key] = str(file)
                merged[key] = pattern
    return Catalog(list(merged.values()))


def load_file(file: Path, compile_now: bool = True, folder: str | None = None) -> list[Pattern]:
    """The patterns of one file; ``folder``: the top folder it sits in under its catalog
    directory (named after a dialect: the patterns' default dialect)."""
    try:
        data = _read_toml(file)
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{file}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise CatalogError(f"{file}: cannot read: {exc.strerror or exc}") from None
    tables = data.get("pattern", [])
    if not isinstance(tables, list):
        raise CatalogError(f"{file}: 'pattern' must be an array of tables ([[pattern]])")
    dialect = folder if folder in DIALECTS else None
    return [build_pattern(table, file, i, compile_now, dialect) for i, table in enumerate(tables)]


def _read_toml(file: Path) -> dict[str, Any]:
    """A pattern file's tables, from the disk cache when these bytes were parsed before
    (``tomllib``, ~4 ms to import, only for the files that were not)."""
    with open(file, "rb") as fh:
        data = fh.read()

    def parse() -> dict[str, Any]:
        import tomllib

        try:
            return tomllib.loads(data.decode())
        except tomllib.TOMLDecodeError as exc:
            raise CatalogError(f"{file}: invalid TOML: {exc}") from None

    return _cache.cached("toml", _cache.file_key(file, data), parse)


def build_pattern(table: dict, file: Path | str, index: int = 0, compile_now: bool = True,
                  dialect: str | None = None) -> Pattern:
    """One ``[[pattern]]``; ``dialect``: its folder's (a ``dialect`` key overrides it:
    a dialect's name, or ``"any"`` for every server's logs)."""
    pid = table.get("id") if isinstance(table.get("id"), str) else f"#{index + 1}"

    def fail(problem: str) -> CatalogError:
        return CatalogError(f"{file}: pattern {pid}: {problem}")

    for key in REQUIRED:
        if not isinstance(table.get(key), str) or not table[key].strip():
            raise fail(f"missing or empty required field '{key}'")
    if not _ID.fullmatch(table["id"]):
        raise fail("id must be lowercase letters, digits and underscores")
    if table["severity"] not in SEVERITIES:
        raise fail(f"severity must be one of {', '.join(SEVERITIES)}")
    if table["phase"] not in PHASES:
        raise fail(f"phase must be one of {', '.join(PHASES)}")
    priority = table.get("priority", 50)
    if not isinstance(priority, int) or not 0 <= priority <= 100:
        raise fail("priority must be an integer from 0 to 100")
    role = table.get("role", "cause")
    if role not in ROLES:
        raise fail(f"role must be one of {', '.join(ROLES)}")
    references = table.get("references", [])
    if not isinstance(references, list) or not all(isinstance(r, str) for r in references):
        raise fail("references must be a list of strings")
    raw_matches = table.get("match")
    if isinstance(raw_matches, dict):
        raw_matches = [raw_matches]
    if not raw_matches or not isinstance(raw_matches, list):
        raise fail("needs at least one [[pattern.match]] table")
    matches = [build_match(m, fail, compile_now) for m in raw_matches]
    merge = table.get("merge", "id")
    if merge not in MERGES:
        raise fail(f"merge must be one of {', '.join(MERGES)}")
    flags = {key: table.get(key, False) for key in ("survivable", "yields_to_cause")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise fail(f"{key} must be true or false")
    if "dialect" in table:
        if table["dialect"] != "any" and table["dialect"] not in DIALECTS:
            raise fail(f"dialect must be 'any' or one of {', '.join(sorted(DIALECTS))}")
        dialect = None if table["dialect"] == "any" else table["dialect"]
    return Pattern(
        id=table["id"], title=table["title"].strip(), severity=table["severity"],
        phase=table["phase"], explanation=table["explanation"].strip(),
        fix=table["fix"].strip(), priority=priority, references=references, matches=matches,
        source=str(file), role=role, dialect=dialect, merge=merge, **flags,
        from_phase=_phase_texts(table.get("from_phase", {}), fail),
    )


def _phase_texts(tables: Any, fail) -> dict[str, dict[str, str]]:
    """``[pattern.from_phase.<phase>]`` tables: a lifecycle phase each (``ready``, ``serving``,
    …), with a ``title``, ``explanation`` and/or ``fix`` that replace the pattern's own for a
    finding in that phase or a later one. In lifecycle order."""
    if not isinstance(tables, dict):
        raise fail("'from_phase' must be a table of [pattern.from_phase.<phase>] tables")
    out = {}
    for phase in sorted(tables, key=lambda name: PHASE_RANK.get(name, -1)):
        texts = tables[phase]
        if phase not in PHASE_RANK:
            raise fail(f"from_phase: unknown phase '{phase}' (one of {', '.join(PHASE_RANK)})")
        if not isinstance(texts, dict) or not texts or set(texts) - set(PHASE_TEXTS):
            raise fail(f"from_phase.{phase} takes {', '.join(PHASE_TEXTS)} (at least one)")
        if not all(isinstance(v, str) and v.strip() for v in texts.values()):
            raise fail(f"from_phase.{phase}: each text must be a non-empty string")
        out[phase] = {key: value.strip() for key, value in texts.items()}
    return out


def build_match(table: dict, fail, compile_now: bool = True) -> MatchSpec:
    if not isinstance(table, dict) or not table:
        raise fail("a match table is empty")
    unknown = set(table) - set(MATCH_KEYS)
    if unknown:
        raise fail(f"unknown match key(s): {', '.join(sorted(unknown))}")
    if "line" in table and set(table) & set(TRACEBACK_KEYS):
        raise fail("'line' cannot be combined with traceback keys in one match table")
    if "found_by" in table:
        if len(table) > 1:
            raise fail("'found_by' stands alone in its match table")
        if table["found_by"] not in FOUND_BY:
            raise fail(f"unknown found_by '{table['found_by']}' (known: {', '.join(sorted(FOUND_BY))})")
        return MatchSpec(found_by=table["found_by"])
    if "event" in table or "at_least" in table:
        return _event_match(table, fail)
    spec = MatchSpec()
    for key in (*TRACEBACK_KEYS, "line"):
        if key in table:
            value = table[key]
            if not isinstance(value, str) or not value:
                raise fail(f"match key '{key}' must be a non-empty string")
            rx = Regex(value)
            if compile_now:
                import regex

                try:
                    rx.compiled  # noqa: B018 - compiled here to report a bad regex at load
                except regex.error as exc:
                    raise fail(f"bad regex in '{key}': {exc}") from None
            setattr(spec, key, rx)
    if "condition" in table:
        if table["condition"] not in CONDITIONS:
            raise fail(f"unknown condition '{table['condition']}' "
                       f"(known: {', '.join(sorted(CONDITIONS))})")
        spec.condition = table["condition"]
    return spec


def _event_match(table: dict, fail) -> MatchSpec:
    """``event = "kind"`` (with ``at_least = {field = number, …}``): the events a dialect's
    rules read, their parsed fields compared, with no regex of the catalog's own."""
    if set(table) - {"event", "at_least"}:
        raise fail("'event' takes only 'at_least' beside it in its match table")
    kinds = {rule.kind for dialect in DIALECTS.values() for rule in dialect.rules}
    kind = table.get("event")
    if kind not in kinds:
        raise fail(f"unknown event '{kind}' (an event kind a dialect's rules read, e.g. 'cuda_graph_end')")
    at_least = table.get("at_least", {})
    if not isinstance(at_least, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in at_least.values()):
        raise fail("'at_least' must be a table of field = number")
    return MatchSpec(event=kind, at_least={k: float(v) for k, v in at_least.items()})


def timed_search(pattern: Regex | regex.Pattern, text: str, partial: bool = False, pos: int = 0):
    """Search (from ``pos``) with the catalog's per-search timeout. Raises ``TimeoutError``: the
    matcher counts it against the pattern (``RegexGuard``) and reads it as no match."""
    return pattern.search(text, pos, partial=partial, timeout=REGEX_TIMEOUT)


def timed_fullmatch(pattern: Regex | regex.Pattern, text: str):
    return pattern.fullmatch(text, timeout=REGEX_TIMEOUT)


DISABLE_AFTER_TIMEOUTS = 3  # a pattern whose searches time out this often in one file is dropped


@record(eq=False)
class SlowPattern:
    """A pattern whose regex timed out while reading one file, and what it cost."""

    id: str
    source: str
    timeouts: int = 0
    seconds: float = 0.0

    @property
    def disabled(self) -> bool:
        return self.timeouts >= DISABLE_AFTER_TIMEOUTS

    def to_dict(self) -> dict:
        return {"id": self.id, "source": self.source, "timeouts": self.timeouts,
                "seconds": round(self.seconds, 3), "disabled": self.disabled}


class RegexGuard:
    """Per file: counts each pattern's regex timeouts and disables a pattern after
    ``DISABLE_AFTER_TIMEOUTS`` of them, so one backtracking user pattern costs a bounded time
    (not one timeout per line) and is reported once."""

    def __init__(self) -> None:
        self.slow: dict[str, SlowPattern] = {}
        self.disabled_order: list[SlowPattern] = []  # in the order they were disabled

    def disabled(self, pattern: Pattern) -> bool:
        slow = self.slow.get(pattern.id)
        return slow is not None and slow.disabled

    def timed_out(self, pattern: Pattern, seconds: float) -> None:
        slow = self.slow.get(pattern.id)
        if slow is None:
            slow = self.slow[pattern.id] = SlowPattern(pattern.id, pattern.source)
        slow.timeouts += 1
        slow.seconds += seconds
        if slow.timeouts == DISABLE_AFTER_TIMEOUTS:
            self.disabled_order.append(slow)
