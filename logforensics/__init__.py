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

import importlib as _importlib
import typing as _typing

from ._version import __version__

# The names are imported on first use (PEP 562), so that the command line can turn the disk
# cache on before the library reads its data, and a command imports only the modules it needs.
_EXPORTS = {
    "Analyzer": "._analysis",
    "Options": "._analysis",
    "explain": "._analysis",
    "explain_many": "._analysis",
    "Catalog": "._catalog",
    "Pattern": "._catalog",
    "load_catalog": "._catalog",
    "Detection": "._dialects",
    "Dialect": "._dialects",
    "detect": "._dialects",
    "EXIT_FAILURE": "._errors",
    "EXIT_INCONCLUSIVE": "._errors",
    "EXIT_INTERNAL": "._errors",
    "EXIT_OK": "._errors",
    "EXIT_USAGE": "._errors",
    "CatalogError": "._errors",
    "LaunchError": "._errors",
    "LogxError": "._errors",
    "RunNotFoundError": "._errors",
    "SourceError": "._errors",
    "Event": "._events",
    "Evidence": "._findings",
    "Finding": "._findings",
    "parse": "._pipeline",
    "Report": "._report",
    "Run": "._runs",
    "Traceback": "._tracebacks",
}

if _typing.TYPE_CHECKING:
    from ._analysis import Analyzer, Options, explain, explain_many
    from ._catalog import Catalog, Pattern, load_catalog
    from ._dialects import Detection, Dialect, detect
    from ._errors import (
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
    from ._events import Event
    from ._findings import Evidence, Finding
    from ._pipeline import parse
    from ._report import Report
    from ._runs import Run
    from ._tracebacks import Traceback


def __getattr__(name: str) -> _typing.Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'logforensics' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


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
