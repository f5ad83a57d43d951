"""What a dialect is: everything logx knows about one inference server, in one place.

The stages (lines, events, tracebacks, runs, findings, report) are server-neutral; each asks
the log's ``Dialect`` for what is particular to its server: the line prefix, the event rule
table, how events map to the phases of a launch, which arguments matter, what a release's
log format tells about its version, the server's command line, its ready line, the marks the
statistics fast path looks for, and the inputs of the memory model. Pure facts (flag renames
with the release they happened in, model classes, hang hints) are data: ``facts.toml`` in the
dialect's catalog folder (``patterns/<name>/facts.toml``), read by ``load_facts``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from .. import _cache
from .._events import Rule
from .._lines import ServerPrefix
from .._record import field, record

# The lifecycle every dialect maps its events onto, in order: phases compare across
# servers (the catalog's ``phase`` key, the timeline, "how far did the launch get").
PHASES = ("launch", "args", "import", "init", "weights", "kv_alloc", "cuda_graph", "warmup", "ready",
          "serving")
PHASE_RANK = {p: i for i, p in enumerate(PHASES)}

# How sure a detection is, most sure first: named on the command line, a line only this
# server prints, its line prefix, nothing (the default dialect reads the log).
CONFIDENCES = ("given", "certain", "likely", "guess")


class StatsMarks(NamedTuple):
    """The bytes the statistics fast path tests for this server's lines.

    ``status_mark``: what stands
    between an access line's ``protocol`` and its status (the scan reads the status there);
    ``request_mark``: the mark of a request-log line's head
    (``Receive: obj=``), found in its first ``request_window`` bytes of a line longer than
    ``request_min_len``. ``series``: for each of ``serving.SERIES_FIELDS`` (generation
    throughput, queue, token usage, running requests), the marks a decode line prints just
    before the figure (alternatives: the first one the line holds); ``usage_per_unit``: the
    printed token usage of a full pool (1 for a fraction, 100 for a percentage)."""

    request_mark: bytes
    protocol: bytes = b"HTTP/"  # an access line holds it once, before its status
    status_mark: bytes = b'" '
    request_min_len: int = 40
    request_window: int = 200
    series: tuple[tuple[bytes, ...], ...] = ()
    usage_per_unit: float = 1.0


class FlagRename(NamedTuple):
    """A flag that changed its name in release ``since`` (the old one may live on a while).

    ``fact`` is the catalog placeholder that names the flag of the log's release;
    ``old_marks``/``new_marks``: texts in the server's own messages that name one or the
    other (a cut message still shows a prefix); ``when_unknown``: what to name when nothing
    in the log tells the release: ``"both"`` (the new name, the old one in parentheses) or
    ``"old"``."""

    fact: str
    old: str
    new: str
    since: tuple[int, ...]
    old_marks: tuple[str, ...]
    new_marks: tuple[str, ...]
    when_unknown: str = "both"

    @property
    def old_arg(self) -> str:
        return self.old.lstrip("-").replace("-", "_")

    @property
    def new_arg(self) -> str:
        return self.new.lstrip("-").replace("-", "_")

    def name_in(self, args: Mapping[str, Any], version: tuple[int, ...] | None,
                bounds: tuple[tuple[int, ...] | None, tuple[int, ...] | None], messages: str,
                server: str) -> str:
        """The flag's name in a run's release, from the surest evidence down: the arguments
        it printed, its version, the release bounds its log format sets (``(low, high)``),
        the server's own messages (``messages``), else ``when_unknown``."""
        if self.new_arg in args:
            return self.new
        if self.old_arg in args:
            return self.old
        if version:
            return self.old if version < self.since else self.new
        low, high = bounds
        if low is not None and low >= self.since:
            return self.new
        if high is not None and high < self.since:
            return self.old
        if any(mark in messages for mark in self.new_marks):
            return self.new
        if any(mark in messages for mark in self.old_marks):
            return self.old
        if self.when_unknown == "old" and low is None:
            return self.old
        since = ".".join(map(str, self.since))
        return f"{self.new} (named {self.old} before {server} {since})"


class VersionHint(NamedTuple):
    """A log-format detail that bounds the release: an event of ``kind`` whose field
    ``field`` is present (``equals`` None) or equals ``equals`` adds ``hint``
    (``">=0.5.19"``, ``"<=0.5.9"``)."""

    kind: str
    field: str
    hint: str
    equals: Any = None


class Facts(NamedTuple):
    """A dialect's data file (``patterns/<name>/facts.toml``)."""

    flag_renames: tuple[FlagRename, ...] = ()
    version_hints: tuple[VersionHint, ...] = ()
    hybrid_model_classes: tuple[str, ...] = ()  # model classes with a recurrent-state (Mamba) pool
    hang_hints: Mapping[str, tuple[str, str]] = MappingProxyType({})  # phase -> (where, what to do)
    # placeholder -> this server's words for it: a pattern shared by every server (a CUDA fault)
    # names the flags and packages of the log's own server through them
    wording: Mapping[str, str] = MappingProxyType({})
    # phase -> what this server's phase is called in a sentence, where logx's word does not fit it
    phase_words: Mapping[str, str] = MappingProxyType({})

    def hybrid_model(self, model_class: str | None) -> bool:
        """Whether ``model_class`` names a hybrid (attention + recurrent state) model."""
        return bool(model_class) and any(name in model_class for name in self.hybrid_model_classes)  # type: ignore[operator]


class LaunchArgs(NamedTuple):
    """The server arguments that name a multi-node launch (``incident.py`` groups node logs by
    them): the number of nodes, this node's rank, the rendezvous address (its parts joined by
    ":", each only when printed) and the tensor-parallel size (it maps a TP rank to its node)."""

    nnodes: str
    node_rank: str
    address: tuple[str, ...]
    tp_size: str


class SiteData(NamedTuple):
    """The server's index of failure sites over its released wheels (``sites.py`` reads it).
    ``index_file`` and ``categories`` are files in ``logforensics/data/``; ``package`` is the top
    package the sites' files are in (a frame's path is compared from ``<package>/`` on);
    ``core`` the server's own subtree, whose sites win a tie over the package's other programs."""

    index_file: str  # "sglang_sites.idx", built by tools/index_<name>.py
    categories: str  # which root cause a site stands for, by its home
    package: str  # "sglang"
    core: str  # "sglang/srt/"
    flags: str | None = None  # "sglang_flags.json.gz": each renamed flag's spellings by release
    defaults: str | None = None  # "sglang_defaults.json": the argument defaults that changed, by release


@record(frozen=True, eq=False)
class Dialect:
    """One server's knowledge. Build it in ``dialects/<name>/__init__.py`` as ``DIALECT``."""

    name: str  # "sglang": the catalog folder, ``--dialect``, the JSON's ``server.name``
    label: str  # "SGLang": how a person names it
    prefix: ServerPrefix  # the server's own line prefix
    rules: tuple[Rule, ...]  # the event table (events.py holds the shared rules)
    markers: tuple[re.Pattern[str], ...]  # a line this server alone prints: detection is certain
    # a line this server prints that another's log may carry too (vLLM's frames in SGLang's,
    # which imports vLLM code): counted with the prefixed lines, detection is then likely
    hints: tuple[re.Pattern[str], ...]
    event_phase: Mapping[str, str]  # event kind -> the phase it proves (one of PHASES)
    frame_phases: tuple[tuple[str, re.Pattern[str]], ...]  # traceback frame location -> phase
    memory_kinds: frozenset[str]  # events the memory ledger reads
    ending_kinds: frozenset[str]  # events that say how a run ended
    startup_kinds: frozenset[str]  # a second one from the same rank means a relaunch
    launch_kinds: frozenset[str]  # events that start a launch (args dump, command line)
    key_args: tuple[str, ...]  # the arguments a report shows
    pid_wrappers: tuple[str, ...]  # Ray actor names whose ``pid=`` is a server process
    server_command: re.Pattern[str]  # a live process's command line is this server's
    process_name: str  # what a server's command line contains (a cheap /proc filter)
    launch_example: str  # the command as a person types it (in fixes)
    ready_line: str  # the line that says the server is ready
    memory_flags: tuple[str, ...]  # the flags that size its GPU memory (named when none of them can help)
    stats: StatsMarks
    facts: Facts
    # reads the run's per-rank memory ledger from this server's lines (``Run`` -> ``memory.Ledger``);
    # None: only what torch's OOM messages say (``memory.read_torch_ledger``)
    memory_ledger: Callable[[Any], Any] | None = None
    # the run's memory placeholders beyond the shared ones (``Run``, the facts so far -> facts), if any
    memory_facts: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None
    facts_read_tail: bool = False  # memory_facts reads the run's last lines (its facts change with each)
    # named catalog conditions of this server's own (``Run`` -> evidence ``[(line, text)]`` or None)
    conditions: Mapping[str, Callable[[Any], list[tuple[int, str]] | None]] = field(default_factory=dict)
    launch_args: LaunchArgs | None = None  # None: the server has no multi-node launch arguments
    # the release index of failure sites (None: the server ships none, no site findings)
    sites: SiteData | None = None

    def __post_init__(self) -> None:
        unknown = {p for p in self.event_phase.values() if p not in PHASE_RANK}
        unknown |= {p for p, _ in self.frame_phases if p not in PHASE_RANK}
        if unknown:
            raise ValueError(f"dialect {self.name}: unknown phase(s) {', '.join(sorted(unknown))}")

    def phase_from_frames(self, locations: Sequence[str | None], functions: Sequence[str | None]) -> str | None:
        """The phase named by the innermost frame that names one (``locations``: outermost
        first; ``None`` where a frame has none); ``"import"`` when the last frames are all
        module level; else ``None``."""
        for location in reversed(locations):
            for phase, rx in self.frame_phases:
                if location and rx.search(location):
                    return phase
        if functions and all(f == "<module>" for f in functions[-3:]):
            return "import"
        return None

    def version_hints(self, kind: str, fields: Mapping[str, Any]) -> set[str]:
        """The release bounds an event of ``kind`` with ``fields`` implies."""
        return {h.hint for h in self.facts.version_hints if h.kind == kind and h.field in fields
                and (h.equals is None or fields[h.field] == h.equals)}


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """``"0.5.14rc1"`` -> ``(0, 5, 14)``; ``None`` when no number leads."""
    if not version:
        return None
    parts = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) if parts else None


_FACT_KEYS = frozenset({"flag_rename", "version_hint", "hybrid_model_classes", "hang_hint", "wording", "phase_words"})
_TABLE_KEYS = {
    "flag_rename": frozenset({"fact", "old", "new", "since", "old_marks", "new_marks", "when_unknown"}),
    "version_hint": frozenset({"event", "field", "equals", "hint"}),
}


def bundled_dir() -> Path:
    """The bundled data (catalog and dialect facts): ``logforensics/patterns`` in an installed
    wheel (pyproject maps the top-level ``patterns/`` there), ``patterns/`` beside the package
    in a source checkout."""
    package = Path(__file__).resolve().parent.parent
    installed = package / "patterns"
    return installed if installed.is_dir() else package.parent / "patterns"


def _parse_toml(raw: bytes) -> dict[str, Any]:
    import tomllib  # ~8 ms to import: only when the disk cache does not hold the file

    return tomllib.loads(raw.decode())


def load_facts(path: Path) -> Facts:
    """Read a dialect's ``facts.toml`` (a missing file: no facts). A broken file is a bug in
    logx's own data, so it raises (the tests load every dialect)."""
    if not path.is_file():
        return Facts()
    with open(path, "rb") as fh:
        raw = fh.read()
    data = _cache.cached("toml", _cache.file_key(path, raw), lambda: _parse_toml(raw))
    for where, table, known in [("the file", data, _FACT_KEYS)] + [
            (f"a [[{key}]]", t, keys) for key, keys in _TABLE_KEYS.items() for t in data.get(key, [])]:
        unknown = set(table) - known
        if unknown:  # e.g. a top-level key written after a [[table]] lands in that table
            raise ValueError(f"{path}: unknown key(s) in {where}: {', '.join(sorted(unknown))}")
    renames = tuple(
        FlagRename(fact=r["fact"], old=r["old"], new=r["new"], since=version_tuple(r["since"]) or (),
                   old_marks=tuple(r.get("old_marks", [r["old"]])),
                   new_marks=tuple(r.get("new_marks", [r["new"]])),
                   when_unknown=r.get("when_unknown", "both"))
        for r in data.get("flag_rename", []))
    for r in renames:
        if r.when_unknown not in ("both", "old"):
            raise ValueError(f"{path}: flag_rename {r.fact}: when_unknown must be 'both' or 'old'")
    hints = tuple(VersionHint(kind=h["event"], field=h["field"], hint=h["hint"], equals=h.get("equals"))
                  for h in data.get("version_hint", []))
    hang = {phase: (h["where"], h["fix"]) for phase, h in data.get("hang_hint", {}).items()}
    unknown = set(hang) - set(PHASES)
    if unknown:
        raise ValueError(f"{path}: hang_hint for unknown phase(s) {', '.join(sorted(unknown))}")
    wording, phase_words = data.get("wording", {}), data.get("phase_words", {})
    if not all(isinstance(v, str) for v in [*wording.values(), *phase_words.values()]):
        raise ValueError(f"{path}: [wording] and [phase_words] values must be strings")
    unknown = set(phase_words) - set(PHASES)
    if unknown:
        raise ValueError(f"{path}: phase_words for unknown phase(s) {', '.join(sorted(unknown))}")
    return Facts(flag_renames=renames, version_hints=hints,
                 hybrid_model_classes=tuple(data.get("hybrid_model_classes", [])), hang_hints=hang,
                 wording=MappingProxyType(dict(wording)), phase_words=MappingProxyType(dict(phase_words)))
