"""The warnings a badly serving run justifies, from its ``ServingStats`` (``serving.py``).

Each is a ``warning`` finding (degraded, not failed) of a built-in pattern
(``patterns/builtin/serving.toml``, found by this stage: ``found_by = serving_…``) whose
placeholders this module fills with the figures it computes: when each fires and its figures
are the arithmetic here, the words are the pattern's. Where the catalog already has a curated
finding for the same root cause (a retraction line), that finding is enriched with the figures
instead of a second one being made.
"""

from __future__ import annotations

from typing import Any

from ._catalog import Catalog
from ._conditions import Evidence
from ._findings import Finding, stage_finding
from ._lines import parse_timestamp
from ._memory import build_ledger
from ._record import record, replace
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


@record(eq=False)
class Measured:
    """What one check of this stage measured: the ``found_by`` stage of its pattern, the values
    of the pattern's placeholders, its evidence, the figures the JSON keeps (``facts``) and the
    sentence its fix gains from them (``fix_figures``: a curated finding's fix gains it too).
    ``alone``: enough for a finding of its own; else it only adds its fix's figures to a curated
    finding of the same id (one retraction line gets the pool arithmetic, a storm the figures)."""

    stage: str
    values: dict[str, Any]
    evidence: list[Evidence]
    facts: dict[str, Any]
    fix_figures: str = ""
    alone: bool = True


def _seconds(a: str | None, b: str | None) -> float | None:
    ta, tb = (parse_timestamp(a) if a else None), (parse_timestamp(b) if b else None)
    return (tb - ta).total_seconds() if ta is not None and tb is not None else None


def _stretch(first: Mark, last: Mark | None) -> tuple[Mark, Mark, float | None]:
    """A stretch of lines from ``first`` to ``last`` (None: the same line), and its seconds."""
    last = last or first
    return first, last, _seconds(first.ts, last.ts)


def _when(mark: Mark) -> str:
    return f"line {mark.line}" + (f", {mark.ts}" if mark.ts else "")


def _then(sentence: str) -> str:
    """A sentence added after another (a ``…_note``/``…_fix`` placeholder): nothing when empty."""
    return f" {sentence}" if sentence else ""


def findings(run, found: list[Finding], catalog: Catalog | None = None) -> list[Finding]:
    """``found`` with the serving warnings of ``run`` added, or curated ones enriched (new
    findings in their place: the ones given are left as the matcher made them). ``catalog``:
    the run's, whose ``found_by`` patterns give the words (else the bundled ones)."""
    stats: ServingStats | None = getattr(run, "serving", None)
    if stats is None:
        return found
    out = list(found)
    at = {f.id: i for i, f in enumerate(out)}
    for measure in (_kv_pressure, _jit_stall, _http_5xx, _queue_growing, _throughput_falling, _health_flapping):
        measured = measure(run, stats)
        if measured is None:
            continue
        made = _finding(run, measured, catalog)
        if made.id not in at:
            if measured.alone:
                out.append(made)
            continue
        curated = out[at[made.id]]
        fix = f"{curated.fix.rstrip()} {measured.fix_figures}" if measured.fix_figures else curated.fix
        if not measured.alone:
            out[at[made.id]] = replace(curated, fix=fix)
            continue
        have = {e.line for e in curated.evidence}
        out[at[made.id]] = replace(
            curated, explanation=f"{curated.explanation.rstrip()} {made.explanation}",
            facts={**curated.facts, **made.facts}, fix=fix,
            evidence=sorted(curated.evidence + [e for e in made.evidence if e.line not in have],
                            key=lambda e: e.line)[:8])
    return out


def _finding(run, measured: Measured, catalog: Catalog | None) -> Finding:
    """The warning of ``measured``: its pattern filled with its values; its facts lead with the
    filled explanation (``figures``, what a curated finding gains) and the fix's figures."""
    made = stage_finding(catalog, measured.stage, measured.values, measured.evidence, "serving", run.index,
                         "serving")
    made.facts = {"figures": made.explanation, "fix_figures": measured.fix_figures, **measured.facts}
    return made


def _evidence(*marks: Mark | None) -> list:
    seen: dict[int, Mark] = {m.line: m for m in marks if m is not None}
    return [Evidence(m.line, m.text) for _, m in sorted(seen.items())]


def _kv_pressure(run, stats: ServingStats) -> Measured | None:
    """Repeated retractions: the KV pool is too small for the load (fewer: only the pool's
    arithmetic for the fix of the server's own retraction finding)."""
    if stats.first_retraction is None:
        return None
    first, last, span = _stretch(stats.first_retraction, stats.last_retraction)
    ratio_note = usage_note = fix_figures = ""
    if stats.new_token_ratio:
        a, b = stats.new_token_ratio
        ratio_note = f"new_token_ratio went {a:.2f} -> {b:.2f} (the scheduler now admits fewer new tokens)."
    usage = (run.last_decode or {}).get("token_usage")
    if isinstance(usage, int | float):
        usage_note = f"Token usage at the last decode step: {usage:.2f}."
    tokens = min((r.kv_tokens for r in build_ledger(run).ranks if r.kv_tokens), default=None)
    if isinstance(tokens, int) and tokens > 0:
        running = (run.last_decode or {}).get("running_req")
        if isinstance(running, int) and running > 0:
            target = max(1, int(running * 0.8))
            fix_figures = (f"The pool ({tokens} KV tokens, from the memory ledger) filled with {running} requests "
                           f"running (~{tokens // running} tokens each): --max-running-requests {target} (80% of them) "
                           "keeps about a fifth of the pool free for their growth.")
    values = {"retractions": stats.retractions, "retracted_reqs": stats.retracted_reqs, "first_at": _when(first),
              "span_note": f" over {span:.0f} s" if span else "", "ratio_note": _then(ratio_note),
              "usage_note": _then(usage_note), "pool_fix": _then(fix_figures)}
    return Measured("serving_retractions", values, _evidence(first, last),
                    {"retractions": stats.retractions, "retracted_reqs": stats.retracted_reqs,
                     "first_retraction_line": first.line}, fix_figures,
                    alone=stats.retractions >= RETRACTION_STORM)


def _jit_stall(run, stats: ServingStats) -> Measured | None:
    """Kernels were compiled while a request waited: no decode step for a long time after
    the JIT line."""
    jit, d = stats.jit_mark, stats.jit_decode
    if jit is None or d is None:
        return None
    gap = _seconds(jit.ts, d.ts)
    if gap is None or gap < JIT_STALL_SECONDS:
        return None
    values = {"stall_seconds": f"{gap:.0f}", "jit_at": _when(jit), "decode_at": _when(d)}
    return Measured("serving_jit_stall", values, _evidence(jit, d), {"first_request_stall_s": round(gap, 1)})


def _http_5xx(run, stats: ServingStats) -> Measured | None:
    """A burst of server errors while the server stayed up."""
    n = run.http_errors
    if n < HTTP_5XX_BURST or not run.requests or n / run.requests < HTTP_5XX_SHARE or stats.first_5xx is None:
        return None
    first, last = stats.first_5xx, stats.last_5xx or stats.first_5xx
    health_note = f"The health check failed {stats.health_failures} times too." if stats.health_failures else ""
    values = {"http_5xx": n, "requests": run.requests, "share": f"{n / run.requests:.0%}", "first_at": _when(first),
              "last_at": _when(last), "health_note": _then(health_note)}
    return Measured("serving_5xx", values, _evidence(first, last), {"http_5xx": n, "requests": run.requests})


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


def _queue_growing(run, stats: ServingStats) -> Measured | None:
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
    values = {"rising_steps": rises, "steps": len(queues) - 1, "bucket_seconds": stats.series.width,
              "queue_first": f"{queues[0]:.0f}", "queue_last": f"{queues[-1]:.0f}",
              "started_at": _at(stats, first_key, with_year), "running": f"{running:.0f}",
              "token_usage": f"{usage:.2f}", "pool_fix": _then(fix_figures)}
    ev = _evidence(stats.first_decode) + [Evidence(0, f"(serving series) queue {queues[0]:.0f} at "
                                                     f"{_at(stats, buckets[0][0], with_year)} -> {queues[-1]:.0f} "
                                                     f"at {_at(stats, buckets[-1][0], with_year)}")]
    return Measured("serving_queue", values, ev,
                    {"queue_first": round(queues[0], 1), "queue_last": round(queues[-1], 1),
                     "rising_steps": rises, "steps": len(queues) - 1,
                     "started_at": _at(stats, first_key, with_year)}, fix_figures)


def _throughput_falling(run, stats: ServingStats) -> Measured | None:
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
    values = {"fall": f"{1 - tps_b / tps_a:.0%}", "change": f"{tps_b / tps_a - 1:+.0%}",
              "throughput_first": f"{tps_a:.0f}", "throughput_last": f"{tps_b:.0f}", "running_first": f"{run_a:.0f}",
              "running_last": f"{run_b:.0f}", "started_at": _at(stats, start, with_year),
              "slow_step_fix": _then(fix_figures)}
    ev = _evidence(stats.first_decode) + [Evidence(0, f"(serving series) {tps_a:.0f} -> {tps_b:.0f} tok/s with "
                                                     f"{run_a:.0f} -> {run_b:.0f} running")]
    return Measured("serving_throughput", values, ev,
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


def _health_flapping(run, stats: ServingStats) -> Measured | None:
    """Health checks failing, then passing, then failing again: a watchdog or load balancer
    takes the server in and out of rotation."""
    if stats.health_episodes < HEALTH_FLAPS or stats.first_health_failure is None:
        return None
    first, last, span = _stretch(stats.first_health_failure, stats.last_health_failure)
    values = {"health_failures": stats.health_failures, "health_episodes": stats.health_episodes,
              "first_at": _when(first), "last_at": _when(last),
              "span_seconds": f"{span:.0f}" if span else None}  # None: the aside is dropped
    return Measured("serving_health", values, _evidence(first, last),
                    {"health_failures": stats.health_failures, "health_episodes": stats.health_episodes})
