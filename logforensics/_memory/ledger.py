"""The memory ledger: where each rank's (each GPU's) memory went, step by step, as a log shows it.

A ``Ledger`` holds one ``RankLedger`` per rank: GPU total, memory used before the weights,
weights, KV cache, Mamba state cache, CUDA graphs, the serving budget, and the free memory after
each step; the torch OOMs (``OOMRecord``) of the run; and the figures the memory fixes are
computed from. What only one server has (SGLang's static fraction, its Mamba pool) is that
server's part of the ledger (``Ledger.server``, a ``ServerPart`` its dialect defines). A step
the log does not show is *unknown*, a step the run never reached is *not reached*: nothing is
invented. The dialect fills it from its own lines
(``dialects/<name>/memory.py``); ``memory.build_ledger`` asks for it once per run.
Everything is GiB.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .._lazyre import lazy
from .._record import field, record
from .checkpoint import CheckpointSize
from .torch_oom import OOM_TEXT, TorchOOM, best_oom
from .units import number, rounded

if TYPE_CHECKING:
    from .._tracebacks import Traceback

STEPS = ("init", "weights", "kv_cache", "mamba_cache", "pools", "cuda_graphs", "serving")
STEP_LABEL = {"init": "before weights", "weights": "weights", "kv_cache": "KV cache",
              "mamba_cache": "Mamba cache", "pools": "pools end", "cuda_graphs": "CUDA graphs",
              "serving": "serving"}
PHASE_STEP = {"init": "init", "weights": "weights", "kv_alloc": "kv_cache", "cuda_graph": "cuda_graphs",
              "warmup": "serving", "ready": "serving", "serving": "serving"}
_TAG_TOKEN = lazy(r"([A-Z_]+)(\d+)")


# Keys of every ledger's JSON (``runs[].memory``, docs/memory.md) that a server's part fills: the
# schema is one for every server, so a ledger without them (torch's alone, vLLM's) has them null.
# Schema names from the days the ledger was SGLang's; a server's part may add keys of its own.
SERVER_JSON_KEYS = ("mem_fraction_static", "mem_fraction_static_source", "static_gib", "outside_static_gib", "mamba")


class ServerPart(Protocol):
    """A server's own part of a ledger, set by its dialect's reader (SGLang's: its static
    fraction and Mamba pool, ``_dialects/sglang/memory.py``)."""

    def settings(self) -> Mapping[str, Any]:
        """The server's memory settings under its own names."""
        ...

    def title_note(self) -> str | None:
        """What the ledger's title says of them (``None``: nothing)."""
        ...

    def to_json(self, ledger: Ledger) -> dict[str, Any]:
        """The keys it adds to the ledger's JSON."""
        ...

    def notes(self, ledger: Ledger) -> list[str]:
        """Its sizing arithmetic, one sentence a line, shown under the ledger's table."""
        ...

    def step_note(self, step: str, rank: RankLedger) -> str:
        """What a step's cell of ``rank`` adds (``""``: nothing)."""
        ...


@record(eq=False)
class OOMRecord:
    """One torch OOM seen in the run: where (line, rank) and in which phase."""

    oom: TorchOOM
    line: int
    tag: str
    phase: str | None
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "rank": rank_label(self.tag), "phase": self.phase, **self.oom.to_json()}


@record(eq=False)
class RankLedger:
    """Where one rank's (one GPU's) memory went. GiB; ``None`` = not in the log."""

    rank: str
    gpu_total_gib: float | None = None
    gpu_total_source: str | None = None
    before_weights_gib: float | None = None  # used by parallel init (NCCL, context)
    avail_at_start_gib: float | None = None  # "Load weight begin. avail mem"
    weights_gib: float | None = None  # "Load weight end. mem usage"
    avail_after_weights_gib: float | None = None
    weights_began: bool = False
    weights_done: bool = False
    kv_tokens: int | None = None
    kv_k_gib: float | None = None
    kv_v_gib: float | None = None
    kv_gib: float | None = None
    kv_dtype: str | None = None
    swa: dict[str, Any] | None = None
    mamba_slots: int | None = None
    mamba_conv_gib: float | None = None
    mamba_ssm_gib: float | None = None
    mamba_intermediate_gib: float | None = None
    mamba_slots_per_request_logged: int | None = None
    avail_after_pools_gib: float | None = None
    graph_begin_avail_gib: float | None = None
    graph_gib: float | None = None
    avail_after_graphs_gib: float | None = None
    graph_began: bool = False
    graph_done: bool = False
    graph_last_bs: int | None = None
    graph_last_avail_gib: float | None = None
    budget: dict[str, Any] | None = None
    oom: OOMRecord | None = None
    failed_phase: str | None = None  # where this rank's first traceback was raised
    lines: dict[str, int] = field(default_factory=dict)  # step -> first line showing it
    texts: dict[str, str] = field(default_factory=dict)  # step -> that line's text (evidence)

    @property
    def mamba_gib(self) -> float | None:
        if self.mamba_conv_gib is None and self.mamba_ssm_gib is None:
            return None
        return (self.mamba_conv_gib or 0.0) + (self.mamba_ssm_gib or 0.0) + (self.mamba_intermediate_gib or 0.0)

    @property
    def held_before_start_gib(self) -> float | None:
        """total − free at start − init use: memory someone else held before the weights."""
        if self.gpu_total_gib is None or self.avail_at_start_gib is None:
            return None
        return self.gpu_total_gib - self.avail_at_start_gib - (self.before_weights_gib or 0.0)

    def reached(self) -> int:
        """Index in STEPS of the furthest step this rank's lines show (-1: none)."""
        furthest = -1
        for step in self.lines:
            furthest = max(furthest, STEPS.index(step))
        return furthest

    def step_state(self, step: str, run_reached: int, hybrid: bool) -> str:
        """``done`` | ``ran_out`` (torch OOM) | ``failed`` (another error) | ``in_progress`` |
        ``unknown`` (a later step shows, this one is not in the log) | ``not_reached`` |
        ``not_logged`` (serving: only the first rank prints the budget) | ``n/a``."""
        i = STEPS.index(step)
        if self.oom is not None and self.oom.phase and PHASE_STEP.get(self.oom.phase) == step:
            return "ran_out"
        if step == "mamba_cache" and not hybrid:
            return "n/a"
        done = {
            "init": self.before_weights_gib is not None or self.avail_at_start_gib is not None,
            "weights": self.weights_done,
            "kv_cache": self.kv_gib is not None or self.kv_tokens is not None,
            "mamba_cache": self.mamba_slots is not None or self.mamba_gib is not None,
            "pools": self.avail_after_pools_gib is not None,
            "cuda_graphs": self.graph_done,
            "serving": self.budget is not None,
        }[step]
        if done:
            return "done"
        if self.failed_phase and PHASE_STEP.get(self.failed_phase) == step:
            return "failed"
        if (step == "weights" and self.weights_began) or (step == "cuda_graphs" and self.graph_began):
            return "in_progress"
        if step == "serving" and run_reached >= i:
            return "not_logged"  # the budget line is printed by the first rank only
        reached = max(self.reached(), run_reached)
        return "unknown" if i < reached else "not_reached"

    def steps(self, run_reached: int, hybrid: bool) -> list[dict[str, Any]]:
        out = []
        for step in STEPS:
            state = self.step_state(step, run_reached, hybrid)
            if state == "n/a":
                continue
            used, after = {
                "init": (self.before_weights_gib, self.avail_at_start_gib),
                "weights": (self.weights_gib, self.avail_after_weights_gib),
                "kv_cache": (self.kv_gib, None),
                "mamba_cache": (self.mamba_gib, None),
                "pools": (None, self.avail_after_pools_gib),
                "cuda_graphs": (self.graph_gib, self.avail_after_graphs_gib),
                "serving": (None, number((self.budget or {}).get("available_gpu_mem"))),
            }[step]
            out.append({"step": step, "state": state, "used_gib": rounded(used),
                        "avail_after_gib": rounded(after), "line": self.lines.get(step)})
        return out

    def to_json(self, run_reached: int, hybrid: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rank": self.rank or "TP0",
            "gpu_total_gib": rounded(self.gpu_total_gib), "gpu_total_source": self.gpu_total_source,
            "before_weights_gib": rounded(self.before_weights_gib),
            "avail_at_start_gib": rounded(self.avail_at_start_gib),
            "weights_gib": rounded(self.weights_gib), "avail_after_weights_gib": rounded(self.avail_after_weights_gib),
            "kv_cache": None if self.kv_gib is None and self.kv_tokens is None else {
                "tokens": self.kv_tokens, "k_gib": rounded(self.kv_k_gib), "v_gib": rounded(self.kv_v_gib),
                "gib": rounded(self.kv_gib), "dtype": self.kv_dtype, "swa": self.swa},
            "mamba_cache": None if self.mamba_slots is None and self.mamba_gib is None else {
                "slots": self.mamba_slots, "conv_gib": rounded(self.mamba_conv_gib),
                "ssm_gib": rounded(self.mamba_ssm_gib), "intermediate_gib": rounded(self.mamba_intermediate_gib),
                "gib": rounded(self.mamba_gib)},
            "avail_after_pools_gib": rounded(self.avail_after_pools_gib),
            "cuda_graphs": None if not self.graph_began and self.graph_gib is None else {
                "began_avail_gib": rounded(self.graph_begin_avail_gib), "gib": rounded(self.graph_gib),
                "done": self.graph_done, "last_bs": self.graph_last_bs,
                "last_avail_gib": rounded(self.graph_last_avail_gib)},
            "avail_after_graphs_gib": rounded(self.avail_after_graphs_gib),
            "held_before_start_gib": rounded(self.held_before_start_gib),
            "oom": self.oom.to_json() if self.oom else None,
            "steps": self.steps(run_reached, hybrid),
        }
        return out


def rank_sort_key(tag: str) -> tuple:
    """Ranks in order: ``TP2`` before ``TP10``, ``DP0 TP1`` before ``DP1 TP0``."""
    return tuple((name, int(n)) for name, n in _TAG_TOKEN.findall(tag)) or (("", -1),)


def rank_label(tag: str) -> str:
    """An untagged rank is the only one, ``TP0``."""
    return tag or "TP0"


def _collapse(labels: list[str]) -> str:
    """``TP0, TP1, TP2, TP3`` → ``TP0–TP3`` (only for plain consecutive single-token tags)."""
    if len(labels) == 1:
        return labels[0]
    parts = [_TAG_TOKEN.fullmatch(x) for x in labels]
    if all(parts) and len({p.group(1) for p in parts}) == 1:  # type: ignore[union-attr]
        nums = [int(p.group(2)) for p in parts]  # type: ignore[union-attr]
        if nums == list(range(nums[0], nums[0] + len(nums))):
            return f"{labels[0]}–{labels[-1]}"
    return ", ".join(labels)


@record(eq=False)
class Ledger:
    """A run's GPU memory, rank by rank, plus the figures the memory fixes are computed from."""

    run_index: int
    touched: bool
    phase: str
    ranks: list[RankLedger] = field(default_factory=list)
    tp_size: int | None = None
    pp_size: int | None = None
    checkpoint: CheckpointSize | None = None  # the least the weights take, from the model's name
    ooms: list[OOMRecord] = field(default_factory=list)
    hybrid: bool = False  # the model keeps a state (Mamba) cache beside the KV cache
    unbalanced_note: str | None = None
    quantized: bool = False  # --quantization set or a quantized checkpoint name
    # the room the server's sizing leaves the KV cache (≤ 0: none; ``None``: an input is not in the log)
    kv_rest: float | None = None
    # the server's own part (its settings and figures, set by its dialect's reader: SGLang's static
    # fraction and Mamba pool); ``None`` for a ledger read from torch's messages alone
    server: ServerPart | None = None
    error: str | None = None  # set when the ledger could not be built (a bug in logx, not in the log)
    # the server's words for its phases where they differ from ``facts.PHASE_TEXT`` (its facts.toml)
    phase_words: Mapping[str, str] = field(default_factory=dict)

    # — figures across ranks (SGLang takes the minimum over ranks) ———————————————————

    def _min(self, attr: str) -> float | None:
        values = [getattr(r, attr) for r in self.ranks if getattr(r, attr) is not None]
        return min(values) if values else None

    @property
    def pre_gib(self) -> float | None:
        """``pre_model_load_memory``: free memory before the weights, min over ranks (``None``
        when not logged, or 0: no formula divides by it)."""
        pre = self._min("avail_at_start_gib")
        return pre if pre is not None and pre > 0 else None

    @property
    def avail_after_weights_gib(self) -> float | None:
        return self._min("avail_after_weights_gib")

    @property
    def oom(self) -> OOMRecord | None:
        """The first torch OOM of the run (the first rank to run out)."""
        return self.ooms[0] if self.ooms else None

    @property
    def gpu_total(self) -> tuple[float | None, str | None]:
        for r in self.ranks:
            if r.gpu_total_source == "torch OOM message" and r.gpu_total_gib:
                return r.gpu_total_gib, f"torch OOM message ({rank_label(r.rank)})"
        for o in self.ooms:
            if o.oom.total_gib:
                return o.oom.total_gib, "torch OOM message"
        return None, None

    @property
    def pre_for_formulas(self) -> tuple[float | None, str]:
        """``pre`` for the formulas, and what it is: the logged free memory at start, else the
        GPU total from the OOM message (an upper bound, said so)."""
        if self.pre_gib is not None:
            n = sum(1 for r in self.ranks if r.avail_at_start_gib is not None)
            where = f", min over {n} ranks" if n > 1 else ""
            return self.pre_gib, f"free memory before the weights{where}"
        total, _ = self.gpu_total
        if total is not None:
            return total, ("the GPU total from torch's OOM message, an upper bound (the free memory before the "
                           "weights is not in the log)")
        return None, "unknown: the log has no 'Load weight begin. avail mem' line and no torch OOM figures"

    @property
    def has_figures(self) -> bool:
        return bool(self.ooms) or any(
            r.avail_at_start_gib is not None or r.weights_gib is not None or r.kv_gib is not None
            or r.avail_after_pools_gib is not None or r.graph_gib is not None or r.budget is not None
            or r.graph_began or r.before_weights_gib is not None for r in self.ranks)

    @property
    def status(self) -> str:
        if self.error:
            return self.error
        if not self.touched and not self.ooms:
            return "not touched"
        return "touched" if self.has_figures else "no memory figures in the log"

    @property
    def run_reached(self) -> int:
        step = PHASE_STEP.get(self.phase)
        return STEPS.index(step) if step else -1

    def rank(self, tag: str) -> RankLedger | None:
        for r in self.ranks:
            if r.rank == tag:
                return r
        return None

    def setting(self, name: str) -> Any:
        """A memory setting under the server's own name (SGLang's ``mem_fraction_static``), as
        its reader found it; ``None`` when the server has no such setting or the log does not say."""
        return self.server.settings().get(name) if self.server is not None else None

    def groups(self) -> list[tuple[str, RankLedger]]:
        """Ranks with identical figures collapsed into one column (``TP0–TP3``)."""
        out: list[tuple[list[str], RankLedger, tuple]] = []
        for r in self.ranks:
            key = tuple((s["state"], s["used_gib"], s["avail_after_gib"])
                        for s in r.steps(self.run_reached, self.hybrid)
                        if s["step"] != "serving" or s["state"] in ("ran_out", "failed")) + (
                r.gpu_total_gib, r.kv_tokens, r.mamba_slots, r.oom is not None)
            for labels, _first, k in out:
                if k == key:
                    labels.append(rank_label(r.rank))
                    break
            else:
                out.append(([rank_label(r.rank)], r, key))
        return [(_collapse(labels), first) for labels, first, _ in out]

    def to_json(self) -> dict[str, Any]:
        total, total_source = self.gpu_total
        out: dict[str, Any] = {
            "status": self.status, "touched": self.touched or bool(self.ooms), "unit": "GiB",
            "gpu_total_gib": rounded(total), "gpu_total_source": total_source,
            "pre_model_load_gib": rounded(self.pre_gib), "pre_model_load_source": self.pre_for_formulas[1],
            "kv_room_gib": rounded(self.kv_rest),
            "ranks": [r.to_json(self.run_reached, self.hybrid) for r in self.ranks],
            "oom": self.oom.to_json() if self.oom else None,
            "unbalanced": self.unbalanced_note,
        }
        out.update(dict.fromkeys(SERVER_JSON_KEYS))
        if self.server is not None:
            out.update(self.server.to_json(self))
        return out


# — what the tracebacks say, for every dialect ————————————————————————————————————————


def traceback_phase(tb: Traceback, run: Any) -> str | None:
    """The phase ``tb`` was raised in, by the run's dialect's reading of its frames."""
    return run.dialect.phase_from_frames([f.location for f in tb.frames], [f.function for f in tb.frames])


def next_phase(r: RankLedger) -> str | None:
    """The phase a rank was in when it ran out, from the steps its lines show."""
    if r.budget is not None or r.graph_done:
        return "serving"
    if r.graph_began or r.avail_after_pools_gib is not None:
        return "cuda_graph"
    if r.weights_done:
        return "kv_alloc"
    if r.weights_began:
        return "weights"
    return None


def attach_tracebacks(run: Any, ledger: Ledger, by_tag: dict[str, RankLedger],
                      rank_of: Callable[[str], RankLedger],
                      phase_hint: Callable[[Traceback], str | None] | None = None) -> None:
    """Add the run's torch OOMs to the ledger (``ledger.ooms``, each on its rank: ``by_tag``,
    ``rank_of`` makes a missing one) and where each rank failed. The OOM's phase: its frames,
    else the dialect's ``phase_hint``, else serving when the server was ready before it (every
    rank was; only the first prints its capture and batch lines), else the step the rank's lines
    reached, else the run's."""
    for tb in run.tracebacks:
        oom = best_oom(tb)
        if oom is None:
            continue
        tag = tb.tag
        if tag not in by_tag and not tag and len(by_tag) == 1:
            tag = next(iter(by_tag))  # one rank: an untagged traceback is its own
        target: RankLedger | None = None
        if tag in by_tag:
            target = by_tag[tag]
        elif tag or not by_tag:  # a tail paste, or a rank whose memory lines are not in the log
            target = rank_of(tag)
            tag = target.rank
        phase = traceback_phase(tb, run)
        if phase is None and phase_hint is not None:
            phase = phase_hint(tb)
        ready = run.phase_lines.get("ready")
        if phase is None and ready is not None and ready < tb.first_line:
            phase = "serving"
        if phase is None and target is not None:
            phase = next_phase(target)
        if phase is None and run.phase in PHASE_STEP:  # e.g. the primary finding's phase
            phase = run.phase
        line = next((n for n, t in tb.lines if OOM_TEXT.search(t)), tb.first_line)
        text = next((t for n, t in tb.lines if n == line), "")
        rec = OOMRecord(oom, line, tag, phase, text)
        ledger.ooms.append(rec)
        if target is not None and target.oom is None:
            target.oom = rec
            if oom.total_gib is not None:
                target.gpu_total_gib, target.gpu_total_source = oom.total_gib, "torch OOM message"
    for tb in run.tracebacks:  # where each rank failed (any exception)
        failed_in = traceback_phase(tb, run)
        owner = tb.tag if tb.tag in by_tag else (next(iter(by_tag)) if len(by_tag) == 1 and not tb.tag else None)
        if failed_in and owner is not None and by_tag[owner].failed_phase is None:
            by_tag[owner].failed_phase = failed_in


def read_torch_ledger(run: Any) -> Ledger:
    """The ledger of a dialect that reads no memory lines of its own: what torch's OOM messages
    and the tracebacks say, rank by rank, with what its ``weight_load_end`` events say the
    weights of those ranks took (``weights_gib``: vLLM's "Model loading took 44.72 GiB")."""
    ledger = Ledger(run_index=run.index, touched=run.memory_touched, phase=run.phase)
    by_tag: dict[str, RankLedger] = {}

    def rank_of(tag: str) -> RankLedger:
        return by_tag.setdefault(tag, RankLedger(rank=tag))

    attach_tracebacks(run, ledger, by_tag, rank_of)
    for e in run.memory_events:  # on the ranks torch's messages name: weights alone make no ledger
        gib = e.fields.get("weights_gib") if e.kind == "weight_load_end" else None
        tag = e.line.tag
        if not tag and len(by_tag) == 1:
            tag = next(iter(by_tag))  # one rank: an untagged line is its own
        r = by_tag.get(tag)
        if isinstance(gib, int | float) and r is not None and r.weights_gib is None:
            r.weights_began = r.weights_done = True
            r.weights_gib = float(gib)
    ledger.ranks = sorted(by_tag.values(), key=lambda r: rank_sort_key(r.rank))
    return ledger
