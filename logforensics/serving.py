"""A run that serves badly: the figures of its statistics lines, and the warnings they justify.

``ServingStats`` is fed by the run tracker with the serving events the analysis passes on:
every retraction, 5xx and health-check line (they always take the full path), and the
statistics lines the fast path keeps (the first and last of each stretch). So the figures
a finding is built on — retraction counts, the first prefill and decode, the last decode,
the 5xx — are the same whether the file was scanned fast or line by line; the decode samples
(``decode_samples``, bounded) only feed ``logx diff``'s throughput median.

``serving_findings`` turns them into warnings (a run fact here, a finding there: the runs
stage reads this module, the findings stage that one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
