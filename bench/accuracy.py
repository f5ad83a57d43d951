"""Score `logx explain` on a labelled directory (labels.jsonl + <id>.log, the corpus format).

    python bench/accuracy.py /work/shared/corpus [--json] [--jobs N]

Prints top-1, key line cited, false alarms on healthy logs, precision/recall per root cause and
every miss with what was found instead (logforensics/_scoring.py computes them). Exit code 0, or
2 when the directory cannot be scored.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from logforensics._scoring import LabelError, format_score, score_directory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", help="a directory holding labels.jsonl and the logs")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.add_argument("--jobs", type=int, default=1, help="logs explained at a time")
    args = parser.parse_args(argv)
    try:
        score = score_directory(args.directory, jobs=args.jobs)
    except LabelError as exc:
        print(f"accuracy: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(score.to_dict(), indent=2) if args.json else format_score(score))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly, as it would `cat`
    sys.exit(main())
