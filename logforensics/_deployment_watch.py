"""``logx watch node0.log node1.log …``: the node logs of one deployment followed together.

One watch loop per file (``watcher.Watcher``, each with its own view labelled with the file),
stepped in turn. The watch ends when every file's loop has decided, or — with ``--until
ready`` — as soon as one node failed and every other file has been read up to now (its history:
the cause may be in a node that failed earlier, as ``incident.py``'s first-cause rule says).
The end is the deployment's, from the same reduction ``logx explain`` uses on the same files
(``incident.summarize``, ``group``, ``merge``): its verdict, root cause (file, stream, line) and
exit code. Files that are not one deployment end as ``explain`` ends several files: the worst
code (2 > 1 > 3 > 0).
"""

from __future__ import annotations

from collections.abc import Iterator

from ._errors import EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE
from ._follow import FollowItem
from ._gate import Outcome
from ._incident import Incident, group, merge, summarize
from ._render.watch import Renderer, one_line
from ._report import Report
from ._watcher import Watcher

_SEVERITY = {EXIT_USAGE: 3, EXIT_FAILURE: 2, EXIT_INCONCLUSIVE: 1, EXIT_OK: 0}  # explain's order


def worst(codes: list[int]) -> int:
    """The most serious of several files' exit codes, as ``logx explain`` combines them."""
    return max(codes, key=lambda c: _SEVERITY.get(c, 4), default=EXIT_OK)


class DeploymentWatch:
    """Several watch loops stepped together; ``execute`` returns the deployment's exit code."""

    def __init__(self, watchers: list[Watcher], renderer: Renderer):
        self.watchers = watchers
        self.renderer = renderer  # the deployment's end
        self.outcomes: list[Outcome | None] = [None] * len(watchers)

    def execute(self) -> int:
        items: list[Iterator[FollowItem]] = [iter(w.items) for w in self.watchers]
        for w in self.watchers:
            w.renderer.start(w)
        try:
            while not self._decided():
                for i, w in enumerate(self.watchers):
                    if self.outcomes[i] is None:
                        item = next(items[i], None)
                        self._ended(i, w.exhausted() if item is None else w.step(item))
        except KeyboardInterrupt as exc:
            for i, w in enumerate(self.watchers):
                if self.outcomes[i] is None:
                    self._ended(i, w.interrupted(exc))
        return self._end()

    def _ended(self, i: int, outcome: Outcome | None) -> None:
        if outcome is not None:
            self.outcomes[i] = outcome
            self.watchers[i].renderer.end(outcome, self.watchers[i])

    def _decided(self) -> bool:
        if all(o is not None for o in self.outcomes):
            return True
        failed = any(o is not None and o.exit_code == EXIT_FAILURE for o in self.outcomes)
        until_ready = self.watchers[0].options.until == "ready"
        return until_ready and failed and all(w.live or o is not None
                                              for w, o in zip(self.watchers, self.outcomes, strict=True))

    def _end(self) -> int:
        for w in self.watchers:
            w.conclude()  # a node decided the deployment: the others' open tracebacks count, as in explain
        reports = [w.report(status=True) for w in self.watchers]
        codes = [o.exit_code for o in self.outcomes if o is not None]
        summaries = [summarize(r) for r in reports]
        groups = group(summaries)
        if len(groups) == 1 and len(groups[0]) > 1:
            incident = merge(summaries)
            code = EXIT_FAILURE if incident.verdict == "failed" else worst(codes)
            summary = {"type": "end", "deployment": True, "verdict": incident.verdict, "exit_code": code,
                       "incident": incident.to_json(reports)["incident"]}
            self.renderer.deployment_end(summary, _lines(incident, reports, code))
            return code
        code = worst(codes)
        summary = {"type": "end", "deployment": False, "exit_code": code,
                   "files": [o.to_dict() if o is not None else None for o in self.outcomes]}
        self.renderer.deployment_end(summary, [f"end: {len(reports)} files that are not one deployment, "
                                               f"exit {code} (the worst of theirs)"])
        return code


def _lines(incident: Incident, reports: list[Report], code: int) -> list[str]:
    """The deployment's end in words: verdict, the root cause and where, its fix, the rest."""
    head = f"end DEPLOYMENT {incident.verdict.upper()} ({len(incident.nodes)} nodes), exit {code}"
    root = incident.root
    if root is None:
        return [head]
    node = incident.node_rank_of(root.file)
    where = f"node {node}" if node is not None else "a node"
    out = [head, f"root cause {root.id} on {where} ({root.file}, {root.stream or 'no rank'}, line {root.line}): "
                 f"{one_line(root.title)}"]
    finding = next((f for r in reports if r.file == root.file for f in r.findings if f.id == root.id), None)
    if finding is not None:
        out.append(f"fix: {one_line(finding.fix)}")
    if incident.consequences:
        out.append(f"consequences: {len(incident.consequences)} failure(s) on the other nodes follow from it "
                   f"({', '.join(sorted({f.id for f in incident.consequences}))})")
    return out
