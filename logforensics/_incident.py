"""Several node logs of one multi-node launch, explained as one incident.

When one node of a deployment fails, every other node fails too, later and differently (an NCCL
watchdog timeout, a store timeout in distributed init, a SIGQUIT). Each file is explained on its
own (in parallel worker processes) and reduced to a ``NodeSummary``: a small picklable record of
the launch's identity (model, nnodes, node_rank, dist_init_addr), its time span and its failures.
The merge reads only those summaries: it groups the files that belong to one launch and picks the
root cause — the first *cause* in time; a finding whose pattern has ``role = "symptom"`` is a
consequence, whenever it happened — and lists every other failure as its consequence. The rule
is ``findings.first_cause``, the one that already chose each node's lead among its ranks (the
first rank's real error outranks the other ranks' timeouts). Clocks of different nodes differ by
seconds, so times closer than ``CLOCK_TOLERANCE`` are ordered by priority and phase and the order
is reported as uncertain.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ._analysis import explain_many
from ._catalog import Catalog
from ._errors import EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK
from ._findings import CLOCK_TOLERANCE, first_cause
from ._lines import parse_timestamp
from ._record import field, record
from ._report import Report

SCHEMA = "logx.incident/1"
EARLY_PHASES = frozenset({"launch", "args", "import"})  # before any node waits for the others
_TP = re.compile(r"(?:\b|_)TP(\d+)\b")  # "TP3", "DP1 TP3 EP3", vLLM's "Worker_TP3"
_PID = re.compile(r" pid=\d+$")
_DIGITS = re.compile(r"\d+")


@record(frozen=True)
class Failure:
    """One fatal/error finding of one file, as the merge needs it."""

    id: str
    title: str
    role: str  # "cause" or "symptom" (the catalog pattern's role)
    phase: str
    priority: int
    file: str
    stream: str
    line: int
    at: str | None  # the timestamp printed on its evidence, None when no evidence line has one
    text: str  # its first evidence line

    @property
    def time(self) -> datetime | None:
        return parse_timestamp(self.at)

    def to_json(self, node_rank: int | None) -> dict[str, Any]:
        return {"id": self.id, "file": self.file, "stream": self.stream, "line": self.line,
                "at": self.at, "node_rank": node_rank, "role": self.role, "title": self.title}


@record(frozen=True)
class NodeSummary:
    """What the merge reads of one file: identity, time span, phase and failures (no lines)."""

    file: str
    verdict: str
    exit_code: int
    phase: str
    model: str | None = None
    nnodes: int | None = None  # None: the file printed no server args
    node_rank: int | None = None
    dist_init_addr: str | None = None
    tp_size: int | None = None
    started_at: str | None = None
    ended_at: str | None = None
    ranks: tuple[str, ...] = ()
    failures: tuple[Failure, ...] = ()

    @property
    def has_args(self) -> bool:
        return self.nnodes is not None

    @property
    def span(self) -> tuple[datetime, datetime] | None:
        start, end = parse_timestamp(self.started_at), parse_timestamp(self.ended_at)
        return (start, end) if start and end else None

    def inferred_node_rank(self, nnodes: int | None, tp_size: int | None) -> int | None:
        """The node rank from the server args, else from the TP ranks the file shows."""
        if self.node_rank is not None:
            return self.node_rank
        tps = [int(m.group(1)) for r in self.ranks for m in [_TP.search(r)] if m]
        if tps and nnodes and tp_size and tp_size % nnodes == 0:
            per_node = tp_size // nnodes
            nodes = {tp // per_node for tp in tps}
            if len(nodes) == 1:
                return nodes.pop()
        return None


def summarize(report: Report) -> NodeSummary:
    """Reduce a report to its ``NodeSummary`` (runs in the worker that explained the file)."""
    run = report.run
    failures = tuple(
        Failure(id=f.id, title=f.title, role=f.role, phase=f.phase, priority=f.priority,
                file=report.file, stream=process(f.streams[0]) if f.streams else "",
                line=f.evidence[0].line if f.evidence else 0, at=f.at,
                text=f.evidence[0].text if f.evidence else "")
        for f in report.findings if f.is_problem)
    if run is None:
        return NodeSummary(report.file, report.verdict, report.exit_code, "launch", failures=failures)
    args, names = run.args, run.dialect.launch_args
    streams = {s for f in report.findings for s in f.streams}
    streams |= {e.line.stream for e in run.memory_events}
    streams |= {stream for _kind, stream in run.startup_seen}
    ranks = {process(s) for s in streams} - {""}
    # the last time it printed, as printed (a year-less vLLM stamp gets no year it did not print)
    stamps = [ts for ts in [run.ended_at, *(f.at for f in failures)] if parse_timestamp(ts)]
    ended_at = max(stamps, key=lambda ts: parse_timestamp(ts) or datetime.min) if stamps else None
    identity: dict[str, Any] = {}
    if run.args_line is not None and names is not None:
        address = ":".join(str(args[k]) for k in names.address if args.get(k) not in (None, "None"))
        identity = {"nnodes": _int(args.get(names.nnodes), 1), "node_rank": _int(args.get(names.node_rank), 0),
                    "dist_init_addr": address or None, "tp_size": _int(args.get(names.tp_size), None)}
    return NodeSummary(
        file=report.file, verdict=report.verdict, exit_code=report.exit_code, phase=run.phase,
        model=run.model, started_at=run.started_at, ended_at=ended_at,
        ranks=tuple(sorted(ranks, key=_rank_order)), failures=failures, **identity)


def process(stream: str) -> str:
    """The process a stream names, as the deployment shows it: its rank tag ("TP3", "DP1 TP3
    EP3", "rank3"), else its wrapper's process without the pid ("Worker_TP3", "EngineCore_DP0")."""
    wrapper, _bar, tag = stream.rpartition("|")
    return tag or _PID.sub("", wrapper)


def _int(value: Any, default: int | None) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _rank_order(tag: str) -> tuple:
    return tuple(int(n) for n in _DIGITS.findall(tag)) or (-1,), tag


def explain_with_summary(report: Report) -> tuple[Report, NodeSummary]:
    """``explain_many``'s per-file step for a deployment: the report and its summary."""
    return report, summarize(report)


# — which files belong to one launch ——————————————————————————————————————————————————


def _overlap(a: NodeSummary, b: NodeSummary) -> bool:
    """Their time spans overlap, within the clock tolerance (unknown spans do not contradict)."""
    sa, sb = a.span, b.span
    if sa is None or sb is None:
        return True
    return sa[0] - CLOCK_TOLERANCE <= sb[1] and sb[0] - CLOCK_TOLERANCE <= sa[1]


def _siblings(a: str, b: str) -> bool:
    """Names of one deployment's files: same directory, same name but for its numbers
    (node0.log / node1.log, pod-0.log / pod-1.log)."""
    da, na = os.path.split(a)
    db, nb = os.path.split(b)
    return da == db and na != nb and _DIGITS.sub("#", na) == _DIGITS.sub("#", nb)


def group(nodes: list[NodeSummary]) -> list[list[int]]:
    """Indices of ``nodes`` grouped by launch, in input order; a group of one is a file
    explained on its own.

    Files belong together when their server args name the same model, ``nnodes`` > 1 and
    ``dist_init_addr``, their node ranks differ and their times overlap. A file that printed no
    server args (it died at argument parsing, or is a tail) joins a deployment when its name is a
    sibling of a member's (node0.log / node1.log) and its times overlap; with several candidate
    deployments it stays on its own."""
    groups: list[list[int]] = []
    for i, node in enumerate(nodes):
        if not node.has_args or (node.nnodes or 1) < 2:
            continue
        for members in groups:
            first = nodes[members[0]]
            if (first.model, first.nnodes, first.dist_init_addr) == \
                    (node.model, node.nnodes, node.dist_init_addr) \
                    and all(nodes[m].node_rank != node.node_rank and _overlap(nodes[m], node)
                            for m in members):
                members.append(i)
                break
        else:
            groups.append([i])
    for i, node in enumerate(nodes):
        if node.has_args:
            continue
        fits = [g for g in groups if any(_siblings(nodes[m].file, node.file) for m in g)
                and all(_overlap(nodes[m], node) for m in g)]
        if len(fits) == 1:
            fits[0].append(i)
    grouped = {i for g in groups if len(g) > 1 for i in g}
    out = [sorted(g) for g in groups if len(g) > 1]
    out += [[i] for i in range(len(nodes)) if i not in grouped]
    return sorted(out, key=lambda g: g[0])


# — the merge ——————————————————————————————————————————————————————————————————————


@record
class Incident:
    """One deployment's verdict: the root cause, its consequences, the nodes and a timeline."""

    nodes: list[NodeSummary]
    node_ranks: list[int | None]  # per node, from the args or its TP ranks
    root: Failure | None
    consequences: list[Failure]
    timeline: list[dict[str, Any]]
    uncertain: list[Failure] = field(default_factory=list)  # causes too close in time to order
    only_symptoms: bool = False  # no node shows a cause: the root is the first consequence

    @property
    def verdict(self) -> str:
        if self.root is not None:
            return "failed"
        verdicts = {n.verdict for n in self.nodes}
        if verdicts & {"stale", "empty"}:
            return "stale" if "stale" in verdicts else "empty"
        if verdicts == {"ready"}:
            return "ready"
        return "running" if "running" in verdicts else "unknown"

    @property
    def exit_code(self) -> int:
        verdict = self.verdict
        if verdict == "failed":
            return EXIT_FAILURE
        return EXIT_INCONCLUSIVE if verdict in ("stale", "empty") else EXIT_OK

    def node_rank_of(self, file: str) -> int | None:
        return next(r for n, r in zip(self.nodes, self.node_ranks, strict=True) if n.file == file)

    def to_json(self, reports: list[Report]) -> dict[str, Any]:
        nodes = []
        for node, rank in zip(self.nodes, self.node_ranks, strict=True):
            first = node.failures[0] if node.failures else None
            nodes.append({
                "file": node.file, "node_rank": rank, "verdict": node.verdict,
                "exit_code": node.exit_code, "phase": node.phase, "ranks": list(node.ranks),
                "started_at": node.started_at, "ended_at": node.ended_at,
                "failure": first.id if first else None})
        return {
            "schema": SCHEMA,
            "incident": {
                "verdict": self.verdict, "exit_code": self.exit_code,
                "root_cause": self.root.to_json(self.node_rank_of(self.root.file)) if self.root
                else None,
                "order_uncertain_with": [f.to_json(self.node_rank_of(f.file)) for f in self.uncertain],
                "only_symptoms": self.only_symptoms,
                "consequences": [f.to_json(self.node_rank_of(f.file)) for f in self.consequences],
                "nodes": nodes,
                "timeline": self.timeline,
            },
            "reports": [r.to_json() for r in reports],
        }


def _estimated_time(failure: Failure, node: NodeSummary, nodes: list[NodeSummary]) -> datetime | None:
    """When a failure happened: its own timestamp; else, for a failure before any waiting
    (argument parsing, an import), the start of its node or of the deployment; else the end of
    its node."""
    if failure.time is not None:
        return failure.time
    early = failure.phase in EARLY_PHASES
    own = parse_timestamp(node.started_at if early else node.ended_at)
    if own is not None:
        return own
    known = [t for n in nodes for t in (parse_timestamp(n.started_at), parse_timestamp(n.ended_at)) if t]
    if not known:
        return None
    return min(known) if early else max(known)


def merge(nodes: list[NodeSummary]) -> Incident:
    """The incident of one deployment's summaries."""
    nnodes = next((n.nnodes for n in nodes if n.nnodes), None)
    tp_size = next((n.tp_size for n in nodes if n.tp_size), None)
    node_ranks = [n.inferred_node_rank(nnodes, tp_size) for n in nodes]
    missing = set(range(nnodes or 0)) - set(node_ranks)
    if len(missing) == 1 and node_ranks.count(None) == 1:  # the one node that printed no args
        node_ranks[node_ranks.index(None)] = missing.pop()
    when = {(f.file, f.line, f.id): _estimated_time(f, n, nodes) for n in nodes for f in n.failures}

    def key(f: Failure) -> tuple:
        t = when[(f.file, f.line, f.id)]
        return (t is None, t or datetime.min, -f.priority)

    # each node's leading failure: its report's first, which ``rank`` chose among its ranks the
    # way ``first_cause`` chooses among the nodes (a cause first if the node has one)
    leads = [n.failures[0] for n in nodes if n.failures]
    only_symptoms = bool(leads) and all(f.role != "cause" for f in leads)
    root, uncertain = first_cause(leads, lambda f: when[(f.file, f.line, f.id)])
    consequences: list[Failure] = []
    if root is not None:
        seen = set()
        for n in nodes:
            for f in n.failures:
                if f is root or (f.file, f.id) in seen:
                    continue
                seen.add((f.file, f.id))
                consequences.append(f)
        consequences.sort(key=key)
    timeline = _timeline(nodes, node_ranks, root, when)
    return Incident(nodes, node_ranks, root, consequences, timeline, uncertain, only_symptoms)


def _timeline(nodes: list[NodeSummary], node_ranks: list[int | None], root: Failure | None,
              when: dict[tuple, datetime | None]) -> list[dict[str, Any]]:
    """Every node's start, first failure of each kind and end, merged by time (entries with no
    time last, in file order). A failure whose lines print no time is placed at its estimated
    time, marked ``"estimated": true``."""
    entries: list[dict[str, Any]] = []
    for node, rank in zip(nodes, node_ranks, strict=True):
        base = {"file": node.file, "node_rank": rank}
        if node.started_at:
            entries.append({"at": node.started_at, **base, "event": "started"})
        seen = set()
        for f in node.failures:
            if f.id in seen:
                continue
            seen.add(f.id)
            role = "root_cause" if f is root else ("consequence" if root is not None else f.role)
            at, estimated = f.at, False
            if at is None and (t := when[(f.file, f.line, f.id)]) is not None:
                at, estimated = t.strftime("%Y-%m-%d %H:%M:%S"), True
            entries.append({"at": at, **base, "event": role, "id": f.id, "stream": f.stream,
                            "line": f.line, **({"estimated": True} if estimated else {})})
        if node.ended_at:
            entries.append({"at": node.ended_at, **base, "event": f"last line ({node.phase})"})

    def order(entry: dict[str, Any]) -> tuple:
        t = parse_timestamp(entry["at"])
        return (t is None, t or datetime.min)

    return sorted(entries, key=order)


# — the library call ——————————————————————————————————————————————————————————————


@record
class Explained:
    """``explain_deployments``' result: deployments and the files explained on their own, in
    the order of their first file; errors (unreadable files) in their input slot. ``names``:
    the name of each item's (first) file."""

    items: list[tuple[Incident, list[Report]] | Report | Exception]
    names: list[str]


def explain_deployments(paths: Sequence[str | os.PathLike], jobs: int | None = None, *, options=None,
                        catalog: Catalog | None = None, names: list[str] | None = None,
                        separate: bool = False) -> Explained:
    """Explain several logs; the files of one multi-node launch become one ``Incident``."""
    names = list(names) if names is not None else [os.fspath(p) for p in paths]
    results = explain_many(list(paths), jobs, options=options, catalog=catalog, names=names,
                           then=explain_with_summary)
    good = [(i, r) for i, r in enumerate(results) if not isinstance(r, Exception)]
    if separate or len(good) < 2:
        return Explained([r if isinstance(r, Exception) else r[0] for r in results], names)
    summaries = [pair[1] for _i, pair in good]
    placed: dict[int, Any] = {}
    for members in group(summaries):
        if len(members) == 1:
            i, (report, _s) = good[members[0]]
            placed[i] = report
            continue
        incident = merge([summaries[m] for m in members])
        placed[good[members[0]][0]] = (incident, [good[m][1][0] for m in members])
    kept = [i for i, r in enumerate(results) if i in placed or isinstance(r, Exception)]
    return Explained([placed.get(i, results[i]) for i in kept], [names[i] for i in kept])
