#!/usr/bin/env python3
"""Benchmark ``logx explain`` end to end on a large generated SGLang log.

    python bench/bench_explain.py [--size 300MB] [--log-requests] [--keep DIR] [--repeat 1]
    python bench/bench_explain.py --shapes all [--size 300MB] [--keep DIR] [--repeat 3]

Generates the log with ``bench/gen_log.py`` (cached in ``--keep DIR`` when given), then times,
each in a fresh child process: ``logx explain`` (the installed console script, every stage on),
``logx explain --json``, ``logx explain`` with the Python scan (``LOGX_PURE_PYTHON=1``: what a
machine without a C compiler at install gets), ``logx watch --until ready`` following the file
from its start (it catches up on the back-log, then stops at the log's crash), a plain Python
loop that only reads the lines, and ``grep -c Traceback``. Prints a Markdown table: seconds,
CPU seconds, MB/s, lines/s and peak RSS (the child's ``ru_maxrss``, read by a fresh wrapper
process so that no other child pollutes it).

``--shapes`` instead benchmarks each of gen_log.py's shapes (``all`` or a comma list; ``SHAPE+requests``
is the shape with its server's request logging, ``all`` includes default's and vllm's): per shape,
``logx explain`` and the plain read loop, interleaved in the same run, and a table of each
shape's speed as a share of the read loop's, by wall time and by CPU time (user + system: on a
shared machine the CPU time is the steadier figure).

``--startup`` times what a small log costs: ``logx status`` and ``logx explain`` (``--json`` and
text) of a fixture log against a bare ``python -c pass``, ``--repeat`` runs each (best and
median); ``--vs CHECKOUT`` adds another checkout's (an older commit's worktree) for a before/after.
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WRAPPER = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    # stdout to a pipe, not /dev/null: grep stops at its first match when it writes to /dev/null
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
    "d = time.perf_counter() - t\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(d, u.ru_maxrss, p.returncode, u.ru_utime + u.ru_stime)\n"
)
READ_LOOP = "import sys\nn = 0\nwith open(sys.argv[1], 'rb') as fh:\n    for _ in fh:\n        n += 1\n"


def measure(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[float, int, int, float]:
    """Best wall time of ``repeat`` runs, with peak RSS (KiB), exit code and CPU seconds;
    ``env`` is added to the environment."""
    best = None
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], capture_output=True, text=True, check=True,
                             env={**os.environ, **(env or {})})
        secs, rss, rc, cpu = out.stdout.split()
        if best is None or float(secs) < best[0]:
            best = (float(secs), int(rss), int(rc), float(cpu))
    return best  # type: ignore[return-value]


def logx_command() -> list[str]:
    exe = shutil.which("logx", path=str(Path(sys.executable).parent)) or shutil.which("logx")
    return [exe] if exe else [sys.executable, "-m", "logforensics"]


def c_scan_built(logx: list[str]) -> bool:
    """Whether the ``logx`` being measured has its C scan (``logforensics._scan``)."""
    python = logx[0] if logx[0] == sys.executable else str(Path(logx[0]).parent / "python")
    probe = subprocess.run([python, "-c", "import logforensics._scan"], capture_output=True)
    return probe.returncode == 0


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPU(s), {cpu}, Python {platform.python_version()}, {platform.system()}"


def generated(workdir: Path, size: str, seed: int, log_requests: bool = False, shape: str = "default") -> Path:
    """The generated log for these arguments, made by gen_log.py unless already in ``workdir``."""
    tag = ("-requests" if log_requests else "") + ("" if shape == "default" else f"-{shape}")
    log = workdir / f"sglang-{size}-s{seed}{tag}.log"
    if not log.exists():
        t = time.perf_counter()
        subprocess.run([sys.executable, str(HERE / "gen_log.py"), str(log), "--size", size, "--seed", str(seed),
                        "--shape", shape, *(["--log-requests"] if log_requests else [])],
                       check=True, stdout=subprocess.DEVNULL)
        print(f"generated {log} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return log


def count_lines(log: Path) -> int:
    with open(log, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


REQUEST_SHAPES = ["default+requests", "vllm+requests"]  # in ``--shapes all`` too


def shapes_table(workdir: Path, a: argparse.Namespace) -> None:
    """Each shape's ``logx explain`` beside the read loop on the same file, in one run."""
    sys.path.insert(0, str(HERE))
    from gen_log import SHAPES

    # "SHAPE+requests": the shape with its server's request logging (--log-requests)
    names = sorted(SHAPES) + REQUEST_SHAPES if a.shapes == "all" else a.shapes.split(",")
    logx = logx_command()
    print(f"C scan: {'built' if c_scan_built(logx) else 'NOT built'}", file=sys.stderr)
    rows = []
    for shape in names:
        base, _, extra = shape.partition("+")
        log = generated(workdir, a.size, a.seed, log_requests=extra == "requests", shape=base)
        size, lines = log.stat().st_size, count_lines(log)
        xs, loops = [], []
        for _ in range(a.repeat):  # interleaved, so that load on the machine hits both alike
            xs.append(measure(logx + ["explain", "--json", str(log)], 1))
            loops.append(measure([sys.executable, "-c", READ_LOOP, str(log)], 1))
        x, loop = min(xs), min(loops)  # best wall time
        x_cpu, loop_cpu = min(r[3] for r in xs), min(r[3] for r in loops)
        rows.append((shape, size, lines, x, loop, x_cpu, loop_cpu))
        print(f"{shape}: explain {x[0]:.2f} s ({x_cpu:.2f} s CPU), loop {loop[0]:.2f} s ({loop_cpu:.2f} s CPU)",
              file=sys.stderr)
    print(f"\n{machine()}; best of {a.repeat}\n")
    print("| shape | MB | lines | `logx explain --json` (s) | read loop (s) | share of loop speed | CPU s: explain "
          "/ loop | share by CPU | lines/s | peak RSS (MB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for shape, size, lines, x, loop, x_cpu, loop_cpu in rows:
        print(f"| {shape} | {size / 1e6:.0f} | {lines:,} | {x[0]:.2f} | {loop[0]:.2f} | {loop[0] / x[0]:.0%} | "
              f"{x_cpu:.2f} / {loop_cpu:.2f} | {loop_cpu / x_cpu:.0%} | {lines / x[0]:,.0f} | {x[1] / 1024:.0f} |")


def startup_table(a: argparse.Namespace) -> None:
    """A small log's cost, start-up included: ``logx status`` and ``logx explain`` (JSON and
    text, the fixtures' healthy TP1 log) beside an interpreter that does nothing. With ``--vs
    CHECKOUT``, the same commands of this checkout and of CHECKOUT (another commit's worktree),
    each run alike as ``python -P -m logforensics`` with the checkout on ``PYTHONPATH``,
    interleaved, and the ratio of their median CPU times."""
    log = HERE.parent / "fixtures" / "none__healthy_tp1.log"
    commands = [("status --json", ["status", "--json"]), ("status", ["status"]),
                ("explain --json", ["explain", "--json"]), ("explain", ["explain"])]
    cache = tempfile.mkdtemp(prefix="logx-bench-cache-")  # each checkout's own, warmed by a first run
    rows: list[tuple[str, list[str], dict[str, str]]] = [("`python -c pass`", [sys.executable, "-c", "pass"], {})]
    checkouts = [HERE.parent] + ([Path(a.vs).resolve()] if a.vs else [])
    for root in checkouts:
        # As an install leaves it (pip byte-compiles the wheel): without .pyc files (an editable
        # checkout under PYTHONDONTWRITEBYTECODE) every run would compile logx's source anew.
        compileall.compile_dir(root / "logforensics", quiet=1)
        if a.vs:
            logx = [sys.executable, "-P", "-m", "logforensics"]
            env = {"PYTHONPATH": str(root), "XDG_CACHE_HOME": f"{cache}/{root.name}"}
        else:
            logx, env = logx_command(), {"XDG_CACHE_HOME": cache}
        rows += [(f"`logx {label}`, {root.name}", logx + args + [str(log)], env) for label, args in commands]
    for _label, cmd, env in rows:
        measure(cmd, 1, env)  # the disk cache filled, the files in the page cache
    times: dict[str, list[tuple[float, int, int, float]]] = {label: [] for label, _, _ in rows}
    for _ in range(a.repeat):  # interleaved
        for label, cmd, env in rows:
            times[label].append(measure(cmd, 1, env))
    shutil.rmtree(cache, ignore_errors=True)
    print(f"\n{machine()}; {a.repeat} runs each, interleaved; the small log\n")
    print("| command | best (ms) | median (ms) | median CPU (ms) | peak RSS (MB) |")
    print("|---|---:|---:|---:|---:|")
    cpu_median = {}
    for label, _, _ in rows:
        runs = sorted(times[label])
        cpu = sorted(r[3] for r in runs)
        cpu_median[label] = cpu[len(cpu) // 2]
        print(f"| {label} | {runs[0][0] * 1e3:.0f} | {runs[len(runs) // 2][0] * 1e3:.0f} | "
              f"{cpu_median[label] * 1e3:.0f} | {runs[0][1] / 1024:.0f} |")
    if a.vs:
        this, other = (f"`logx {{}}`, {root.name}" for root in checkouts)
        ratios = [f"{label} {cpu_median[this.format(label)] / cpu_median[other.format(label)]:.2f}x"
                  for label, _ in commands]
        print(f"\nmedian CPU, {checkouts[0].name} / {checkouts[1].name}: {', '.join(ratios)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="300MB", help="log size for gen_log.py (default 300MB)")
    ap.add_argument("--log-requests", action="store_true", help="include --log-requests Receive/Finish lines")
    ap.add_argument("--keep", help="directory to keep (and reuse) the generated log in")
    ap.add_argument("--repeat", type=int, default=1, help="runs per command; the best is shown")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shapes", help="benchmark gen_log.py's shapes instead: 'all' or a comma list")
    ap.add_argument("--startup", action="store_true", help="time a small log's status and explain instead")
    ap.add_argument("--vs", metavar="CHECKOUT", help="with --startup: also time another checkout of logx")
    a = ap.parse_args(argv)
    if a.startup:
        startup_table(a)
        return 0

    workdir = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="logx-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if a.shapes:
        shapes_table(workdir, a)
        if not a.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        return 0
    log = generated(workdir, a.size, a.seed, a.log_requests)
    size, lines = log.stat().st_size, count_lines(log)

    logx = logx_command()
    rows = [
        ("`logx explain`", logx + ["explain", str(log)], {}),
        ("`logx explain --json`", logx + ["explain", "--json", str(log)], {}),
        ("`logx explain`, Python scan (`LOGX_PURE_PYTHON=1`)", logx + ["explain", str(log)],
         {"LOGX_PURE_PYTHON": "1"}),
        # a file followed from its start: the back-log is caught up by the block scan, then the
        # generated log's crash at its end ends the gate
        ("`logx watch --until ready`", logx + ["watch", "--until", "ready", "--plain", str(log)], {}),
        ("plain Python loop reading the lines", [sys.executable, "-c", READ_LOOP, str(log)], {}),
    ]
    if shutil.which("grep"):
        rows.append(("`grep -c Traceback`", ["grep", "-c", "Traceback", str(log)], {}))
    print(f"C scan: {'built' if c_scan_built(logx) else 'NOT built (every logx row uses the Python scan)'}",
          file=sys.stderr)
    results = []
    for label, cmd, env in rows:
        secs, rss, rc, cpu = measure(cmd, a.repeat, env)
        results.append((label, secs, rss, rc, cpu))
        print(f"{label}: {secs:.2f} s", file=sys.stderr)

    mb = size / 1e6
    print(f"\nLog: {mb:.0f} MB, {lines:,} lines ({'with' if a.log_requests else 'without'} --log-requests), "
          f"{machine()}\n")
    print("| command | time (s) | CPU (s) | MB/s | lines/s | peak RSS (MB) | exit |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, secs, rss, rc, cpu in results:
        print(f"| {label} | {secs:.2f} | {cpu:.2f} | {mb / secs:,.0f} | {lines / secs:,.0f} | "
              f"{rss / 1024:.0f} | {rc} |")
    explain_secs = results[0][1]
    loop_secs = results[4][1]
    print(f"\nexplain runs at {loop_secs / explain_secs:.0%} of the plain read loop's speed.")
    if not a.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
