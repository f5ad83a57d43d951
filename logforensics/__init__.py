"""logx — log forensics for LLM inference servers (SGLang first).

The data flow, one module per stage: ``sources`` (bytes) → ``lines`` (decode, prefixes) →
``events`` (typed lines) → ``tracebacks`` → ``runs`` → ``findings`` (the catalog) → ``report``.

    from logforensics import explain, parse
    report = explain("server.log")
    print(report.verdict, report.primary.id if report.primary else None)
    for event in parse("server.log"):
        ...
"""

__version__ = "0.1.0"

from .analysis import Analyzer, Options, explain  # noqa: E402
from .pipeline import parse  # noqa: E402

__all__ = ["Analyzer", "Options", "explain", "parse", "__version__"]
