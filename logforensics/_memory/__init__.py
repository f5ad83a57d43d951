"""Memory forensics: where each rank's GPU memory went, rebuilt from the lines a log holds.

Half of the failures people chase as "memory" are not, and half of the real ones are fixed by
the wrong flag. This package turns the memory figures a server and torch already print into

* a per-rank **ledger** (``build_ledger(run)`` → ``Ledger`` of ``RankLedger``, ``ledger.py``),
  filled by the log's dialect from its own lines (``dialects/<name>/memory.py``);
* the parsed torch OOM message (``parse_torch_oom``, ``torch_oom.py``): requested, total, free,
  this process, other processes, reserved-but-unallocated;
* the named **conditions** the catalog uses to tell memory causes apart by their numbers
  (``CONDITIONS``, ``conditions.py``; registered in ``logforensics._conditions``);
* the **facts** (``memory_facts``, ``facts.py``) that fill the memory patterns' ``{placeholders}``.

The arithmetic behind SGLang's memory fixes is SGLang's (``dialects/sglang/sizing.py``, the
sentences in ``dialects/sglang/fixes.py``); the text views are ``render/memory.py``.
Everything is GiB. See ``docs/memory.md`` for the formulas and a worked example. A run is typed
``Any`` here: the dialects (below ``runs``) build ledgers, so ``memory/`` imports nothing above them.
"""

from __future__ import annotations

from .build import build_ledger
from .conditions import CONDITIONS
from .facts import memory_facts
from .ledger import PHASE_STEP, STEPS, Ledger, OOMRecord, RankLedger
from .torch_oom import TorchOOM, other_threshold_gib, parse_torch_oom

__all__ = ["CONDITIONS", "PHASE_STEP", "STEPS", "Ledger", "OOMRecord", "RankLedger", "TorchOOM", "build_ledger",
           "memory_facts", "other_threshold_gib", "parse_torch_oom"]
