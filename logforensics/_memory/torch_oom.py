"""torch's CUDA out-of-memory message, parsed: what was asked, what the GPU had, who held it.

Every server's log carries torch's message the same way (inside a traceback), so this is the
one home of its figures for every dialect. Units: torch prints GiB/MiB; everything here is GiB.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .._lazyre import lazy
from .._record import field, record
from .units import rounded

if TYPE_CHECKING:
    from .._tracebacks import Traceback


def other_threshold_gib(total: float | None) -> float:
    """Memory held outside this process that counts as "another process": at least 1.5 GiB
    and 3% of the GPU (smaller gaps are CUDA contexts and peer buffers)."""
    return max(1.5, 0.03 * total) if total else 1.5


# — torch's OOM message ———————————————————————————————————————————————————————————————

_UNIT = r"(bytes|B|KiB|MiB|GiB|TiB)"
_NUM = r"(\d+(?:\.\d+)?)"
_FACTOR = {"bytes": 1 / 2**30, "B": 1 / 2**30, "KiB": 1 / 2**20, "MiB": 1 / 2**10, "GiB": 1.0,
           "TiB": 1024.0}
_REQ = lazy(rf"Tried to allocate {_NUM} ?{_UNIT}")
_NEW_TOTAL = lazy(rf"GPU (\d+) has a total capac(?:ity|ty) of {_NUM} ?{_UNIT}")
_NEW_FREE = lazy(rf"of which {_NUM} ?{_UNIT} is free")
_PROCESS = lazy(rf"Process (\d+) has {_NUM} ?{_UNIT} memory in use")
_THIS = lazy(rf"this process has {_NUM} ?{_UNIT} memory in use")
_ALLOCATED = lazy(rf"Of the allocated memory {_NUM} ?{_UNIT} is allocated by PyTorch")
_RESERVED = lazy(rf"{_NUM} ?{_UNIT} is reserved by PyTorch but unallocated")
_OLD_GPU = lazy(rf"\(GPU (\d+); {_NUM} ?{_UNIT} total capacity")
_OLD_ALLOCATED = lazy(rf"{_NUM} ?{_UNIT} already allocated")
_OLD_FREE = lazy(rf"; {_NUM} ?{_UNIT} free")
_OLD_RESERVED = lazy(rf"{_NUM} ?{_UNIT} reserved in total by PyTorch")
OOM_TEXT = lazy(r"(?:CUDA|HIP|NPU|XPU|MUSA) out of memory|CUDA error: out of memory")


def _gib(m: re.Match[str] | None, num: int = 1) -> float | None:
    if m is None:
        return None
    return float(m.group(num)) * _FACTOR[m.group(num + 1)]


@record(eq=False)
class TorchOOM:
    """The figures of one torch CUDA out-of-memory message (GiB; ``None`` = not in the text).

    New format: "Tried to allocate X. GPU n has a total capacity of T of which F is free.
    [Process P has M memory in use.]* [Including non-PyTorch memory, this process has U memory
    in use.] Of the allocated memory A is allocated by PyTorch, and R is reserved by PyTorch
    but unallocated." Old format: "Tried to allocate X (GPU n; T total capacity; A already
    allocated; F free; R' reserved in total by PyTorch)"."""

    requested_gib: float | None = None
    gpu: int | None = None
    total_gib: float | None = None
    free_gib: float | None = None
    this_process_gib: float | None = None
    this_process_listed: bool = False  # "this process has" appears (even if its number was cut)
    processes: list[tuple[int, float]] = field(default_factory=list)  # "Process P has M"
    allocated_gib: float | None = None  # allocated by PyTorch
    reserved_unallocated_gib: float | None = None
    reserved_total_gib: float | None = None  # old format
    old_format: bool = False

    # — who holds the GPU ——————————————————————————————————————————————————————————

    def _self_index(self) -> int | None:
        """Which "Process P" entry is torch's own process, when it did not print "this
        process has" (inside a container torch cannot match its own PID and lists itself as a
        plain "Process P"). The entry whose size covers what PyTorch allocated is itself."""
        if self.this_process_listed or not self.processes:
            return None
        alloc = self.allocated_gib
        if len(self.processes) == 1:
            if alloc is not None and alloc > self.processes[0][1] + 0.5:
                return None  # it holds less than PyTorch allocated here: someone else
            return 0
        fits = [i for i, (_, gib) in enumerate(self.processes) if alloc is None or gib >= alloc - 0.5]
        if not fits:
            return None
        target = alloc if alloc is not None else max(g for _, g in self.processes)
        return min(fits, key=lambda i: abs(self.processes[i][1] - target))

    @property
    def own_gib(self) -> float | None:
        """Memory this process holds on the GPU."""
        if self.this_process_gib is not None:
            return self.this_process_gib
        i = self._self_index()
        if i is not None:
            return self.processes[i][1]
        if self.old_format:  # what torch reserved; else what it allocated (a lower bound)
            return self.reserved_total_gib if self.reserved_total_gib is not None else self.allocated_gib
        return None

    @property
    def other_processes(self) -> list[tuple[int, float]]:
        i = self._self_index()
        return [p for j, p in enumerate(self.processes) if j != i]

    @property
    def unaccounted_gib(self) -> float | None:
        """total − free − this process − listed others: memory held by processes torch did not
        list (another container, another user) — plus a CUDA context or two."""
        own = self.own_gib
        if self.total_gib is None or self.free_gib is None or own is None:
            return None
        return self.total_gib - self.free_gib - own - sum(g for _, g in self.other_processes)

    @property
    def other_gib(self) -> float:
        """Memory held by other processes: the listed ones plus, when it is large, the
        unaccounted rest (``other_threshold_gib``)."""
        listed = sum(g for _, g in self.other_processes)
        rest = self.unaccounted_gib
        if rest is not None and rest >= other_threshold_gib(self.total_gib):
            listed += rest
        return listed

    @property
    def others_hold_memory(self) -> bool:
        """Other processes hold a significant share, and without them the allocation would
        have fit: requested ≤ free + other + reserved-but-unallocated."""
        other = self.other_gib
        if other < other_threshold_gib(self.total_gib):
            return False
        if self.exceeds_capacity:
            return False
        if self.requested_gib is None or self.free_gib is None:
            return True
        return self.requested_gib <= self.free_gib + other + (self.reserved_unallocated_gib or 0.0)

    @property
    def exceeds_capacity(self) -> bool:
        """One allocation larger than the whole GPU: requested > total capacity."""
        return (self.requested_gib is not None and self.total_gib is not None
                and self.requested_gib > self.total_gib)

    @property
    def fragmented(self) -> bool:
        """The bytes were there but not in one piece: reserved-but-unallocated ≥ 0.5 GiB and
        free + reserved-but-unallocated ≥ requested."""
        r = self.reserved_unallocated_gib
        if r is None or r < 0.5 or self.requested_gib is None or self.free_gib is None:
            return False
        return self.free_gib + r >= self.requested_gib

    def to_json(self) -> dict[str, Any]:
        return {
            "requested_gib": rounded(self.requested_gib), "gpu": self.gpu,
            "total_gib": rounded(self.total_gib), "free_gib": rounded(self.free_gib),
            "this_process_gib": rounded(self.own_gib),
            "other_processes": [{"pid": p, "gib": rounded(g)} for p, g in self.other_processes],
            "unaccounted_gib": rounded(self.unaccounted_gib), "other_gib": rounded(self.other_gib),
            "allocated_by_pytorch_gib": rounded(self.allocated_gib),
            "reserved_unallocated_gib": rounded(self.reserved_unallocated_gib),
            "exceeds_capacity": self.exceeds_capacity,
            "others_hold_memory": self.others_hold_memory, "fragmented": self.fragmented,
        }


def parse_torch_oom(message: str | None) -> TorchOOM | None:
    """Parse torch's CUDA OOM message (new or old format, possibly cut). ``None`` when the
    text is not an OOM or holds no figure at all; a cut message yields the figures before the
    cut (a number without its unit is ignored, never guessed)."""
    if not message or not OOM_TEXT.search(message):
        return None
    oom = TorchOOM()
    oom.requested_gib = _gib(_REQ.search(message))
    m = _NEW_TOTAL.search(message)
    if m:
        oom.gpu = int(m.group(1))
        oom.total_gib = _gib(m, 2)
        oom.free_gib = _gib(_NEW_FREE.search(message))
        oom.processes = [(int(p.group(1)), _gib(p, 2) or 0.0) for p in _PROCESS.finditer(message)]
        oom.this_process_gib = _gib(_THIS.search(message))
        oom.this_process_listed = "this process has" in message
        oom.allocated_gib = _gib(_ALLOCATED.search(message))
        oom.reserved_unallocated_gib = _gib(_RESERVED.search(message))
    else:
        m = _OLD_GPU.search(message)
        if m:
            oom.old_format = True
            oom.gpu = int(m.group(1))
            oom.total_gib = _gib(m, 2)
            oom.allocated_gib = _gib(_OLD_ALLOCATED.search(message))
            oom.free_gib = _gib(_OLD_FREE.search(message))
            oom.reserved_total_gib = _gib(_OLD_RESERVED.search(message))
            if oom.reserved_total_gib is not None and oom.allocated_gib is not None:
                oom.reserved_unallocated_gib = max(0.0, oom.reserved_total_gib - oom.allocated_gib)
    if oom.requested_gib is None and oom.total_gib is None:
        return None
    return oom


def best_oom(tb: Traceback) -> TorchOOM | None:
    """The OOM message of ``tb`` with the most figures (a chained traceback may repeat it, cut)."""
    best = None
    for exc in tb.exceptions:
        oom = parse_torch_oom(exc.message)
        if oom is not None and (best is None or _score(oom) > _score(best)):
            best = oom
    return best


def _score(oom: TorchOOM) -> int:
    return sum(x is not None for x in (oom.requested_gib, oom.total_gib, oom.free_gib, oom.own_gib,
                                       oom.allocated_gib, oom.reserved_unallocated_gib))
