"""The warnings a badly serving run justifies, from its ``ServingStats`` (``serving.py``).

Each is a ``warning`` finding (degraded, not failed) with its figures, when it started and the
fix; where the catalog already has a curated finding for the same root cause (a retraction
line, FlashInfer's JIT line), that finding is enriched with the figures instead of a second
one being made.
"""

from __future__ import annotations

from typing import Any

from .conditions import Evidence
from .findings import Finding
from .lines import parse_timestamp
from .memory import build_ledger
from .serving import (
    HTTP_5XX_BURST,
    HTTP_5XX_SHARE,
    JIT_STALL_SECONDS,
    RETRACTION_STORM,
    Mark,
    ServingStats,
)


def _seconds(a: str | None, b: str | None) -> float | None:
    ta, tb = (parse_timestamp(a) if a else None), (parse_timestamp(b) if b else None)
    return (tb - ta).total_seconds() if ta is not None and tb is not None else None


def _when(mark: Mark) -> str:
    return f"line {mark.line}" + (f", {mark.ts}" if mark.ts else "")


def findings(run, found: list[Finding], facts: dict[str, Any]) -> list[Finding]:
    """``found`` with the serving warnings of ``run`` added, or curated ones enriched."""
    stats: ServingStats | None = getattr(run, "serving", None)
    if stats is None:
        return found
    out = list(found)
    by_id = {f.id: f for f in out}
    for make in (_kv_pressure, _jit_stall, _http_5xx):
        made = make(run, stats, facts)
        if made is None:
            continue
        curated = by_id.get(made.id)
        if curated is None:
            out.append(made)
            continue
        curated.explanation = f"{curated.explanation.rstrip()} {made.facts['figures']}"
        curated.facts.update(made.facts)
        if made.facts.get("fix_figures"):
            curated.fix = f"{curated.fix.rstrip()} {made.facts['fix_figures']}"
        have = {e.line for e in curated.evidence}
        curated.evidence = sorted(curated.evidence + [e for e in made.evidence if e.line not in have],
                                  key=lambda e: e.line)[:8]
    return out


def _evidence(*marks: Mark | None) -> list:
    seen: dict[int, Mark] = {m.line: m for m in marks if m is not None}
    return [Evidence(m.line, m.text) for _, m in sorted(seen.items())]


def _warning(run, id_: str, title: str, evidence: list[Evidence], figures: str, fix: str,
             facts: dict[str, Any], fix_figures: str = "") -> Finding:
    return Finding(id=id_, title=title, severity="warning", confidence=0.7, phase="serving",
                   run=run.index, evidence=evidence, explanation=figures, fix=fix, priority=30,
                   facts={"figures": figures, "fix_figures": fix_figures, **facts})


def _kv_pressure(run, stats: ServingStats, facts: dict[str, Any]) -> Finding | None:
    """Repeated retractions: the KV pool is too small for the load."""
    if stats.retractions < RETRACTION_STORM or stats.first_retraction is None:
        return None
    first, last = stats.first_retraction, stats.last_retraction or stats.first_retraction
    span = _seconds(first.ts, last.ts)
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
