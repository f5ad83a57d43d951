#!/usr/bin/env python3
"""Benchmark ``logx explain`` on a big deployment: one log per node of a multi-node launch.

    python bench/bench_incident.py [--nodes 16] [--size 100MB] [--ranks 8] [--jobs 1,2] [--keep DIR]

Generates ``--nodes`` node logs of one launch with ``bench/gen_log.py``'s startup and serving
shapes (cached in ``--keep DIR`` when given): every node prints ``nnodes``, its ``node_rank``
and the same ``dist_init_addr``, its ``--ranks`` TP ranks (``TP8``–``TP15`` on node 1) print
their own statistics, and each node's clock is off by up to 3 s. One node fails (a CUDA
illegal memory access on one of its ranks); 600 s later every other node's NCCL watchdog times
out and its launcher gets the SIGQUIT. Then times ``logx explain -j N DIR`` (and ``--json``)
for each ``--jobs`` value in a fresh child process, with peak RSS (the largest of the
processes: the parent or one worker), and checks that the incident names the failing node,
rank and cause with every other node as a consequence.
"""

from __future__ import annotations

import argparse
import calendar
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gen_log as gen  # noqa: E402
from bench_explain import logx_command, machine  # noqa: E402

CAUSE = "cuda_illegal_memory_access"
DIST_INIT_ADDR = "10.20.0.11:5757"
NCCL_TIMEOUT_S = 600
# wall time, CPU time (user + system, every process: the parent and its workers) and the peak
# RSS of the largest one; the CPU time is what a shared machine's load does not inflate
WRAPPER = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
    "d = time.perf_counter() - t\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(d, u.ru_utime + u.ru_stime, u.ru_maxrss, p.returncode)\n"
)


def measure(cmd: list[str], repeat: int) -> tuple[float, float, int, int]:
    """Best of ``repeat`` runs in a fresh process: (wall s, CPU s, peak RSS KiB, exit code)."""
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], capture_output=True, text=True, check=True)
        wall, cpu, rss, rc = out.stdout.split()
        runs.append((float(wall), float(cpu), int(rss), int(rc)))
    return min(runs)


class NodeRun(gen.Run):
    """One node's launch: gen_log's run with the deployment's identity in its server args, the
    node's global TP ranks, and every rank printing its statistics."""

    def __init__(self, node: int, nodes: int, ranks: int, rng: random.Random):
        super().__init__(0, 1, ranks, rng, "tp8-all")
        self.node, self.nodes = node, nodes
        self.dp = False
        self.suffixes = [f" TP{node * ranks + k}" for k in range(ranks)]
        self.stats = list(range(ranks))

    def server_args_items(self) -> list[tuple[str, object]]:
        deployment = {"tp_size": self.ranks * self.nodes, "dp_size": 1, "enable_dp_attention": False,
                      "dist_init_addr": DIST_INIT_ADDR, "nnodes": self.nodes, "node_rank": self.node}
        return [(k, deployment.get(k, v)) for k, v in super().server_args_items()]


def illegal_memory_access(ts: str, suffix: str, pid: int) -> list[str]:
    sgl, torch = gen.SGL, gen.TORCH
    return [
        f"[{ts}{suffix}] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{sgl}/srt/managers/scheduler.py", line 2923, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        f'  File "{torch}/utils/_contextlib.py", line 120, in decorate_context',
        "    return func(*args, **kwargs)",
        f'  File "{sgl}/srt/managers/scheduler.py", line 1089, in event_loop_overlap',
        "    batch_result = self.run_batch(batch)",
        f'  File "{sgl}/srt/model_executor/cuda_graph_runner.py", line 871, in replay',
        "    self.graphs[self.bs].replay()",
        f'  File "{torch}/cuda/graphs.py", line 88, in replay',
        "    super().replay()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "",
        f"[{ts}] Scheduler or DataParallelController {pid + 7} terminated with -6",
    ]


def nccl_timeout(t: int, rank: int, pid: int) -> list[str]:
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(t))
    head = f"[rank{rank}]:[E{int(stamp[:2])}{stamp[2:]}.000000123 ProcessGroupNCCL.cpp:632] [Rank {rank}] "
    return [
        head + "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88231, OpType=ALLREDUCE, "
        f"NumelIn=7168, NumelOut=7168, Timeout(ms)={NCCL_TIMEOUT_S * 1000}) ran for "
        f"{NCCL_TIMEOUT_S * 1000 + 43} milliseconds before timing out.",
        "Fatal Python error: Aborted",
        "",
        f"[{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(t))}] Received sigquit from a child process. "
        "It usually means the child failed.",
        "Killed",
    ]


def node_log(path: Path, node: int, nodes: int, ranks: int, size: int, start: int,
             fail_at: int | None, seed: int) -> int:
    """Write one node's log; returns the time its serving stopped. ``fail_at``: None on the
    failing node (it fails when its serving ends), else the failing node's time."""
    rng = random.Random(seed * 1000 + node)
    skew = rng.randrange(-3, 4)  # this node's clock is off by a few seconds
    clock = gen.Clock(start + skew)
    out = gen.Out(str(path))
    run = NodeRun(node, nodes, ranks, random.Random(rng.randrange(1 << 62)))
    serving = random.Random(rng.randrange(1 << 62))
    gen.startup(out, clock, run, serving)
    gen.bulk(out, clock, run, serving, size - 4000)
    if fail_at is None:
        clock.advance(1)
        out.add_lines(illegal_memory_access(clock.ts(), run.suffixes[ranks // 2], run.pid))
    else:
        t = max(clock.t, fail_at + skew) + NCCL_TIMEOUT_S
        out.add_lines(nccl_timeout(t, node * ranks + rng.randrange(ranks), run.pid))
    out.close()
    return clock.t


def generate(workdir: Path, nodes: int, ranks: int, size: int, seed: int, failing: int) -> list[Path]:
    """The deployment's node logs in ``workdir/logs`` (reused when they were made with the same
    parameters; the folder holds nothing else, as ``logx explain DIR`` reads every file)."""
    stamp = workdir / "params.json"
    params = {"nodes": nodes, "ranks": ranks, "size": size, "seed": seed, "failing": failing}
    paths = [workdir / "logs" / f"node{i}.log" for i in range(nodes)]
    if stamp.exists() and json.loads(stamp.read_text()) == params and all(p.exists() for p in paths):
        return paths
    shutil.rmtree(workdir / "logs", ignore_errors=True)
    (workdir / "logs").mkdir(parents=True)
    start = calendar.timegm((2026, 11, 20, 8, 0, 0, 0, 0, 0))
    t0 = time.perf_counter()
    fail_at = node_log(paths[failing], failing, nodes, ranks, size, start, None, seed)
    for i in range(nodes):
        if i != failing:
            node_log(paths[i], i, nodes, ranks, size, start, fail_at, seed)
    stamp.write_text(json.dumps(params))
    total = sum(p.stat().st_size for p in paths)
    print(f"generated {nodes} logs, {total / 1e6:,.0f} MB in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return paths


def check(logx: list[str], logs: Path, jobs: int, failing: int, nodes: int) -> str:
    """The incident's answer, checked: the failing node's cause, every other node a consequence."""
    out = subprocess.run([*logx, "explain", "--json", "-j", str(jobs), str(logs)], capture_output=True,
                         check=False)
    data = json.loads(out.stdout)
    if not isinstance(data, dict):
        raise SystemExit(f"the {nodes} logs were not recognised as one deployment")
    incident = data["incident"]
    root = incident["root_cause"]
    others = {c["node_rank"] for c in incident["consequences"]}
    ok = (root["id"] == CAUSE and root["node_rank"] == failing and out.returncode == 1
          and others >= set(range(nodes)) - {failing})
    where = f"{root['id']} on node {root['node_rank']}, {root['stream']}"
    if not ok:
        raise SystemExit(f"wrong incident: {where}, consequences on nodes {sorted(others)}")
    return where


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--ranks", type=int, default=8, help="TP ranks per node (default 8)")
    ap.add_argument("--size", type=gen.parse_size, default=gen.parse_size("100MB"), help="per node log")
    ap.add_argument("--jobs", default="1,2", help="comma list of -j values to time (default 1,2)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="generate the logs here and keep them (reused next time)")
    a = ap.parse_args(argv)
    if a.nodes < 2:
        ap.error("--nodes must be >= 2")
    failing = a.nodes // 3
    workdir = a.keep or Path(tempfile.mkdtemp(prefix="logx-incident-"))
    try:
        paths = generate(workdir, a.nodes, a.ranks, a.size, a.seed, failing)
        total = sum(p.stat().st_size for p in paths)
        logx = logx_command()
        logs = paths[0].parent
        where = check(logx, logs, 2, failing, a.nodes)
        rows = []
        jobs = [int(j) for j in a.jobs.split(",")]
        runs = [(f"`logx explain -j {j}`", ["-j", str(j)]) for j in jobs]
        runs.append((f"`logx explain -j {jobs[-1]} --json`", ["-j", str(jobs[-1]), "--json"]))
        for label, extra in runs:
            wall, cpu, rss, rc = measure([*logx, "explain", *extra, str(logs)], a.repeat)
            rows.append((label, wall, cpu, rss, rc))
            print(f"{label}: {wall:.2f} s", file=sys.stderr)
    finally:
        if not a.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    mb = total / 1e6
    print(f"\n{a.nodes} node logs × {mb / a.nodes:.0f} MB ({mb:,.0f} MB), {a.ranks} ranks each, {machine()}")
    print(f"answer: {where}, the other {a.nodes - 1} nodes its consequences\n")
    print("| command | wall (s) | MB/s | CPU, all processes (s) | MB per CPU-s | peak RSS, largest process (MB) "
          "| exit |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, wall, cpu, rss, rc in rows:
        print(f"| {label} | {wall:.2f} | {mb / wall:,.0f} | {cpu:.2f} | {mb / cpu:,.0f} | {rss / 1024:.0f} | {rc} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
