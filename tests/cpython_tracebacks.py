"""Run by tests/test_tracebacks_cpython.py with each CPython 3.10–3.13 found on the machine (one
process per interpreter): raises every shape of exception the interpreter prints and writes,
for each, the text CPython prints (``traceback.format_exception``, what the default excepthook
prints) and what a parser must read from it, as JSON on stdout.

Expected per exception, in printed order: the type as printed (module-qualified unless
builtins/__main__), the message as printed after "Type: " (notes on the lines after it), the
frames (file, line, function; a SyntaxError's location is a frame without function) and how it
relates to the one printed before it (cause | context | group | None)."""

import json
import os
import sys
import tempfile
import traceback

HERE = os.path.abspath(__file__)


def type_name(exc):
    cls = type(exc)
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__main__") else f"{module}.{cls.__qualname__}"


def message(exc):
    text = (exc.msg or "") if isinstance(exc, SyntaxError) else str(exc)
    notes = getattr(exc, "__notes__", None) or []
    return "\n".join([text, *notes]) if notes else text


def frames(exc):
    """The frames as printed: a run of one repeated frame shows 3 copies, then CPython's
    "[Previous line repeated N more times]"."""
    out, run = [], 0
    for f in traceback.extract_tb(exc.__traceback__):
        frame = [f.filename, f.lineno, f.name]
        run = run + 1 if out and out[-1] == frame else 1
        if run <= 3:
            out.append(frame)
    if isinstance(exc, SyntaxError) and exc.filename is not None:
        out.append([exc.filename, exc.lineno, None])
    return out


def printed(exc, chain=None, seen=None):
    """The exceptions in the order CPython prints them (root of a chain first)."""
    seen = seen if seen is not None else set()
    seen.add(id(exc))
    out = []
    if exc.__cause__ is not None and id(exc.__cause__) not in seen:
        out += printed(exc.__cause__, chain, seen)
        relation = "cause"
    elif exc.__context__ is not None and not exc.__suppress_context__ and id(exc.__context__) not in seen:
        out += printed(exc.__context__, chain, seen)
        relation = "context"
    else:
        relation = chain
    out.append({"type": type_name(exc), "message": message(exc), "frames": frames(exc), "chain": relation})
    for sub in getattr(exc, "exceptions", ()) if isinstance(exc, BaseException) and \
            type(exc).__name__.endswith("ExceptionGroup") else ():
        out += printed(sub, "group", seen)
    return out


def capture(fn):
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001 - every shape
        return {"text": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
                "exceptions": printed(exc)}
    raise AssertionError(f"{fn.__name__} did not raise")


class CustomError(Exception):
    pass


def chained_cause():
    try:
        {}["missing"]
    except KeyError as exc:
        raise RuntimeError("lookup failed") from exc


def chained_context():
    try:
        1 / 0  # noqa: B018 - raises
    except ZeroDivisionError:
        raise ValueError("while handling the division")  # noqa: B904 - the implicit context


def recursion():
    def down(n):
        return down(n + 1)
    down(0)


def syntax_error():
    compile("x = (1 +\n", "bad_module.py", "exec")


def with_note():
    exc = TypeError("wrong operand")
    if hasattr(exc, "add_note"):
        exc.add_note("first note")
        exc.add_note("second note")
    raise exc


def multi_line_message():
    raise CustomError("line one\nline two\n  indented three")


def empty_message():
    raise ValueError()


def without_source():
    exec(compile("def f():\n    raise LookupError('from a string')\nf()\n", "<generated>", "exec"))


def module_qualified():
    import json as _json
    _json.loads("{bad json")


def nested_group():
    if sys.version_info < (3, 11):  # noqa: UP036 - run by 3.10 too
        raise OSError("no exception groups before 3.11")
    inner = ExceptionGroup("inner", [KeyError("k"), OSError("disk")])  # noqa: F821 - 3.11+
    raise ExceptionGroup("outer", [ValueError("v"), inner])  # noqa: F821


def main():
    shapes = {fn.__name__: capture(fn) for fn in (
        chained_cause, chained_context, recursion, syntax_error, with_note, multi_line_message,
        empty_message, without_source, module_qualified, nested_group)}
    json.dump({"version": list(sys.version_info[:2]), "shapes": shapes}, sys.stdout)


if __name__ == "__main__":
    os.chdir(tempfile.gettempdir())
    main()
