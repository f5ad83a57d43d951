#!/usr/bin/env python3
"""Latency of ``logx watch --json``: from a line being written by a separate writer process to
its finding being printed.

    python bench/bench_watch_latency.py [--samples 200] [--mode both|file|pipe] [--noise 20]

For each mode a writer process emits ``--samples`` marker lines (each matched by its own
line pattern, so each one yields a new finding), with random pauses between them (so the
samples land anywhere in the follower's poll interval) and ``--noise`` ordinary SGLang
decode-batch lines before each marker. The writer records ``time.monotonic()`` just before
each marker's ``write``; the bench reads ``logx watch --json`` output in a thread and stamps
each finding on arrival. CLOCK_MONOTONIC is system-wide on Linux, so the two clocks compare.

* ``file``: ``logx watch LOG --json`` follows a file the writer appends to (polling, 50 ms);
* ``pipe``: ``writer | logx watch --json`` (select on stdin).

Prints p50 / p90 / p99 / max in milliseconds per mode. Target: p99 < 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

WRITER = r"""
import json, os, random, sys, time
target, samples, noise, gap_min, gap_max, seed = sys.argv[1:7]
samples, noise, seed = int(samples), int(noise), int(seed)
gap_min, gap_max = float(gap_min), float(gap_max)
rng = random.Random(seed)
fd = 1 if target == "-" else os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
stamps = []
ts = "[2026-03-23 14:02:00 TP0]"
noise_line = (ts + " Decode batch, #running-req: 12, #token: 4000, token usage: 0.01, cuda graph: True, "
              "gen throughput (token/s): 1234.56, #queue-req: 0\n").encode()
os.write(fd, (ts + " server_args=ServerArgs(model_path='bench/model', tp_size=1)\n").encode())
time.sleep(0.3)
for i in range(samples):
    if noise:
        os.write(fd, noise_line * noise)
    time.sleep(rng.uniform(gap_min, gap_max))
    line = f"{ts} BENCHMARK marker {i:04d} reached\n".encode()
    stamps.append(time.monotonic())
    os.write(fd, line)
time.sleep(0.5)
sys.stderr.write(json.dumps(stamps) + "\n")
sys.stderr.flush()
"""


def write_patterns(directory: Path, samples: int) -> None:
    """One line pattern per sample: every marker is a new finding (findings are reported
    once per id)."""
    parts = []
    for i in range(samples):
        parts.append(f'''
[[pattern]]
id = "bench_marker_{i:04d}"
title = "Benchmark marker {i}"
severity = "warning"
phase = "any"
explanation = "A benchmark marker line."
fix = "Nothing to fix."
  [[pattern.match]]
  line = 'BENCHMARK marker {i:04d} reached'
''')
    (directory / "bench.toml").write_text("".join(parts))


class Reader(threading.Thread):
    def __init__(self, stream) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.seen: dict[int, float] = {}

    def run(self) -> None:
        for raw in iter(self.stream.readline, b""):
            now = time.monotonic()
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            fid = obj.get("id", "") if obj.get("type") == "finding" else ""
            if fid.startswith("bench_marker_"):
                self.seen.setdefault(int(fid.rsplit("_", 1)[1]), now)


def wait_open(pid: int, path: Path, timeout: float = 10.0) -> None:
    target = os.path.realpath(path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                        return
                except OSError:
                    pass
        except OSError:
            pass
        time.sleep(0.01)
    raise SystemExit(f"logx watch did not open {path}")


def run_mode(mode: str, args, patterns: Path, workdir: Path) -> list[float]:
    logx = [sys.executable, "-m", "logforensics", "watch", "--json", "--patterns", str(patterns)]
    wargs = [str(args.samples), str(args.noise), str(args.gap_min), str(args.gap_max), str(args.seed)]
    if mode == "file":
        log = workdir / "server.log"
        log.write_bytes(b"")
        watch = subprocess.Popen([*logx, str(log)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                 cwd=REPO)
        wait_open(watch.pid, log)
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(log), *wargs],
                                  stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    else:
        writer = subprocess.Popen([sys.executable, "-c", WRITER, "-", *wargs], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        watch = subprocess.Popen(logx, stdin=writer.stdout, stdout=subprocess.PIPE, cwd=REPO)
        writer.stdout.close()
    reader = Reader(watch.stdout)
    reader.start()
    try:
        _, err = writer.communicate(timeout=args.samples * (args.gap_max + 0.05) + 30)
        stamps = json.loads(err.decode().strip().splitlines()[-1])
        deadline = time.monotonic() + 5
        while len(reader.seen) < len(stamps) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        if watch.poll() is None:
            watch.terminate()
        watch.wait(timeout=10)
        reader.join(timeout=5)
    missing = [i for i in range(len(stamps)) if i not in reader.seen]
    if missing:
        print(f"{mode}: {len(missing)} marker(s) never reported: {missing[:10]}", file=sys.stderr)
    return [(reader.seen[i] - t) * 1000 for i, t in enumerate(stamps) if i in reader.seen]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--mode", choices=("both", "file", "pipe"), default="both")
    ap.add_argument("--noise", type=int, default=20, help="decode-batch lines written before each marker")
    ap.add_argument("--gap-min", type=float, default=0.01)
    ap.add_argument("--gap-max", type=float, default=0.06)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    modes = ("file", "pipe") if args.mode == "both" else (args.mode,)
    results = {}
    with tempfile.TemporaryDirectory(prefix="logx-bench-") as tmp:
        patterns = Path(tmp) / "patterns"
        patterns.mkdir()
        write_patterns(patterns, args.samples)
        for mode in modes:
            lat = run_mode(mode, args, patterns, Path(tmp))
            results[mode] = {
                "samples": len(lat),
                "p50_ms": round(statistics.median(lat), 1) if lat else None,
                "p90_ms": round(percentile(lat, 90), 1) if lat else None,
                "p99_ms": round(percentile(lat, 99), 1) if lat else None,
                "max_ms": round(max(lat), 1) if lat else None,
                "min_ms": round(min(lat), 1) if lat else None,
            }
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for mode, r in results.items():
            print(f"{mode:5s} n={r['samples']:4d}  p50 {r['p50_ms']:6.1f} ms  p90 {r['p90_ms']:6.1f} ms  "
                  f"p99 {r['p99_ms']:6.1f} ms  max {r['max_ms']:6.1f} ms  (min {r['min_ms']:.1f} ms)")
    ok = all(r["p99_ms"] is not None and r["p99_ms"] < 100 for r in results.values())
    print("target p99 < 100 ms:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
