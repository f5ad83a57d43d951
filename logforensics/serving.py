"""A run that serves badly: the figures of its statistics lines, and the warnings they justify.

``ServingStats`` is fed by the run tracker with the serving events the analysis passes on:
every retraction, 5xx and health-check line (they always take the full path), and the
statistics lines the fast path keeps (the first and last of each stretch). So the figures
a finding is built on — retraction counts, the first prefill and decode, the last decode,
the 5xx — are the same whether the file was scanned fast or line by line; the decode samples
(``decode_samples``, bounded) only feed ``logx diff``'s throughput median.

``findings`` turns them into ``warning`` findings (degraded, not failed), each with its
figures, when it started and the fix; where the catalog already has a curated finding for
the same root cause (a retraction line, FlashInfer's JIT line), that finding is enriched
with the figures instead of a second one being made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .lines import parse_timestamp

if TYPE_CHECKING:  # findings imports runs, which holds a ServingStats
    from .findings import Evidence, Finding

# the events ServingStats reads (besides plain lines, for JIT compilation, once serving began)
SERVING_KINDS = frozenset({"decode_batch", "prefill_batch", "kv_retract", "access_log",
                           "health_check_failed"})
# the warnings made here (a curated catalog pattern with the same id is enriched instead)
FINDING_IDS = ("decode_retraction_kv_pressure", "flashinfer_jit_first_request_latency", "http_5xx_burst")
MAX_SAMPLES = 256  # decode samples kept (every other one is dropped when full: bounded, spread)
RETRACTION_STORM = 3  # retraction lines before the KV pool counts as under pressure
JIT_STALL_SECONDS = 20.0  # first prefill → first decode gap that is a stall, not a slow step
JIT_WORDS = ("JIT", "Compiling", "ninja", "nvcc")  # kernels compiled on first use
HTTP_5XX_BURST = 5  # server errors in one run before they are a finding
HTTP_5XX_SHARE = 0.05  # … and at least this share of the requests


@dataclass
class Mark:
    line: int
    ts: str | None
    text: str


@dataclass
class ServingStats:
    """What the statistics lines of one run showed (bounded: counts, marks, a capped sample)."""

    retractions: int = 0
    retracted_reqs: int = 0
    first_retraction: Mark | None = None
    last_retraction: Mark | None = None
    new_token_ratio: tuple[float, float] | None = None  # first "a" and last "b" of "#new_token_ratio: a -> b"
    first_prefill: Mark | None = None
    first_decode: Mark | None = None
    first_decode_fields: dict[str, Any] | None = None
    first_5xx: Mark | None = None
    last_5xx: Mark | None = None
    health_failures: int = 0
    jit_mark: Mark | None = None  # the first JIT-compilation line after the first prefill
    jit_decode: Mark | None = None  # the first decode step after it
    decode_samples: list[dict[str, Any]] = field(default_factory=list)
    _stride: int = 1
    _seen: int = 0

    @property
    def max_queue(self) -> int | None:
        values = [s["queue_req"] for s in self.decode_samples if isinstance(s.get("queue_req"), int)]
        return max(values) if values else None

    @property
    def max_token_usage(self) -> float | None:
        values = [s["token_usage"] for s in self.decode_samples
                  if isinstance(s.get("token_usage"), int | float)]
        return max(values) if values else None

    def throughputs(self) -> list[float]:
        return [s["gen_throughput"] for s in self.decode_samples
                if isinstance(s.get("gen_throughput"), int | float)]

    def on_event(self, kind: str, fields: dict[str, Any], number: int, ts: str | None, text: str) -> None:
        if kind == "decode_batch":
            if self.jit_mark is not None and self.jit_decode is None:
                self.jit_decode = Mark(number, ts, text)
            if self.first_decode is None:
                self.first_decode, self.first_decode_fields = Mark(number, ts, text), fields
            self._sample(fields)
        elif kind == "prefill_batch":
            if self.first_prefill is None:
                self.first_prefill = Mark(number, ts, text)
        elif kind == "kv_retract":
            self.retractions += 1
            n = fields.get("n")
            self.retracted_reqs += n if isinstance(n, int) else 0
            mark = Mark(number, ts, text)
            self.first_retraction = self.first_retraction or mark
            self.last_retraction = mark
            ratio = _ratio(text)
            if ratio is not None:
                first = self.new_token_ratio[0] if self.new_token_ratio else ratio[0]
                self.new_token_ratio = (first, ratio[1])
        elif kind == "access_log" and isinstance(fields.get("status"), int) and fields["status"] >= 500:
            mark = Mark(number, ts, text)
            self.first_5xx = self.first_5xx or mark
            self.last_5xx = mark
        elif kind == "health_check_failed":
            self.health_failures += 1
        elif self.first_prefill is not None and self.jit_mark is None and any(word in text for word in JIT_WORDS):
            self.jit_mark = Mark(number, ts, text)

    def _sample(self, fields: dict[str, Any]) -> None:
        self._seen += 1
        if self._seen % self._stride:
            return
        self.decode_samples.append({k: fields.get(k) for k in ("running_req", "queue_req",
                                                                "token_usage", "gen_throughput")})
        if len(self.decode_samples) >= MAX_SAMPLES:
            self.decode_samples = self.decode_samples[::2]
            self._stride *= 2


def _ratio(text: str) -> tuple[float, float] | None:
    """``#new_token_ratio: 0.7000 -> 0.9500`` of a retraction line."""
    head, sep, rest = text.partition("new_token_ratio: ")
    if not sep:
        return None
    a, sep, b = rest.partition(" -> ")
    try:
        return float(a), float(b.split(",")[0].split()[0])
    except (ValueError, IndexError):
        return None


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
    from .findings import Evidence

    seen: dict[int, Mark] = {m.line: m for m in marks if m is not None}
    return [Evidence(m.line, m.text) for _, m in sorted(seen.items())]


def _warning(run, id_: str, title: str, evidence: list[Evidence], figures: str, fix: str,
             facts: dict[str, Any], fix_figures: str = "") -> Finding:
    from .findings import Finding

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
    from .memory import build_ledger

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
