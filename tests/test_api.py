"""The public API: what ``logforensics/__init__.py`` exports, its errors, and its defaults."""

from __future__ import annotations

import pathlib
import types

import pytest
from conftest import log_bytes

import logforensics
from logforensics import (
    CatalogError,
    LaunchError,
    LogxError,
    Options,
    RunNotFoundError,
    SourceError,
    explain,
)
from logforensics import _errors as errors
from logforensics import _staleness as staleness

ARGS = "[2026-03-23 14:00:00] server_args=ServerArgs(model_path='m', tp_size=2)"


def test_all_lists_exactly_the_public_names():
    """Every name in ``__all__`` is there, once, and every public name the package defines
    (not its submodules) is in ``__all__``: nothing is exported by accident or forgotten."""
    exported = set(logforensics.__all__)
    assert len(exported) == len(logforensics.__all__)
    assert all(hasattr(logforensics, name) for name in exported)
    public = {name for name, value in vars(logforensics).items()
              if not name.startswith("_") and not isinstance(value, types.ModuleType)}
    assert public | {"__version__"} == exported


def test_every_module_behind_the_api_is_private():
    """The public API is ``__init__``'s exports: every other module and subpackage of the
    package is ``_named`` (as httpx and structlog do), so nobody imports one by accident and
    it may change. ``__main__`` (``python -m logforensics``) and the data folders are not code."""
    root = pathlib.Path(logforensics.__file__).parent
    code = [p for p in root.iterdir()
            if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))
            and p.name not in ("__init__.py", "__main__.py")]
    assert code, "no modules found beside __init__.py"
    assert [p.name for p in code if not p.name.startswith("_")] == []


def test_every_error_is_a_logx_error_with_its_exit_code():
    for error in (SourceError, CatalogError, RunNotFoundError, LaunchError):
        assert issubclass(error, LogxError)
    assert SourceError("x").exit_code == CatalogError("x").exit_code == errors.EXIT_USAGE
    assert LaunchError("x").exit_code == errors.EXIT_FAILURE and LaunchError("x", 127).exit_code == 127
    assert issubclass(RunNotFoundError, ValueError)  # what explain raised before: callers' handlers hold


def test_a_run_the_log_does_not_have_is_run_not_found():
    with pytest.raises(RunNotFoundError, match="run 3 does not exist"):
        explain(log_bytes(ARGS), options=Options(run_index=3))


def test_explain_looks_at_no_process_unless_asked(tmp_path, monkeypatch):
    """The library reads the log only; the stale-log detector (``/proc``, the sidecar, the
    file's mtime) runs when the caller asks (the CLI does)."""
    log = tmp_path / "server.log"
    log.write_bytes(log_bytes(ARGS))
    calls = []
    real_prepare = staleness.prepare

    def prepare(*args, **kwargs):
        calls.append("prepare")
        return real_prepare(*args, **kwargs)

    monkeypatch.setattr(staleness, "prepare", prepare)
    assert explain(str(log)).status is None and calls == []
    assert explain(str(log), options=Options(status=True)).status is not None and calls == ["prepare"]
