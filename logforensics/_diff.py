"""``logx diff``: what changed between two runs, and which change most likely matters.

Each run is reduced to a server-neutral record (``run_record``): sections of named facts
(server, model, flags, backends, CUDA graphs, memory, serving, ending) whose names do not
depend on the server that printed them, so another dialect fills the same record and two
servers compare on the facts both have. ``compare`` lines the two records up and ranks the
differences by a rule per fact (``RULES``) that says why the change can matter; the ranking
is a likelihood, not a proof, and the text says so.

JSON schema ``logx.diff/1`` (keys are only ever added) is documented in the README.
"""

from __future__ import annotations

import re
from typing import Any

from ._analysis import Options, explain
from ._dialects import DIALECTS
from ._dialects.base import version_tuple
from ._memory import build_ledger
from ._record import field, record
from ._report import Report
from ._sites import default_change

SCHEMA = "logx.diff/1"
SECTIONS = ("server", "model", "backends", "cuda_graph", "memory", "serving", "ending", "flags")

# server_args names of the backends on the hot path: (record key, label)
BACKEND_ARGS = {
    "attention_backend": "attention backend",
    "prefill_attention_backend": "prefill attention backend",
    "decode_attention_backend": "decode attention backend",
    "mm_attention_backend": "multimodal attention backend",
    "moe_runner_backend": "MoE runner backend",
    "moe_a2a_backend": "MoE all-to-all backend",
    "sampling_backend": "sampling backend",
    "grammar_backend": "grammar backend",
    "lora_backend": "LoRA backend",
    "disable_custom_all_reduce": "custom all-reduce disabled",
    "enable_flashinfer_allreduce_fusion": "FlashInfer all-reduce fusion",
    "cuda_graph_backend_decode": "decode CUDA graph backend",
    "cuda_graph_backend_prefill": "prefill CUDA graph backend",
}
MODEL_ARGS = ("model_path", "dtype", "quantization", "kv_cache_dtype", "context_length",
              "revision")
# flags that differ between any two launches without changing how the server serves
NOISE_FLAGS = frozenset({"port", "host", "random_seed", "nccl_port", "dist_init_addr",
                         "log_level", "log_level_http", "file_storage_path", "served_model_name",
                         "tokenizer_path", "api_key", "download_dir", "crash_dump_folder",
                         "metrics_http_port", "bootstrap_port"})
# flags that size or schedule the hot path (others differ with a smaller likely effect)
HOT_FLAGS = frozenset({
    "mem_fraction_static", "max_running_requests", "max_total_tokens", "chunked_prefill_size",
    "max_prefill_tokens", "schedule_policy", "schedule_conservativeness", "page_size",
    "cuda_graph_max_bs", "cuda_graph_max_bs_decode", "cuda_graph_bs", "disable_cuda_graph",
    "disable_radix_cache", "enable_torch_compile", "enable_dp_attention", "tp_size", "dp_size",
    "pp_size", "ep_size", "speculative_algorithm", "speculative_num_draft_tokens",
    "enable_mixed_chunk", "stream_interval", "decode_log_interval", "enable_hierarchical_cache",
    "context_length", "kv_cache_dtype", "quantization", "dtype",
})
_BS_LIST = re.compile(r"\bbs=\[([\d, ]{1,4000})\]")
_GRAPH_BACKEND = re.compile(r"\bbackend=(\w+)")


# — the record —————————————————————————————————————————————————————————————————————


@record
class RunRecord:
    """The facts of one run, by section; ``lines`` says where a fact was read (0: derived)."""

    file: str
    run: int
    runs_in_file: int
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    lines: dict[tuple[str, str], int] = field(default_factory=dict)
    dialect: str = ""
    release: tuple = (None, None)  # (oldest, newest) release the run can be, as version tuples

    def put(self, section: str, key: str, value: Any, line: int = 0) -> None:
        if value is None:
            return
        self.sections.setdefault(section, {})[key] = value
        if line:
            self.lines[(section, key)] = line

    def get(self, section: str, key: str) -> Any:
        return self.sections.get(section, {}).get(key)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "run": self.run, "runs_in_file": self.runs_in_file,
                "facts": {s: self.sections[s] for s in SECTIONS if s in self.sections}}


def run_record(report: Report) -> RunRecord:
    """Reduce the explained run of ``report`` to its record."""
    run = report.run
    record = RunRecord(report.file, run.index if run else 0, len(report.runs))
    if run is None:
        return record
    record.put("server", "name", run.dialect.name)
    record.dialect = run.dialect.name
    exact = version_tuple(run.server_version)
    record.release = (exact, exact) if exact else run.version_bounds
    record.put("server", "version", run.server_version or (
        f"{run.version_range} (from the log format)" if run.version_range else None))
    args = run.args
    line = run.args_line or 0
    record.put("model", "model", run.model, line)
    record.put("model", "architecture", run.model_class)
    for key in MODEL_ARGS[1:]:
        if args.get(key) not in (None, "None"):
            record.put("model", key, args[key], line)
    for key in BACKEND_ARGS:
        if key in args and args[key] != "None":
            record.put("backends", key, args[key], line)
    _graphs(run, record)
    _memory(run, record)
    _serving(run, record)
    record.put("ending", "verdict", report.verdict)
    if report.primary is not None:
        first = report.primary.evidence[0].line if report.primary.evidence else 0
        record.put("ending", "cause", report.primary.id, first)
    if run.endings:
        record.put("ending", "ended_by", run.endings[0].kind, run.endings[0].number)
    record.put("ending", "phase", run.phase)
    for key, value in args.items():
        if isinstance(value, str | int | float | bool):
            record.put("flags", key, value, line)
    return record


def _graphs(run, record: RunRecord) -> None:
    begins = [e for e in run.memory_events if e.kind == "cuda_graph_begin"]
    if run.args.get("disable_cuda_graph") is True:
        record.put("cuda_graph", "enabled", False, run.args_line or 0)
    elif begins:
        record.put("cuda_graph", "enabled", True, begins[0].number)
    if begins:
        first = begins[0]
        m = _BS_LIST.search(first.line.text)
        if m:
            sizes = [int(x) for x in m.group(1).replace(" ", "").split(",") if x]
            record.put("cuda_graph", "batch_sizes", len(sizes), first.number)
            record.put("cuda_graph", "max_bs", max(sizes), first.number)
        m = _GRAPH_BACKEND.search(first.line.text)
        if m:
            record.put("cuda_graph", "backend", m.group(1), first.number)
    decode = run.last_decode or {}
    if isinstance(decode.get("cuda_graph"), bool):
        record.put("cuda_graph", "last_decode_in_graph", decode["cuda_graph"])


def _memory(run, record: RunRecord) -> None:
    ledger = build_ledger(run)
    if not ledger.ranks:
        return
    r = ledger.ranks[0]
    record.put("memory", "free_before_weights_gib", ledger.pre_gib)
    record.put("memory", "weights_gib", r.weights_gib)
    record.put("memory", "kv_tokens", min((x.kv_tokens for x in ledger.ranks if x.kv_tokens), default=None))
    record.put("memory", "kv_gib", r.kv_gib)
    record.put("memory", "kv_dtype", r.kv_dtype)
    record.put("memory", "cuda_graph_gib", r.graph_gib)
    record.put("memory", "free_after_pools_gib", r.avail_after_pools_gib)
    record.put("memory", "free_after_graphs_gib", r.avail_after_graphs_gib)
    record.put("memory", "mem_fraction_static", ledger.setting("mem_fraction_static"))
    budget = r.budget or {}
    keys: tuple[str, ...] = ("max_running_requests", "chunked_prefill_size", "context_len")
    if record.get("memory", "kv_tokens") is None:
        keys = ("max_total_num_tokens", *keys)
    for key in keys:
        if isinstance(budget.get(key), int | float):
            record.put("memory", key, budget[key])


def _serving(run, record: RunRecord) -> None:
    if not (run.batches or run.requests):
        return
    record.put("serving", "batches", run.batches)
    record.put("serving", "requests", run.requests)
    record.put("serving", "http_5xx", run.http_errors)
    serving = getattr(run, "serving", None)
    if serving is not None:
        record.put("serving", "retractions", serving.retractions or None)
        totals = serving.series.totals()  # every decode line's figures (serving.Series)
        mean_tps, _ = totals["gen_throughput"]
        if mean_tps is not None:
            record.put("serving", "mean_gen_throughput", round(mean_tps, 2))
        queue_max = totals["queue_req"][1]
        record.put("serving", "max_queue_req", int(queue_max) if queue_max is not None else None)
        usage_max = totals["token_usage"][1]
        if usage_max is not None:
            record.put("serving", "max_token_usage", round(usage_max / run.dialect.stats.usage_per_unit, 3))
    decode = run.last_decode or {}
    record.put("serving", "last_gen_throughput", decode.get("gen_throughput"))
    record.put("serving", "last_running_req", decode.get("running_req"))
    record.put("serving", "last_queue_req", decode.get("queue_req"))
    record.put("serving", "last_token_usage", decode.get("token_usage"))


# — comparing ——————————————————————————————————————————————————————————————————————


@record
class Difference:
    section: str
    key: str
    base: Any
    cand: Any
    score: int  # likely effect: 0 none … 100 most
    reason: str
    kind: str = "cause"  # cause: a setting or resource that changed; outcome: what the run showed
    base_line: int = 0
    cand_line: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "key": self.key, "baseline": self.base,
                "candidate": self.cand, "score": self.score, "kind": self.kind,
                "reason": self.reason, "baseline_line": self.base_line or None,
                "candidate_line": self.cand_line or None}


def _pct(a: Any, b: Any) -> float | None:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool) \
            and not isinstance(b, bool) and a:
        return (b - a) / abs(a) * 100
    return None


def _rate(section: str, key: str, a: Any, b: Any, base: RunRecord, cand: RunRecord) -> tuple[int, str, str]:
    """``(score, kind, reason)`` for one differing fact."""
    dialect = DIALECTS.get(base.dialect) if base.dialect == cand.dialect else None
    defaults = dialect.sites.defaults if dialect is not None and dialect.sites is not None else None
    changed_in = (default_change(defaults, key, a, b, base.release, cand.release)
                  if defaults and section in ("flags", "backends", "memory") else None)
    if changed_in and dialect is not None:
        return 80, "cause", (f"a new version's changed default: {dialect.label} {changed_in} changed {key}'s default "
                             f"from {a!r} to {b!r} (the release index): the upgrade changed it, not a flag")
    pct = _pct(a, b)
    change = f" ({pct:+.0f}%)" if pct is not None else ""
    if section == "memory" and key in ("kv_tokens", "max_total_num_tokens"):
        if pct is not None and abs(pct) < 5:
            return 10, "cause", f"the KV pool is about the same size{change}"
        if pct is not None and pct < 0:
            return (min(95, 50 + int(-pct)), "cause",
                    f"the KV pool holds {-pct:.0f}% fewer tokens: fewer requests run at once, the "
                    "queue grows sooner and requests are retracted under load")
        return 40, "cause", f"the KV pool holds {change.strip(' ()') or 'more'} tokens: more requests fit"
    if section == "backends":
        label = BACKEND_ARGS.get(key, key)
        if key in ("attention_backend", "prefill_attention_backend", "decode_attention_backend"):
            return 85, "cause", f"the {label} runs every prefill and decode step (hot path)"
        if key.startswith("cuda_graph_backend"):
            return 80, "cause", f"the {label} decides whether steps replay captured graphs"
        return 70, "cause", f"the {label} is on the hot path of the steps that use it"
    if section == "cuda_graph":
        if key == "enabled":
            return 90, "cause", "without CUDA graphs every decode step launches its kernels one by one"
        if key == "max_bs":
            lower = isinstance(a, int) and isinstance(b, int) and b < a
            return (88 if lower else 45), "cause", (
                f"decode batches larger than {b} run without CUDA graphs (slower steps under load)"
                if lower else f"batches up to {b} now replay CUDA graphs (more graph memory)")
        if key == "batch_sizes":
            return 35, "cause", "another set of batch sizes is captured"
        if key == "backend":
            return 60, "cause", "another graph backend replays the decode steps"
        return 30, "outcome", "whether the last logged decode step ran in a CUDA graph"
    if section == "memory":
        if key == "cuda_graph_gib" and isinstance(a, int | float) and isinstance(b, int | float):
            grew = b - a
            score = 60 if abs(grew) >= 1 else 25
            return score, "cause", (f"CUDA graphs take {abs(grew):.2f} GiB {'more' if grew > 0 else 'less'}"
                                    " per GPU, memory that is not available to requests")
        if key == "weights_gib":
            return 45, "cause", f"the weights take {change.strip(' ()')} memory: the KV pool gets the rest"
        if key == "mem_fraction_static":
            return 70, "cause", "the static pool (weights + KV cache) is sized from this fraction" + (
                "" if _same_release(base, cand) else " (set differently, or a default the new release changed)")
        if key in ("max_running_requests", "chunked_prefill_size"):
            return 60, "cause", "the scheduler's limit on how much runs at once"
        if key == "free_before_weights_gib":
            return 50, "cause", "another GPU, another tenant or another driver/runtime footprint"
        return 20, "cause", "a memory figure that follows from the settings above"
    if section == "server":
        return 55, "cause", ("another release: its defaults, kernels and backend choices can differ "
                             "(the flag and backend differences below show which ones the log prints)")
    if section == "model":
        return 75, "cause", "another model, precision or context size changes every figure after it"
    if section == "serving":
        if key in ("mean_gen_throughput", "last_gen_throughput") and pct is not None:
            return (50 if pct <= -20 else 20), "outcome", f"generation throughput{change}"
        if key == "retractions":
            return 50, "outcome", "retracted requests are recomputed later: KV pool pressure"
        if key == "http_5xx":
            return 45, "outcome", "requests that failed with a server error"
        if key in ("max_queue_req", "last_queue_req"):
            return 30, "outcome", "requests waiting: the server could not keep up"
        return 10, "outcome", "the load differed (comparisons of serving figures need equal load)"
    if section == "ending":
        return 65, "outcome", "the runs ended differently"
    # flags
    if key in NOISE_FLAGS:
        return 0, "cause", "does not change how the server serves"
    note = "" if _same_release(base, cand) else " (set differently, or a default the new release changed)"
    if key in HOT_FLAGS:
        return 60, "cause", "sizes or schedules the hot path" + note
    return 15, "cause", "set differently" + (note.replace(" (set differently, or", " (or") if note else "")


def _same_release(base: RunRecord, cand: RunRecord) -> bool:
    return base.get("server", "version") == cand.get("server", "version")


# a flag whose effect a derived fact of both records already shows
# (a flag is listed under its own name only when the fact it sets is not in both records)
_SHOWN_AS = {**{k: ("backends", k) for k in BACKEND_ARGS}, **{k: ("model", k) for k in MODEL_ARGS},
             "model_path": ("model", "model"), "cuda_graph_max_bs": ("cuda_graph", "max_bs"),
             "cuda_graph_max_bs_decode": ("cuda_graph", "max_bs"),
             "disable_cuda_graph": ("cuda_graph", "enabled"),
             "mem_fraction_static": ("memory", "mem_fraction_static")}


def _shown_elsewhere(section: str, key: str, base: RunRecord, cand: RunRecord) -> bool:
    target = _SHOWN_AS.get(key) if section == "flags" else None
    return target is not None and base.get(*target) is not None and cand.get(*target) is not None


def compare(base: RunRecord, cand: RunRecord, everything: bool = False) -> list[Difference]:
    """The differing facts of ``base`` and ``cand`` (with ``everything``: equal ones too,
    score −1), most likely effect first."""
    out: list[Difference] = []
    for section in SECTIONS:
        a_facts, b_facts = base.sections.get(section, {}), cand.sections.get(section, {})
        for key in dict.fromkeys([*a_facts, *b_facts]):
            a, b = a_facts.get(key), b_facts.get(key)
            if _shown_elsewhere(section, key, base, cand):
                continue
            if a == b:
                if everything:
                    out.append(Difference(section, key, a, b, -1, "same", "same",
                                          base.lines.get((section, key), 0), cand.lines.get((section, key), 0)))
                continue
            if a is None or b is None:
                if section == "flags" and a is None and b is not None:
                    reason = "only the candidate's release prints this flag (new in it, or renamed)"
                elif section == "flags":
                    reason = "only the baseline's release prints this flag (removed or renamed since)"
                else:
                    reason = "only one log shows this"
                score = 5 if section == "flags" else 10
                if a is not None and b is None and section in ("cuda_graph",) and key == "enabled":
                    score = 90
                out.append(Difference(section, key, a, b, score, reason, "cause" if section != "serving" else "outcome",
                                      base.lines.get((section, key), 0), cand.lines.get((section, key), 0)))
                continue
            score, kind, reason = _rate(section, key, a, b, base, cand)
            out.append(Difference(section, key, a, b, score, reason, kind,
                                  base.lines.get((section, key), 0), cand.lines.get((section, key), 0)))
    order = {s: i for i, s in enumerate(SECTIONS)}
    out.sort(key=lambda d: (d.kind == "same", d.kind == "outcome", -d.score, order[d.section]))
    return out


CONFIRM = ("These are likely causes ranked by their usual effect, not proof: an A/B run that "
           "changes one of them alone (same load, same GPU) confirms which one matters.")


@record
class Comparison:
    base: RunRecord
    cand: RunRecord
    differences: list[Difference]

    @property
    def causes(self) -> list[Difference]:
        return [d for d in self.differences if d.kind == "cause"]

    @property
    def outcomes(self) -> list[Difference]:
        return [d for d in self.differences if d.kind == "outcome"]

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "baseline": self.base.to_json(), "candidate": self.cand.to_json(),
                "common_sections": [s for s in SECTIONS if s in self.base.sections and s in self.cand.sections],
                "differences": [d.to_json() for d in self.differences], "note": CONFIRM}


def diff_reports(base: Report, cand: Report, everything: bool = False) -> Comparison:
    b, c = run_record(base), run_record(cand)
    return Comparison(b, c, compare(b, c, everything))


def diff_logs(logs: list[str], base_run: int | None = None, run: int | None = None,
              everything: bool = False, catalog=None) -> Comparison:
    """Compare two logs (their last runs, or the runs asked for), or two runs of one log
    (default: its last two). Raises ``ValueError`` for runs the logs do not hold."""
    def report(path: str, index: int | None) -> Report:
        return explain(path, name=path, catalog=catalog, options=Options(run_index=index, status=False))

    if len(logs) == 2:
        return diff_reports(report(logs[0], base_run), report(logs[1], run), everything)
    last = report(logs[0], run)
    total = len(last.runs)
    cand = run or total
    base = base_run or cand - 1
    if base < 1 or base == cand:
        raise ValueError(f"{logs[0]} holds {total} run(s): give two logs, or --base-run and --run "
                         "for two of its runs")
    return diff_reports(report(logs[0], base), last, everything)
