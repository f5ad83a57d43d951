"""How the answer on a labelled directory survives the ways a log reaches logx.

    python bench/robustness.py /work/shared/corpus [--only docker,cut120] [--misses]

A user's log is rarely the file the server wrote: it comes through docker compose or kubectl,
journald or Ray, `kubectl logs --prefix`, Slurm's srun, pdsh or mpirun on a multi-node launch,
`ts`, `cat -n` or `grep -n` (the whole log, or the lines a search found and their context), a
terminal that cut it at its width, a Windows editor (CRLF), a Markdown paste, or only its last
lines. Each *shape* below rewrites every log of the directory
the way that path would (the label is unchanged: the cause is the same) and scores `logx
explain` on the rewritten copies (logforensics/_scoring.py, the one scorer). A shape that loses
answers the plain logs get is a parser gap, not a missing pattern. Nothing is written beside the
logs: the copies live in a temporary directory. Exit code 0, or 2 when the directory cannot be
scored.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from logforensics._record import replace
from logforensics._scoring import LabelError, Score, load_labels, score_labels

Shape = Callable[[list[str], str], list[str] | None]  # (lines, key line) -> lines, or None: skip


def _prefix(make: Callable[[int], str]) -> Shape:
    return lambda lines, key: [make(i) + line for i, line in enumerate(lines)]


def _tail_from_key(lines: list[str], key: str) -> list[str] | None:
    """A headless paste: from three lines above the key line to the end (`tail -n`)."""
    at = next((i for i, line in enumerate(lines) if key and key in line), None)
    return None if at is None else lines[max(at - 3, 0):]


def _tail(n: int) -> Shape:
    """`tail -n N`, when the key line is still among those lines."""
    def shape(lines: list[str], key: str) -> list[str] | None:
        tail = lines[-n:]
        return tail if key and any(key in line for line in tail) and len(lines) > n else None
    return shape


def _cut(width: int) -> Shape:
    return lambda lines, key: [line[:width] for line in lines]


def _wrap(width: int) -> Shape:
    """A terminal or mail client that broke long lines at ``width`` (the rest on the next line)."""
    return lambda lines, key: [line[i : i + width] for line in lines for i in range(0, max(len(line), 1), width)]


def _middle_cut(lines: list[str], key: str) -> list[str] | None:
    """A paste that kept the head and the tail and dropped the middle ("... 2000 lines ...")."""
    if len(lines) < 60:
        return None
    return [*lines[:15], "...", f"[{len(lines) - 40} lines omitted]", "...", *lines[-25:]]


# what a person greps a log for when it failed
_GREP_WORDS = re.compile(r"error|exception|traceback|fail|killed", re.IGNORECASE)


def _grep(context: int) -> Shape:
    """`grep -n -i -E 'error|exception|…' -C N`: the lines that match ("12:"), ``context`` lines
    around them ("12-"), "--" between groups; when the key line is among them."""
    def shape(lines: list[str], key: str) -> list[str] | None:
        hits = [i for i, line in enumerate(lines) if _GREP_WORDS.search(line)]
        shown = sorted({j for i in hits for j in range(max(i - context, 0), min(i + context + 1, len(lines)))})
        if not key or not any(key in lines[j] for j in shown):
            return None
        matched = set(hits)
        out: list[str] = []
        for n, j in enumerate(shown):
            if n and j != shown[n - 1] + 1:
                out.append("--")
            out.append(f"{j + 1}{':' if j in matched else '-'}{lines[j]}")
        return out
    return shape


def _markdown(lines: list[str], key: str) -> list[str]:
    return ["Here is the log:", "", "```", *lines, "```", "", "Any idea?"]


SHAPES: dict[str, Shape] = {
    "plain": lambda lines, key: lines,
    "docker": _prefix(lambda i: "sglang-1  | "),
    "kubectl": _prefix(lambda i: f"2026-03-23T14:{i // 60 % 60:02d}:{i % 60:02d}.{i:06d}123Z "),
    "journald": _prefix(lambda i: f"Mar 23 14:{i // 60 % 60:02d}:{i % 60:02d} gpu-node-3 python3[4711]: "),
    "ts": _prefix(lambda i: f"Mar 23 14:{i // 60 % 60:02d}:{i % 60:02d} "),
    "ray": _prefix(lambda i: "(SGLangEngine pid=4711) "),
    "srun": _prefix(lambda i: "0: "),  # Slurm's srun --label: the task number
    "pdsh": _prefix(lambda i: "gpu-node-3: "),  # pdsh / clush: the host
    "mpirun": _prefix(lambda i: "[1,0]<stdout>:"),  # Open MPI's --tag-output
    "kprefix": _prefix(lambda i: "[pod/sglang-0/server] "),  # kubectl logs --prefix
    "catn": _prefix(lambda i: f"{i + 1:6d}\t"),  # cat -n, or an editor's line numbers
    "grepn": _prefix(lambda i: f"{i + 1}:"),  # grep -n over the whole log
    "grepfiles": _prefix(lambda i: f"logs/node-0.log:{i + 1}:"),  # grep -n over several files (or -r)
    "grepc": _grep(3),  # grep -n -C3 for the words of a failure
    "grepm": _grep(0),  # grep -n for them: only the lines that match
    "crlf": lambda lines, key: [line + "\r" for line in lines],
    "ansi": lambda lines, key: [f"\x1b[32m{line}\x1b[0m" if line else line for line in lines],
    "markdown": _markdown,
    "headless": _tail_from_key,
    "middle": _middle_cut,
    "tail5": _tail(5),
    "tail2": _tail(2),
    "cut120": _cut(120),
    "wrap120": _wrap(120),
}


def reshape(directory: Path, name: str, out: Path) -> list:
    """The directory's labels, pointing at copies of their logs rewritten by shape ``name``."""
    shape = SHAPES[name]
    labels = []
    for label in load_labels(directory):
        text = label.path.read_bytes().decode("utf-8", "replace")
        lines = shape(text.splitlines(), label.key_line.strip())
        if lines is None:
            continue
        path = out / f"{name}-{label.path.name}"
        path.write_bytes(("\n".join(lines) + "\n").encode())
        labels.append(replace(label, path=path, key_line=""))
    return labels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="a directory holding labels.jsonl and the logs")
    parser.add_argument("--only", default="", help="comma-separated shapes (default: all)")
    parser.add_argument("--misses", action="store_true", help="list each shape's misses")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(SHAPES)
    unknown = sorted(set(names) - set(SHAPES))
    if unknown:
        print(f"robustness: unknown shape(s) {', '.join(unknown)}; known: {', '.join(SHAPES)}",
              file=sys.stderr)
        return 2
    try:
        plain = {o.label.id for o in _score(args.directory, "plain").outcomes if o.correct}
        print(f"{'shape':10} {'right':>9} {'lost':>5}  (lost: right on the plain log, wrong here)")
        for name in names:
            score = _score(args.directory, name)
            right = [o for o in score.outcomes if o.correct]
            lost = [o for o in score.outcomes if not o.correct and o.label.id in plain]
            print(f"{name:10} {len(right):>4}/{len(score.outcomes):<4} {len(lost):>5}")
            if args.misses:
                for o in lost:
                    print(f"    {o.label.id}: expected {o.label.root_cause}, got {o.answer}")
    except LabelError as exc:
        print(f"robustness: {exc}", file=sys.stderr)
        return 2
    return 0


def _score(directory: Path, name: str) -> Score:
    with tempfile.TemporaryDirectory(prefix=f"logx-{name}-") as tmp:
        return score_labels(reshape(directory, name, Path(tmp)), directory=str(directory))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly, as it would `cat`
    sys.exit(main())
