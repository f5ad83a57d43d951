"""logx — log forensics for LLM inference servers (SGLang first; one dialect per server).

The data flow: ``sources`` (bytes) → ``lines`` (decode, prefixes) → ``events`` (typed lines)
→ ``tracebacks`` → ``runs`` → ``findings`` (the catalog) → ``report``; each server's knowledge
lives in its dialect (``logforensics._dialects``). What this module exports is the public API;
the modules behind it may change.

    from logforensics import explain, parse
    report = explain("server.log")
    print(report.verdict, report.primary.id if report.primary else None)
    for event in parse("server.log"):
        ...
"""

__version__ = "0.1.0"

from ._analysis import Analyzer, Options, explain, explain_many  # noqa: E402
from ._catalog import Catalog, Pattern, load_catalog  # noqa: E402
from ._dialects import Detection, Dialect, detect  # noqa: E402
from ._errors import (  # noqa: E402
    EXIT_FAILURE,
    EXIT_INCONCLUSIVE,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    CatalogError,
    LaunchError,
    LogxError,
    RunNotFoundError,
    SourceError,
)
from ._events import Event  # noqa: E402
from ._findings import Evidence, Finding  # noqa: E402
from ._pipeline import parse  # noqa: E402
from ._report import Report  # noqa: E402
from ._runs import Run  # noqa: E402
from ._tracebacks import Traceback  # noqa: E402

__all__ = [
    "EXIT_FAILURE",
    "EXIT_INCONCLUSIVE",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_USAGE",
    "Analyzer",
    "Catalog",
    "CatalogError",
    "Detection",
    "Dialect",
    "Event",
    "Evidence",
    "Finding",
    "LaunchError",
    "LogxError",
    "Options",
    "Pattern",
    "Report",
    "Run",
    "RunNotFoundError",
    "SourceError",
    "Traceback",
    "__version__",
    "detect",
    "explain",
    "explain_many",
    "load_catalog",
    "parse",
]
