"""The dialects: one home per inference server (see ``README.md`` here to add one).

``detect`` picks the dialect of a log from its first lines and says how sure it is;
``get`` returns one by name (``--dialect``).
"""

from __future__ import annotations

import copyreg
from collections.abc import Iterable
from typing import NamedTuple

from .._lines import GrepNumbers, without_wrappers
from .base import CONFIDENCES, PHASE_RANK, PHASES, Dialect
from .sglang import DIALECT as SGLANG
from .vllm import DIALECT as VLLM

DIALECTS: dict[str, Dialect] = {d.name: d for d in (SGLANG, VLLM)}
DEFAULT = SGLANG  # reads a log no dialect recognises
DETECT_LINES = 200  # detection reads at most this many lines
_PREFIX_WINDOW = 160  # a server prefix starts within this many characters (after any wrapper)

__all__ = ["CONFIDENCES", "DEFAULT", "DETECT_LINES", "DIALECTS", "PHASES", "PHASE_RANK", "Detection", "Dialect",
           "detect", "get", "given", "names"]


class Detection(NamedTuple):
    """Which dialect reads a log, how sure that is (one of ``CONFIDENCES``) and the line
    number that decided (``None``: given, or nothing decided)."""

    dialect: Dialect
    confidence: str
    line: int | None = None

    def to_json(self) -> dict[str, object]:
        return {"name": self.dialect.name, "confidence": self.confidence}


def names() -> list[str]:
    return sorted(DIALECTS)


def get(name: str) -> Dialect:
    """The dialect called ``name``; ``KeyError`` names the known ones."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise KeyError(f"unknown dialect {name!r} (known: {', '.join(names())})") from None


# A report crosses processes (``logx explain -j``) with its run's dialect: send its name, not
# the object, whose conditions may be closures (vLLM's) that cannot be pickled.
copyreg.pickle(Dialect, lambda dialect: (get, (dialect.name,)))


def given(name: str) -> Detection:
    """The detection of ``--dialect NAME``."""
    return Detection(get(name), "given")


def detect(texts: Iterable[str]) -> Detection:
    """The dialect of a log from the visible text of its first lines: the first line that
    only one server prints decides ("certain"); else the dialect whose line prefix or hints
    most lines carry ("likely": a headless paste of a traceback has only its frames); else
    the default ("guess")."""
    evidence = dict.fromkeys(DIALECTS, 0)  # lines carrying a dialect's prefix or a hint of it
    first_evidence: dict[str, int] = {}
    grep = GrepNumbers()  # a `grep -n` paste: its numbers stand before the server's lines
    for number, seen in enumerate(texts, 1):
        if number > DETECT_LINES:
            break
        # docker, kubectl, journald, Ray: the server's own line (its process prefix, "(EngineCore
        # pid=1)", may itself be a marker)
        text = without_wrappers(seen, grep)
        for dialect in DIALECTS.values():
            if any(rx.search(text) or (text is not seen and rx.search(seen)) for rx in dialect.markers):
                return Detection(dialect, "certain", number)
            if dialect.prefix.pattern.search(text, 0, _PREFIX_WINDOW) \
                    or any(rx.search(text) or (text is not seen and rx.search(seen)) for rx in dialect.hints):
                evidence[dialect.name] += 1
                first_evidence.setdefault(dialect.name, number)
    best = max(evidence, key=lambda name: evidence[name])
    if evidence[best]:
        return Detection(DIALECTS[best], "likely", first_evidence[best])
    return Detection(DEFAULT, "guess")
