"""The warnings a badly serving run justifies, from its ``ServingStats`` (``serving.py``).

Each is a ``warning`` finding (degraded, not failed) with its figures, when it started and the
fix; where the catalog already has a curated finding for the same root cause (a retraction
line, FlashInfer's JIT line), that finding is enriched with the figures instead of a second
one being made.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ._conditions import Evidence
from ._findings import CONFIDENCE, Finding
from ._lines import parse_timestamp
from ._memory import build_ledger
from ._serving import (
    HEALTH_FLAPS,
    HTTP_5XX_BURST,
    HTTP_5XX_SHARE,
    JIT_STALL_SECONDS,
    QUEUE_GROWN_MIN,
    QUEUE_RISING_SHARE,
    RETRACTION_STORM,
    SERIES_FIELDS,
    SERIES_MIN_BUCKETS,
    THROUGHPUT_FALL,
    THROUGHPUT_LOAD_HELD,
    Mark,
    ServingStats,
    clock,
)


def _seconds(a: str | None, b: str | None) -> float | None:
    ta, tb = (parse_timestamp(a) if a else None), (parse_timestamp(b) if b else None)
    return (tb - ta).total_seconds() if ta is not None and tb is not None else None


def _stretch(first: Mark, last: Mark | None) -> tuple[Mark, Mark, float | None]:
    """A stretch of lines from ``first`` to ``last`` (None: the same line), and its seconds."""
    last = last or first
    return first, last, _seconds(first.ts, last.ts)


def _when(mark: Mark) -> str:
    return f"line {mark.line}" + (f", {mark.ts}" if mark.ts else "")


def findings(run, found: list[Finding], facts: dict[str, Any]) -> list[Finding]:
    """``found`` with the serving warnings of ``run`` added, or curated ones enriched (new
    findings in their place: the ones given are left as the matcher made them)."""
    stats: ServingStats | None = getattr(run, "serving", None)
    if stats is None:
        return found
    out = list(found)
    at = {f.id: i for i, f in enumerate(out)}
    for make in (_kv_pressure, _jit_stall, _http_5xx, _queue_growing, _throughput_falling, _health_flapping):
        made = make(run, stats, facts)
        if made is None:
            continue
        if made.id not in at:
            out.append(made)
            continue
        curated = out[at[made.id]]
        have = {e.line for e in curated.evidence}
        fix_figures = made.facts.get("fix_figures")
        out[at[made.id]] = replace(
            curated, explanation=f"{curated.explanation.rstrip()} {made.facts['figures']}",
            facts={**curated.facts, **made.facts},
            fix=f"{curated.fix.rstrip()} {fix_figures}" if fix_figures else curated.fix,
            evidence=sorted(curated.evidence + [e for e in made.evidence if e.line not in have],
                            key=lambda e: e.line)[:8])
    return out


def _evidence(*marks: Mark | None) -> list:
    seen: dict[int, Mark] = {m.line: m for m in marks if m is not None}
    return [Evidence(m.line, m.text) for _, m in sorted(seen.items())]


def _warning(run, id_: str, title: str, evidence: list[Evidence], figures: str, fix: str,
             facts: dict[str, Any], fix_figures: str = "") -> Finding:
    return Finding(id=id_, title=title, severity="warning", confidence=CONFIDENCE["serving"], phase="serving",
                   run=run.index, evidence=evidence, explanation=figures, fix=fix, priority=30,
                   facts={"figures": figures, "fix_figures": fix_figures, **facts})


def _kv_pressure(run, stats: ServingStats, facts: dict[str, Any]) -> Finding | None:
    """Repeated retractions: the KV pool is too small for the load."""
    if stats.retractions < RETRACTION_STORM or stats.first_retraction is None:
        return None
    first, last, span = _stretch(stats.first_retraction, stats.last_retraction)
    figures = (f"The scheduler retracted requests {stats.retractions} times ({stats.retracted_reqs} "
               f"requests in all) from {_when(first)}"
               + (f" over {span:.0f} s" if span else "") + ".")
    if stats.new_token_ratio:
        a, b = stats.new_token_ratio
        figures += f" new_token_ratio went {a:.2f} -> {b:.2f} (the scheduler now admits fewer new tokens)."
    usage = (run.last_decode or {}).get("token_usage")
    if isinstance(usage, int | float):
        figures += f" Token usage at the last decode step: {usage:.2f}."
    tokens = min((r.kv_tokens for r in build_ledger(run).ranks if r.kv_tokens), default=None)
    fix_figures = ""
    if isinstance(tokens, int) and tokens > 0:
        running = (run.last_decode or {}).get("running_req")
        if isinstance(running, int) and running > 0:
            target = max(1, int(running * 0.8))
            fix_figures = (f"The pool ({tokens} KV tokens, from the memory ledger) filled with {running} requests "
                           f"running (~{tokens // running} tokens each): --max-running-requests {target} (80% of them) "
                           "keeps about a fifth of the pool free for their growth.")
    fix = ("Cap concurrency with --max-running-requests, give the KV cache more memory with a higher "
           "--mem-fraction-static (the memory ledger shows the room), or lower --chunked-prefill-size; "
           "a 'lpm'/'fcfs' --schedule-policy with a higher --schedule-conservativeness retracts less.")
    ev = _evidence(first, last)
    return _warning(run, "decode_retraction_kv_pressure",
                    f"KV cache pressure: {stats.retractions} retractions while serving", ev, figures,
                    f"{fix} {fix_figures}".strip(),
                    {"retractions": stats.retractions, "retracted_reqs": stats.retracted_reqs,
                     "first_retraction_line": first.line}, fix_figures)


def _jit_stall(run, stats: ServingStats, facts: dict[str, Any]) -> Finding | None:
    """Kernels were compiled while a request waited: no decode step for a long time after
    the JIT line."""
    jit, d = stats.jit_mark, stats.jit_decode
    if jit is None or d is None:
        return None
    gap = _seconds(jit.ts, d.ts)
    if gap is None or gap < JIT_STALL_SECONDS:
        return None
    figures = (f"Kernels were compiled on first use ({_when(jit)}) and the next decode step came only "
               f"{gap:.0f} s later ({_when(d)}): requests waited for the compilation.")
    fix = ("Warm the server up before it takes traffic, keep the JIT cache (~/.cache/flashinfer, "
           "~/.triton) on a persistent volume, or install prebuilt kernels (flashinfer-jit-cache).")
    return _warning(run, "flashinfer_jit_first_request_latency",
                    f"The first request stalled {gap:.0f} s (kernels compiled on first use)",
                    _evidence(jit, d), figures, fix,
                    {"first_request_stall_s": round(gap, 1)})


def _http_5xx(run, stats: ServingStats, facts: dict[str, Any]) -> Finding | None:
    """A burst of server errors while the server stayed up."""
    n = run.http_errors
    if n < HTTP_5XX_BURST or not run.requests or n / run.requests < HTTP_5XX_SHARE or stats.first_5xx is None:
        return None
    first, last = stats.first_5xx, stats.last_5xx or stats.first_5xx
    figures = (f"{n} of {run.requests} requests ({n / run.requests:.0%}) failed with a 5xx, from "
               f"{_when(first)} to {_when(last)}.")
    if stats.health_failures:
        figures += f" The health check failed {stats.health_failures} times too."
    fix = ("Read the lines just before the first 5xx for the failing component; under overload cap "
           "--max-running-requests so requests queue instead of failing, and check the client's timeouts.")
    ev = _evidence(first, last)
    return _warning(run, "http_5xx_burst", f"{n} requests failed with a server error (5xx)", ev, figures,
                    fix, {"http_5xx": n, "requests": run.requests})


# — from the serving series (serving.Series) ————————————————————————————————————————


THROUGHPUT, QUEUE, USAGE, RUNNING = (SERIES_FIELDS.index(name) for name in
                                     ("gen_throughput", "queue_req", "token_usage", "running_req"))


def _buckets(stats: ServingStats, *fields: int) -> list[tuple[int, list[int]]]:
    """The series' buckets, in time order (``(key, agg)``), that hold each of ``fields``."""
    return [(k, a) for k, a in sorted(stats.series.buckets.items()) if all(a[1 + 3 * f] for f in fields)]


def _mean(aggs: list[list[int]], field: int) -> float | None:
    """The mean of figure ``field`` (a ``SERIES_FIELDS`` index) over ``aggs``, in its printed unit."""
    n = sum(a[1 + 3 * field] for a in aggs)
    return sum(a[2 + 3 * field] for a in aggs) / n / 1000 if n else None


def _at(stats: ServingStats, key: int, with_year: bool) -> str:
    return clock(key * stats.series.width, with_year)


def _with_year(stats: ServingStats) -> bool:
    ts = stats.first_decode.ts if stats.first_decode else None
    return ts is None or (len(ts) >= 19 and ts[4] == "-")


def _queue_growing(run, stats: ServingStats, facts: dict[str, Any]) -> Finding | None:
    """#queue-req rising over most buckets while the server was decoding: requests arrive
    faster than it finishes them."""
    buckets = _buckets(stats, QUEUE, RUNNING)
    if len(buckets) < SERIES_MIN_BUCKETS:
        return None
    queues = [_mean([a], QUEUE) or 0.0 for _, a in buckets]
    rises = sum(b > a for a, b in zip(queues, queues[1:], strict=False))
    falls = sum(b < a for a, b in zip(queues, queues[1:], strict=False))
    if rises < QUEUE_RISING_SHARE * (len(queues) - 1) or falls > rises / 4 or queues[-1] < QUEUE_GROWN_MIN \
            or queues[-1] < 2 * max(queues[0], 1.0):
        return None
    start = next(i for i, q in enumerate(queues) if q > queues[0])
    first_key = buckets[max(0, start - 1)][0]
    with_year = _with_year(stats)
    running = _mean([a for _, a in buckets[-3:]], RUNNING) or 0.0
    usage = (_mean([a for _, a in buckets[-3:]], USAGE) or 0.0) / run.dialect.stats.usage_per_unit
    figures = (f"The queue grew in {rises} of {len(queues) - 1} steps of the serving series (buckets of "
               f"{stats.series.width} s), from {queues[0]:.0f} to {queues[-1]:.0f} waiting requests, "
               f"from {_at(stats, first_key, with_year)} on, while about {running:.0f} requests were running "
               f"(token usage {usage:.2f}): requests arrive faster than the server finishes them.")
    tokens = min((r.kv_tokens for r in build_ledger(run).ranks if r.kv_tokens), default=None)
    if usage >= 0.85:
        fix_figures = (f"The KV pool is {usage:.0%} full, so more running requests would not fit: give it more memory "
                       "(a higher --mem-fraction-static, where the memory ledger shows free memory after the "
                       "pools) or add replicas.")
    elif running >= 1 and usage > 0:
        target = int(running * 0.85 / usage)
        if tokens:
            each = int(tokens * usage / running)
            fix_figures = (f"The KV pool is only {usage:.0%} full: {running:.0f} running requests hold ~{each} of its "
                           f"{tokens} tokens each (the memory ledger), so --max-running-requests {target} lets more "
                           f"run at once ({target} × {each} = {target * each} tokens, 85% of the pool).")
        else:
            fix_figures = (f"The KV pool is only {usage:.0%} full with {running:.0f} running: "
                           f"--max-running-requests {target} lets more run at once (85% of the pool).")
    else:
        fix_figures = ""
    fix = ("Raise --max-running-requests while the KV pool has room, else give the pool more memory "
           "(--mem-fraction-static) or add replicas; a smaller --chunked-prefill-size keeps long prompts "
           "from holding decode back, and --schedule-policy lpm reuses shared prefixes.")
    ev = _evidence(stats.first_decode) + [Evidence(0, f"(serving series) queue {queues[0]:.0f} at "
                                                     f"{_at(stats, buckets[0][0], with_year)} -> {queues[-1]:.0f} "
                                                     f"at {_at(stats, buckets[-1][0], with_year)}")]
    return _warning(run, "serving_queue_growing",
                    f"The request queue only grew: {queues[0]:.0f} -> {queues[-1]:.0f} waiting", ev, figures,
                    f"{fix} {fix_figures}".strip(),
                    {"queue_first": round(queues[0], 1), "queue_last": round(queues[-1], 1),
                     "rising_steps": rises, "steps": len(queues) - 1,
                     "started_at": _at(stats, first_key, with_year)}, fix_figures)


def _throughput_falling(run, stats: ServingStats, facts: dict[str, Any]) -> Finding | None:
    """Generation throughput fell while as many requests (or more) kept running."""
    buckets = _buckets(stats, THROUGHPUT, RUNNING)
    if len(buckets) < SERIES_MIN_BUCKETS:
        return None
    third = len(buckets) // 3
    head, tail = [a for _, a in buckets[:third]], [a for _, a in buckets[-third:]]
    tps_a, tps_b = _mean(head, THROUGHPUT) or 0.0, _mean(tail, THROUGHPUT) or 0.0
    run_a, run_b = _mean(head, RUNNING) or 0.0, _mean(tail, RUNNING) or 0.0
    if tps_a <= 0 or run_a < 1 or tps_b > THROUGHPUT_FALL * tps_a or run_b < THROUGHPUT_LOAD_HELD * run_a:
        return None
    with_year = _with_year(stats)
    start = next(k for k, a in buckets[third:] if (_mean([a], THROUGHPUT) or 0.0) < (tps_a + tps_b) / 2)
    figures = (f"Generation throughput fell from {tps_a:.0f} to {tps_b:.0f} tok/s ({tps_b / tps_a - 1:+.0%}; "
               f"the first and last thirds of the serving series) while the running requests went "
               f"{run_a:.0f} -> {run_b:.0f}: the load held, each step got slower, from about "
               f"{_at(stats, start, with_year)} on.")
    graph_bs = run.args.get("cuda_graph_max_bs")
    ranks = build_ledger(run).ranks
    ledger_bs = max((r.graph_last_bs for r in ranks if r.graph_last_bs), default=None)
    captured = graph_bs if isinstance(graph_bs, int) else ledger_bs
    peak = max(a[3 + 3 * RUNNING] for _, a in buckets) // 1000
    usage = (_mean(tail, USAGE) or 0.0) / run.dialect.stats.usage_per_unit
    if isinstance(captured, int) and peak > captured:
        fix_figures = (f"Up to {peak} requests ran in a decode batch but CUDA graphs were captured only up to "
                       f"batch size {captured}: larger batches ran without graphs. --cuda-graph-max-bs {peak}"
                       + _graph_room(ranks, captured, peak) + ".")
    elif usage >= 0.9:
        fix_figures = (f"The KV pool was {usage:.0%} full in the last third: long contexts slow each step and the "
                       "scheduler retracts; cap --max-running-requests or give the pool more memory "
                       "(--mem-fraction-static).")
    else:
        fix_figures = ""
    fix = ("Check what changed as it slowed: batches outside CUDA graphs (--cuda-graph-max-bs), KV pressure "
           "(--max-running-requests, --mem-fraction-static), long prefills between decode steps "
           "(a smaller --chunked-prefill-size), or the scheduling order (--schedule-policy).")
    ev = _evidence(stats.first_decode) + [Evidence(0, f"(serving series) {tps_a:.0f} -> {tps_b:.0f} tok/s with "
                                                     f"{run_a:.0f} -> {run_b:.0f} running")]
    return _warning(run, "serving_throughput_falling",
                    f"Throughput fell {1 - tps_b / tps_a:.0%} while the load held", ev, figures,
                    f"{fix} {fix_figures}".strip(),
                    {"gen_throughput_first": round(tps_a, 1), "gen_throughput_last": round(tps_b, 1),
                     "running_first": round(run_a, 1), "running_last": round(run_b, 1),
                     "started_at": _at(stats, start, with_year)}, fix_figures)


def _graph_room(ranks: list, captured: int, wanted: int) -> str:
    """Whether graphs up to ``wanted`` fit, from the ledger: their memory grows about with the
    largest batch size (the captured graphs' × wanted / captured) against the free memory after them."""
    known = [r for r in ranks if r.graph_gib and r.avail_after_graphs_gib is not None]
    if not known:
        return " (its graphs take memory: check the free memory after the graphs)"
    r = min(known, key=lambda r: r.avail_after_graphs_gib)
    more = r.graph_gib * wanted / captured - r.graph_gib
    verdict = "fits" if more < r.avail_after_graphs_gib else "does not fit: lower --mem-fraction-static first"
    return (f" (graphs take {r.graph_gib:.2f} GiB up to {captured}, so about {r.graph_gib:.2f} × {wanted} / "
            f"{captured} − {r.graph_gib:.2f} = {more:.2f} GiB more, against {r.avail_after_graphs_gib:.2f} GiB free "
            f"after the graphs on {r.rank}: it {verdict})")


def _health_flapping(run, stats: ServingStats, facts: dict[str, Any]) -> Finding | None:
    """Health checks failing, then passing, then failing again: a watchdog or load balancer
    takes the server in and out of rotation."""
    if stats.health_episodes < HEALTH_FLAPS or stats.first_health_failure is None:
        return None
    first, last, span = _stretch(stats.first_health_failure, stats.last_health_failure)
    figures = (f"The health check failed {stats.health_failures} times in {stats.health_episodes} separate "
               f"episodes, the server answering in between, from {_when(first)} to {_when(last)}"
               + (f" ({span:.0f} s)" if span else "") + ": it is alive but too slow to answer in time, so a "
               "watchdog or load balancer keeps taking it out of rotation and back.")
    fix = ("Find what stalls the scheduler at those times (long prefills: a smaller --chunked-prefill-size; "
           "overload: cap --max-running-requests so requests queue instead of timing out the health "
           "check); give the probe a longer timeout or --health-check-timeout where the release has it.")
    return _warning(run, "health_check_flapping",
                    f"The health check flapped: {stats.health_episodes} failure episodes", _evidence(first, last),
                    figures, fix, {"health_failures": stats.health_failures,
                                   "health_episodes": stats.health_episodes})
